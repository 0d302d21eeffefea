"""The memory hierarchy as one sweep: copy bandwidth against working-set size, its levels read off its own cliffs.

A copy whose source and destination fit in a cache runs at that cache's speed; once they outgrow the last-level
cache it runs at main-memory (DRAM) speed. Where the sweep's rate falls and stays down is a level's edge
(``cliffs``); the points past the last cliff are main memory, and only a sweep with no cliff falls back on
``DRAM_MULTIPLE``x the last-level cache the OS reports (``HierarchySweep.basis`` says which). The reported sizes
plan the sweep and are quoted beside it as a second fact. The sweep reaches past the probes' working set to at
least ``BEYOND`` working sets of ``DRAM_MULTIPLE``x the reported cache, unless the memory free or the size cap
(``cap``, from the notebook's sizes table) leaves no room for them.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from course_utils import display, env, probes, timing, validate
from course_utils.measuring.cliffs import Cliff, find_cliffs
from course_utils.validate import MAX_WORKING_SET

_FP32 = 4
DRAM_MULTIPLE = probes.CACHE_MULTIPLE  # the reported cache's multiple that plans the sweep, and stands in for main
# memory's start only where the sweep shows no cliff (the rule the roof probes are sized by)
BEYOND = 2  # main-memory points a plateau needs; the sweep plans this many at or past DRAM_MULTIPLE x the cache


@dataclass(frozen=True, repr=False)
class HierarchySweep:
    """Copy bandwidth (bytes/s, read + write counted) per working set (bytes: source + destination)."""

    working_sets: tuple[int, ...]
    bandwidths: tuple[float, ...]
    caches: Mapping[str, int]

    def __post_init__(self) -> None:
        validate.non_empty("working_sets", self.working_sets)
        validate.sequence("bandwidths", self.bandwidths)
        if len(self.bandwidths) != len(self.working_sets):
            raise ValueError(f"bandwidths must have one value per working set ({len(self.working_sets)}); "
                             f"got {len(self.bandwidths)}")
        for i, (size, rate) in enumerate(zip(self.working_sets, self.bandwidths)):
            validate.positive(f"working_sets[{i}]", size, integer=True)
            validate.positive(f"bandwidths[{i}]", rate)
        validate.instance("caches", self.caches, Mapping)
        for level, size in self.caches.items():  # 0: a cache the machine does not report
            validate.non_negative(f"caches[{level!r}]", size, integer=True)

    @functools.cached_property
    def cliffs(self) -> tuple[Cliff, ...]:
        """Where the copy's rate falls and stays down (``cliffs.find_cliffs``): the levels' edges as measured."""
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
        """The level of the hierarchy ``working_set`` bytes sit on, as the sweep measured it: 'main memory' from
        ``main_memory_start`` on, 'cliff k' inside a cliff, else 'cache k' (k counts the measured levels)."""
        validate.positive("working_set", working_set)
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
        """The smallest cache the OS reports that holds ``working_set`` bytes ('past L3' beyond them all, '-' where
        none is reported): the second fact beside the measured level."""
        validate.positive("working_set", working_set)
        ordered = sorted(self.caches.items(), key=lambda item: item[1])
        for name, size in ordered:
            if working_set <= size:
                return name
        return f"past {ordered[-1][0]}" if ordered else "-"

    def plateaus(self) -> dict[str, float]:
        """Median bandwidth (bytes/s) of the points on each measured level, smallest level first."""
        groups: dict[str, list[float]] = {}
        for size, rate in zip(self.working_sets, self.bandwidths):
            groups.setdefault(self.level_of(size), []).append(rate)
        return {level: statistics.median(rates) for level, rates in groups.items()}

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

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def default_working_sets(largest: int | None = None, *, step: int = 4, beyond: int = BEYOND,
                         last_level_cache: int | None = None, memory: int | None = None,
                         cap: int | None = None) -> list[int]:
    """Working sets from 16 KiB, multiplied by ``step`` each time, up to two probe arrays (``largest``, default
    from ``probes.probe_size``), always included; then, where fewer than ``beyond`` points lie at or past
    ``DRAM_MULTIPLE`` x the last-level cache, the working sets 4x, 8x, ... that cache until ``beyond`` do.
    Points over a quarter of the free ``memory`` or over ``cap`` (None: no cap) are left out
    (defaults: the OS's cache size, free memory now). A plan only: the sweep's own cliffs place main memory."""
    if largest is None:
        largest = 2 * probes.probe_size().array_bytes
    largest = validate.number("largest", largest, low=2**15, high=MAX_WORKING_SET, integer=True)
    step = validate.number("step", step, low=2, high=16, integer=True)
    beyond = validate.number("beyond", beyond, low=0, high=8, integer=True)
    llc = env.last_level_cache_bytes() if last_level_cache is None else last_level_cache
    llc = validate.number("last_level_cache", llc, low=1, high=MAX_WORKING_SET, integer=True)
    if memory is None:
        import psutil

        memory = int(psutil.virtual_memory().available)
    limit = validate.number("memory", memory, low=1, high=2**50, integer=True) // 4
    if cap is not None:
        limit = min(limit, validate.number("cap", cap, low=2**15, high=MAX_WORKING_SET, integer=True))
    sizes, size = {int(largest)}, 2**14
    while size < largest:
        sizes.add(size)
        size *= step
    multiple = DRAM_MULTIPLE
    while sum(s >= DRAM_MULTIPLE * llc for s in sizes) < beyond and multiple * llc <= limit:
        sizes.add(int(multiple * llc))
        multiple *= 2
    return sorted(sizes)


def sweep_hierarchy(working_sets: Sequence[int] | None = None, *, min_time: float = 0.05) -> HierarchySweep:
    """Time ``dst.copy_(src)`` (torch, preallocated) for each working set (bytes of src + dst)."""
    import torch

    if working_sets is None:
        working_sets = default_working_sets()
    validate.non_empty("working_sets", working_sets)
    if len(working_sets) > 40:
        raise ValueError(f"working_sets must hold at most 40 sizes; got {len(working_sets)}")
    sizes = [validate.number(f"working_sets[{i}]", s, low=2 * _FP32, high=MAX_WORKING_SET, integer=True)
             for i, s in enumerate(working_sets)]
    validate.memory_fits("working_sets", max(sizes))
    min_time = validate.number("min_time", min_time, low=0, high=10, low_open=True)
    rates = []
    for size in sizes:
        n = int(size) // (2 * _FP32)
        src, dst = torch.full((n,), 2.0), torch.ones(n)
        seconds = timing.benchmark(dst.copy_, src, min_time=min_time, min_repeats=3).median
        rates.append(2 * n * _FP32 / seconds)
        del src, dst
    return HierarchySweep(tuple(int(s) for s in sizes), tuple(rates), dict(env.cache_sizes()))


@dataclass(frozen=True)
class DramRetime:
    """The roof's copy probe and the sweep's main-memory points, timed again in alternating rounds: like for like.
    Rates in bytes/s (read + write counted); ``earlier`` is the probe's rate from the roof measurement."""

    probe_bytes: int
    probe: timing.Measurement
    points: tuple[tuple[int, timing.Measurement], ...]
    earlier: float

    def __post_init__(self) -> None:
        validate.positive("probe_bytes", self.probe_bytes, integer=True)
        validate.instance("probe", self.probe, timing.Measurement)
        validate.instance("points", self.points, tuple)
        for i, point in enumerate(self.points):
            if not (isinstance(point, tuple) and len(point) == 2):
                raise TypeError(f"points[{i}] must be a (working set, Measurement) pair; got {point!r}")
            validate.positive(f"points[{i}][0]", point[0], integer=True)
            validate.instance(f"points[{i}][1]", point[1], timing.Measurement)
        validate.positive("earlier", self.earlier)

    def rate(self, m: timing.Measurement, working_set: int) -> float:
        return working_set / m.median

    @property
    def probe_rate(self) -> float:
        return self.rate(self.probe, self.probe_bytes)

    @property
    def plateau(self) -> float | None:
        """Median rate of the re-timed main-memory points, or None with fewer than ``BEYOND`` of them."""
        rates = [self.rate(m, s) for s, m in self.points]
        return statistics.median(rates) if len(rates) >= BEYOND else None


def retime_dram(sweep: HierarchySweep, probe_bytes: int, earlier: float, *, rounds: int = 4,
                min_time: float = 0.4) -> DramRetime:
    """Time the roof's copy probe (``a.copy_(b)`` over ``probe_bytes`` of source and destination, as
    ``probes.torch_probes`` does) and a copy at each of ``sweep``'s main-memory working sets, in ``rounds``
    alternating rounds (``interleaved``), so that the probe and the plateau see the same moments."""
    import torch

    validate.instance("sweep", sweep, HierarchySweep)
    probe_bytes = validate.number("probe_bytes", probe_bytes, low=2 * _FP32, high=MAX_WORKING_SET, integer=True)
    earlier = validate.positive("earlier", earlier)
    rounds = validate.number("rounds", rounds, low=2, high=20, integer=True)
    min_time = validate.number("min_time", min_time, low=0, high=10, low_open=True)
    arrays = {"probe": probe_bytes, **{f"sweep {s}": s for s, _ in sweep.dram_points()}}
    validate.memory_fits("probe_bytes", sum(arrays.values()))  # the probe's and every point's arrays are held together
    held = {name: (torch.ones(int(size) // (2 * _FP32)), torch.full((int(size) // (2 * _FP32),), 2.0))
            for name, size in arrays.items()}
    calls = {name: (lambda a=a, b=b: a.copy_(b)) for name, (a, b) in held.items()}
    found = timing.interleaved(calls, rounds=rounds, min_time=min_time)
    points = tuple((s, found[f"sweep {s}"]) for s, _ in sweep.dram_points())
    return DramRetime(int(probe_bytes), found["probe"], points, float(earlier))


