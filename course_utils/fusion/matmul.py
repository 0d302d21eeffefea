"""The matmul roof as the best matmul rate this run measured: a kernel measured above its roof means the roof's
probe ran at a bad moment (a busy machine), not that the kernel beat the hardware. And ``interleaved``: timings
in alternating rounds, for differences (an epilogue's extra time) smaller than a machine's drift."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from course_utils import roofline, timing, validate


def best_matmul_roof(machine: roofline.Machine, points: Iterable[roofline.Point]) -> roofline.Machine:
    """``machine`` with the fastest of ``points`` (matmuls measured in this run) added as a compute probe, so that
    ``peak_flops`` is the best matmul rate measured so far and no point lies above the compute roof."""
    validate.instance("machine", machine, roofline.Machine)
    points = [validate.instance(f"points[{i}]", p, roofline.Point) for i, p in enumerate(points)]
    validate.non_empty("points", points)
    best = max(points, key=lambda p: p.achieved_flops)
    probes = {**machine.flops_probes, f"best matmul of the sweep ({best.label})": best.achieved_flops}
    return dataclasses.replace(machine, flops_probes=probes)


def interleaved(candidates: Mapping[str, tuple[Callable[..., Any], tuple]], *, rounds: int = 5,
                min_time: float = 0.05) -> dict[str, timing.Measurement]:
    """Time several workloads in alternating rounds, {name: (fn, args)} -> {name: Measurement}: in each round every
    workload is benchmarked once (``min_time`` seconds), in an order rotated by one each round, and its blocks
    are pooled over the rounds. A machine that changes speed between rounds then widens every workload's
    quartiles alike instead of shifting one median against another, so their differences can be read against
    their spreads (``timing.apart``)."""
    validate.instance("candidates", candidates, Mapping)
    validate.non_empty("candidates", candidates)
    for name, entry in candidates.items():
        if not (isinstance(entry, tuple) and len(entry) == 2 and callable(entry[0]) and isinstance(entry[1], tuple)):
            raise TypeError(f"candidates[{name!r}] must be a (function, args tuple) pair; got {entry!r}")
    rounds = validate.number("rounds", rounds, low=1, high=100, integer=True)
    validate.positive("min_time", min_time)
    names = list(candidates)
    blocks: dict[str, list[float]] = {name: [] for name in names}
    first: dict[str, float | None] = {}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, args = candidates[name]
            m = timing.benchmark(fn, *args, min_time=min_time, min_repeats=3, label=name)
            blocks[name].extend(m.times)
            first.setdefault(name, m.first_call)
    return {name: timing.Measurement(name, tuple(blocks[name]), first_call=first[name], total=sum(blocks[name]))
            for name in names}
