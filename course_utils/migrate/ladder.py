"""The optimisation ladder: one training set-up measured rung by rung, each rung tagged with what it needs.

A rung is either a **no-migration** win (loader workers, pinned memory, mixed precision the framework
already has, a larger batch: available in the eager code you run today) or something **the migration
buys** (torch.compile, XLA). The cost model must be fed only the second kind: ``Ladder.migration_gain``
is the one way to get a measured ``MigrationGain``, and it refuses a no-migration rung.

Step times include the wait for the loader, as in real training. Rungs may differ in batch size, so every
speed-up compares time *per sample*, and its band divides opposite quartiles (as ``timing.compare`` does).
"""

from __future__ import annotations

import itertools
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from course_utils import display, pipeline, timing, validate

_GROUPS = itertools.count(1)
NO_MIGRATION = "no migration"
MIGRATION = "migration"
KINDS = (NO_MIGRATION, MIGRATION)
_MADE_HERE = object()  # only this module's constructors hold it: see MigrationGain


@dataclass(frozen=True)
class Rung:
    """One measured rung: what changed, whether it needs the migration, and its steady per-step times.

    ``steps`` are whole steps (wait for the loader + compute); ``computes`` their compute parts alone;
    ``round_medians`` / ``round_computes`` one median per interleaved round (for the band of a speed-up);
    ``load`` the 1-minute load average when the rung's group finished (None where the OS has none).
    """

    label: str
    kind: str
    batch_size: int
    first_step: float
    steps: timing.Measurement
    wait_share: float
    peak_bytes: int | None
    fingerprints: tuple[str, ...] = ()
    round_medians: tuple[float, ...] = ()
    group: int = 0
    computes: timing.Measurement | None = None
    round_computes: tuple[float, ...] = ()
    load: float | None = None

    @property
    def step_time(self) -> float:
        """Median steady step, seconds (loader wait included)."""
        return self.steps.median

    @property
    def sample_time(self) -> float:
        """Median steady step per sample, seconds: the like-for-like number across batch sizes."""
        return self.steps.median / self.batch_size

    @property
    def compute_time(self) -> float:
        """Median compute part of a steady step, seconds (the step without its wait for data)."""
        if self.computes is not None:
            return self.computes.median
        return self.steps.median * (1.0 - self.wait_share)

    @property
    def wait_time(self) -> float:
        """Mean wait for data per steady step, seconds."""
        return self.steps.mean * self.wait_share

    @property
    def compile_s(self) -> float:
        """First step minus a steady step's compute: the one-off cost (compile, warm-up) of this rung, seconds."""
        return max(0.0, self.first_step - self.compute_time)


@dataclass(frozen=True)
class MigrationGain:
    """What the migration buys: a speed-up (old time / new time per sample) with its quartile band.

    Only ``Ladder.migration_gain`` (measured on a migration rung) and ``MigrationGain.claimed`` (a quoted
    claim, e.g. the seed's 30%) can make one: calling ``MigrationGain(...)`` directly raises TypeError, so a
    no-migration number cannot reach the cost model, by accident or by hand.
    """

    label: str
    median: float
    low: float
    high: float
    source: str
    _made_by: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate.text("label", self.label)
        for name in ("median", "low", "high"):
            validate.positive(name, getattr(self, name))
        if not self.low <= self.median <= self.high:
            raise ValueError(f"low <= median <= high must hold; got {self.low}, {self.median}, {self.high}")
        validate.text("source", self.source)
        if self._made_by is not _MADE_HERE:
            raise TypeError("MigrationGain is made only by Ladder.migration_gain() (a measured migration rung) or "
                            "MigrationGain.claimed(x, who) (a quoted claim); it cannot be built by hand")

    @property
    def measured(self) -> bool:
        """True for a gain measured on a ladder's migration rung, False for a claim."""
        return self.source != "claimed"

    @classmethod
    def claimed(cls, speedup: float, who: str) -> MigrationGain:
        """A speed-up someone claims (no spread): e.g. ``MigrationGain.claimed(1 / 0.7, "the seed")``."""
        validate.positive("speedup", speedup)
        return cls(f"claimed by {validate.text('who', who)}", speedup, speedup, speedup, "claimed", _MADE_HERE)

    def __str__(self) -> str:
        if self.source == "claimed":
            return f"{self.median:.2f}x ({self.label})"
        return f"{self.median:.2f}x (quartile band {self.low:.2f}x to {self.high:.2f}x, {self.source})"


def _band(before: Rung, after: Rung, part: str = "step") -> tuple[float, float, float]:
    """Per-sample speed-up of ``after`` over ``before``: the ratio of medians, and its band.

    ``part="step"`` compares whole steps (wait included), ``"compute"`` their compute parts alone. Rungs
    measured together (interleaved rounds) give one ratio per round: the band is those ratios' quartiles,
    the spread of the speed-up itself. Otherwise the band divides opposite quartiles, which is wider (it
    mixes the two rungs' step-to-step noise).
    """
    validate.choice("part", part, ("step", "compute"))
    b, a = before.batch_size, after.batch_size
    if part == "step":
        x, y, rx, ry = before.steps, after.steps, before.round_medians, after.round_medians
    else:
        x, y, rx, ry = before.computes, after.computes, before.round_computes, after.round_computes
        if x is None or y is None:
            raise ValueError(f"part: rungs {before.label!r} and {after.label!r} hold no compute times")
    median = x.median / b / (y.median / a)
    if before.group and before.group == after.group and len(rx) >= 2 and len(rx) == len(ry):
        ratios = [(p / b) / (q / a) for p, q in zip(rx, ry)]
        low, high = (float(v) for v in np.percentile(ratios, [25, 75]))
    else:
        low = x.p25 / b / (y.p75 / a)
        high = x.p75 / b / (y.p25 / a)
    return median, min(low, median), max(high, median)


@dataclass(frozen=True)
class Ladder:
    """Rungs in order (the first is the baseline); ``skipped`` says which rungs could not run here and why.

    ``extra`` holds rungs measured off the main order, e.g. the migration applied to the baseline first,
    for the attribution in both orders.
    """

    rungs: tuple[Rung, ...]
    skipped: tuple[str, ...] = ()
    extra: tuple[Rung, ...] = ()

    def __getitem__(self, label: str) -> Rung:
        for rung in (*self.rungs, *self.extra):
            if rung.label == label:
                return rung
        known = [r.label for r in (*self.rungs, *self.extra)]
        raise KeyError(f"label must be one of {known}; got {label!r}")

    @property
    def baseline(self) -> Rung:
        return self.rungs[0]

    def speedup(self, label: str) -> float:
        """Per-sample speed-up of rung ``label`` over the baseline (a plain float: NOT accepted by ``cost``)."""
        return _band(self.baseline, self[validate.instance("label", label, str)])[0]

    def migration_gain(self, label: str | None = None) -> MigrationGain:
        """What rung ``label`` (default: the last migration rung of the main order) buys over the rung before
        it. Raises ValueError for a no-migration rung: those are wins you get without migrating."""
        if label is None:
            labels = [r.label for r in self.rungs if r.kind == MIGRATION]
            if not labels:
                raise ValueError("label: this ladder has no migration rung (nothing the migration buys)")
            label = labels[-1]
        rung = self[validate.instance("label", label, str)]
        if rung.kind != MIGRATION:
            raise ValueError(f"label {label!r} is a no-migration rung: it needs no migration, so it must not "
                             "feed the migration's cost model; pick one of "
                             f"{[r.label for r in self.rungs if r.kind == MIGRATION]}")
        before = self.baseline if rung in self.extra else self.rungs[self.rungs.index(rung) - 1]
        median, low, high = _band(before, rung)
        return MigrationGain(label, median, low, high, f"measured over '{before.label}'", _MADE_HERE)

    def before(self, label: str) -> Rung:
        """The rung that ``label`` is measured against: the one before it, or the baseline for an extra rung."""
        rung = self[validate.instance("label", label, str)]
        if rung in self.extra:
            return self.baseline
        if rung is self.baseline:
            raise ValueError(f"label {label!r} has no rung before it in the main order")
        return self.rungs[self.rungs.index(rung) - 1]

    def over_previous(self, label: str) -> float:
        """Per-sample speed-up of rung ``label`` over the rung just before it in the main order."""
        return self.over_previous_band(label)[0]

    def over_previous_band(self, label: str, part: str = "step") -> tuple[float, float, float]:
        """(median, low, high) per-sample speed-up of rung ``label`` over the rung before it (an extra rung:
        over the baseline); ``part="compute"`` compares the compute parts alone (the wait for data removed)."""
        rung = self[validate.instance("label", label, str)]
        return _band(self.before(label), rung, part)

    def steps_taken(self) -> list[tuple[str, str, float, float, float]]:
        """(label, kind, median, low, high) of each rung over the one before it, in ladder order: which rungs
        won (band above 1), which lost (band below 1), which changed nothing measurable (band holds 1)."""
        return [(r.label, r.kind, *_band(self.rungs[i - 1], r)) for i, r in enumerate(self.rungs) if i]

    def no_migration_gain(self) -> float:
        """Per-sample speed-up of the last no-migration rung of the main order over the baseline."""
        cheap = [r for r in self.rungs if r.kind == NO_MIGRATION]
        return _band(self.baseline, cheap[-1])[0]

    def attribution(self, first: str) -> display.Table:
        """Credit of the cheap wins and of the migration rung ``first`` (measured on the baseline) in both
        orders: the product is the same, the share each gets is not."""
        early = self[validate.instance("first", first, str)]
        cheap = [r for r in self.rungs if r.kind == NO_MIGRATION][-1]
        final = self.rungs[-1]
        base = self.baseline
        rows = [
            ("cheap wins first", "no-migration wins", f"{_band(base, cheap)[0]:.2f}x"),
            ("cheap wins first", f"then {final.label}", f"{_band(cheap, final)[0]:.2f}x"),
            ("migration first", early.label, f"{_band(base, early)[0]:.2f}x"),
            ("migration first", "then the no-migration wins", f"{_band(early, final)[0]:.2f}x"),
        ]
        return display.table(["order", "step", "speed-up per sample"], rows, title="The same gains, two orders",
                             note=f"Both orders end at {_band(base, final)[0]:.2f}x over '{base.label}'.")

    def waterfall_steps(self) -> list[tuple[str, float]]:
        """(label, median seconds per sample) in ladder order, for ``plots.waterfall``."""
        return [(r.label, r.sample_time) for r in self.rungs]

    def table(self) -> display.Table:
        rows = []
        for r in (*self.rungs, *self.extra):
            peak = "n/a" if r.peak_bytes is None else display.format_bytes(r.peak_bytes)
            label = r.label if r in self.rungs else f"({r.label}: off the main order)"
            rows.append((label, r.kind, str(r.batch_size), display.format_time(r.first_step),
                         display.format_time(r.step_time),
                         f"{display.format_time(r.steps.p25)} to {display.format_time(r.steps.p75)}",
                         display.format_time(r.compute_time), f"{self.speedup(r.label):.2f}x",
                         f"{r.wait_share:.0%}", peak))
        note = "Speed-up: time per sample over the first rung. " + (
            "Skipped here: " + "; ".join(self.skipped) + "." if self.skipped else "")
        return display.table(["rung", "needs", "batch", "first step", "step (median)", "IQR", "of which compute",
                              "speed-up", "waiting for data", "peak memory"], rows, note=note.strip())

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _steady(timelines: Sequence[pipeline.Timeline]) -> tuple[list[float], list[float], float]:
    """Per-step times, their compute parts and the wait share of the steady steps (each epoch's first step
    holds the loader start)."""
    totals, computes, waits = [], [], 0.0
    for timeline in timelines:
        for i, (w, c) in enumerate(zip(timeline.waits, timeline.computes)):
            if i == 0 or timeline.epochs[i] != timeline.epochs[i - 1]:
                continue
            totals.append(w + c)
            computes.append(c)
            waits += w
    if not totals:  # one step per epoch: keep what there is
        totals = [w + c for t in timelines for w, c in zip(t.waits, t.computes)]
        computes = [c for t in timelines for c in t.computes]
        waits = sum(sum(t.waits) for t in timelines)
    return totals, computes, waits / sum(totals)


def _first(label: str, loader: Iterable[Any], step: Callable[[Any], Any]) -> tuple[Any, float]:
    iterator = iter(loader)
    try:
        batch = next(iterator)
    except StopIteration:
        raise ValueError(f"loader for rung {label!r} yields no batch") from None
    with timing.Timer(label) as first:
        timing.sync(step(batch))
    return batch, first.elapsed


def _batch_size(label: str, batch: Any) -> int:
    """Samples in a batch: the length of its first element (x of an (x, y) pair), or of the batch itself."""
    first = batch[0] if isinstance(batch, (tuple, list)) and batch else batch
    size = getattr(first, "shape", (None,))[0] if hasattr(first, "shape") else None
    if size is None:
        try:
            size = len(first)
        except TypeError:
            raise ValueError(f"loader for rung {label!r}: cannot tell the batch size of a "
                             f"{type(first).__name__}; yield (x, y) pairs of arrays") from None
    return int(size)


def measure_rung(label: str, loader: Iterable[Any], step: Callable[[Any], Any], *, kind: str = NO_MIGRATION,
                 epochs: int = 1, peak_memory: Callable[[Callable[[], Any]], int | None] | None = None) -> Rung:
    """Time the first step apart (compile, warm-up), then ``epochs`` of ``step`` over ``loader``.

    ``peak_memory(fn)`` measures what one more step adds (CUDA allocator or process RSS).
    """
    return measure_rungs([(label, loader, step, kind)], rounds=epochs, peak_memory=peak_memory)[0]


def measure_rungs(specs: Sequence[tuple[str, Iterable[Any], Callable[[Any], Any], str]], *, rounds: int = 1,
                  peak_memory: Callable[[Callable[[], Any]], int | None] | None = None) -> list[Rung]:
    """Measure several rungs interleaved: one epoch of each in turn, ``rounds`` times, so that a drift in
    the machine's load hits every rung alike. ``specs`` are (label, loader, step, kind)."""
    validate.non_empty("specs", specs)
    validate.number("rounds", rounds, low=1, high=1000, integer=True)
    if peak_memory is not None:
        validate.function("peak_memory", peak_memory)
    firsts = []
    for spec in specs:
        if not isinstance(spec, (tuple, list)) or len(spec) != 4:
            raise TypeError(f"specs must hold (label, loader, step, kind) tuples; got {spec!r}")
        label, loader, step, kind = spec
        validate.text("label", label)
        validate.function("step", step)
        validate.choice("kind", kind, KINDS)
        if isinstance(loader, (str, bytes)) or not isinstance(loader, Iterable):
            raise TypeError(f"loader must be an iterable of batches; got {type(loader).__name__} {loader!r}")
        firsts.append(_first(label, loader, step))
    lines: list[list[pipeline.Timeline]] = [[] for _ in specs]
    for _ in range(rounds):
        for i, (label, loader, step, _kind) in enumerate(specs):
            lines[i].append(pipeline.run_loop(loader, step, epochs=1, label=label))
    rungs, group = [], next(_GROUPS)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    for (label, _loader, step, kind), (batch, first), timelines in zip(specs, firsts, lines):
        size = _batch_size(label, batch)
        totals, computes, wait_share = _steady(timelines)
        peak = peak_memory(lambda: timing.sync(step(batch))) if peak_memory is not None else None  # noqa: B023
        prints = tuple(p for t in timelines[:1] for p in t.fingerprints)
        per_round = [_steady([t]) for t in timelines]
        rungs.append(Rung(label, kind, size, first, timing.Measurement(label, tuple(totals), first_call=first),
                          wait_share, peak, prints, tuple(statistics.median(r[0]) for r in per_round), group,
                          timing.Measurement(f"{label} (compute)", tuple(computes)),
                          tuple(statistics.median(r[1]) for r in per_round), load))
    return rungs


def build_ladder(rungs: Sequence[Rung], *, skipped: Sequence[str] = (), extra: Sequence[Rung] = ()) -> Ladder:
    """Collect measured rungs (the first is the baseline, and needs no migration)."""
    validate.non_empty("rungs", rungs)
    for name, group in (("rungs", rungs), ("extra", extra)):
        for rung in group:
            validate.instance(name, rung, Rung)
    if rungs[0].kind != NO_MIGRATION:
        raise ValueError("rungs: the first rung is the baseline and must be a no-migration rung")
    return Ladder(tuple(rungs), tuple(validate.instance("skipped", s, str) for s in skipped), tuple(extra))
