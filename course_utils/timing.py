"""Timing that does not fool you, in PyTorch, JAX and TensorFlow alike (DESIGN.md section 5): the first call apart,
warm-up, ``sync`` before reading the clock, repeats until a minimum time, the median with its spread; ``time_split``."""

from __future__ import annotations

import functools
import math
import numbers
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from course_utils import calls as _calls  # interleaved() has a parameter named calls
from course_utils import declare, display, env, validate
from course_utils.declare import NonEmpty, NonNegativeFloat, PositiveFloat, PositiveInt, Range, Text
from course_utils.display import format_time

_BLOCK_FRACTION = 0.05  # a block of calls lasts at least this share of min_time (timer cost stays negligible)
_MAX_MIN_TIME = 600.0  # seconds: a longer min_time is a typo, and a benchmark must end
_MAX_CALLS_PER_BLOCK = 10**7


# ---------------------------------------------------------------------------------------------------------
# Synchronisation


def sync(value: Any) -> Any:
    """Block until every array in ``value`` (any nesting of lists, tuples, dicts) is computed; return it. ``None``
    (an in-place op) synchronises torch's CUDA device; TF on the CPU and NumPy are synchronous already."""
    torch = sys.modules.get("torch")
    tf = sys.modules.get("tensorflow")
    synced_torch_devices: set[Any] = set()
    leaves = list(_leaves(value))
    if value is None and torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    for leaf in leaves:
        if hasattr(leaf, "block_until_ready"):  # jax.Array
            leaf.block_until_ready()
        elif torch is not None and isinstance(leaf, torch.Tensor):
            device = leaf.device
            if device.type in ("cpu", "meta") or device in synced_torch_devices:
                continue
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            elif device.type == "mps":
                torch.mps.synchronize()
            synced_torch_devices.add(device)
        elif tf is not None and isinstance(leaf, (tf.Tensor, tf.Variable)):
            tensor = leaf.value() if isinstance(leaf, tf.Variable) else leaf
            # a symbolic tensor (no .numpy) is in a graph: nothing to wait for; TF's eager CPU runtime is synchronous
            if hasattr(tensor, "numpy") and ("CPU" not in tensor.device
                                             or not tf.config.experimental.get_synchronous_execution()):
                tf.test.experimental.sync_devices()
    return value


_wait_for = sync  # benchmark() has a parameter named sync


def _leaves(value: Any, inside: frozenset[int] = frozenset()) -> Iterable[Any]:
    """Every array in ``value``'s nesting; a container that holds itself is refused (it has no end to wait for)."""
    if isinstance(value, (Mapping, list, tuple)):
        if id(value) in inside:
            raise ValueError("value holds itself (a list, tuple or dict inside its own nesting): sync needs a finite "
                             "nesting of arrays")
        inside = inside | {id(value)}
        for item in (value.values() if isinstance(value, Mapping) else value):
            yield from _leaves(item, inside)
    elif value is not None:
        yield value


# ---------------------------------------------------------------------------------------------------------
# Measurement


@declare.checked
@dataclass(frozen=True)
class Measurement(display.Tabled):
    """Per-call times of one workload: ``times`` holds one value per block of ``number`` calls (seconds)."""

    label: str
    times: Annotated[tuple[NonNegativeFloat, ...], NonEmpty]
    number: PositiveInt = 1
    first_call: NonNegativeFloat | None = None
    total: NonNegativeFloat = 0.0
    synced: bool = True
    rounds: tuple[PositiveFloat, ...] = ()  # per-round medians, from ``interleaved``: the replicates of an interval
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_times(cls, label: str, times: Iterable[float], **metadata: Any) -> Measurement:
        """A Measurement of one-call blocks from seconds measured elsewhere (a worker process, a loop)."""
        values = tuple(validate.number("times", t) for t in validate.non_empty("times", list(times)))
        return cls(label=label, times=values, number=1, total=sum(values), metadata=metadata)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def p25(self) -> float:
        return _quantile(self.times, 0.25)

    @property
    def p75(self) -> float:
        return _quantile(self.times, 0.75)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def n(self) -> int:
        """Number of timed blocks."""
        return len(self.times)

    @property
    def calls(self) -> int:
        """Number of timed calls (blocks x calls per block)."""
        return self.n * self.number

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers (seconds) for JSON: median, p25, p75, min, n, number, first_call, total."""
        keys = ("label", "median", "p25", "p75", "min", "n", "number", "first_call", "total", "synced")
        return {key: getattr(self, key) for key in keys}

    def summary(self) -> str:
        """One line: median, IQR, min, repeats, first call."""
        text = (f"{self.label}: median {format_time(self.median)} (IQR {format_time(self.p25)} to "
                f"{format_time(self.p75)}, min {format_time(self.min)}, {self.n} x {self.number} calls)")
        if self.first_call is not None:
            text += f", first call {format_time(self.first_call)}"
        if not self.synced:
            text += ", NOT synchronised"
        return text

    def __repr__(self) -> str:
        return f"<Measurement {self.summary()}>"

    def table(self) -> display.Table:
        first = format_time(self.first_call) if self.first_call is not None else "not measured"
        return display.table(["", self.label], [
            ("median", format_time(self.median)), ("IQR", f"{format_time(self.p25)} to {format_time(self.p75)}"),
            ("min", format_time(self.min)), ("repeats", f"{self.n} blocks x {self.number} calls"),
            ("first call", first), ("synchronised", "yes" if self.synced else "no")])


@declare.checked
def quartiles(m: Measurement, fmt: Callable[[float], str]) -> str:
    """'a to b': the quartile range of ``m``, each end formatted by ``fmt``."""
    return f"{fmt(m.p25)} to {fmt(m.p75)}"


@declare.checked
def interleaved(calls: Annotated[Mapping[str, Callable[[], Any]], NonEmpty], *,
                rounds: Annotated[int, Range(1, 100)] = 4,
                min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.2,
                timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT) -> dict[str, Measurement]:
    """Each callable timed in ``rounds`` alternating rounds (order rotated each round), one Measurement per name keeping
    its per-round medians for ``intervals.speedup``; a machine that changes speed then widens every workload alike."""
    names = list(calls)
    found: dict[str, list[Measurement]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            limit = functools.partial(_calls.limit, calls[name], timeout, f"calls[{name!r}]")
            found[name].append(_benchmark(calls[name], (), 0, min_time / rounds, 200, 3, True, name, limit))
    return {name: Measurement(label=name, times=tuple(t for m in parts for t in m.times), number=parts[0].number,
                              first_call=parts[0].first_call, total=sum(m.total for m in parts),
                              synced=parts[0].synced, rounds=tuple(m.median for m in parts))
            for name, parts in found.items()}


def _quantile(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@declare.checked
def benchmark(fn: Callable[..., Any], *args: Any, warmup: Annotated[int, Range(0, 10_000)] = 0,
              min_time: Annotated[float, Range(0, _MAX_MIN_TIME, low_open=True)] = 0.2,
              max_repeats: Annotated[int, Range(1, 100_000)] = 200, min_repeats: Annotated[int, Range(1, 100_000)] = 5,
              sync: Literal["auto", True, False] = "auto", label: Text | None = None,
              timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT, **kwargs: Any) -> Measurement:
    """Time ``fn(*args, **kwargs)``: first call apart, ``warmup`` untimed calls, then blocks of calls (>= 5% of
    ``min_time`` each, synchronised on the last result, as ``timeit`` does) until ``min_time`` and ``min_repeats``."""
    validate.number("min_repeats", min_repeats, high=max_repeats)
    label = label if label is not None else getattr(fn, "__name__", "fn")
    limit = functools.partial(_calls.limit, fn, timeout, "fn")
    if kwargs:  # bind them once: the timed loop then costs what a plain call costs
        fn = functools.partial(fn, **kwargs)
    return _benchmark(fn, args, int(warmup), min_time, int(max_repeats), int(min_repeats), sync, label, limit)


def _benchmark(fn: Callable[..., Any], args: tuple[Any, ...], warmup: int, min_time: float, max_repeats: int,
               min_repeats: int, sync: bool | str, label: str, limit: Callable[[], Any]) -> Measurement:
    """``benchmark`` with checked arguments; ``limit()`` is a fresh time limit for each call or block of calls."""
    min_time *= env.time_scale()  # a tenth at smoke size, which only checks that a notebook runs to the end
    wait = _wait_for if sync else (lambda value: value)
    clock = time.perf_counter

    first_call = _block(fn, args, wait, 1, limit)
    for _ in range(warmup):
        with limit():
            wait(fn(*args))

    target = min_time * _BLOCK_FRACTION
    number, times = _calibrate(fn, args, wait, target, limit)
    started = clock()
    while len(times) < max_repeats and (len(times) < min_repeats or clock() - started < min_time):
        times.append(_block(fn, args, wait, number, limit))
    return Measurement(label=label, times=tuple(times), number=number, first_call=first_call,
                       total=clock() - started, synced=bool(sync))


def _block(fn: Callable[..., Any], args: tuple[Any, ...], wait: Callable[[Any], Any], number: int,
           limit: Callable[[], Any]) -> float:
    """Seconds per call of one block of ``number`` calls: results dropped at once, as in a training loop; the last
    one waited for."""
    with limit():
        start = time.perf_counter()
        for _ in range(number - 1):
            fn(*args)
        wait(fn(*args))
        return (time.perf_counter() - start) / number


def _calibrate(fn: Callable[..., Any], args: tuple[Any, ...], wait: Callable[[Any], Any], target: float,
               limit: Callable[[], Any]) -> tuple[int, list[float]]:
    """Calls per block (1, 2, 5, 10, ... as in timeit) so a block lasts ``target`` s; the block that reaches half of it
    is kept as the first measurement, so a slow workload pays no extra call."""
    number = 1
    while True:
        per_call = _block(fn, args, wait, number, limit)
        if per_call * number >= target / 2 or number >= _MAX_CALLS_PER_BLOCK:
            return number, [per_call]
        wanted = target / per_call if per_call > 0 else number * 10
        number = min(_round_up_125(min(max(wanted, number * 2), _MAX_CALLS_PER_BLOCK)), _MAX_CALLS_PER_BLOCK)


def _round_up_125(value: float) -> int:
    """Smallest number of the 1-2-5 series (1, 2, 5, 10, 20, 50, ...) that is >= value."""
    decade = 1
    while True:
        for step in (1, 2, 5):
            if step * decade >= value:
                return step * decade
        decade *= 10


@declare.checked
class Timer:
    """Wall-clock time of a coarse section: ``with Timer("load") as t: ...`` then ``t.elapsed`` (seconds). Call
    ``sync(result)`` inside the block when it launches asynchronous work."""

    def __init__(self, label: str = "section") -> None:
        self.label = label
        self.elapsed: float | None = None
        self._start: float | None = None

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._start is None:
            raise RuntimeError("Timer left before it was entered")
        self.elapsed = time.perf_counter() - self._start

    def __repr__(self) -> str:
        shown = "running" if self.elapsed is None else format_time(self.elapsed)
        return f"<Timer {self.label}: {shown}>"


def time_split(wall: float, parts: Mapping[str, float], *, inside: float | None = None) -> dict[str, float]:
    """``{"wall": wall, **parts, "outside": wall - inside}`` (seconds), ``inside`` the parts' sum unless they overlap
    (pass it); a NaN part (not reported) leaves "outside" NaN."""
    wall = float(validate.non_negative("wall", wall))
    validate.instance("parts", parts, Mapping)
    split = {"wall": wall}
    for name, seconds in parts.items():
        if validate.text("parts key", name) in ("wall", "outside"):
            raise ValueError(f"parts must not name {name!r}: time_split adds it")
        split[name] = float(validate.instance(f"parts[{name!r}]", seconds, numbers.Real))
    covered = sum(split[name] for name in parts) if inside is None else float(validate.number("inside", inside))
    return {**split, "outside": wall - covered}
