"""Running the learner's training step (``train``), runs of several configurations over seeds, and section 5's step
in a module for ``cu.fresh.replicate`` (a fresh Python cannot import a notebook's function): ``train_step``."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import calls, declare, display, models, timing, validate
from course_utils.declare import MinItems, NonEmpty, Range, Text
from course_utils.precision.formats import Module, Tensor, _loss, torch_type

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

    @declare.checked
    def final_loss(self, last: Annotated[int, Range(1, MAX_STEPS)] = FINAL_WINDOW) -> float:
        """Mean training loss of the last ``last`` steps (NaN steps included: a diverged run shows as NaN)."""
        return float(np.mean(self.loss[-last:]))


Scaler = torch_type("amp.GradScaler")


@declare.checked
def train(step: Callable[..., Any], model: Module, opt: torch_type("optim.Optimizer"), scaler: Scaler,
          x: Tensor, y: Annotated[Tensor, declare.SameLength("x")], *, steps: Annotated[int, Range(1, MAX_STEPS)],
          batch: Annotated[int, Range(1, 2**24)], seed: Annotated[int, Range(0, 2**32 - 1)] = 0, label: Text = "run",
          x_test: Tensor | None = None, y_test: Tensor | None = None,
          threads: Annotated[int, Range(1, 1024)] | None = 1, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT,
          **step_kwargs: Any) -> TrainRun:
    """Call the learner's ``step(model, opt, scaler, xb, yb, **step_kwargs)`` on ``steps`` seeded batches, recording
    loss, scale before, skipped flag and largest |gradient|; ``threads``: torch's CPU threads (one suits this model)."""
    import torch

    if batch > len(x):
        raise ValueError(f"batch must be at most the rows of x ({len(x)}); got {batch}")
    torch.manual_seed(seed)
    order = torch.from_numpy(np.random.default_rng(seed).permutation(len(x))).to(x.device)
    params = [p for p in model.parameters() if p.requires_grad]
    before_threads = torch.get_num_threads()
    losses, scales, skipped, gmax = [], [], [], []
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        for i in range(steps):
            start = (i * batch) % (len(x) - batch + 1)
            rows = order[start:start + batch]
            scale = float(scaler.get_scale()) if scaler.is_enabled() else 1.0
            loss = calls.call(step, model, opt, scaler, x[rows], y[rows], timeout=timeout, name="step", **step_kwargs)
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


@declare.checked
@dataclass(frozen=True, repr=False)
class SeedSpread(display.Tabled):
    """Runs of several configurations over the same seeds: final loss and test accuracy, mean and spread."""

    runs: Annotated[Mapping[str, Annotated[Sequence[TrainRun], NonEmpty]], NonEmpty]

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


@declare.checked
def unscale_norms(model: Module, x: Tensor, y: Tensor, scaler: Scaler) -> dict[str, float]:
    """Gradient norm of one fp16 step before and after ``scaler.unscale_``, and in fp32."""
    import torch

    if not scaler.is_enabled():
        raise ValueError("scaler must be enabled (a GradScaler(..., enabled=False) scales nothing)")
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.0)

    def norm() -> float:
        return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])))

    model.zero_grad(set_to_none=True)
    _loss(model, x, y, None).backward()
    fp32 = norm()
    model.zero_grad(set_to_none=True)
    scaler.scale(_loss(model, x, y, torch.float16)).backward()
    before = norm()
    scale = float(scaler.get_scale())
    scaler.unscale_(opt)
    after = norm()
    model.zero_grad(set_to_none=True)
    return {"before unscale_": before, "after unscale_": after, "fp32": fp32, "scale": scale}


FP32_STEP = "fp32 step"
MAX_WIDTH = 2**16
Amp = Literal["bfloat16", "float16"]


@declare.checked
def amp_step_label(dtype: Amp) -> str:
    """The label of the 16-bit step, as the notebook names it: 'bfloat16 autocast step'."""
    return f"{dtype} autocast step"


def train_step(model: Any, opt: Any, scaler: Any, xb: Any, yb: Any, *, dtype: Any) -> Any:
    """One mixed-precision training step, the notebook's recipe (a disabled scaler for fp32 and bf16)."""
    import torch
    import torch.nn.functional as F

    with torch.autocast(xb.device.type, dtype=dtype, enabled=dtype != torch.float32):
        loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    scaler.step(opt)  # skipped when a gradient holds an inf or nan
    scaler.update()
    return loss


@declare.checked
def step_medians(widths: Annotated[Sequence[Annotated[int, Range(1, MAX_WIDTH)]], MinItems(2)],
                 batch: Annotated[int, Range(1, 2**20)], *, dtype: Amp = "bfloat16",
                 device: Literal["cpu", "cuda"] = "cpu", rounds: Annotated[int, Range(2, 100)] = 6,
                 min_time: Annotated[float, Range(1e-3, 60)] = 0.6,
                 threads: Annotated[int, Range(1, 1024)] | None = None,
                 seed: Annotated[int, Range(0, 2**32 - 1)] = 0) -> dict[str, float]:
    """The median seconds of the fp32 and the 16-bit autocast step on ``models.torch_mlp(widths)``, in
    ``rounds`` alternating rounds: what one fresh process measures."""
    import torch

    amp = getattr(torch, dtype)
    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    x = torch.randn(batch, widths[0], device=device)
    y = torch.randint(0, widths[-1], (batch,), device=device)
    m32, m16 = (models.torch_mlp(widths, seed=seed).to(device) for _ in range(2))
    o32, o16 = (torch.optim.SGD(m.parameters(), lr=1e-3) for m in (m32, m16))
    no_scaling = torch.amp.GradScaler(device, enabled=False)
    scaler16 = torch.amp.GradScaler(device, enabled=amp == torch.float16)
    label = amp_step_label(dtype)
    times = timing.interleaved({FP32_STEP: lambda: train_step(m32, o32, no_scaling, x, y, dtype=torch.float32),
                                label: lambda: train_step(m16, o16, scaler16, x, y, dtype=amp)},
                               rounds=rounds, min_time=min_time)
    return {name: m.median for name, m in times.items()}
