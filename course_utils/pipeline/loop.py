"""The instrumented training loop of notebook 04: per step, the wait for the batch and the synchronised compute
(a ``Timeline``), loops run in alternating rounds and compared, and the model steps they time (``warm_steps``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import calls, declare, display, env, interop, intervals, models, timing, validate
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
    """Per-step start, wait and compute of one loop (seconds) and each step's epoch; an epoch's first step holds
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
        """The steady steps' ``name`` times; its ``rounds`` are the epochs' medians (the paired replicates)."""
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
    """One row per loop: steady step, wait, compute (means, or medians and quartiles with ``spread``),
    utilisation and the first start-up."""
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
    compute timed apart, each batch fingerprinted off the clock."""
    _batches("batches", batches, epochs)
    return _run({label: (batches, step)}, epochs, timeout)[label]


@declare.checked
def run_loops(loops: Annotated[Mapping[declare.Text, tuple[Iterable, Callable]], declare.NonEmpty,
                               declare.MaxItems(32)],
              *, rounds: Annotated[int, declare.Range(2, MAX_ROUNDS)], timeout: calls.Timeout = None,
              ) -> dict[str, Timeline]:
    """Each ``label: (batches, step)`` for one epoch per round, the order rotated each round: one Timeline per label
    whose epochs are paired replicates for ``cu.intervals.speedup(a.part(), b.part())``."""
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
    """Re-iterable view of one long-lived ``iterator`` (Grain's): each ``iter()`` yields its next ``steps`` items."""

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


@declare.checked
def ms(seconds: Annotated[float, declare.Range(0, 1e7)]) -> str:
    """'12.3 ms' (one decimal) for a step-sized time; below a millisecond, three significant digits ('23.1 µs')."""
    return f"{seconds * 1e3:.1f} ms" if seconds >= 1e-3 else display.format_time(seconds)


def _median(m: timing.Measurement) -> str:  # '21.4 ms (19.6 ms to 26.2 ms)'
    return f"{ms(m.median)} ({timing.quartiles(m, ms)})"


@declare.checked
def later_startups(run: Timeline) -> str:
    """'53, 49, 49 ms': the first batch's wait of every epoch after the first (what persistent workers change)."""
    starts = run.startups[1:]
    if not starts:
        raise ValueError(f"run ({run.label!r}) ran one epoch; later start-ups need at least 2")
    return ", ".join(f"{s * 1e3:.0f}" for s in starts) + " ms"


@declare.checked
def floor(alone: Timeline) -> timing.Measurement:
    """The step perfect overlap could reach, per round of ``alone``: max(median compute, median wait), as rounds
    that pair with the other loops of the same ``run_loops``."""
    epochs = sorted(set(alone.epochs))
    if len(epochs) < 2:
        raise ValueError(f"alone ({alone.label!r}) ran {len(epochs)} round(s); a floor per round needs at least 2")
    per_round = tuple(max(CLOCK_FLOOR, alone.epoch_part(e, "compute").median, alone.epoch_part(e, "wait").median)
                      for e in epochs)
    return timing.Measurement(label=f"max(compute, data) of {alone.label}", times=per_round, total=sum(per_round),
                              rounds=per_round)


BeforeAfter = Annotated[Mapping[declare.Text, tuple[Timeline, Timeline]], declare.NonEmpty, declare.MaxItems(8)]


@declare.checked
def before_after_table(before_after: BeforeAfter) -> display.Table:
    """One row per framework: busy share, median compute and step before and after, and the step's speed-up
    (the geometric mean of the per-round ratios) with its interval."""
    rows, rounds = [], set()
    for framework, (a, b) in before_after.items():
        gain = intervals.speedup(a.part(), b.part())
        rounds.add(gain.n)
        rows.append((framework, display.percent(a.utilisation), display.percent(b.utilisation),
                     _median(a.part("compute")), _median(b.part("compute")), _median(a.part()), _median(b.part()),
                     f"{gain.printed()[0]} ({gain.interval}): {gain.outcome}"))
    n = "/".join(str(r) for r in sorted(rounds))
    return display.table(["framework", "busy before", "busy after", "compute before", "compute after",
                          "step before", "step after", f"step speed-up: geometric mean of {n} per-round ratios"],
                         rows, title="Before and after, steady steps",
                         note="Busy share = total compute / total step time over the steady steps; compute and step "
                              "are medians per steady step (quartiles in brackets). The speed-up is not the ratio of "
                              "the two medians: it is the geometric mean of each round's before / after, each "
                              "framework against its own baseline, with a 95% interval over those paired rounds.")


Widths = Annotated[Sequence[Annotated[int, declare.Range(1, 10**6)]], declare.MinItems(2), declare.MaxItems(16)]


def _mlp_step(framework: str, sizes: Sequence[int], lr: float) -> Callable[[Any], Any]:
    """``step((x, y)) -> loss``: one SGD step of ``models``' MLP on flattened images (torch on the GPU if any)."""
    if framework == "torch":
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return models.torch_sgd_step(models.torch_mlp(sizes, seed=0).to(device), lr=lr, device=device, flatten=True)
    if framework == "jax":
        return models.jax_sgd_step(models.jax_mlp_params(sizes, seed=0), models.jax_mlp_apply, lr=lr, flatten=True)
    return models.keras_sgd_step(models.keras_mlp(sizes, seed=0), lr=lr, flatten=True)


@declare.checked
def warm_steps(sizes: Widths, batch: tuple[Any, Any], *,
               frameworks: Annotated[Sequence[declare.Text], declare.NonEmpty, declare.Unique] | None = None,
               lr: Annotated[float, declare.Range(0, 10, low_open=True)] = 0.05,
               ) -> tuple[dict[str, Any], dict[str, float]]:
    """(steps, first losses): an MLP step per framework present (or in ``frameworks``), each called once on
    ``batch`` so that jax.jit and tf.function compile before the clock runs."""
    x, y = (np.asarray(a) for a in batch)
    if x.ndim < 2 or y.shape != (len(x),) or x[0].size != sizes[0]:
        raise ValueError(f"batch must be (inputs (B, ...) of sizes[0] = {sizes[0]} numbers each, labels (B,)); got "
                         f"shapes {x.shape} and {y.shape}")
    names = env.installed_frameworks() if frameworks is None else [validate.framework(f, "frameworks")
                                                                   for f in frameworks]
    models.mlp_weights(sizes)  # widths whose weights do not fit in memory are refused here, by name
    steps = {name: _mlp_step(name, sizes, lr) for name in names}
    return steps, {name: float(step(interop.to_framework(name, *batch))) for name, step in steps.items()}
