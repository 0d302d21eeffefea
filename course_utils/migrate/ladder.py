"""The optimisation ladder: one training set-up measured rung by rung, each rung tagged with what it needs.

A rung is either a **no-migration** win (loader workers, pinned memory, mixed precision the framework
already has, a larger batch: available in the eager code you run today) or something **the migration
buys** (torch.compile, XLA). The cost model must be fed only the second kind: ``Ladder.migration_gain``
is the one way to get a measured ``MigrationGain``, and it refuses a no-migration rung.

Step times include the wait for the loader, as in real training. Rungs may differ in batch size, so every
speed-up compares time *per sample*; a claim of faster or slower reads the interval over the paired rounds of
two rungs measured in one interleaved group (``cu.intervals.speedup``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

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
    ``round_medians`` / ``round_computes`` one median per interleaved round (an interval's paired replicates);
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
    """What the migration buys: a speed-up (old time / new time per sample) with its 95% interval.

    Only ``Ladder.migration_gain`` (a migration rung over its paired rounds), ``MigrationGain.across_processes``
    (``assess``'s interval across fresh processes) and ``MigrationGain.claimed`` (a quoted claim, e.g. the seed's
    30%) can make one: calling ``MigrationGain(...)`` directly raises TypeError, so a no-migration number cannot
    reach the cost model, by accident or by hand.
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
            raise TypeError("MigrationGain is made only by Ladder.migration_gain() (a measured migration rung), "
                            "MigrationGain.across_processes(speedup, label) (assess) or MigrationGain.claimed(x, who) "
                            "(a quoted claim); it cannot be built by hand")

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

    def __str__(self) -> str:
        if self.source == "claimed":
            return f"{self.median:.2f}x ({self.label})"
        if self.interval:
            return f"{self.median:.3g}x ({self.interval})"
        return f"{self.median:.2f}x ({self.low:.2f}x to {self.high:.2f}x, {self.source})"


def per_sample_ratio(before: Rung, after: Rung, part: str = "step") -> float:
    """Per-sample speed-up of ``after`` over ``before``: the ratio of their median times per sample (a plain float
    for tables and the waterfall; a claim of faster or slower reads ``Ladder.interval``)."""
    validate.choice("part", part, ("step", "compute"))
    if part == "step":
        return before.steps.median / before.batch_size / (after.steps.median / after.batch_size)
    if before.computes is None or after.computes is None:
        raise ValueError(f"part: rungs {before.label!r} and {after.label!r} hold no compute times")
    return before.computes.median / before.batch_size / (after.computes.median / after.batch_size)


def paired_interval(before: Rung, after: Rung, part: str = "step") -> intervals.Speedup:
    """Per-sample speed-up of ``after`` over ``before`` with its 95% interval over their paired rounds (a Student-t
    interval on paired log-ratios, ``cu.intervals.speedup``): the two rungs must come from one interleaved group."""
    validate.choice("part", part, ("step", "compute"))
    rx, ry = (before.round_medians, after.round_medians) if part == "step" else \
        (before.round_computes, after.round_computes)
    if not (before.group and before.group == after.group and len(rx) == len(ry) >= 2):
        raise ValueError(f"rungs {before.label!r} and {after.label!r} were not measured in one interleaved group of "
                         "at least 2 rounds, so their rounds are not paired: measure them together")
    b = timing.Measurement(before.label, tuple(t / before.batch_size for t in rx),
                           rounds=tuple(t / before.batch_size for t in rx))
    a = timing.Measurement(after.label, tuple(t / after.batch_size for t in ry),
                           rounds=tuple(t / after.batch_size for t in ry))
    return intervals.speedup(b, a)


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
        return per_sample_ratio(self.baseline, self[validate.instance("label", label, str)])

    def interval(self, label: str, part: str = "step") -> intervals.Speedup:
        """Per-sample speed-up of rung ``label`` over the rung it is measured against (``before``), with its 95%
        interval over their paired rounds; ``part="compute"`` compares the compute parts alone (the wait removed)."""
        rung = self[validate.instance("label", label, str)]
        return paired_interval(self.before(label), rung, part)

    def migration_gain(self, label: str | None = None) -> MigrationGain:
        """What rung ``label`` (default: the last migration rung of the main order) buys over the rung it is
        measured against, with the interval of their paired rounds. Raises ValueError for a no-migration rung:
        those are wins you get without migrating."""
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
        if rung in self.rungs:
            self._check_over_the_fastest(rung)
        found = self.interval(label)
        return MigrationGain(label, found.ratio, found.low, found.high,
                             f"measured over '{self.before(label).label}' in one process", _MADE_HERE,
                             f"{found.interval} of one process, {intervals.METHOD}")

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

    def steps_taken(self) -> list[tuple[str, str, intervals.Speedup]]:
        """(label, kind, interval) of each rung over the one it is measured against, in ladder order: a rung won
        when its interval lies above 1, lost when below, changed nothing measurable when it holds 1."""
        return [(r.label, r.kind, self.interval(r.label)) for r in (*self.rungs[1:], *self.dropped)]

    @property
    def dropped(self) -> tuple[Rung, ...]:
        """No-migration rungs that were tried and not kept (the set-up before them was faster per sample), in the
        order they were measured."""
        return tuple(r for r in self.extra if r.note == DROPPED)

    @property
    def kept(self) -> Rung:
        """The last no-migration rung of the main order: the fastest set-up the team can have without migrating."""
        return [r for r in self.rungs if r.kind == NO_MIGRATION][-1]

    def no_migration_interval(self) -> intervals.Speedup:
        """Per-sample speed-up of the kept no-migration set-up over the baseline, with the interval of their paired
        rounds (both are measured in the first group)."""
        return paired_interval(self.baseline, self.kept)

    def find(self, prefix: str) -> str | None:
        """The label of the first rung (main order, then tried and not kept) that starts with ``prefix``; None if
        no rung does (e.g. the autocast rung on hardware without bf16 units)."""
        validate.text("prefix", prefix)
        return next((r.label for r in (*self.rungs, *self.dropped) if r.label.startswith(prefix)), None)

    def no_migration_gain(self) -> float:
        """Per-sample speed-up of the kept no-migration set-up over the baseline (ratio of medians)."""
        return per_sample_ratio(self.baseline, self.kept)

    def waterfall_steps(self) -> list[tuple[str, float]]:
        """(label, seconds per sample) in ladder order, for ``plots.waterfall``. A migration rung measured beside an
        eager twin is drawn at the rung before it divided by its gain over that twin: the waterfall shows the same
        number as ``migration_gain`` (the twin and the rung it repeats ran in different groups, at other moments)."""
        steps: list[tuple[str, float]] = []
        for r in self.rungs:
            twin = self.before(r.label) if r is not self.baseline else None
            if r.kind == MIGRATION and twin is not None and twin.note == TWIN:
                steps.append((r.label, steps[-1][1] / self.migration_gain(r.label).median))
            else:
                steps.append((r.label, r.sample_time))
        return steps

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
