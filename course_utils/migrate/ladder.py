"""The optimisation ladder: one training set-up measured rung by rung, each rung tagged with what it needs.

A rung is either a **no-migration** win (loader workers, pinned memory, mixed precision the framework
already has, a larger batch: available in the eager code you run today) or something **the migration
buys** (torch.compile, XLA). The cost model must be fed only the second kind: ``Ladder.migration_gain``
is the one way to get a measured ``MigrationGain``, and it refuses a no-migration rung.

Step times include the wait for the loader, as in real training. Rungs may differ in batch size, so every
speed-up compares time *per sample*, and its band divides opposite quartiles (as ``timing.compare`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from course_utils import display, intervals, timing, validate

NO_MIGRATION = "no migration"
MIGRATION = "migration"
KINDS = (NO_MIGRATION, MIGRATION)
DROPPED = "tried, not kept"
TWIN = "eager twin of the compiled rung"
_MADE_HERE = object()  # only this module's constructors hold it: see MigrationGain


@dataclass(frozen=True)
class Rung:
    """One measured rung: what changed, whether it needs the migration, and its steady per-step times.

    ``steps`` are whole steps (wait for the loader + compute); ``computes`` their compute parts alone;
    ``round_medians`` / ``round_computes`` one median per interleaved round (for the band of a speed-up);
    ``load`` the 1-minute load average when the rung's group finished (None where the OS has none).
    ``over`` names the rung it is measured against where that is not the rung before it (e.g. the eager twin
    measured beside the compiled rung); ``note`` says why a rung stands off the main order; ``setup`` what the
    rung ran with (e.g. batch, loader workers, pinned memory, autocast dtype), where its maker recorded it.
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
    over: str = ""
    note: str = ""
    setup: dict[str, Any] = field(default_factory=dict, compare=False)

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
    interval: str = ""  # for a gain measured across processes: the interval's own description

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

    @classmethod
    def across_processes(cls, speedup: intervals.Speedup, label: str) -> MigrationGain:
        """The gain measured in fresh processes (``migrate.assess``): the geometric mean and the 95% interval of
        ``speedup`` (``cu.intervals.speedup`` over per-process medians)."""
        validate.instance("speedup", speedup, intervals.Speedup)
        return cls(validate.text("label", label), speedup.ratio, speedup.low, speedup.high,
                   f"measured in {speedup.n} fresh processes", _MADE_HERE,
                   f"{speedup.interval}, {intervals.METHOD}")

    def widened(self, low: float, high: float, why: str) -> MigrationGain:
        """The same measured gain, its band stretched to cover [``low``, ``high``]: another measurement of the same
        rung (e.g. in a fresh process); ``why`` is appended to the source. The median stays this run's."""
        if not self.measured:
            raise ValueError("a claimed gain has no measured band to widen")
        validate.positive("low", low)
        validate.positive("high", high)
        if low > high:
            raise ValueError(f"low <= high must hold; got {low} and {high}")
        return MigrationGain(self.label, self.median, min(self.low, low), max(self.high, high),
                             f"{self.source}; {validate.text('why', why)}", _MADE_HERE)

    def __str__(self) -> str:
        if self.source == "claimed":
            return f"{self.median:.2f}x ({self.label})"
        if self.interval:
            return f"{self.median:.3g}x ({self.interval})"
        return f"{self.median:.2f}x (quartile band {self.low:.2f}x to {self.high:.2f}x, {self.source})"


def per_sample_band(before: Rung, after: Rung, part: str = "step") -> tuple[float, float, float]:
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
        return per_sample_band(self.baseline, self[validate.instance("label", label, str)])[0]

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
        before = self.before(label)
        if rung in self.rungs:
            self._check_over_the_fastest(rung)
        median, low, high = per_sample_band(before, rung)
        source = f"measured over '{before.label}'"
        drift = self.twin_drift(label)
        if drift is not None:  # the same set-up ran at another speed in its own group: the band covers both
            _, alt_low, alt_high = per_sample_band(self[before.over], rung)
            low, high = min(low, alt_low), max(high, alt_high)
            source += (f"; band widened to cover '{before.over}', the same set-up measured in an earlier group "
                       f"({drift:.2f}x the twin's time)")
        return MigrationGain(label, median, low, high, source, _MADE_HERE)

    def twin_drift(self, label: str) -> float | None:
        """Where migration rung ``label`` is measured over an eager twin of a set-up measured earlier and the two
        eager timings differ beyond their quartiles: the earlier one's median step over the twin's (the
        machine's drift between groups); else None."""
        before = self.before(label)
        if before.note != TWIN or not before.over:
            return None
        earlier = self[before.over]
        if not timing.apart(earlier.steps, before.steps):
            return None
        return earlier.sample_time / before.sample_time

    def _check_over_the_fastest(self, rung: Rung) -> None:
        """A migration rung of the main order must build on the fastest no-migration set-up before it: built on a
        slower one (a cheap rung that lost), it would be credited for undoing that loss."""
        earlier = [r for r in self.rungs[:self.rungs.index(rung)] if r.kind == NO_MIGRATION]
        last, fastest = earlier[-1], min(earlier, key=lambda r: r.sample_time)
        if fastest is not last:
            raise ValueError(f"label {rung.label!r} builds on {last.label!r}, which is slower per sample than "
                             f"{fastest.label!r}: it would be credited for undoing a no-migration rung that lost; "
                             "keep that rung off the main order (note=DROPPED), as torch_ladder does")

    def before(self, label: str) -> Rung:
        """The rung that ``label`` is measured against: the one it names (``over``), else the one before it in the
        main order, or the baseline for an extra rung."""
        rung = self[validate.instance("label", label, str)]
        if rung.over:
            return self[rung.over]
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
        return per_sample_band(self.before(label), rung, part)

    def steps_taken(self) -> list[tuple[str, str, float, float, float]]:
        """(label, kind, median, low, high) of each rung over the one before it, in ladder order: which rungs
        won (band above 1), which lost (band below 1), which changed nothing measurable (band holds 1)."""
        return [(r.label, r.kind, *per_sample_band(self.before(r.label), r)) for r in (*self.rungs[1:], *self.dropped)]

    @property
    def dropped(self) -> tuple[Rung, ...]:
        """No-migration rungs that were tried and not kept (the set-up before them was faster per sample), in the
        order they were measured."""
        return tuple(r for r in self.extra if r.note == DROPPED)

    def no_migration_gain(self) -> float:
        """Per-sample speed-up of the last no-migration rung of the main order over the baseline: the best
        set-up the team can have without migrating."""
        cheap = [r for r in self.rungs if r.kind == NO_MIGRATION]
        return per_sample_band(self.baseline, cheap[-1])[0]

    def total(self) -> float:
        """Per-sample speed-up of the last rung of the main order over the baseline, measured end to end."""
        return per_sample_band(self.baseline, self.rungs[-1])[0]

    def product(self) -> float:
        """The no-migration wins times what the last migration rung bought over its eager twin (computed): equal
        to ``total`` when the twin ran as fast as the set-up it repeats."""
        return self.no_migration_gain() * self.migration_gain().median

    def attribution(self, first: str) -> display.Table:
        """Credit of the cheap wins and of the migration rung ``first`` (measured on the baseline) in both
        orders: the product is the same (each order's second factor is computed from that product), the share
        each gets is not."""
        early = self[validate.instance("first", first, str)]
        cheap, gain, total, product = self.no_migration_gain(), self.migration_gain(), self.total(), self.product()
        first_gain = per_sample_band(self.before(first), early)[0]
        rows = [
            ("cheap wins first", "no-migration wins (measured)", f"{cheap:.2f}x"),
            ("cheap wins first", f"then {gain.label}, over its eager twin (measured)", f"{gain.median:.2f}x"),
            ("migration first", f"{early.label} (measured)", f"{first_gain:.2f}x"),
            ("migration first", "then the no-migration wins (computed: end to end over the row above)",
             f"{total / first_gain:.2f}x"),
        ]
        twin = self.before(gain.label)
        note = (f"Measured end to end, both orders end at {total:.2f}x over '{self.baseline.label}'; the cheap-first "
                f"factors multiply to {product:.2f}x (computed)")
        if abs(product / total - 1) <= 0.05:
            note += ", the same within 5%."
        elif twin.note == TWIN and twin.over:
            earlier = self[twin.over]
            note += (f": they differ because the eager twin took {display.format_time(twin.step_time)} per step "
                     f"beside compile and the same set-up {display.format_time(earlier.step_time)} in its own "
                     "group; " + ("their quartiles are apart, and why is not established by this run."
                                  if timing.apart(earlier.steps, twin.steps) else "within their quartiles."))
        else:
            note += "."
        return display.table(["order", "step", "speed-up per sample"], rows, title="The same gains, two orders",
                             note=note)

    def waterfall_steps(self) -> list[tuple[str, float]]:
        """(label, median seconds per sample) in ladder order, for ``plots.waterfall``."""
        return [(r.label, r.sample_time) for r in self.rungs]

    def table(self) -> display.Table:
        rows = []
        for r in (*self.rungs, *self.extra):
            peak = "n/a" if r.peak_bytes is None else display.format_bytes(r.peak_bytes)
            label = r.label if r in self.rungs else f"({r.label}: {r.note or 'off the main order'})"
            rows.append((label, r.kind, str(r.batch_size), display.format_time(r.first_step),
                         display.format_time(r.step_time),
                         f"{display.format_time(r.steps.p25)} to {display.format_time(r.steps.p75)}",
                         display.format_time(r.compute_time), f"{self.speedup(r.label):.2f}x",
                         f"{r.wait_share:.0%}", peak))
        note = "Speed-up: time per sample over the first rung. " + (
            "A no-migration rung slower per sample than the set-up before it is not kept: later rungs build on the "
            "faster set-up. " if self.dropped else "") + (
            "Skipped here: " + "; ".join(self.skipped) + "." if self.skipped else "")
        return display.table(["rung", "needs", "batch", "first step", "step (median)", "IQR", "of which compute",
                              "speed-up", "waiting for data", "peak memory"], rows, note=note.strip())

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def build_ladder(rungs: Sequence[Rung], *, skipped: Sequence[str] = (), extra: Sequence[Rung] = ()) -> Ladder:
    """Collect measured rungs (the first is the baseline, and needs no migration)."""
    validate.non_empty("rungs", rungs)
    for name, group in (("rungs", rungs), ("extra", extra)):
        for rung in group:
            validate.instance(name, rung, Rung)
    if rungs[0].kind != NO_MIGRATION:
        raise ValueError("rungs: the first rung is the baseline and must be a no-migration rung")
    labels = [r.label for r in (*rungs, *extra)]
    for rung in (*rungs, *extra):
        if rung.over and (rung.over not in labels or rung.over == rung.label):
            raise ValueError(f"rungs: rung {rung.label!r} is measured over {rung.over!r}, which is not another rung "
                             f"of this ladder ({labels})")
    return Ladder(tuple(rungs), tuple(validate.instance("skipped", s, str) for s in skipped), tuple(extra))
