"""The instrumented training loop of notebook 04: per step, the time spent waiting for the batch and the time
spent computing (synchronised), kept as a ``Timeline``; "utilisation" here is always the accelerator's busy
time share: compute / (wait + compute) over the steady steps.

``run_loops`` runs several loaders in alternating rounds, one epoch each per round, so that a change in the
machine's load hits every loader alike; each epoch's median is then one paired replicate for
``cu.intervals.speedup`` (``Timeline.part(...).rounds``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from course_utils import calls, display, timing, validate
from course_utils.pipeline.dataset import fingerprint

_fmt = display.format_time
_clock = time.perf_counter  # module-level so that tests can drive the loop with a fake clock
PARTS = ("step", "wait", "compute")
CLOCK_FLOOR = 1e-9  # a per-round median below the clock's resolution counts as 1 ns, so that a ratio exists
LOOP_TIMEOUT = 480.0  # seconds one loop call (all its epochs and rounds) may run: under nbval's 600 s cell timeout
MAX_EPOCHS = 1000
MAX_ROUNDS = 100


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
        for name in ("starts", "waits", "computes", "epochs", "fingerprints"):
            validate.sequence(name, getattr(self, name))
        validate.instance("metadata", self.metadata, Mapping)
        if not self.waits or not len(self.starts) == len(self.waits) == len(self.computes) == len(self.epochs):
            raise ValueError("starts, waits, computes and epochs must be non-empty and of equal length")
        for name in ("starts", "waits", "computes"):
            for value in getattr(self, name):
                validate.non_negative(name, value)
        for value in self.epochs:
            validate.non_negative("epochs", value, integer=True)
        if list(self.epochs) != sorted(self.epochs):
            raise ValueError("epochs must not decrease from one step to the next")

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

    def _values(self, name: str) -> np.ndarray:
        waits, computes = np.asarray(self.waits), np.asarray(self.computes)
        return {"step": waits + computes, "wait": waits, "compute": computes}[name]

    def part(self, name: str = "step") -> timing.Measurement:
        """The steady steps' ``name`` times ("step" = wait + compute, "wait", "compute") as a Measurement (median,
        quartiles); with two epochs or more, its ``rounds`` are the epochs' medians, the paired replicates of
        ``cu.intervals.speedup`` when the epochs were run in alternating rounds (``run_loops``)."""
        validate.choice("name", name, PARTS)
        values = self._values(name)
        steady = self._steady()
        epochs = sorted(set(self.epochs))
        rounds = tuple(max(CLOCK_FLOOR, self.epoch_part(e, name).median) for e in epochs) if len(epochs) > 1 else ()
        return timing.Measurement(label=f"{self.label}: {name}", times=tuple(values[steady].tolist()),
                                  total=float(values[steady].sum()), rounds=rounds)

    def epoch_part(self, epoch: int, name: str = "wait") -> timing.Measurement:
        """One epoch's steady steps' ``name`` times (its first step, the start-up, left out) as a Measurement; an
        epoch of a single step keeps that step."""
        validate.choice("epoch", epoch, sorted(set(self.epochs)))
        validate.choice("name", name, PARTS)
        values = [float(v) for v, e in zip(self._values(name), self.epochs) if e == epoch]
        return timing.Measurement.from_times(f"{self.label}: epoch {epoch + 1} {name}", values[1:] or values)

    def epoch(self, epoch: int) -> Timeline:
        """The steps of one epoch (one round of ``run_loops``) as a Timeline of their own, numbered epoch 0."""
        validate.choice("epoch", epoch, sorted(set(self.epochs)))
        keep = [i for i, e in enumerate(self.epochs) if e == epoch]
        return Timeline(self.label, tuple(self.starts[i] - self.starts[keep[0]] for i in keep),
                        tuple(self.waits[i] for i in keep), tuple(self.computes[i] for i in keep),
                        (0,) * len(keep), tuple(self.fingerprints[i] for i in keep if i < len(self.fingerprints)),
                        dict(self.metadata))

    def startup_part(self) -> timing.Measurement:
        """The start-ups of the epochs after the first as a Measurement whose ``rounds`` are those start-ups: what
        a loader pays at each later ``iter()`` (restarting workers, or reusing persistent ones)."""
        later = self.startups[1:]
        if len(later) < 2:
            raise ValueError(f"{self.label!r} ran {len(self.startups)} epoch(s); comparing start-ups needs at least 3")
        return timing.Measurement(label=f"{self.label}: start-up", times=later, total=sum(later),
                                  rounds=tuple(max(CLOCK_FLOOR, s) for s in later))

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


def _quartiles(m: timing.Measurement) -> str:
    return f"{_fmt(m.p25)} to {_fmt(m.p75)}"


def _spread_row(t: Timeline) -> tuple[str, ...]:
    step, wait, compute = (t.part(p) for p in PARTS)
    return (t.label, _fmt(step.median), _quartiles(step), _fmt(wait.median), _fmt(compute.median),
            _quartiles(compute), display.percent(t.utilisation), _fmt(t.startups[0]))


def timeline_list(timelines: Iterable[Timeline] | Mapping[str, Timeline]) -> list[Timeline]:
    """``timelines`` (an iterable of Timelines, or a mapping's values) as a non-empty list, each one checked: what the
    tables and plots of several loops take."""
    if isinstance(timelines, Mapping):
        timelines = timelines.values()
    found = validate.non_empty("timelines", list(validate.instance("timelines", timelines, Iterable)))
    for t in found:
        validate.instance("timelines", t, Timeline)
    return found


def timelines_table(timelines: Iterable[Timeline], *, title: str | None = None, spread: bool = False) -> display.Table:
    """One row per loop: steady step time, wait, compute (means), utilisation (busy time share), first start-up;
    with ``spread`` the medians with the quartiles of step and compute instead."""
    timelines = timeline_list(timelines)
    validate.instance("spread", spread, bool)
    if not spread:
        return display.table(["loop", "step", "wait", "compute", "utilisation", "start-up"],
                             [t.row() for t in timelines], title=title,
                             note="Steady steps (first step of each epoch left out), means; utilisation = compute "
                                  "/ step time.")
    return display.table(["loop", "step", "step quartiles", "wait", "compute", "compute quartiles", "utilisation",
                          "start-up"], [_spread_row(t) for t in timelines], title=title,
                         note="Steady steps (first step of each epoch left out): step, wait and compute are medians, "
                              "quartiles over the steady steps; utilisation = total compute / total step time; "
                              "start-up: the first epoch's first wait.")


def _batches(name: str, batches: Any, epochs: int) -> Iterable[Any]:
    if batches is None or isinstance(batches, (str, bytes)) or not isinstance(batches, Iterable):
        raise TypeError(f"{name} must be an iterable of batches (a loader); got {type(batches).__name__} "
                        f"{batches!r:.60}")
    if isinstance(batches, Iterator) and epochs > 1:
        raise TypeError(f"{name} is a one-shot iterator ({type(batches).__name__}): a second epoch would be empty. "
                        "Pass the loader itself (re-iterable), or wrap one long iterator in "
                        "cu.pipeline.EpochsOf(iterator, steps)")
    return batches


@dataclass
class _Rows:
    starts: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    computes: list[float] = field(default_factory=list)
    epochs: list[int] = field(default_factory=list)
    prints: list[str] = field(default_factory=list)
    elapsed: float = 0.0  # this loop's own time so far, so that rounds of other loops leave no hole in starts

    def timeline(self, label: str, metadata: dict[str, Any]) -> Timeline:
        return Timeline(label, tuple(self.starts), tuple(self.waits), tuple(self.computes), tuple(self.epochs),
                        tuple(self.prints), metadata)


def _epoch(rows: _Rows, batches: Iterable[Any], step: Callable[[Any], Any], epoch: int, record: bool,
           guard: calls.Limit, what: str) -> None:
    """One epoch of ``step`` over ``batches``, appended to ``rows``."""
    before = len(rows.waits)
    origin = begin = _clock()
    guard.doing = f"iter() of {what}"
    iterator = iter(batches)
    try:
        while True:
            guard.doing = f"the loader of {what} (next batch)"
            try:
                batch = next(iterator)
            except StopIteration:
                break
            got = _clock()
            guard.doing = f"the step {getattr(step, '__name__', repr(step))!s:.60} of {what}"
            timing.sync(step(batch))
            done = _clock()
            rows.starts.append(rows.elapsed + begin - origin)
            rows.waits.append(got - begin)
            rows.computes.append(done - got)
            rows.epochs.append(epoch)
            if record:
                rows.prints.append(fingerprint(batch))
            del batch
            guard.check()
            begin = _clock()
    finally:
        close = getattr(iterator, "close", None)
        if callable(close):
            close()
        del iterator
    if len(rows.waits) == before:
        raise ValueError(f"batches of {what} yielded no batch in epoch {epoch + 1}")
    rows.elapsed += begin - origin


def run_loop(
    batches: Iterable[Any],
    step: Callable[[Any], Any],
    *,
    epochs: int = 1,
    label: str = "loop",
    record: bool = True,
    timeout: float = LOOP_TIMEOUT,
    **metadata: Any,
) -> Timeline:
    """Run ``step(batch)`` over every batch of ``batches`` for ``epochs`` epochs, timing wait and compute.

    Wait: from asking the iterator for the next batch until it arrives (the first step of an epoch includes
    ``iter()``, i.e. starting workers or threads). Compute: ``step(batch)``
    plus ``course_utils.timing.sync`` of its result, so asynchronous frameworks are charged for the work they
    queued. ``record`` keeps a fingerprint of each batch (computed outside both timed intervals) to prove
    variants yield equal data. A loader or step that does not return within ``timeout`` seconds (all epochs
    together) raises ``LearnerTimeout``; an exception raised by ``step`` or by the loader passes through.
    """
    validate.number("epochs", epochs, low=1, high=MAX_EPOCHS, integer=True)
    batches = _batches("batches", batches, epochs)
    validate.function("step", step)
    validate.text("label", label)
    validate.instance("record", record, bool)
    rows = _Rows()
    with calls.time_limit(timeout, repr(label)) as guard:
        for epoch in range(epochs):
            _epoch(rows, batches, step, epoch, record, guard, repr(label))
    return rows.timeline(label, metadata)


def run_loops(loops: Mapping[str, tuple[Iterable[Any], Callable[[Any], Any]]], *, rounds: int, record: bool = True,
              timeout: float = LOOP_TIMEOUT) -> dict[str, Timeline]:
    """Run each ``label: (batches, step)`` of ``loops`` for one epoch per round, ``rounds`` rounds, in turns (the
    order rotated by one each round); return one Timeline per label whose epochs are the rounds.

    Loops that ran in the same round shared the machine's moment, so each round's median is a paired replicate:
    ``cu.intervals.speedup(a.part(), b.part())`` turns them into an interval. ``timeout``: seconds for all of it.
    """
    validate.instance("loops", loops, Mapping)
    validate.non_empty("loops", loops)
    rounds = validate.number("rounds", rounds, low=2, high=MAX_ROUNDS, integer=True)
    validate.instance("record", record, bool)
    for label, pair in loops.items():
        validate.text("loops", label)
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"loops[{label!r}] must be a (batches, step) pair; got {type(pair).__name__}")
        _batches(f"loops[{label!r}] batches", pair[0], rounds)
        validate.function(f"loops[{label!r}] step", pair[1])
    names = list(loops)
    rows = {name: _Rows() for name in names}
    with calls.time_limit(timeout, "the loops") as guard:
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                _epoch(rows[name], loops[name][0], loops[name][1], r, record, guard, repr(name))
    return {name: rows[name].timeline(name, {"rounds": rounds}) for name in names}


class EpochsOf:
    """Re-iterable view of one long-lived ``iterator``: each ``iter()`` yields its next ``steps`` items.

    For loaders that are one iterator over many epochs (Grain's, a ``repeat()``-ed tf.data): their workers start
    once, at the first ``iter()`` of the loader, instead of once per epoch. An ``iter()`` that finds the iterator
    exhausted yields nothing (``run_loop`` then says so).
    """

    def __init__(self, iterator: Iterator[Any], steps: int) -> None:
        if not isinstance(iterator, Iterator):
            raise TypeError(f"iterator must be an iterator (what iter(loader) returns); got {type(iterator).__name__}")
        self.iterator = iterator
        self.steps = int(validate.number("steps", steps, low=1, high=10**6, integer=True))

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[Any]:
        for _ in range(self.steps):
            try:
                yield next(self.iterator)
            except StopIteration:
                return
