"""The prefetching iterator of notebook 04 (a thread moves the next batches while the step runs) and
``InLoop``, the same work in the training thread."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any

from course_utils import calls, declare, env
from course_utils.pipeline.workers import _importable

THREAD_NAME = "course-prefetch"
MAX_SIZE = 1024  # batches held ahead
_DONE = object()


def _transfer(transfer: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    if transfer is None:
        import jax

        transfer = jax.device_put
    return transfer


@declare.checked
class InLoop:
    """Re-iterable: ``transfer`` (default ``jax.device_put``) applied to each batch in the calling thread."""

    def __init__(self, source: Iterable, transfer: Callable | None = None) -> None:
        self.source, self.transfer = source, transfer

    def __iter__(self) -> Iterator[Any]:
        return map(_transfer(self.transfer), self.source)


@declare.checked
class Prefetch:
    """Re-iterable: each ``iter()`` starts a thread that runs ``transfer`` (default ``jax.device_put``) up to
    ``size`` batches ahead; it overlaps a step that releases the GIL, as compiled JAX does."""

    def __init__(self, source: Iterable, size: Annotated[int, declare.Range(1, MAX_SIZE)] = 2,
                 transfer: Callable | None = None, *, timeout: calls.Timeout = None) -> None:
        self.source, self.size, self.transfer, self.timeout = source, size, transfer, timeout

    def __iter__(self) -> PrefetchIterator:
        return PrefetchIterator(iter(self.source), self.size, _transfer(self.transfer), self.timeout)


class _State:
    """What the thread shares with the iterator: the thread holds this, not the iterator, so that an iterator dropped
    without ``close()`` is collected and its ``__del__`` stops the thread."""

    def __init__(self, size: int) -> None:
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=size)
        self.stop = threading.Event()
        self.produced = 0

    def put(self, item: Any) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce(self, source: Iterator[Any], transfer: Callable[[Any], Any]) -> None:
        try:
            for item in source:
                if self.stop.is_set():
                    return
                moved = transfer(item)
                self.produced += 1
                if not self.put(moved):
                    return
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, which raises it unchanged
            self.put((_DONE, error))
            return
        self.put(_DONE)


class PrefetchIterator:
    """The iterator of ``Prefetch``; ``close()`` (or leaving a ``with`` block) stops and joins the thread."""

    def __init__(self, source: Iterator[Any], size: int, transfer: Callable[[Any], Any], timeout: float | None,
                 ) -> None:
        self._state, self._finished = _State(size), False
        self._timeout = calls.default_timeout() if timeout is None else timeout
        self._transfer_name = getattr(transfer, "__name__", repr(transfer))
        self._thread = threading.Thread(target=self._state.produce, args=(source, transfer), daemon=True,
                                        name=THREAD_NAME)
        self._thread.start()

    @property
    def produced(self) -> int:
        return self._state.produced

    @declare.checked
    def wait_ahead(self, count: Annotated[int, declare.Range(1, MAX_SIZE + 1)],
                   timeout: Annotated[float, declare.Range(0, 60)] = 10.0) -> bool:
        """Wait (at most ``timeout`` s) until the thread has transferred ``count`` batches; True if it did."""
        deadline = time.monotonic() + timeout
        while self.produced < count and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        return self.produced >= count

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
        if item is _DONE or isinstance(item, tuple) and len(item) == 2 and item[0] is _DONE:
            self.close()
            if item is _DONE:
                raise StopIteration
            raise item[1]
        return item

    @declare.checked
    def close(self, timeout: Annotated[float, declare.Range(0, 60)] = 5.0) -> None:
        """Stop the thread (dropping what it prefetched) and wait up to ``timeout`` seconds for it to end."""
        self._finished = True
        self._state.stop.set()
        while not self._state.queue.empty():
            self._state.queue.get_nowait()
        self._thread.join(timeout)

    def __enter__(self) -> PrefetchIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        state = getattr(self, "_state", None)
        if state is not None:
            state.stop.set()


@declare.checked
def prefetch_threads() -> int:
    """How many prefetch threads are running in this process (0 once every iterator has stopped)."""
    return sum(t.name == THREAD_NAME for t in threading.enumerate())


@declare.checked
def grain_available() -> bool:
    """True when Grain and the JAX it imports are installed (``COURSE_BLOCK=jax`` answers False); imports nothing."""
    return env.available("jax") and _importable("grain")
