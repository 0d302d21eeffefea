"""Timings that are compared with each other, taken in turns: A, B, C, A, B, C, ...

Two workloads timed one after the other can differ because the machine changed between them (another
process, the clock, the allocator). Timed in alternating rounds, each sees the same moments, so what is left
between them is the workloads'. ``timing.apart`` then tells a difference from the noise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from course_utils import timing, validate


def interleaved(calls: Mapping[str, Callable[[], Any]], *, rounds: int = 4, min_time: float = 0.2,
                sync: Mapping[str, bool] | None = None) -> dict[str, timing.Measurement]:
    """Time each zero-argument callable of ``calls`` in ``rounds`` alternating rounds, ``min_time`` seconds each
    in all (``timing.benchmark`` per round); the rounds' per-call times make one Measurement per name, its first
    call the first round's. ``sync`` (name -> bool, default True) passes ``sync=False`` where a call waits by
    itself (a host copy)."""
    validate.instance("calls", calls, Mapping)
    validate.non_empty("calls", calls)
    rounds = validate.number("rounds", rounds, low=1, high=100, integer=True)
    min_time = validate.number("min_time", min_time, low=0, high=60, low_open=True)
    sync = dict(sync or {})
    for name, fn in calls.items():
        validate.function(f"calls[{name!r}]", fn)
    found: dict[str, list[timing.Measurement]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, fn in calls.items():
            found[name].append(timing.benchmark(fn, min_time=min_time / rounds, min_repeats=3,
                                                sync=sync.get(name, True), label=name))
    return {name: _merged(name, parts) for name, parts in found.items()}


def _merged(name: str, parts: list[timing.Measurement]) -> timing.Measurement:
    return timing.Measurement(label=name, times=tuple(t for m in parts for t in m.times), number=parts[0].number,
                              first_call=parts[0].first_call, total=sum(m.total for m in parts),
                              synced=parts[0].synced)


def quartiles(m: timing.Measurement, fmt: Callable[[float], str]) -> str:
    """'a to b': the quartile range of ``m``, each end formatted by ``fmt``."""
    validate.instance("m", m, timing.Measurement)
    return f"{fmt(m.p25)} to {fmt(m.p75)}"
