"""The standard PyTorch AMP loop (autocast + GradScaler), run in fp32, bf16 or fp16, with or without a scaler,
for several seeds: the loss curves, the dynamic loss scale and the largest gradient of every step.

Read ``amp_train`` with ``cu.precision.amp_train??``: the loop body is the lesson.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import display, models, validate

MODES = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class TrainRun:
    """One training run: per-step loss, loss scale used, skipped flag and largest |weight gradient| (unscaled)."""

    mode: str
    scaler: bool
    seed: int
    loss_multiplier: float
    loss: tuple[float, ...]
    scale: tuple[float, ...]
    skipped: tuple[bool, ...]
    grad_max: tuple[float, ...]
    accuracy: float

    @property
    def label(self) -> str:
        if self.mode == "fp32":
            return "fp32"
        return f"{self.mode} autocast" + (" + GradScaler" if self.scaler else (" (no scaler)" if self.mode == "fp16"
                                                                                 else ""))

    def final_loss(self, last: int = 20) -> float:
        """Mean training loss of the last ``last`` steps (NaN steps included: a diverged run shows as NaN)."""
        validate.positive("last", last, integer=True)
        return float(np.mean(self.loss[-last:]))


def _dtype(mode: str) -> Any:
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[mode]


def amp_train(sizes: Sequence[int], x: Any, y: Any, *, mode: str = "fp32", steps: int = 100, batch: int = 64,
              lr: float = 3e-3, seed: int = 0, scaler: bool = True, clip: float | None = None,
              loss_multiplier: float = 1.0, x_test: Any = None, y_test: Any = None,
              **scaler_args: Any) -> tuple[Any, TrainRun]:
    """Train ``cu.models.torch_mlp(sizes, seed=seed)`` with Adam under autocast in ``mode``; return model and run.

    fp16 uses a ``torch.amp.GradScaler`` unless ``scaler=False``; ``clip`` clips the gradient norm, after
    ``scaler.unscale_`` so that the threshold applies to the true gradients, not to the scaled ones.
    ``loss_multiplier`` multiplies the loss before backward (a loss whose gradients are small as a whole, like a
    mean over many tokens); Adam's update does not depend on it in exact arithmetic, fp16's range does.
    """
    import torch
    import torch.nn.functional as F

    validate.choice("mode", mode, MODES)
    validate.instance("x", x, torch.Tensor)
    validate.instance("y", y, torch.Tensor)
    steps = validate.positive("steps", steps, integer=True)
    batch = validate.number("batch", batch, low=1, high=len(x), integer=True)
    validate.positive("lr", lr)
    validate.non_negative("seed", seed, integer=True)
    validate.instance("scaler", scaler, bool)
    validate.positive("loss_multiplier", loss_multiplier)
    if clip is not None:
        validate.positive("clip", clip)
    torch.manual_seed(seed)
    device = x.device
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)  # a model this small is fastest on one core: no fork/join around every op
    model = models.torch_mlp(sizes, seed=seed).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gscaler = torch.amp.GradScaler(device.type, enabled=mode == "fp16" and scaler, **scaler_args)
    order = torch.from_numpy(np.random.default_rng(seed).permutation(len(x))).to(device)
    losses, scales, skipped, gmax = [], [], [], []
    try:
        for step in range(steps):
            i = (step * batch) % (len(x) - batch + 1)
            xb, yb = x[order[i:i + batch]], y[order[i:i + batch]]
            with torch.autocast(device.type, dtype=_dtype(mode), enabled=mode != "fp32"):
                loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            gscaler.scale(loss * loss_multiplier).backward()
            scale = gscaler.get_scale() if gscaler.is_enabled() else 1.0
            gscaler.unscale_(opt)  # true-size gradients from here on: clip and inspect them unscaled
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            gmax.append(max(p.grad.abs().max().item() for p in model.parameters()))
            gscaler.step(opt)  # skipped when the gradients hold an inf or nan
            gscaler.update()  # halves the scale after an overflow, doubles it after growth_interval good steps
            losses.append(loss.item())
            scales.append(scale)
            skipped.append(gscaler.is_enabled() and gscaler.get_scale() < scale)
    finally:
        torch.set_num_threads(threads)
    accuracy = math.nan
    if x_test is not None and y_test is not None:
        with torch.no_grad():
            accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    return model, TrainRun(mode, gscaler.is_enabled(), seed, float(loss_multiplier), tuple(losses), tuple(scales),
                           tuple(skipped), tuple(gmax), accuracy)


@dataclass(frozen=True, repr=False)
class SeedSpread:
    """Runs of several configurations over the same seeds: final loss and test accuracy, mean and spread."""

    runs: dict[str, tuple[TrainRun, ...]]

    def final_losses(self, label: str) -> np.ndarray:
        return np.array([r.final_loss() for r in self.runs[label]])

    def accuracies(self, label: str) -> np.ndarray:
        return np.array([r.accuracy for r in self.runs[label]])

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
                             note="final loss: mean of the last 20 training steps")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def seed_spread(configs: dict[str, dict[str, Any]], seeds: Sequence[int], sizes: Sequence[int], x: Any, y: Any,
                **common: Any) -> SeedSpread:
    """``amp_train`` for each named config (keyword overrides, e.g. ``{"mode": "bf16"}``) and each seed."""
    validate.non_empty("configs", configs)
    validate.non_empty("seeds", seeds)
    for config in configs.values():
        validate.instance("configs", config, dict)
    runs = {}
    for label, config in configs.items():
        runs[label] = tuple(amp_train(sizes, x, y, seed=s, **(common | config))[1] for s in seeds)
    return SeedSpread(runs)


def unscale_norms(model: Any, x: Any, y: Any, *, init_scale: float = 2.0**16) -> dict[str, float]:
    """Gradient norm of one fp16 GradScaler step read before and after ``scaler.unscale_``, and in fp32.

    ``clip_grad_norm_`` compares the norm it reads with its threshold: called before ``unscale_`` it would see
    the scaled norm and clip almost everything.
    """
    import torch
    import torch.nn.functional as F

    validate.instance("model", model, torch.nn.Module)
    validate.instance("x", x, torch.Tensor)
    validate.positive("init_scale", init_scale)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.0)
    norm = lambda: torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])).item()  # noqa: E731
    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    fp32 = norm()
    model.zero_grad(set_to_none=True)
    scaler = torch.amp.GradScaler(x.device.type, init_scale=init_scale)
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    before = norm()
    scaler.unscale_(opt)
    after = norm()
    model.zero_grad(set_to_none=True)
    return {"before unscale_": before, "after unscale_": after, "fp32": fp32, "scale": scaler.get_scale()}
