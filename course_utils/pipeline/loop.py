"""The instrumented training loop of notebook 04: per step, the wait for the batch and the synchronised compute, as
a ``Timeline``; ``run_loops`` alternates loaders in rounds, so that each round's median is a paired replicate."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import calls, declare, display, timing
from course_utils.pipeline.dataset import fingerprint

_fmt = display.format_time
_clock = time.perf_counter  # module-level so that tests can drive the loop with a fake clock
PARTS = ("step", "wait", "compute")
Part = Literal["step", "wait", "compute"]
CLOCK_FLOOR = 1e-9  # a per-round median below the clock's resolution counts as 1 ns, so that a ratio exists
MAX_EPOCHS, MAX_ROUNDS, MAX_STEPS = 1000, 100, 20_000  # steps: of all epochs of one loop
Seconds = Annotated[tuple[declare.NonNegativeFloat, ...], declare.MaxItems(MAX_STEPS)]


@declare.checked
@dataclass(frozen=True, repr=False)
class Timeline:
    """Per-step start, wait and compute of one loop (seconds) and each step's epoch; the first step of an epoch holds
    the loader's start-up, so the steady numbers leave it out and ``startups`` reports it."""

    label: declare.Text
    starts: Annotated[Seconds, declare.NonEmpty]
    waits: Annotated[Seconds, declare.SameLength("starts")]
    computes: Annotated[Seconds, declare.SameLength("starts")]
    epochs: Annotated[tuple[Annotated[int, declare.Range(0, MAX_EPOCHS)], ...], declare.SameLength("starts")]
    fingerprints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if list(self.epochs) != sorted(self.epochs):
            raise ValueError("epochs must not decrease from one step to the next")

    def _first(self) -> np.ndarray:
        return np.r_[True, np.diff(self.epochs) != 0]

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
        """Mean (wait + compute) per steady step, seconds."""
        return self.wait_time + self.compute_time

    @property
    def utilisation(self) -> float:
        """Accelerator busy time share: compute / (wait + compute) over the steady steps."""
        return self.compute_time / self.step_time if self.step_time > 0 else 0.0

    def _values(self, name: str) -> np.ndarray:
        waits, computes = np.asarray(self.waits), np.asarray(self.computes)
        return {"step": waits + computes, "wait": waits, "compute": computes}[name]

    @declare.checked
    def part(self, name: Part = "step") -> timing.Measurement:
        """The steady steps' ``name`` times as a Measurement; with two epochs or more its ``rounds`` are the epochs'
        medians, the paired replicates of ``cu.intervals.speedup`` when ``run_loops`` alternated them."""
        values, steady, epochs = self._values(name), self._steady(), sorted(set(self.epochs))
        rounds = tuple(max(CLOCK_FLOOR, self.epoch_part(e, name).median) for e in epochs) if len(epochs) > 1 else ()
        return timing.Measurement(label=f"{self.label}: {name}", times=tuple(values[steady].tolist()),
                                  total=float(values[steady].sum()), rounds=rounds)

    @declare.checked
    def epoch_part(self, epoch: int, name: Part = "wait") -> timing.Measurement:
        """One epoch's steady ``name`` times (its start-up left out; an epoch of one step keeps it)."""
        values = [float(v) for v, e in zip(self._values(name), self.epochs) if e == self._epoch(epoch)]
        return timing.Measurement.from_times(f"{self.label}: epoch {epoch + 1} {name}", values[1:] or values)

    def _epoch(self, epoch: int) -> int:
        if epoch not in self.epochs:
            raise ValueError(f"epoch must be one of {sorted(set(self.epochs))}; got {epoch!r}")
        return epoch

    @declare.checked
    def epoch(self, epoch: int) -> Timeline:
        """The steps of one epoch (one round of ``run_loops``) as a Timeline of their own, numbered epoch 0."""
        keep = [i for i, e in enumerate(self.epochs) if e == self._epoch(epoch)]
        return Timeline(self.label, tuple(self.starts[i] - self.starts[keep[0]] for i in keep),
                        tuple(self.waits[i] for i in keep), tuple(self.computes[i] for i in keep),
                        (0,) * len(keep), tuple(self.fingerprints[i] for i in keep if i < len(self.fingerprints)))

    def startup_part(self) -> timing.Measurement:
        """The later epochs' start-ups as a Measurement whose ``rounds`` they are: what each later ``iter()`` pays."""
        later = self.startups[1:]
        if len(later) < 2:
            raise ValueError(f"{self.label!r} ran {len(self.startups)} epoch(s); comparing start-ups needs at least 3")
        return timing.Measurement(label=f"{self.label}: start-up", times=later, total=sum(later),
                                  rounds=tuple(max(CLOCK_FLOOR, s) for s in later))

    def __repr__(self) -> str:
        return (f"<Timeline {self.label}: step {_fmt(self.step_time)} (wait {_fmt(self.wait_time)}, compute "
                f"{_fmt(self.compute_time)}), utilisation {self.utilisation:.0%}, start-up {_fmt(self.startups[0])}>")

    def _repr_html_(self) -> str:
        return timelines_table([self])._repr_html_()


Timelines = Annotated[Sequence[Timeline], declare.NonEmpty] | Annotated[Mapping[str, Timeline], declare.NonEmpty]


def timeline_list(timelines: Sequence[Timeline] | Mapping[str, Timeline]) -> list[Timeline]:
    """A declared ``Timelines`` argument as a list (a mapping's values)."""
    return list(timelines.values() if isinstance(timelines, Mapping) else timelines)


def _row(t: Timeline, spread: bool) -> tuple[str, ...]:
    if not spread:
        return (t.label, _fmt(t.step_time), _fmt(t.wait_time), _fmt(t.compute_time), display.percent(t.utilisation),
                _fmt(t.startups[0]))
    step, wait, compute = (t.part(p) for p in PARTS)
    return (t.label, _fmt(step.median), timing.quartiles(step, _fmt), _fmt(wait.median), _fmt(compute.median),
            timing.quartiles(compute, _fmt), display.percent(t.utilisation), _fmt(t.startups[0]))


@declare.checked
def timelines_table(timelines: Timelines, *, title: declare.Text | None = None, spread: bool = False) -> display.Table:
    """One row per loop: steady step, wait, compute (means; with ``spread`` medians and quartiles), utilisation (busy
    time share) and the first start-up."""
    header = (["loop", "step", "step quartiles", "wait", "compute", "compute quartiles", "utilisation", "start-up"]
              if spread else ["loop", "step", "wait", "compute", "utilisation", "start-up"])
    what = "medians, quartiles over the steady steps" if spread else "means"
    return display.table(header, [_row(t, spread) for t in timeline_list(timelines)], title=title,
                         note=f"Steady steps (first step of each epoch left out), {what}; utilisation = total compute "
                              "/ total step time; start-up: the first epoch's first wait.")


def _batches(name: str, batches: Iterable[Any], epochs: int) -> None:
    if isinstance(batches, Iterator) and epochs > 1:
        raise TypeError(f"{name} is a one-shot iterator ({type(batches).__name__}): a second epoch would be empty. "
                        "Pass the loader itself, or wrap one long iterator in cu.pipeline.EpochsOf(iterator, steps)")


def _close(iterator: Any) -> None:
    """Stop a loader's iterator (its workers or threads) if it can be stopped."""
    close = getattr(iterator, "close", None)
    if callable(close):
        close()


class _Rows:
    def __init__(self) -> None:
        self.starts, self.waits, self.computes, self.epochs, self.prints, self.elapsed = [], [], [], [], [], 0.0

    def timeline(self, label: str) -> Timeline:
        return Timeline(label, *map(tuple, (self.starts, self.waits, self.computes, self.epochs, self.prints)))


def _epoch(rows: _Rows, batches: Iterable[Any], step: Callable[[Any], Any], epoch: int, timeout: float | None,
           what: str) -> None:
    """One epoch of ``step`` over ``batches``, appended to ``rows``, under ``timeout`` (None: the size's default)."""
    before = len(rows.waits)
    origin = begin = _clock()
    with calls.time_limit(timeout, f"iter() of {what}") as guard:
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
                rows.prints.append(fingerprint(batch))
                del batch
                guard.check()
                begin = _clock()
        finally:
            _close(iterator)
            del iterator
    if len(rows.waits) == before:
        raise ValueError(f"batches of {what} yielded no batch in epoch {epoch + 1}")
    rows.elapsed += begin - origin


@declare.checked
def run_loop(batches: Iterable, step: Callable, *, epochs: Annotated[int, declare.Range(1, MAX_EPOCHS)] = 1,
             label: declare.Text = "loop", timeout: calls.Timeout = None) -> Timeline:
    """``step(batch)`` over ``batches`` for ``epochs`` epochs, its wait (``iter()`` included) and its synchronised
    compute timed apart, each batch fingerprinted off the clock; an epoch past ``timeout`` (None: the size's) raises."""
    _batches("batches", batches, epochs)
    return _run({label: (batches, step)}, epochs, timeout)[label]


@declare.checked
def run_loops(loops: Annotated[Mapping[declare.Text, tuple[Iterable, Callable]], declare.NonEmpty,
                               declare.MaxItems(32)],
              *, rounds: Annotated[int, declare.Range(2, MAX_ROUNDS)], timeout: calls.Timeout = None,
              ) -> dict[str, Timeline]:
    """Each ``label: (batches, step)`` for one epoch per round, in turns (the order rotated each round): one Timeline
    per label whose epochs are the rounds, paired replicates for ``cu.intervals.speedup(a.part(), b.part())``.
    ``timeout``: seconds per epoch (None: the size's default)."""
    for label, (batches, _) in loops.items():
        _batches(f"loops[{label!r}] batches", batches, rounds)
    return _run(loops, rounds, timeout)


def _run(loops: Mapping[str, Any], rounds: int, timeout: float | None) -> dict[str, Timeline]:
    names = list(loops)
    rows = {name: _Rows() for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            _epoch(rows[name], loops[name][0], loops[name][1], r, timeout, repr(name))
    return {name: rows[name].timeline(name) for name in names}


@declare.checked
class EpochsOf:
    """Re-iterable view of one long-lived ``iterator`` (Grain's, a repeated tf.data): each ``iter()`` yields its next
    ``steps`` items, so its workers start once, not per epoch."""

    def __init__(self, iterator: Any, steps: Annotated[int, declare.Range(1, MAX_STEPS)]) -> None:
        if not isinstance(iterator, Iterator):
            raise TypeError(f"iterator must be an iterator (what iter(loader) returns); got {type(iterator).__name__}")
        self.iterator, self.steps = iterator, steps

    def __iter__(self) -> Iterator[Any]:
        for _ in range(self.steps):
            try:
                yield next(self.iterator)
            except StopIteration:
                return
