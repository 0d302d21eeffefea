"""The instrumented training loop of notebook 04: per step, the time spent waiting for the batch and the time
spent computing (synchronised), kept as a ``Timeline``; "utilisation" here is always the accelerator's busy
time share: compute / (wait + compute) over the steady steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from course_utils import display, timing, validate
from course_utils.pipeline.dataset import fingerprint

_fmt = display.format_time
_clock = time.perf_counter  # module-level so that tests can drive the loop with a fake clock
PARTS = ("step", "wait", "compute")


@dataclass(frozen=True, repr=False)
class Timeline:
    """Per-step times of one loop: when each step began waiting, how long it waited, how long it computed.

    The first step of each epoch holds the loader's start-up (workers, threads, caches), so the steady-state
    numbers (``utilisation``, ``step_time``...) leave it out and ``startups`` reports it.
    """

    label: str
    starts: tuple[float, ...]
    waits: tuple[float, ...]
    computes: tuple[float, ...]
    epochs: tuple[int, ...]
    fingerprints: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        validate.instance("label", self.label, str)
        if not self.waits or not len(self.starts) == len(self.waits) == len(self.computes) == len(self.epochs):
            raise ValueError("starts, waits, computes and epochs must be non-empty and of equal length")
        for name in ("starts", "waits", "computes"):
            for value in getattr(self, name):
                validate.non_negative(name, value)

    @property
    def steps(self) -> int:
        return len(self.waits)

    def _first(self) -> np.ndarray:
        epochs = np.asarray(self.epochs)
        return np.r_[True, epochs[1:] != epochs[:-1]]

    def _steady(self) -> np.ndarray:
        first = self._first()
        return ~first if (~first).any() else np.ones_like(first)

    @property
    def startups(self) -> tuple[float, ...]:
        """Wait of the first step of each epoch (end of the previous epoch, ``iter()``, first batch), seconds."""
        return tuple(float(self.waits[i]) for i in np.flatnonzero(self._first()))

    @property
    def wait_time(self) -> float:
        """Mean wait per steady step, seconds."""
        return float(np.asarray(self.waits)[self._steady()].mean())

    @property
    def compute_time(self) -> float:
        """Mean compute per steady step, seconds."""
        return float(np.asarray(self.computes)[self._steady()].mean())

    @property
    def step_time(self) -> float:
        """Mean (wait + compute) per steady step, seconds: total steady time / steady steps."""
        return self.wait_time + self.compute_time

    @property
    def utilisation(self) -> float:
        """Accelerator busy time share: compute / (wait + compute) over the steady steps."""
        total = self.step_time
        return self.compute_time / total if total > 0 else 0.0

    def part(self, name: str = "step") -> timing.Measurement:
        """The steady steps' ``name`` times ("step" = wait + compute, "wait", "compute") as a Measurement, for
        their median and quartiles."""
        validate.choice("name", name, PARTS)
        waits, computes = (np.asarray(getattr(self, a))[self._steady()] for a in ("waits", "computes"))
        values = {"step": waits + computes, "wait": waits, "compute": computes}[name]
        return timing.Measurement.from_times(f"{self.label}: {name}", values.tolist())

    def epoch_part(self, epoch: int, name: str = "wait") -> timing.Measurement:
        """One epoch's steady steps' ``name`` times (its first step, the start-up, left out) as a Measurement, for
        comparing epochs by their quartiles; an epoch of a single step keeps that step."""
        validate.choice("epoch", epoch, sorted(set(self.epochs)))
        validate.choice("name", name, PARTS)
        rows = [(w, c) for w, c, e in zip(self.waits, self.computes, self.epochs) if e == epoch]
        rows = rows[1:] or rows
        values = [{"step": w + c, "wait": w, "compute": c}[name] for w, c in rows]
        return timing.Measurement.from_times(f"{self.label}: epoch {epoch + 1} {name}", values)

    def epoch_wait(self, epoch: int) -> float:
        """Mean wait per steady step of one epoch (its first step, the start-up, left out), seconds."""
        validate.choice("epoch", epoch, sorted(set(self.epochs)))
        waits = [w for w, e in zip(self.waits, self.epochs) if e == epoch][1:]
        return float(np.mean(waits)) if waits else 0.0

    def row(self) -> tuple[str, ...]:
        return (self.label, _fmt(self.step_time), _fmt(self.wait_time), _fmt(self.compute_time),
                display.percent(self.utilisation), _fmt(self.startups[0]))

    def table(self) -> display.Table:
        return timelines_table([self])

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers (seconds) for JSON."""
        return {"label": self.label, "steps": self.steps, "step_time": self.step_time, "wait_time": self.wait_time,
                "compute_time": self.compute_time, "utilisation": self.utilisation,
                "startups": list(self.startups), **self.metadata}

    def summary(self) -> str:
        return (f"{self.label}: step {_fmt(self.step_time)} (wait {_fmt(self.wait_time)}, compute "
                f"{_fmt(self.compute_time)}), utilisation {self.utilisation:.0%}, "
                f"start-up {_fmt(self.startups[0])}")

    def __repr__(self) -> str:
        return f"<Timeline {self.summary()}>"

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def apart(a: Timeline, b: Timeline, part: str = "step") -> bool:
    """True when the quartile ranges of ``part`` per steady step do not overlap: a difference this run's noise
    does not explain (overlapping quartiles: within the noise)."""
    validate.instance("a", a, Timeline)
    validate.instance("b", b, Timeline)
    return timing.apart(a.part(part), b.part(part))


def _quartiles(m: timing.Measurement) -> str:
    return f"{_fmt(m.p25)} to {_fmt(m.p75)}"


def _spread_row(t: Timeline) -> tuple[tuple[str, ...], bool]:
    """A row of medians and quartiles, and whether a mean of step or compute lies outside its quartiles."""
    step, wait, compute = (t.part(p) for p in PARTS)
    skewed = any(not m.p25 <= m.mean <= m.p75 for m in (step, compute))
    return ((t.label + (" *" if skewed else ""), _fmt(step.median), _quartiles(step), _fmt(wait.median),
             _fmt(compute.median), _quartiles(compute), display.percent(t.utilisation), _fmt(t.startups[0])), skewed)


def timelines_table(timelines: Sequence[Timeline], *, title: str | None = None, spread: bool = False) -> display.Table:
    """One row per loop: steady step time, wait, compute (means), utilisation (busy time share), first start-up;
    with ``spread`` the medians with the quartiles of step and compute instead, means outside them flagged."""
    validate.non_empty("timelines", timelines)
    for t in timelines:
        validate.instance("timelines", t, Timeline)
    validate.instance("spread", spread, bool)
    if not spread:
        return display.table(["loop", "step", "wait", "compute", "utilisation", "start-up"],
                             [t.row() for t in timelines], title=title,
                             note="Steady steps (first step of each epoch left out), means; utilisation = compute "
                                  "/ step time.")
    rows, flags = zip(*(_spread_row(t) for t in timelines))
    note = ("Steady steps (first step of each epoch left out): step, wait and compute are medians, quartiles over "
            "the steady steps; utilisation = total compute / total step time.")
    if any(flags):
        note += (" * the mean step or compute of this loop lies outside its quartiles: a few outlier steps, which "
                 "the utilisation (made of totals) includes.")
    return display.table(["loop", "step", "step quartiles", "wait", "compute", "compute quartiles", "utilisation",
                          "start-up"], rows, title=title, note=note)


def run_loop(
    batches: Iterable[Any],
    step: Callable[[Any], Any],
    *,
    epochs: int = 1,
    label: str = "loop",
    record: bool = True,
    **metadata: Any,
) -> Timeline:
    """Run ``step(batch)`` over every batch of ``batches`` for ``epochs`` epochs, timing wait and compute.

    Wait: from asking the iterator for the next batch until it arrives (the first step of an epoch includes
    ``iter()``, i.e. starting workers or threads, and the end of the previous epoch). Compute: ``step(batch)``
    plus ``course_utils.timing.sync`` of its result, so asynchronous frameworks are charged for the work they
    queued. ``record`` keeps a fingerprint of each batch (computed outside both timed intervals) to prove
    variants yield equal data. An exception raised by ``step`` or by the loader passes through unchanged.
    """
    if batches is None or isinstance(batches, (str, bytes)) or not isinstance(batches, Iterable):
        raise TypeError(f"batches must be an iterable of batches (a loader); got {type(batches).__name__} "
                        f"{batches!r:.60}")
    validate.function("step", step)
    validate.positive("epochs", epochs, integer=True)
    validate.text("label", label)
    validate.instance("record", record, bool)
    starts, waits, computes, epoch_of, prints = [], [], [], [], []
    origin = begin = _clock()
    for epoch in range(epochs):  # an epoch's first wait includes the end of the previous epoch (workers stop...)
        iterator = iter(batches)
        try:
            while True:
                try:
                    batch = next(iterator)
                except StopIteration:
                    break
                got = _clock()
                timing.sync(step(batch))
                done = _clock()
                starts.append(begin - origin)
                waits.append(got - begin)
                computes.append(done - got)
                epoch_of.append(epoch)
                if record:
                    prints.append(fingerprint(batch))
                del batch
                begin = _clock()
        finally:
            close = getattr(iterator, "close", None)
            if callable(close):
                close()
            del iterator
    if not waits:
        raise ValueError("batches yielded no batch")
    return Timeline(label, tuple(starts), tuple(waits), tuple(computes), tuple(epoch_of), tuple(prints), metadata)
