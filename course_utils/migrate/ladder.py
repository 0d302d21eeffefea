"""The optimisation ladder: rungs tagged **no migration** (eager code today) or **migration** (torch.compile),
speed-ups per sample; only ``Ladder.migration_gain`` feeds the cost model, never a no-migration rung."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from course_utils import declare, display, intervals, timing, validate
from course_utils.declare import NonEmpty, Positive, Text

NO_MIGRATION = "no migration"
MIGRATION = "migration"
KINDS = (NO_MIGRATION, MIGRATION)
DROPPED = "tried, not kept"
TWIN = "eager twin of the compiled rung"
Part = Literal["step", "compute"]
_MADE_HERE = object()  # only this module's constructors hold it: see MigrationGain


@declare.checked
@dataclass(frozen=True)
class Rung:
    """One measured rung: whole ``steps`` and their ``computes``, one median per interleaved round (an interval's
    pairs), ``over`` the rung it is measured against, ``note`` why it is off the main order, ``setup``."""

    label: Text
    kind: Literal[KINDS]
    batch_size: Annotated[int, Positive]
    first_step: Annotated[float, declare.NonNegative]
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
        """Median compute part of a steady step, seconds."""
        return self.computes.median if self.computes is not None else self.steps.median * (1.0 - self.wait_share)

    @property
    def compile_s(self) -> float:
        """First step minus a steady step's compute: the one-off cost (compile, warm-up) of this rung, seconds."""
        return max(0.0, self.first_step - self.compute_time)


@dataclass(frozen=True)
class MigrationGain:
    """What the migration buys: a speed-up per sample with its 95% interval, made only by ``Ladder.migration_gain``,
    ``across_processes`` (assess) and ``claimed``: a no-migration number cannot reach the cost model."""

    label: str
    median: float
    low: float
    high: float
    source: str
    _made_by: object = field(default=None, repr=False, compare=False)
    interval: str = ""  # for a gain measured across processes: the interval's own description
    printed_low: str = ""  # and its low end as that description prints it (rounded outward)

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
        return self.source != "claimed"

    @classmethod
    @declare.checked
    def claimed(cls, speedup: Annotated[float, Positive], who: Text) -> MigrationGain:
        """A speed-up someone claims (no spread): e.g. ``MigrationGain.claimed(1 / 0.7, "the seed")``."""
        return cls(f"claimed by {who}", speedup, speedup, speedup, "claimed", _MADE_HERE)

    @classmethod
    @declare.checked
    def across_processes(cls, speedup: intervals.Speedup, label: Text) -> MigrationGain:
        """The gain ``assess`` measured in fresh processes: its geometric mean and 95% interval."""
        return cls(label, speedup.ratio, speedup.low, speedup.high, f"measured in {speedup.n} fresh processes",
                   _MADE_HERE, f"{speedup.interval}, {intervals.METHOD}", speedup.printed()[1])

    def low_text(self) -> str:
        """The interval's low end as ``str(self)`` prints it."""
        return self.printed_low or f"{self.low:.2f}x"

    def __str__(self) -> str:
        if self.source == "claimed":
            return f"{self.median:.2f}x ({self.label})"
        if self.interval:
            return f"{self.median:.3g}x ({self.interval})"
        return f"{self.median:.2f}x ({self.low:.2f}x to {self.high:.2f}x, {self.source})"


def _per_sample(rung: Rung, part: str) -> tuple[float, ...]:
    """``rung``'s round medians per sample, of the whole step or its compute part."""
    if part == "compute" and rung.computes is None:
        raise ValueError(f"part: rung {rung.label!r} holds no compute times")
    return tuple(t / rung.batch_size for t in (rung.round_medians if part == "step" else rung.round_computes))


@declare.checked
def paired_interval(before: Rung, after: Rung, part: Part = "step") -> intervals.Speedup:
    """Per-sample speed-up of ``after`` over ``before``, 95% interval over their paired rounds (one group)."""
    rx, ry = _per_sample(before, part), _per_sample(after, part)
    if not (before.group and before.group == after.group and len(rx) == len(ry) >= 2):
        raise ValueError(f"rungs {before.label!r} and {after.label!r} were not measured in one interleaved group of "
                         "at least 2 rounds, so their rounds are not paired: measure them together")
    return paired(before.label, rx, after.label, ry)


@declare.checked
def paired(before: str, rx: Sequence[float], after: str, ry: Sequence[float]) -> intervals.Speedup:
    """``after``'s speed-up over ``before`` with the 95% interval over their paired per-round times ``rx``, ``ry``."""
    return intervals.speedup(timing.Measurement(before, tuple(rx), rounds=tuple(rx)),
                             timing.Measurement(after, tuple(ry), rounds=tuple(ry)))


@declare.checked
@dataclass(frozen=True, repr=False)
class Ladder(display.Tabled):
    """Rungs in order (first: the baseline), the rungs ``skipped`` and why, and ``extra`` rungs off the main order."""

    rungs: tuple[Rung, ...]
    skipped: tuple[str, ...] = ()
    extra: tuple[Rung, ...] = ()

    def __getitem__(self, label: str) -> Rung:
        for rung in (*self.rungs, *self.extra):
            if rung.label == label:
                return rung
        raise KeyError(f"label must be one of {[r.label for r in (*self.rungs, *self.extra)]}; got {label!r}")

    @property
    def baseline(self) -> Rung:
        return self.rungs[0]

    @declare.checked
    def speedup(self, label: Text) -> float:
        """Per-sample speed-up of rung ``label`` over the baseline (a plain float: NOT accepted by ``cost``)."""
        return self.baseline.sample_time / self[label].sample_time

    @declare.checked
    def interval(self, label: Text, part: Part = "step") -> intervals.Speedup:
        """Per-sample speed-up of ``label`` over ``before(label)``, 95% interval over paired rounds (or of ``part``)."""
        return paired_interval(self.before(label), self[label], part)

    @declare.checked
    def migration_gain(self, label: Text | None = None) -> MigrationGain:
        """What migration rung ``label`` (default: the main order's last) buys over ``before(label)``."""
        migrations = [r.label for r in self.rungs if r.kind == MIGRATION]
        if label is None and not migrations:
            raise ValueError("label: this ladder has no migration rung (nothing the migration buys)")
        rung = self[migrations[-1] if label is None else label]
        if rung.kind != MIGRATION:
            raise ValueError(f"label {rung.label!r} is a no-migration rung: it needs no migration, so it must not "
                             f"feed the migration's cost model; pick one of {migrations}")
        if rung in self.rungs:
            earlier = [r for r in self.rungs[:self.rungs.index(rung)] if r.kind == NO_MIGRATION]
            fastest = min(earlier, key=lambda r: r.sample_time)
            if fastest is not earlier[-1]:
                raise ValueError(f"label {rung.label!r} builds on {earlier[-1].label!r}, which is slower per sample "
                                 f"than {fastest.label!r}: it would be credited for undoing a no-migration rung that "
                                 "lost; keep that rung off the main order (note=DROPPED), as torch_ladder does")
        found = self.interval(rung.label)
        return MigrationGain(rung.label, found.ratio, found.low, found.high,
                             f"measured over '{self.before(rung.label).label}' in one process", _MADE_HERE,
                             f"{found.interval} of one process, {intervals.METHOD}")

    @declare.checked
    def before(self, label: Text) -> Rung:
        """The rung ``label`` is measured against: its ``over``, else the one before it (extra rungs: the baseline)."""
        rung = self[label]
        if rung.over:
            return self[rung.over]
        if rung in self.extra:
            return self.baseline
        if rung is self.baseline:
            raise ValueError(f"label {label!r} has no rung before it in the main order")
        return self.rungs[self.rungs.index(rung) - 1]

    @property
    def dropped(self) -> tuple[Rung, ...]:
        """No-migration rungs tried and not kept (the set-up before them was faster per sample)."""
        return tuple(r for r in self.extra if r.note == DROPPED)

    @property
    def kept(self) -> Rung:
        """The last no-migration rung of the main order: the fastest set-up the team can have without migrating."""
        return [r for r in self.rungs if r.kind == NO_MIGRATION][-1]

    def no_migration_interval(self) -> intervals.Speedup:
        """Per-sample speed-up of the kept no-migration set-up over the baseline, over their paired rounds."""
        return paired_interval(self.baseline, self.kept)

    def no_migration_gain(self) -> float:
        """Per-sample speed-up of the kept no-migration set-up over the baseline (ratio of medians)."""
        return self.speedup(self.kept.label)

    @declare.checked
    def find(self, prefix: Text) -> str | None:
        """The label of the first rung (main order, then tried and not kept) starting with ``prefix``, or None."""
        return next((r.label for r in (*self.rungs, *self.dropped) if r.label.startswith(prefix)), None)

    def waterfall_steps(self) -> list[tuple[str, float]]:
        """(label, seconds per sample) in order; compile last drawn at its own gain over its eager twin."""
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
        note = ("Speed-up: the baseline's median step per sample over this rung's (ratio of the printed medians, each "
                "divided by its batch), in this process. " + (
                    "A no-migration rung slower per sample than the set-up before it is not kept: later rungs build "
                    "on the faster set-up. " if self.dropped else "") + (
                    "Skipped here: " + "; ".join(self.skipped) + "." if self.skipped else ""))
        return display.table(["rung", "needs", "batch", "first step", "step (median)", "IQR", "of which compute",
                              "speed-up", "waiting for data", "peak memory"], rows, note=note.strip())


@declare.checked
def build_ladder(rungs: Annotated[Sequence[Rung], NonEmpty], *, skipped: Sequence[str] = (),
                 extra: Sequence[Rung] = ()) -> Ladder:
    """Collect measured rungs (the first is the baseline, and needs no migration)."""
    if rungs[0].kind != NO_MIGRATION:
        raise ValueError("rungs: the first rung is the baseline and must be a no-migration rung")
    labels = [r.label for r in (*rungs, *extra)]
    for rung in (*rungs, *extra):
        if rung.over and (rung.over not in labels or rung.over == rung.label):
            raise ValueError(f"rungs: rung {rung.label!r} is measured over {rung.over!r}, which is not another rung "
                             f"of this ladder ({labels})")
    return Ladder(tuple(rungs), tuple(skipped), tuple(extra))
