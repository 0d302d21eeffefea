"""Running the learner's training step: ``train`` calls the step written in the notebook (autocast + GradScaler)
over batches and records what the lesson reads: the loss, the loss scale used, skipped steps and the largest
gradient of every step. ``SeedSpread`` holds runs of several configurations over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import calls, display, validate

MAX_STEPS = 100_000
FINAL_WINDOW = 20  # the final loss is the mean of the last 20 steps: one step's loss is too noisy to compare


@dataclass(frozen=True)
class TrainRun:
    """One training run: per-step loss, loss scale used, skipped flag and largest |gradient| after the step."""

    label: str
    seed: int
    loss: tuple[float, ...]
    scale: tuple[float, ...]
    skipped: tuple[bool, ...]
    grad_max: tuple[float, ...]
    accuracy: float

    def final_loss(self, last: int = FINAL_WINDOW) -> float:
        """Mean training loss of the last ``last`` steps (NaN steps included: a diverged run shows as NaN)."""
        last = validate.number("last", last, low=1, high=MAX_STEPS, integer=True)
        return float(np.mean(self.loss[-last:]))


def train(step: Callable[..., Any], model: Any, opt: Any, scaler: Any, x: Any, y: Any, *, steps: int, batch: int,
          seed: int = 0, label: str = "run", x_test: Any = None, y_test: Any = None, threads: int | None = 1,
          timeout: float = 300.0, **step_kwargs: Any) -> TrainRun:
    """Call the learner's ``step(model, opt, scaler, xb, yb, **step_kwargs)`` on ``steps`` batches of ``batch`` rows
    of (``x``, ``y``) in a seeded order; return the run (and the model is trained in place).

    Recorded per step: the loss the step returns, the scale ``scaler`` held before it (1.0 when disabled), whether
    the step was skipped (the scale went down: an inf or nan gradient), and the largest |gradient| the step left
    in ``.grad`` (unscaled if the step calls ``scaler.unscale_``, as the recipe does). ``threads`` sets torch's
    CPU threads during the run (a model this small runs fastest on one core), then restores them; the whole run
    must end within ``timeout`` seconds.
    """
    import torch

    validate.function("step", step)
    validate.instance("model", model, torch.nn.Module)
    validate.instance("opt", opt, torch.optim.Optimizer)
    validate.instance("scaler", scaler, torch.amp.GradScaler)
    validate.instance("x", x, torch.Tensor)
    validate.instance("y", y, torch.Tensor)
    if len(x) != len(y):
        raise ValueError(f"x and y must hold the same number of rows; got {len(x)} and {len(y)}")
    steps = validate.number("steps", steps, low=1, high=MAX_STEPS, integer=True)
    batch = validate.number("batch", batch, low=1, high=len(x), integer=True)
    seed = validate.number("seed", seed, low=0, high=2**32 - 1, integer=True)
    validate.text("label", label)
    if threads is not None:
        threads = validate.number("threads", threads, low=1, high=1024, integer=True)
    timeout = validate.seconds("timeout", timeout)
    torch.manual_seed(seed)
    order = torch.from_numpy(np.random.default_rng(seed).permutation(len(x))).to(x.device)
    params = [p for p in model.parameters() if p.requires_grad]
    before_threads = torch.get_num_threads()
    losses, scales, skipped, gmax = [], [], [], []
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        with calls.time_limit(timeout, f"{steps} training steps of " + calls.describe(step)):
            for i in range(steps):
                start = (i * batch) % (len(x) - batch + 1)
                rows = order[start:start + batch]
                scale = float(scaler.get_scale()) if scaler.is_enabled() else 1.0
                loss = step(model, opt, scaler, x[rows], y[rows], **step_kwargs)
                if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                    raise TypeError(f"{calls.describe(step)} must return the loss (a one-element tensor); got "
                                    f"{type(loss).__name__}")
                grads = [p.grad.detach().abs().max() for p in params if p.grad is not None]
                losses.append(float(loss.detach()))
                scales.append(scale)
                skipped.append(bool(scaler.is_enabled() and scaler.get_scale() < scale))
                gmax.append(float(torch.stack(grads).max()) if grads else math.nan)
    finally:
        torch.set_num_threads(before_threads)
    accuracy = math.nan
    if x_test is not None and y_test is not None:
        with torch.no_grad():
            accuracy = float((model(x_test).argmax(1) == y_test).float().mean())
    return TrainRun(label, seed, tuple(losses), tuple(scales), tuple(skipped), tuple(gmax), accuracy)


@dataclass(frozen=True, repr=False)
class SeedSpread:
    """Runs of several configurations over the same seeds: final loss and test accuracy, mean and spread."""

    runs: Mapping[str, Sequence[TrainRun]]

    def __post_init__(self) -> None:
        validate.instance("runs", self.runs, Mapping)
        validate.non_empty("runs", self.runs)
        for label, group in self.runs.items():
            validate.non_empty(f"runs[{label!r}]", group)
            for run in group:
                validate.instance(f"runs[{label!r}]", run, TrainRun)

    def final_losses(self, label: str) -> np.ndarray:
        return np.array([r.final_loss() for r in self.runs[validate.choice("label", label, self.runs)]])

    def accuracies(self, label: str) -> np.ndarray:
        return np.array([r.accuracy for r in self.runs[validate.choice("label", label, self.runs)]])

    def seeds(self) -> int:
        """How many seeds the largest configuration ran."""
        return max(len(group) for group in self.runs.values())

    def gap(self, label: str, baseline: str = "fp32") -> float:
        """|mean final loss of ``label`` - that of ``baseline``|, in units of the larger of the two seed spreads."""
        spread = max(np.ptp(self.final_losses(label)), np.ptp(self.final_losses(baseline)), 1e-12)
        return float(abs(self.final_losses(label).mean() - self.final_losses(baseline).mean()) / spread)

    def table(self) -> display.Table:
        rows = []
        for label in self.runs:
            loss, acc = self.final_losses(label), self.accuracies(label)
            rows.append((label, str(len(loss)), f"{loss.mean():.3f}", f"{loss.min():.3f} to {loss.max():.3f}",
                         f"{acc.mean():.1%}", f"{acc.min():.1%} to {acc.max():.1%}"))
        counts = sorted({len(r) for r in self.runs.values()})
        seeds = ("one seed per run" if counts == [1] else f"{counts[0]} seeds per run" if len(counts) == 1
                 else "seeds per run as listed")
        return display.table(["run", "seeds", "final loss (mean)", "range over seeds", "test accuracy (mean)",
                              "range over seeds"], rows, title=f"Same model and data, {seeds}",
                             note=f"final loss: mean of the last {FINAL_WINDOW} training steps")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def unscale_norms(model: Any, x: Any, y: Any, scaler: Any) -> dict[str, float]:
    """Gradient norm of one fp16 step with the learner's ``scaler``, read before and after ``scaler.unscale_``,
    and the same gradient's norm in fp32 (``clip_grad_norm_`` reads the norm it is given: before ``unscale_`` it
    would see the scaled one and clip almost everything). The model's gradients are cleared afterwards."""
    import torch
    import torch.nn.functional as F

    validate.instance("model", model, torch.nn.Module)
    validate.instance("x", x, torch.Tensor)
    validate.instance("y", y, torch.Tensor)
    validate.instance("scaler", scaler, torch.amp.GradScaler)
    if not scaler.is_enabled():
        raise ValueError("scaler must be enabled (a GradScaler(..., enabled=False) scales nothing)")
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.0)

    def norm() -> float:
        return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])))

    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    fp32 = norm()
    model.zero_grad(set_to_none=True)
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    before = norm()
    scale = float(scaler.get_scale())
    scaler.unscale_(opt)
    after = norm()
    model.zero_grad(set_to_none=True)
    return {"before unscale_": before, "after unscale_": after, "fp32": fp32, "scale": scale}
