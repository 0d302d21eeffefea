"""A whole training step, compiled, against the *same program* run eagerly, in all three frameworks.

The steps are the course's own (``models.torch_sgd_step``, ``jax_sgd_step``, ``keras_sgd_step``): SGD on the
tiny MLP with identical initial weights. Compiled: PyTorch as the tutorials do it, ``torch.compile(model)``
plus a compiled ``optimizer.step``; JAX's step is ``jax.jit``-ed; Keras's a ``tf.function(jit_compile=True)``.
Eager: the same step objects with compilation switched off by each framework's own switch (``eager_mode``),
or, for PyTorch, an uncompiled model and optimizer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from course_utils import display, interop, models, timing, validate
from course_utils.graphs.fallback import eager_mode


@dataclass(frozen=True)
class StepPair:
    """Two training steps of one framework that run the same program, one eagerly and one compiled."""

    framework: str
    eager: Callable[[Any], Any] = field(repr=False)
    compiled: Callable[[Any], Any] = field(repr=False)
    how: str
    # PyTorch only: the parts of each step, to time apart (``step_parts``): name -> (eager part, compiled part)
    parts: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = field(default_factory=dict, repr=False)


def step_pair(framework: str, *, lr: float = 0.1) -> StepPair:
    """Fresh eager and compiled SGD steps for the course MLP in ``framework`` (identical initial weights)."""
    name = validate.framework(framework)
    validate.positive("lr", lr)
    if name == "torch":
        import torch

        eager_model, compiled_model = models.torch_mlp(), torch.compile(models.torch_mlp())
        eager = models.torch_sgd_step(eager_model, lr=lr)
        compiled = models.torch_sgd_step(compiled_model, lr=lr)
        optimizer = compiled.optimizer  # type: ignore[attr-defined]
        optimizer.step = torch.compile(optimizer.step)  # the compiled optimizer step of the PyTorch tutorial
        parts = {"forward + backward": (_forward_backward(eager_model, eager.optimizer),  # type: ignore[attr-defined]
                                        _forward_backward(compiled_model, optimizer)),
                 "optimizer.step": (eager.optimizer.step, optimizer.step)}  # type: ignore[attr-defined]
        return StepPair(name, eager, compiled, "torch.compile(model) + torch.compile(optimizer.step)", parts)
    if name == "jax":
        eager_step = models.jax_sgd_step(models.jax_mlp_params(), models.jax_mlp_apply, lr=lr)
        compiled = models.jax_sgd_step(models.jax_mlp_params(), models.jax_mlp_apply, lr=lr)
        return StepPair(name, _switched_off(name, eager_step), compiled, "jax.jit(update)")
    eager_step = models.keras_sgd_step(models.keras_mlp(), lr=lr, jit_compile=True)
    compiled = models.keras_sgd_step(models.keras_mlp(), lr=lr, jit_compile=True)
    return StepPair(name, _switched_off(name, eager_step), compiled, "tf.function(jit_compile=True)")


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


def step_parts(pair: StepPair, batch: Sequence[Any], *, min_time: float = 0.2,
               ) -> dict[str, tuple[timing.Measurement, timing.Measurement]]:
    """Each part of ``pair``'s step timed apart, eager and compiled ({} when the pair has no parts: JAX and
    TensorFlow compile the step as one program). Call after the steps ran: the parts reuse their compiled code;
    ``optimizer.step`` is timed on the gradients the forward + backward part leaves."""
    validate.instance("pair", pair, StepPair)
    validate.instance("batch", batch, (tuple, list))
    validate.positive("min_time", min_time)
    found = {}
    for name, (eager, compiled) in pair.parts.items():
        args = (batch,) if name != "optimizer.step" else ()
        found[name] = (timing.benchmark(eager, *args, min_time=min_time, label=f"{name} eager"),
                       timing.benchmark(compiled, *args, min_time=min_time, label=f"{name} compiled"))
    return found


def step_parts_text(parts: dict[str, tuple[timing.Measurement, timing.Measurement]],
                    step: tuple[timing.Measurement, timing.Measurement]) -> str:
    """The parts of the step against the whole: each part's ratio, the parts' sum against the whole step on
    both sides, and each part's share of what the whole compiled step lost or won (uncapped); '' without parts.
    Why a part is slower is left to ``steptrace``, which measures where the time goes."""
    validate.instance("parts", parts, dict)
    if not parts:
        return ""
    eager_step, compiled_step = step
    fmt = display.format_time
    text = "Timed apart: " + "; ".join(f"{name} {fmt(c.median)} compiled against {fmt(e.median)} eager "
                                        f"({e.median / c.median:.3g}x)" for name, (e, c) in parts.items()) + ". "
    e_sum, c_sum = sum(e.median for e, _ in parts.values()), sum(c.median for _, c in parts.values())
    e_whole, c_whole = e_sum / eager_step.median, c_sum / compiled_step.median
    text += (f"Added up, the parts take {fmt(c_sum)} compiled and {fmt(e_sum)} eager, against "
             f"{fmt(compiled_step.median)} and {fmt(eager_step.median)} for the whole steps ({c_whole:.2f}x and "
             f"{e_whole:.2f}x the whole)"
             + (". " if 0.8 <= c_whole <= 1.25 and 0.8 <= e_whole <= 1.25 else
                ": timed alone, the parts do not add up to the step (each pays its own call and was timed at "
                "another moment), and which of those makes the difference is not established by this run. "))
    diff = compiled_step.median - eager_step.median
    deltas = {name: c.median - e.median for name, (e, c) in parts.items()}
    if abs(diff) < 1e-12:
        return text
    word = "slower" if diff > 0 else "faster"
    text += (f"The whole compiled step is {fmt(abs(diff))} {word} than eager; part by part, "
             + ", ".join(f"{name} {fmt(abs(d))} {'slower' if d > 0 else 'faster'} ({d / diff:.0%} of that)"
                         for name, d in deltas.items())
             + f", {sum(deltas.values()) / diff:.0%} together")
    if not 0.8 <= sum(deltas.values()) / diff <= 1.25:
        text += ": the parts' differences do not add up to the step's, so they describe the parts timed alone"
    slower = [name for name, d in deltas.items() if d > 0]
    if diff > 0 and slower:
        text += (". Compiled, " + " and ".join(f"{name} runs at {parts[name][0].median / parts[name][1].median:.3g}x "
                                               "its eager twin" for name in slower))
    return text + ". "


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


def _switched_off(framework: str, step: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def eager(batch: Any) -> Any:
        with eager_mode(framework):
            return step(batch)

    return eager


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

    @property
    def max_abs_diff(self) -> float:
        return float(np.max(np.abs(np.subtract(self.eager, self.compiled))))


def run_losses(pair: StepPair, batch: Sequence[Any], steps: int) -> LossRun:
    """Run ``steps`` steps of each side of ``pair`` on ``batch``; keep the losses and the first compiled step."""
    validate.instance("pair", pair, StepPair)
    validate.instance("batch", batch, (tuple, list))
    validate.number("steps", steps, low=1, high=10_000, integer=True)
    start = time.perf_counter()
    with _quiet_record_function():
        compiled = [float(timing.sync(pair.compiled(batch)))]
    first = time.perf_counter() - start
    compiled += [float(pair.compiled(batch)) for _ in range(steps - 1)]
    eager = [float(pair.eager(batch)) for _ in range(steps)]
    return LossRun(pair.framework, tuple(eager), tuple(compiled), first)


def step_table(runs: dict[str, LossRun], times: dict[str, tuple[timing.Measurement, timing.Measurement]],
               ) -> display.Table:
    """Per framework: eager and compiled step medians (after warm-up), speed-up over its own eager step, and
    the compiled first step measured when it really was the first call."""
    validate.non_empty("times", times)
    rows = []
    for fw, (eager, compiled) in times.items():
        low, high = eager.p25 / compiled.p75, eager.p75 / compiled.p25
        first = display.format_time(runs[fw].first_compiled_step) if fw in runs else "-"
        rows.append((fw, display.format_time(eager.median), display.format_time(compiled.median),
                     f"{eager.median / compiled.median:.2f}x ({low:.2f} to {high:.2f})", first))
    return display.table(["framework", "eager step", "compiled step", "speed-up over own eager (IQR range)",
                          "first compiled step (compile)"], rows, title="One SGD step of the MLP, same program")
