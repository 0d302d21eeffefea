"""The memory hierarchy as one sweep: copy bandwidth against working-set size, each cache level marked.

A copy whose source and destination fit in a cache runs at that cache's speed; once they outgrow the
last-level cache it runs at main-memory (DRAM) speed. The roof probes of ``roofline.measure_machine`` must
sit on that last plateau, which is why they are sized from the last-level cache. The sweep reaches past the
probes' working set to at least ``BEYOND`` working sets of ``DRAM_MULTIPLE``x the last-level cache or more, so
that the plateau is measured on its own (several points), not read off the probe's own size.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from course_utils import display, env, probes, timing, validate

_FP32 = 4
DRAM_MULTIPLE = 2  # a working set at least this many times the last-level cache streams from main memory
BEYOND = 2  # points the sweep measures at or past DRAM_MULTIPLE x the last-level cache


@dataclass(frozen=True, repr=False)
class HierarchySweep:
    """Copy bandwidth (bytes/s, read + write counted) per working set (bytes: source + destination)."""

    working_sets: tuple[int, ...]
    bandwidths: tuple[float, ...]
    caches: Mapping[str, int]

    def __post_init__(self) -> None:
        validate.non_empty("working_sets", self.working_sets)
        if len(self.bandwidths) != len(self.working_sets):
            raise ValueError(f"bandwidths must have one value per working set ({len(self.working_sets)}); "
                             f"got {len(self.bandwidths)}")
        for i, (size, rate) in enumerate(zip(self.working_sets, self.bandwidths)):
            validate.positive(f"working_sets[{i}]", size, integer=True)
            validate.positive(f"bandwidths[{i}]", rate)

    def level_of(self, working_set: int) -> str:
        """The smallest cache that holds ``working_set`` bytes, or 'DRAM' when none does."""
        validate.positive("working_set", working_set)
        for name, size in sorted(self.caches.items(), key=lambda item: item[1]):
            if working_set <= size:
                return name
        return "DRAM"

    def plateaus(self) -> dict[str, float]:
        """Median bandwidth (bytes/s) of the points that each level holds, smallest level first."""
        groups: dict[str, list[float]] = {}
        for size, rate in zip(self.working_sets, self.bandwidths):
            groups.setdefault(self.level_of(size), []).append(rate)
        return {level: statistics.median(rates) for level, rates in groups.items()}

    def seconds_per_call(self, level: str) -> float:
        """Median time of one copy (seconds) over the points that ``level`` holds ('L2', 'DRAM', ...)."""
        times = [size / rate for size, rate in zip(self.working_sets, self.bandwidths) if self.level_of(size) == level]
        if not times:
            raise ValueError(f"level must be one of {sorted(self.plateaus())}; got {level!r}")
        return statistics.median(times)

    @property
    def largest(self) -> float:
        """Bandwidth (bytes/s) at the largest working set: the DRAM figure when it exceeds every cache."""
        return self.bandwidths[-1]

    def dram_from(self, tolerance: float = 0.25) -> int:
        """Smallest working set from which every larger point stays within ``tolerance`` of the largest
        point's bandwidth: where the sweep reaches its last plateau (which can come before the L3 size
        the OS reports, when other tenants share that cache)."""
        validate.number("tolerance", tolerance, low=0, high=1, low_open=True)
        start = self.working_sets[-1]
        for size, rate in reversed(list(zip(self.working_sets, self.bandwidths))):
            if abs(rate - self.largest) > tolerance * self.largest:
                break
            start = size
        return start

    @property
    def last_level_cache(self) -> int | None:
        """The largest cache the OS reports (bytes), or None when it reports none."""
        return max(self.caches.values(), default=None)

    def dram_points(self, multiple: float = DRAM_MULTIPLE) -> tuple[tuple[int, float], ...]:
        """(working set, bandwidth) of the points at least ``multiple`` x the last-level cache: main memory."""
        validate.number("multiple", multiple, low=1)
        llc = self.last_level_cache
        if llc is None:
            return ()
        return tuple((s, r) for s, r in zip(self.working_sets, self.bandwidths) if s >= multiple * llc)

    def dram_plateau(self, multiple: float = DRAM_MULTIPLE, points: int = BEYOND) -> float | None:
        """Median bandwidth (bytes/s) of the main-memory points (``dram_points``), or None when the sweep has
        fewer than ``points`` of them (or the OS reports no cache): a plateau needs at least two points."""
        validate.number("points", points, low=1, integer=True)
        found = self.dram_points(multiple)
        return statistics.median(r for _, r in found) if len(found) >= points else None

    def rate_at(self, working_set: int) -> float:
        """Bandwidth (bytes/s) measured at the sweep's working set closest to ``working_set`` (log distance)."""
        validate.positive("working_set", working_set)
        import math

        i = min(range(len(self.working_sets)),
                key=lambda k: abs(math.log(self.working_sets[k] / working_set)))
        return self.bandwidths[i]

    def table(self) -> display.Table:
        rows = [(display.format_bytes(s), self.level_of(s), display.format_rate(r))
                for s, r in zip(self.working_sets, self.bandwidths)]
        return display.table(["working set", "fits in", "copy bandwidth"], rows,
                             title="Memory hierarchy: torch copy into a preallocated array",
                             note="read + write bytes counted; cache sizes as the OS reports them (L1/L2 per core)")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def default_working_sets(largest: int | None = None, *, step: int = 4, beyond: int = BEYOND,
                         last_level_cache: int | None = None, memory: int | None = None) -> list[int]:
    """Working sets from 16 KiB, multiplied by ``step`` each time, up to two probe arrays (``largest``, default
    from ``probes.probe_size``), always included; then, where fewer than ``beyond`` points lie at or past
    ``DRAM_MULTIPLE`` x the last-level cache, the working sets 2x, 4x, ... that cache until ``beyond`` do.
    Points over a quarter of the free ``memory`` are left out (defaults: the OS's cache size, free memory now)."""
    if largest is None:
        largest = 2 * probes.probe_size().array_bytes
    largest = validate.number("largest", largest, low=2**15, integer=True)
    step = validate.number("step", step, low=2, high=16, integer=True)
    beyond = validate.number("beyond", beyond, low=0, high=8, integer=True)
    llc = env.last_level_cache_bytes() if last_level_cache is None else last_level_cache
    llc = validate.positive("last_level_cache", llc, integer=True)
    if memory is None:
        import psutil

        memory = int(psutil.virtual_memory().available)
    cap = validate.positive("memory", memory, integer=True) // 4
    sizes, size = {int(largest)}, 2**14
    while size < largest:
        sizes.add(size)
        size *= step
    multiple = DRAM_MULTIPLE
    while sum(s >= DRAM_MULTIPLE * llc for s in sizes) < beyond and multiple * llc <= cap:
        sizes.add(int(multiple * llc))
        multiple *= 2
    return sorted(sizes)


def sweep_hierarchy(working_sets: Sequence[int] | None = None, *, min_time: float = 0.05) -> HierarchySweep:
    """Time ``dst.copy_(src)`` (torch, preallocated) for each working set (bytes of src + dst)."""
    import torch

    if working_sets is None:
        working_sets = default_working_sets()
    validate.non_empty("working_sets", working_sets)
    sizes = [validate.number(f"working_sets[{i}]", s, low=2 * _FP32, integer=True) for i, s in enumerate(working_sets)]
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

    def text(self) -> str:
        """The re-timed numbers, each with its spread, and the earlier probe against them."""
        rate = display.format_rate

        def spread(m: timing.Measurement, size: int) -> str:
            return f"quartiles {rate(size / m.p75)} to {rate(size / m.p25)}"

        points = ", ".join(f"{rate(self.rate(m, s))} ({display.format_bytes(s)}, {spread(m, s)})"
                           for s, m in self.points)
        return (f"Timed again in alternating rounds, the probe's copy ({display.format_bytes(self.probe_bytes)}) ran "
                f"at {rate(self.probe_rate)} ({spread(self.probe, self.probe_bytes)}) and the sweep's main-memory "
                f"points at {points}; the same copy probe, timed with the roofs at the start, gave "
                f"{rate(self.earlier)} ({self.earlier / self.probe_rate:.2f}x its re-timed rate: a roof carries the "
                "moment it was measured at). ")


def retime_dram(sweep: HierarchySweep, probe_bytes: int, earlier: float, *, rounds: int = 4,
                min_time: float = 0.4) -> DramRetime:
    """Time the roof's copy probe (``a.copy_(b)`` over ``probe_bytes`` of source and destination, as
    ``probes.torch_probes`` does) and a copy at each of ``sweep``'s main-memory working sets, in ``rounds``
    alternating rounds (``interleaved``), so that the probe and the plateau see the same moments."""
    import torch

    validate.instance("sweep", sweep, HierarchySweep)
    probe_bytes = validate.number("probe_bytes", probe_bytes, low=2 * _FP32, integer=True)
    earlier = validate.positive("earlier", earlier)
    arrays = {"probe": probe_bytes, **{f"sweep {s}": s for s, _ in sweep.dram_points()}}
    held = {name: (torch.ones(int(size) // (2 * _FP32)), torch.full((int(size) // (2 * _FP32),), 2.0))
            for name, size in arrays.items()}
    calls = {name: (lambda a=a, b=b: a.copy_(b)) for name, (a, b) in held.items()}
    found = timing.interleaved(calls, rounds=rounds, min_time=min_time)
    points = tuple((s, found[f"sweep {s}"]) for s, _ in sweep.dram_points())
    return DramRetime(int(probe_bytes), found["probe"], points, float(earlier))


def levels_text(sweep: HierarchySweep, retimed: DramRetime | None, probe_rate: float, copy_floor: timing.Measurement,
                probe_bytes: int) -> str:
    """What the hierarchy sweep says, from its numbers: the median copy bandwidth per level; cache levels slower
    than main memory, set beside a 4-element ``copy_``'s own cost (``copy_floor``); the main-memory points;
    the probe re-timed next to them (``retimed``) and how it compares with their plateau."""
    validate.instance("sweep", sweep, HierarchySweep)
    validate.instance("copy_floor", copy_floor, timing.Measurement)
    probe_rate = validate.positive("probe_rate", probe_rate)
    plateaus, dram, fmt = sweep.plateaus(), sweep.dram_points(), display.format_time
    plateau = retimed.plateau if retimed else sweep.dram_plateau()
    text = "Median copy bandwidth per level: " + ", ".join(f"{k} {display.format_rate(v)}" for k, v in plateaus.items())
    slow = {k: sweep.seconds_per_call(k) for k, v in plateaus.items()
            if k != "DRAM" and plateau and v < plateau / 1.3}
    floor = copy_floor.median
    if slow:
        text += (". " + ", ".join(f"{k} ({fmt(t)} per copy, {t / floor:.3g}x a 4-element `copy_`'s {fmt(floor)})"
                                  for k, t in slow.items()) + " ran slower than main memory, which no cache can be: "
                 + ("each is within 3x of what a `copy_` call costs with almost no bytes, so these copies measure the "
                    "call, not the bytes" if max(slow.values()) < 3 * floor else
                    "longer than the call alone costs, so they waited for something else, which this run did not "
                    "establish"))
    if dram:
        text += (f". Past twice the {display.format_bytes(sweep.last_level_cache or 0)} last-level cache the copy ran "
                 "at " + ", ".join(f"{display.format_rate(r)} ({display.format_bytes(s)})" for s, r in dram)
                 + ": that is main memory. ")
    else:
        text += ". "
    if retimed:
        text += retimed.text()
    if not plateau:
        return text + "With under two main-memory points there is no plateau to compare the probe with. "
    ratio = probe_rate / plateau
    text += (f"The probe, at {display.format_bytes(probe_bytes)}, ran at {ratio:.2f}x the plateau "
             f"({display.format_rate(plateau)}) measured in the same rounds: ")
    if 1 / 1.3 <= ratio <= 1.3:
        return text + "its working set streams from main memory. "
    if ratio > 1.3 and probe_bytes < 2 * (sweep.last_level_cache or 0):
        return text + "faster, so part of it came from cache and the roofline's memory roof is drawn too high. "
    return text + ("both lie past twice the cache and were timed in the same rounds, so neither the level nor the "
                   "moment explains the gap; what does is not established by this run. ")


def roof_verdict(sweep: HierarchySweep, retimed: DramRetime | None, roof: tuple[str, float] | None,
                 probe_bytes: int) -> display.Verdict:
    """Score the prediction that the roof drawn (``roof``: name and bytes/s of the best in-place probe, measured
    once at the start) lies within 1.3x of the sweep's main-memory plateau. ``retimed`` (the roof's copy probe and
    the plateau's points in the same rounds) tells the probe's working set from the moment it was measured at.
    ``roof`` None (a GPU runtime, whose roofs are the GPU's): the sweep's own point at the probe's working set."""
    validate.instance("sweep", sweep, HierarchySweep)
    probe_bytes = validate.number("probe_bytes", probe_bytes, low=2 * _FP32, integer=True)
    rate, dram = display.format_rate, sweep.dram_points()
    plateau = retimed.plateau if retimed else sweep.dram_plateau()
    name, value = roof if roof else (f"the sweep's copy at {display.format_bytes(probe_bytes)}",
                                     sweep.rate_at(probe_bytes))
    value = validate.positive("roof", value)
    if not plateau:
        return display.verdict(False, f"{name} {rate(value)}; main-memory plateau not measured: {len(dram)} point(s) "
                               "at twice the last-level cache", "the free memory left room for fewer than two working "
                               "sets at twice the last-level cache, so this run cannot tell")
    vs = value / plateau
    numbers = (f"{'roof drawn (' + name + ', measured once at the start)' if roof else name} {rate(value)}; "
               f"main-memory plateau {rate(plateau)} over {len(dram)} points "
               f"({', '.join(display.format_bytes(s) for s, _ in dram)}): {vs:.2f}x")
    if retimed:
        numbers += (f"; torch's copy probe ({display.format_bytes(retimed.probe_bytes)}) re-timed in the same "
                    f"rounds as the plateau {rate(retimed.probe_rate)} ({retimed.probe_rate / plateau:.2f}x the "
                    f"plateau), {rate(retimed.earlier)} when the roofs were measured")
    if 1 / 1.3 <= vs <= 1.3:
        return display.verdict(True, numbers)
    return display.verdict(False, numbers, _roof_why(sweep, retimed, vs, plateau, probe_bytes))


def _roof_why(sweep: HierarchySweep, retimed: DramRetime | None, vs: float, plateau: float, probe_bytes: int) -> str:
    """Why the roof missed the plateau: the moment (the same probe re-timed lands on it), the cache, or unknown."""
    cached = probe_bytes < 2 * (sweep.last_level_cache or 0)
    drift = retimed.earlier / retimed.probe_rate if retimed else 1.0
    if retimed and 1 / 1.3 <= retimed.probe_rate / plateau <= 1.3 and not 1 / 1.3 <= drift <= 1.3:
        return (f"timed beside the plateau, torch's copy probe lands within 1.3x of it, so the probes' working set "
                f"does stream from main memory; but when the roofs were measured the same copy ran at {drift:.2f}x "
                f"that rate, so the roof drawn carries a {'slower' if drift < 1 else 'faster'} moment than the sweep's "
                "rounds; what changed the machine's speed between the two moments is not established by this run")
    if vs > 1.3 and cached:
        return ("the probe ran faster than main memory: part of its working set was served from cache, so the roof "
                "is drawn too high")
    if retimed and 1 / 1.3 <= retimed.probe_rate / plateau <= 1.3:
        return (f"torch's copy probe lands within 1.3x of the plateau when timed beside it, and ran at {drift:.2f}x "
                "that rate when the roofs were measured, so neither the working set nor the moment explains the "
                "gap; the roof drawn is another probe (another access pattern), and what makes the gap is not "
                "established by this run")
    if retimed:
        return ("timed in the same rounds and both past twice the cache, the probe and the plateau still differ: see "
                "the points' quartiles below; the cause is not established by this run")
    return ("the roof and the sweep's main-memory points were measured at different moments, with different access "
            "patterns; which of the two makes the gap is not established by this run")


def drawn_roof_text(roof: tuple[str, float], plateau: float | None) -> str:
    """One sentence: what the roof drawn (name, bytes/s) against the main-memory plateau means for the rooflines."""
    name, value = roof
    value = validate.positive("roof", value)
    if not plateau:
        return ""
    vs = value / validate.positive("plateau", plateau)
    text = (f"The memory roof drawn on the rooflines below is the {name} probe ({display.format_rate(value)}), "
            f"{vs:.2f}x that plateau")
    if 1 / 1.3 <= vs <= 1.3:
        return text + ": main memory's speed. "
    if vs < 1:
        return text + (": lower, so a kernel's share of that roof overstates how close it comes to what main memory "
                       "gave in the sweep's rounds, and a kernel streaming from main memory may sit above it. ")
    return text + ": higher, so a kernel's share of that roof understates how close it comes to main memory. "
