"""The prefetching iterator of notebook 04 (JAX has no loader of its own): a background thread moves the next
batches to the device while the step runs; ``InLoop`` does the same work in the training thread (the baseline).
"""

from __future__ import annotations

import importlib.util
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from course_utils import calls, env, validate

THREAD_NAME = "course-prefetch"
WAIT_TIMEOUT = 120.0  # seconds the loop waits for one batch from the thread before it gives up
MAX_SIZE = 1024  # batches held ahead
_DONE = object()


@dataclass
class _Failure:
    error: BaseException


def _source(source: Any) -> Iterable[Any]:
    if source is None or isinstance(source, (str, bytes)) or not isinstance(source, Iterable):
        raise TypeError(f"source must be an iterable of batches; got {type(source).__name__} {source!r:.60}")
    return source


def _transfer(transfer: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    if transfer is not None:
        return validate.function("transfer", transfer)
    import jax

    return jax.device_put


class InLoop:
    """Re-iterable: ``transfer`` (default ``jax.device_put``) applied to each batch in the calling thread, so
    nothing overlaps with the step: the baseline that ``Prefetch`` is measured against."""

    def __init__(self, source: Iterable[Any], transfer: Callable[[Any], Any] | None = None) -> None:
        self.source = _source(source)
        self.transfer = None if transfer is None else validate.function("transfer", transfer)

    def __len__(self) -> int:
        return len(self.source)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        transfer = _transfer(self.transfer)
        return (transfer(item) for item in self.source)


class Prefetch:
    """Re-iterable wrapper: each ``iter()`` starts a thread that runs ``transfer`` on up to ``size`` batches ahead.

    ``transfer`` defaults to ``jax.device_put`` (the copy to the accelerator starts before the step asks for
    the batch). The thread overlaps with the step whenever the step releases the GIL, as compiled JAX/XLA
    computations do. ``size`` in [1, 1024]; for no overlap at all use ``InLoop``. A batch that takes longer
    than ``timeout`` seconds to arrive (a source or transfer that hangs) raises ``LearnerTimeout``.
    """

    def __init__(self, source: Iterable[Any], size: int = 2, transfer: Callable[[Any], Any] | None = None, *,
                 timeout: float = WAIT_TIMEOUT) -> None:
        self.source = _source(source)
        self.size = int(validate.number("size", size, low=1, high=MAX_SIZE, integer=True))
        self.transfer = None if transfer is None else validate.function("transfer", transfer)
        self.timeout = validate.seconds("timeout", timeout)

    def __len__(self) -> int:
        return len(self.source)  # type: ignore[arg-type]

    def __iter__(self) -> PrefetchIterator:
        return PrefetchIterator(iter(self.source), self.size, _transfer(self.transfer), timeout=self.timeout)


class _State:
    """What the producer thread shares with the iterator; the thread holds this, not the iterator, so that an
    iterator dropped without ``close()`` is collected and its ``__del__`` stops the thread."""

    def __init__(self, size: int) -> None:
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=size)
        self.stop = threading.Event()
        self.produced = 0
        self.consumed = 0
        self.most_ahead = 0

    def put(self, item: Any) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False


def _produce(state: _State, source: Iterator[Any], transfer: Callable[[Any], Any]) -> None:
    try:
        for item in source:
            if state.stop.is_set():
                return
            moved = transfer(item)
            state.produced += 1
            state.most_ahead = max(state.most_ahead, state.produced - state.consumed)
            if not state.put(moved):
                return
    except BaseException as error:  # noqa: BLE001 - handed to the consumer, which raises it unchanged
        state.put(_Failure(error))
        return
    state.put(_DONE)


class PrefetchIterator:
    """The iterator of ``Prefetch``: yields the source's items in order; ``close()`` stops and joins the thread.

    ``produced`` counts the batches the thread has transferred and ``consumed`` those handed out: the
    difference is how far the producer ran ahead of the training loop (at most ``size`` + 1: the queue plus
    the one it holds while waiting for room).
    """

    def __init__(self, source: Iterator[Any], size: int, transfer: Callable[[Any], Any], *,
                 timeout: float = WAIT_TIMEOUT) -> None:
        self._state = _State(size)
        self._finished = False
        self._timeout = validate.seconds("timeout", timeout)
        self._transfer_name = getattr(transfer, "__name__", repr(transfer))
        self._thread = threading.Thread(target=_produce, args=(self._state, source, transfer), daemon=True,
                                        name=THREAD_NAME)
        self._thread.start()

    @property
    def produced(self) -> int:
        return self._state.produced

    @property
    def consumed(self) -> int:
        return self._state.consumed

    @property
    def most_ahead(self) -> int:
        return self._state.most_ahead

    def wait_ahead(self, count: int, timeout: float = 10.0) -> bool:
        """Wait (at most ``timeout`` s) until the thread has transferred ``count`` batches; True if it did."""
        validate.positive("count", count, integer=True)
        validate.number("timeout", timeout, low=0, high=600)
        deadline = time.monotonic() + timeout
        while self.produced < count and self.alive and time.monotonic() < deadline:
            time.sleep(0.005)
        return self.produced >= count

    @property
    def alive(self) -> bool:
        """True while the background thread runs."""
        return self._thread.is_alive()

    def __iter__(self) -> PrefetchIterator:
        return self

    def __next__(self) -> Any:
        if self._finished:
            raise StopIteration
        try:
            item = self._state.queue.get(timeout=self._timeout)
        except queue.Empty:
            self.close(timeout=0.1)
            raise calls.LearnerTimeout(f"no batch arrived from the prefetch thread within {self._timeout:g} s: the "
                                       f"source or the transfer {self._transfer_name!s:.60} does not return") from None
        if item is _DONE:
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            raise item.error
        self._state.consumed += 1
        return item

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread (dropping what it prefetched) and wait up to ``timeout`` seconds for it to end."""
        validate.number("timeout", timeout, low=0, high=600)
        self._finished = True
        self._state.stop.set()
        while True:
            try:
                self._state.queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout)

    def __enter__(self) -> PrefetchIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        state = getattr(self, "_state", None)
        if state is not None:
            state.stop.set()


def prefetch_threads() -> int:
    """How many prefetch threads are running in this process (0 once every iterator has stopped)."""
    return sum(t.name == THREAD_NAME for t in threading.enumerate())


def grain_available() -> bool:
    """True when Grain (JAX's data loader) can be imported here: ``grain`` is installed and so is JAX, which Grain
    imports (a runtime without JAX, or the course's ``COURSE_BLOCK=jax`` shim, answers False). Imports nothing."""
    try:
        return env.available("jax") and importlib.util.find_spec("grain") is not None
    except (ImportError, ValueError):
        return False
