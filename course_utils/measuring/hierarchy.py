"""The memory hierarchy as one sweep: copy bandwidth against working-set size, its levels read off its own cliffs;
only a sweep with none falls back on ``DRAM_MULTIPLE``x the reported last-level cache (a VM may report its host's)."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

from course_utils import declare, display, env, roofline, timing, validate
from course_utils.declare import NonEmpty, PositiveFloat, PositiveInt, Range, SameLength
from course_utils.validate import MAX_WORKING_SET

_FP32 = 4
DRAM_MULTIPLE = roofline.CACHE_MULTIPLE  # the reported cache's multiple that plans the sweep, and stands in for main
# memory's start only where the sweep shows no cliff (the rule the roof probes are sized by)
BEYOND = 2  # main-memory points a plateau needs; the sweep plans this many at or past DRAM_MULTIPLE x the cache
DROP = 1.5  # a fall of at least this factor over consecutive falling points, staying down after, is a cliff
EDGE = 1.2  # a step that falls by less than this is flat: it belongs to a level, not to a cliff
WorkingSet = Annotated[int, Range(2 * _FP32, MAX_WORKING_SET)]


@declare.checked
@dataclass(frozen=True)
class Cliff:
    """A fall in copy bandwidth: ``before`` is the last working set (bytes) at the upper level's rate, ``after``
    the first at the lower level's; the rate fell by ``drop`` times between them."""

    before: PositiveInt
    after: PositiveInt
    drop: Annotated[float, Range(1)]

    def __str__(self) -> str:
        return (f"between {display.format_bytes(self.before)} and {display.format_bytes(self.after)}, "
                f"a {self.drop:.2g}x fall")


@declare.checked
def find_cliffs(working_sets: Annotated[Sequence[PositiveInt], NonEmpty],
                bandwidths: Annotated[Sequence[PositiveFloat], SameLength("working_sets")]) -> tuple[Cliff, ...]:
    """The cliffs of a sweep, smallest first: runs of falls (each over ``EDGE``) adding up to ``DROP`` times, after
    which the rate stays down (the median up to the next cliff too), so one slow point is not read as an edge."""
    points = sorted(zip(working_sets, bandwidths))
    sizes, rates = [int(s) for s, _ in points], [float(r) for _, r in points]
    runs, i = [], 0
    while i < len(rates) - 1:
        j = i
        while j + 1 < len(rates) and rates[j + 1] * EDGE < rates[j]:
            j += 1  # each step of the run falls by more than EDGE: a flat step ends it
        if j > i and rates[i] / rates[j] >= DROP:
            runs.append((i, j))
        i = max(j, i + 1)
    cliffs = []
    for k, (start, end) in enumerate(runs):
        stop = runs[k + 1][0] if k + 1 < len(runs) else len(rates) - 1
        if rates[start] / statistics.median(rates[end:stop + 1]) >= DROP:  # it stays down: a level's edge
            cliffs.append(Cliff(sizes[start], sizes[end], rates[start] / rates[end]))
    return tuple(cliffs)


@declare.checked
@dataclass(frozen=True, repr=False)
class HierarchySweep(display.Tabled):
    """Copy bandwidth (bytes/s, read + write counted) per working set (bytes: source + destination), and the cache
    sizes the OS reports (0: one it does not report)."""

    working_sets: Annotated[tuple[PositiveInt, ...], NonEmpty]
    bandwidths: Annotated[tuple[PositiveFloat, ...], SameLength("working_sets")]
    caches: Mapping[str, Annotated[int, Range(0)]]

    @functools.cached_property
    def cliffs(self) -> tuple[Cliff, ...]:
        """Where the copy's rate falls and stays down (``find_cliffs``): the levels' edges as measured."""
        return find_cliffs(self.working_sets, self.bandwidths)

    @property
    def last_level_cache(self) -> int | None:
        """The largest cache the OS reports (bytes), or None when it reports none: a second fact, not a verdict's."""
        return max(self.caches.values(), default=None)

    @property
    def main_memory_start(self) -> int | None:
        """The smallest working set (bytes) read as main memory: the far side of the sweep's last cliff; where the
        sweep shows no cliff, ``DRAM_MULTIPLE`` x the reported last-level cache; None where neither is known."""
        if self.cliffs:
            return self.cliffs[-1].after
        llc = self.last_level_cache
        return DRAM_MULTIPLE * llc if llc else None

    @property
    def basis(self) -> str:
        """Which rule placed main memory: the measured cliff, or the reported cache where the sweep shows none."""
        if self.cliffs:
            return f"past the sweep's last cliff, {self.cliffs[-1]}"
        if self.last_level_cache:
            return (f"no cliff in the sweep, so from {DRAM_MULTIPLE}x the last-level cache the OS reports "
                    f"({display.format_bytes(self.last_level_cache)})")
        return "no cliff in the sweep and no cache size reported"

    def level_of(self, working_set: int) -> str:
        """The level ``working_set`` bytes sit on as the sweep measured it: 'main memory', 'cliff k' or 'cache k'."""
        start = self.main_memory_start
        if start is not None and working_set >= start:
            return "main memory"
        for k, cliff in enumerate(self.cliffs, 1):
            if working_set <= cliff.before:
                return f"cache {k}"
            if working_set < cliff.after:
                return f"cliff {k}"
        return f"cache {len(self.cliffs) + 1}"

    def reported_level(self, working_set: int) -> str:
        """The smallest cache the OS reports that holds ``working_set`` bytes ('past L3' beyond all, '-': none)."""
        ordered = sorted(self.caches.items(), key=lambda item: item[1])
        for name, size in ordered:
            if working_set <= size:
                return name
        return f"past {ordered[-1][0]}" if ordered else "-"

    def dram_points(self) -> tuple[tuple[int, float], ...]:
        """(working set, bandwidth) of the points read as main memory: from ``main_memory_start`` on (``basis``)."""
        start = self.main_memory_start
        if start is None:
            return ()
        return tuple((s, r) for s, r in zip(self.working_sets, self.bandwidths) if s >= start)

    def table(self) -> display.Table:
        rows = [(display.format_bytes(s), self.level_of(s), self.reported_level(s), display.format_rate(r))
                for s, r in zip(self.working_sets, self.bandwidths)]
        return display.table(["working set", "level (measured)", "OS-reported cache that holds it", "copy bandwidth"],
                             rows, title="Memory hierarchy: torch copy into a preallocated array",
                             note=f"read + write bytes counted; main memory {self.basis}; the OS's cache sizes "
                                  "(L1/L2 per core) are a second fact")


@declare.checked
def default_working_sets(largest: Annotated[int, Range(2**15, MAX_WORKING_SET)] | None = None, *,
                         step: Annotated[int, Range(2, 16)] = 4,
                         last_level_cache: Annotated[int, Range(1, MAX_WORKING_SET)] | None = None,
                         memory: Annotated[int, Range(1, 2**50)] | None = None,
                         cap: Annotated[int, Range(2**15, MAX_WORKING_SET)] | None = None) -> list[int]:
    """Working sets from 16 KiB, times ``step``, up to ``largest``, then 4x, 8x, ... the last-level cache until
    ``BEYOND`` lie past ``DRAM_MULTIPLE`` x it, none over a quarter of the free ``memory`` or ``cap``: a plan only."""
    largest = 2 * roofline.probe_size().array_bytes if largest is None else largest
    llc = env.last_level_cache_bytes() if last_level_cache is None else last_level_cache
    if memory is None:
        import psutil

        memory = int(psutil.virtual_memory().available)
    limit = memory // 4 if cap is None else min(memory // 4, cap)
    sizes, size = {int(largest)}, 2**14
    while size < largest:
        sizes.add(size)
        size *= step
    multiple = DRAM_MULTIPLE
    while sum(s >= DRAM_MULTIPLE * llc for s in sizes) < BEYOND and multiple * llc <= limit:
        sizes.add(int(multiple * llc))
        multiple *= 2
    return sorted(sizes)


@declare.checked
def sweep_hierarchy(working_sets: Annotated[Sequence[WorkingSet], NonEmpty, declare.MaxItems(40)] | None = None, *,
                    min_time: Annotated[float, Range(1e-3, 10)] = 0.05) -> HierarchySweep:
    """Time ``dst.copy_(src)`` (torch, preallocated) for each working set (bytes of src + dst)."""
    import torch

    sizes = list(default_working_sets() if working_sets is None else working_sets)
    validate.memory_fits("working_sets", max(sizes))
    rates = []
    for size in sizes:
        n = int(size) // (2 * _FP32)
        src, dst = torch.full((n,), 2.0), torch.ones(n)
        seconds = timing.benchmark(dst.copy_, src, min_time=min_time, min_repeats=3).median
        rates.append(2 * n * _FP32 / seconds)
        del src, dst
    return HierarchySweep(tuple(int(s) for s in sizes), tuple(rates), dict(env.cache_sizes()))


@declare.checked
@dataclass(frozen=True)
class DramRetime:
    """The roof's copy probe and the sweep's main-memory points, timed again in alternating rounds: like for like.
    Rates in bytes/s (read + write counted); ``earlier`` is the probe's rate from the roof measurement."""

    probe_bytes: PositiveInt
    probe: timing.Measurement
    points: tuple[tuple[PositiveInt, timing.Measurement], ...]
    earlier: PositiveFloat

    @property
    def probe_rate(self) -> float:
        return self.probe_bytes / self.probe.median

    @property
    def plateau(self) -> float | None:
        """Median rate of the re-timed main-memory points, or None with fewer than ``BEYOND`` of them."""
        rates = [s / m.median for s, m in self.points]
        return statistics.median(rates) if len(rates) >= BEYOND else None


@declare.checked
def retime_dram(sweep: HierarchySweep, probe_bytes: WorkingSet, earlier: PositiveFloat, *,
                rounds: Annotated[int, Range(2, 20)] = 4,
                min_time: Annotated[float, Range(0, 10, low_open=True)] = 0.4) -> DramRetime:
    """Time the roof's copy probe (``a.copy_(b)`` over ``probe_bytes``, as the roofline's torch probe does) and a copy
    at each of ``sweep``'s main-memory working sets in the same alternating rounds, so both see the same moments."""
    import torch
    arrays = {"probe": probe_bytes, **{f"sweep {s}": s for s, _ in sweep.dram_points()}}
    validate.memory_fits("probe_bytes", sum(arrays.values()))  # the probe's and every point's arrays are held together
    held = {name: (torch.ones(int(size) // (2 * _FP32)), torch.full((int(size) // (2 * _FP32),), 2.0))
            for name, size in arrays.items()}
    calls = {name: (lambda a=a, b=b: a.copy_(b)) for name, (a, b) in held.items()}
    found = timing.interleaved(calls, rounds=rounds, min_time=min_time)
    points = tuple((s, found[f"sweep {s}"]) for s, _ in sweep.dram_points())
    return DramRetime(int(probe_bytes), found["probe"], points, float(earlier))


