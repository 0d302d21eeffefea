"""A whole training step, compiled, against the *same program* run eagerly, in all three frameworks.

The learner builds both steps in the notebook from the course's own steps (``models.torch_sgd_step``,
``jax_sgd_step``, ``keras_sgd_step``: SGD on the tiny MLP with identical initial weights): PyTorch as its tutorials
do it, ``torch.compile(model)`` plus a compiled ``optimizer.step``, against the same step on an uncompiled model;
JAX's ``jax.jit``-ed update against the same update called without ``jit`` (op-by-op dispatch of ordinary jnp
calls); Keras's ``tf.function(jit_compile=True)`` against the same step run eagerly. The helpers here run,
time and compare the steps they are given.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import calls, display, interop, intervals, timing, validate

MAX_STEPS = 10_000


def batch_for(framework: str, x: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
    """``(x, y)`` NumPy arrays as the framework's tensors."""
    name = validate.framework(framework)
    validate.instance("x", x, np.ndarray)
    validate.instance("y", y, np.ndarray)
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length; got {len(x)} and {len(y)}")
    return interop.to_framework(name, x, y)


@dataclass(frozen=True)
class LossRun:
    """Losses of the same steps, eager and compiled, and the compiled first step (trace + compile) in seconds."""

    framework: str
    eager: tuple[float, ...]
    compiled: tuple[float, ...]
    first_compiled_step: float

    def __post_init__(self) -> None:
        validate.framework(self.framework)
        validate.sequence("eager", self.eager)
        validate.sequence("compiled", self.compiled)
        validate.non_negative("first_compiled_step", self.first_compiled_step)
        if len(self.eager) != len(self.compiled) or not self.eager:
            raise ValueError(f"eager and compiled must hold the same, non-zero number of losses; got "
                             f"{len(self.eager)} and {len(self.compiled)}")

    @property
    def max_abs_diff(self) -> float:
        return float(np.max(np.abs(np.subtract(self.eager, self.compiled))))


class _DropRecordFunction(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Profiler record function")


@contextmanager
def _quiet_record_function() -> Iterator[None]:
    """Drop Dynamo's one warning that it ignores the ``record_function`` profiler range ``Optimizer.step`` opens
    (PyTorch wraps every optimizer's step in one): the compiled step has no such range, which is harmless here."""
    logger, dropped = logging.getLogger("torch._dynamo.variables.ctx_manager"), _DropRecordFunction()
    logger.addFilter(dropped)
    try:
        yield
    finally:
        logger.removeFilter(dropped)


def run_losses(framework: str, eager: Callable[[Any], Any], compiled: Callable[[Any], Any], batch: Sequence[Any],
               steps: int, *, timeout: float = 600.0) -> LossRun:
    """Run ``steps`` steps of ``eager`` and of ``compiled`` (the learner's steps, ``step(batch) -> loss``) on
    ``batch``; keep the losses and the compiled first step's seconds. Each side runs under ``timeout`` seconds."""
    name = validate.framework(framework)
    validate.function("eager", eager)
    validate.function("compiled", compiled)
    validate.instance("batch", batch, (tuple, list))
    steps = validate.number("steps", steps, low=1, high=MAX_STEPS, integer=True)
    timeout = validate.seconds("timeout", timeout)
    with calls.time_limit(timeout, calls.describe(compiled)):
        start = time.perf_counter()
        with _quiet_record_function():
            losses = [float(timing.sync(compiled(batch)))]
        first = time.perf_counter() - start
        losses += [float(compiled(batch)) for _ in range(steps - 1)]
    with calls.time_limit(timeout, calls.describe(eager)):
        eager_losses = [float(eager(batch)) for _ in range(steps)]
    return LossRun(name, tuple(eager_losses), tuple(losses), first)


def step_times(steps: Mapping[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]],
               batches: Mapping[str, Sequence[Any]], *, rounds: int = 6, min_time: float = 0.4,
               timeout: float = 600.0) -> dict[str, tuple[timing.Measurement, timing.Measurement]]:
    """Per framework, (eager, compiled) step times on its batch, the two timed in ``rounds`` alternating rounds so
    that ``cu.intervals.speedup`` can pair them."""
    validate.instance("steps", steps, Mapping)
    validate.non_empty("steps", steps)
    validate.instance("batches", batches, Mapping)
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    timeout = validate.seconds("timeout", timeout)
    found = {}
    for fw, pair in steps.items():
        validate.instance(f"steps[{fw!r}]", pair, tuple)
        if len(pair) != 2:
            raise ValueError(f"steps[{fw!r}] must be (eager step, compiled step); got {len(pair)} items")
        eager, compiled = (validate.function(f"steps[{fw!r}]", s) for s in pair)
        if fw not in batches:
            raise ValueError(f"batches has no batch for {fw!r}")
        batch = batches[fw]
        with calls.time_limit(timeout, calls.describe(compiled)):
            timed = timing.interleaved({"eager": lambda e=eager, b=batch: e(b), "compiled": lambda c=compiled, b=batch:
                                        c(b)}, rounds=rounds, min_time=min_time)
        found[fw] = (timed["eager"], timed["compiled"])
    return found


def step_table(runs: Mapping[str, LossRun], times: Mapping[str, tuple[timing.Measurement, timing.Measurement]],
               ) -> display.Table:
    """Per framework: eager and compiled step medians (after warm-up), the speed-up over its own eager step with
    its interval, and the compiled first step measured when it really was the first call."""
    validate.instance("runs", runs, Mapping)
    validate.instance("times", times, Mapping)
    validate.non_empty("times", times)
    rows = []
    for fw, (eager, compiled) in times.items():
        first = display.format_time(runs[fw].first_compiled_step) if fw in runs else "-"
        rows.append((fw, display.format_time(eager.median), display.format_time(compiled.median),
                     str(intervals.speedup(eager, compiled)), first))
    return display.table(["framework", "eager step", "compiled step", "speed-up over own eager",
                          "first compiled step (compile)"], rows, title="One SGD step of the MLP, same program")


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


def step_parts(models: Sequence[Any], steps: Sequence[Callable[[Any], Any]], batch: Sequence[Any], *,
               rounds: int = 6, min_time: float = 0.2) -> dict[str, tuple[timing.Measurement, timing.Measurement]]:
    """PyTorch's step, part by part: ``models`` and ``steps`` are (eager, compiled) pairs as the notebook built
    them (each step made by ``models.torch_sgd_step``, so it carries its ``optimizer``). "forward + backward" and
    "optimizer.step" are each timed eager and compiled in alternating rounds; call after the steps ran, so the parts
    reuse their compiled code (``optimizer.step`` works on the gradients the other part leaves)."""
    validate.instance("models", models, (tuple, list))
    validate.instance("steps", steps, (tuple, list))
    if len(models) != 2 or len(steps) != 2:
        raise ValueError("models and steps must each be an (eager, compiled) pair")
    validate.instance("batch", batch, (tuple, list))
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    optimizers = [getattr(s, "optimizer", None) for s in steps]
    if any(o is None for o in optimizers):
        raise ValueError("steps must come from cu.models.torch_sgd_step (they carry .optimizer)")
    found = {}
    for name, (eager, compiled, args) in {
            "forward + backward": (*(_forward_backward(m, o) for m, o in zip(models, optimizers)), (batch,)),
            "optimizer.step": (optimizers[0].step, optimizers[1].step, ())}.items():
        with calls.time_limit(calls.DEFAULT_TIMEOUT, calls.describe(compiled)):
            timed = timing.interleaved({"eager": lambda f=eager, a=args: f(*a), "compiled": lambda f=compiled, a=args:
                                        f(*a)}, rounds=rounds, min_time=min_time)
        found[name] = (timed["eager"], timed["compiled"])
    return found


def parts_table(parts: Mapping[str, tuple[timing.Measurement, timing.Measurement]],
                step: tuple[timing.Measurement, timing.Measurement]) -> display.Table:
    """PyTorch's step part by part and whole: eager and compiled medians, eager time over compiled with its
    interval (each pair timed in its own alternating rounds)."""
    validate.instance("parts", parts, Mapping)
    validate.non_empty("parts", parts)
    validate.instance("step", step, tuple)
    rows = [(name, display.format_time(e.median), display.format_time(c.median), str(intervals.speedup(e, c)))
            for name, (e, c) in {**parts, "whole step": step}.items()]
    return display.table(["part", "eager", "compiled", "eager over compiled"], rows,
                         title="PyTorch's training step, part by part")
