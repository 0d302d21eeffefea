"""A whole training step, compiled, against the *same program* run eagerly, in all three frameworks: the notebook
builds both steps from the course's own (``models.torch_sgd_step``, ``jax_sgd_step``, ``keras_sgd_step``); these
helpers run, time and compare the steps they are given. ``step_medians`` is the one a fresh process runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from course_utils import calls, data, declare, display, interop, intervals, models, timing
from course_utils.declare import MinItems, NonEmpty, NonNegativeFloat, Range, SameLength
from course_utils.graphs.breakeven import timed_pair
from course_utils.measuring.workloads import Framework, MinTime, Pair, Rounds

StepPair = Annotated[tuple[Callable[..., Any], Callable[..., Any]], MinItems(2)]
MAX_STEPS = 10_000
EAGER_STEP, COMPILED_STEP = "torch eager step", "torch.compile step"


@declare.checked
@dataclass(frozen=True)
class LossRun:
    """Losses of the same steps, eager and compiled, and the compiled first step (trace + compile) in seconds."""

    framework: Framework
    eager: Annotated[tuple[float, ...], NonEmpty]
    compiled: Annotated[tuple[float, ...], SameLength("eager")]
    first_compiled_step: NonNegativeFloat

    @property
    def max_abs_diff(self) -> float:
        return float(np.max(np.abs(np.subtract(self.eager, self.compiled))))


@contextmanager
def _quiet_record_function() -> Iterator[None]:
    """Drop Dynamo's warning that it ignores the ``record_function`` range every optimizer's step opens: harmless."""
    logger = logging.getLogger("torch._dynamo.variables.ctx_manager")

    def dropped(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Profiler record function")

    logger.addFilter(dropped)
    try:
        yield
    finally:
        logger.removeFilter(dropped)


@declare.checked
def run_losses(framework: Framework, eager: Callable[[Any], Any], compiled: Callable[[Any], Any],
               batch: Sequence[Any], steps: Annotated[int, Range(1, MAX_STEPS)], *,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> LossRun:
    """Run ``steps`` steps of ``eager`` and of ``compiled`` (``step(batch) -> loss``) on ``batch``: the losses and
    the compiled first step's seconds. Each side runs under ``timeout`` seconds (None: the size's default)."""
    with calls.time_limit(timeout, calls.describe(compiled)):
        start = time.perf_counter()
        with _quiet_record_function():
            losses = [float(timing.sync(compiled(batch)))]
        first = time.perf_counter() - start
        losses += [float(compiled(batch)) for _ in range(steps - 1)]
    with calls.time_limit(timeout, calls.describe(eager)):
        eager_losses = [float(eager(batch)) for _ in range(steps)]
    return LossRun(framework, tuple(eager_losses), tuple(losses), first)


@declare.checked
def step_times(steps: Annotated[Mapping[str, StepPair], NonEmpty], batches: Mapping[str, Sequence[Any]], *,
               rounds: Rounds = 6, min_time: MinTime = 0.4,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, Pair]:
    """Per framework, (eager, compiled) step times on its batch, timed in ``rounds`` alternating rounds."""
    found = {}
    for fw, (eager, compiled) in steps.items():
        found[fw] = timed_pair(eager, compiled, (batches[fw],), label=fw, min_time=min_time, rounds=rounds,
                               timeout=timeout)
    return found


@declare.checked
def step_medians(batch: Annotated[int, Range(1, 2**16)], *, lr: Annotated[float, Range(1e-6, 10)] = 0.1,
                 warmup: Annotated[int, Range(1, 100)] = 3, rounds: Annotated[int, Range(2, 20)] = 2,
                 min_time: Annotated[float, Range(0.01, 60)] = 0.2,
                 threads: Annotated[int, Range(1, 1024)] | None = None) -> dict[str, float]:
    """One fresh process's measurement for ``cu.fresh.replicate``: section 8's compiled torch step (model and
    ``optimizer.step``) against the eager one, after ``warmup`` steps: {EAGER_STEP, COMPILED_STEP: median seconds}."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    eager = models.torch_sgd_step(models.torch_mlp(), lr=lr)
    compiled = models.torch_sgd_step(torch.compile(models.torch_mlp()), lr=lr)
    compiled.optimizer.step = torch.compile(compiled.optimizer.step)  # type: ignore[attr-defined]
    pair = interop.to_framework("torch", *data.classification(batch))
    with _quiet_record_function():
        for _ in range(warmup):
            timing.sync(eager(pair)), timing.sync(compiled(pair))
    e, c = timed_pair(eager, compiled, (pair,), label="step", rounds=rounds, min_time=min_time)
    return {EAGER_STEP: e.median, COMPILED_STEP: c.median}


@declare.checked
def step_table(runs: Mapping[str, LossRun], times: Annotated[Mapping[str, Pair], NonEmpty]) -> display.Table:
    """Per framework: eager and compiled step medians, the speed-up over its own eager step, the first step."""
    rows = [(fw, display.format_time(e.median), display.format_time(c.median), str(intervals.speedup(e, c)),
             display.format_time(runs[fw].first_compiled_step) if fw in runs else "-") for fw, (e, c) in times.items()]
    return display.table(["framework", "eager step (median)", "compiled step (median)", "speed-up over own eager",
                          "first compiled step (compile)"], rows, title="One SGD step of the MLP, same program",
                         note=_RATIO_NOTE)


_RATIO_NOTE = ("the speed-up is the geometric mean of the per-round ratios, not the ratio of the two medians; its "
               "interval is in this process")


def _forward_backward(model: Any, optimizer: Any) -> Callable[[Any], Any]:
    """The step without its update: zero the gradients, forward, loss, backward (as ``torch_sgd_step`` does)."""
    import torch.nn.functional as F

    def part(batch: Any) -> Any:
        x, y = batch
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss.detach()

    return part


@declare.checked
def step_parts(models: Annotated[Sequence[Any], MinItems(2)], steps: Annotated[Sequence[Callable[..., Any]],
               MinItems(2)], batch: Sequence[Any], *, rounds: Rounds = 6, min_time: MinTime = 0.2,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, Pair]:
    """PyTorch's step part by part ("forward + backward", "optimizer.step"), each eager and compiled in alternating
    rounds; ``models`` and ``steps`` are the notebook's (eager, compiled) pairs, called after the steps ran."""
    optimizers = [getattr(s, "optimizer", None) for s in steps]
    if len(models) != 2 or len(steps) != 2 or any(o is None for o in optimizers):
        raise ValueError("models and steps must be (eager, compiled) pairs, the steps from cu.models.torch_sgd_step "
                         "(they carry .optimizer)")
    found = {}
    for name, (eager, compiled, args) in {
            "forward + backward": (*(_forward_backward(m, o) for m, o in zip(models, optimizers)), (batch,)),
            "optimizer.step": (optimizers[0].step, optimizers[1].step, ())}.items():
        found[name] = timed_pair(eager, compiled, args, label=name, min_time=min_time, rounds=rounds, timeout=timeout)
    return found


@declare.checked
def parts_table(parts: Annotated[Mapping[str, Pair], NonEmpty], step: Pair) -> display.Table:
    """PyTorch's step part by part and whole: eager and compiled medians, eager over compiled with its interval."""
    rows = [(name, display.format_time(e.median), display.format_time(c.median), str(intervals.speedup(e, c)))
            for name, (e, c) in {**parts, "whole step": step}.items()]
    return display.table(["part", "eager (median)", "compiled (median)", "eager over compiled"], rows,
                         title="PyTorch's training step, part by part", note=_RATIO_NOTE)
