"""Section 5's training step timed in one process, for ``cu.fresh.replicate``: the seed's "~30% faster" is a claim
about any run, so notebook 03 scores it across fresh processes. ``train_step`` is the notebook's recipe (section 2's
``train_step`` without its multiplier and clip, which section 5 leaves at 1 and off) from a module, because a fresh
Python cannot import a function defined in a notebook; ``step_medians`` builds section 5's wide MLP and times that
step in fp32 and under 16-bit autocast in alternating rounds, as the notebook's cell does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from course_utils import models, timing, validate

FP32_STEP = "fp32 step"
AMP_DTYPES = ("bfloat16", "float16")
MAX_WIDTH = 2**16


def amp_step_label(dtype: str) -> str:
    """The label of the 16-bit step, as the notebook names it: 'bfloat16 autocast step'."""
    return f"{validate.choice('dtype', dtype, AMP_DTYPES)} autocast step"


def train_step(model: Any, opt: Any, scaler: Any, xb: Any, yb: Any, *, dtype: Any) -> Any:
    """One mixed-precision training step, the notebook's recipe: autocast around the forward pass, ``GradScaler``
    around backward and the optimizer (a disabled scaler for fp32 and bf16, which need no loss scaling)."""
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


def step_medians(widths: Sequence[int], batch: int, *, dtype: str = "bfloat16", device: str = "cpu",
                 rounds: int = 6, min_time: float = 0.6, threads: int | None = None,
                 seed: int = 0) -> dict[str, float]:
    """The median seconds of the fp32 step and of the 16-bit autocast step on ``models.torch_mlp(widths)`` with a
    batch of ``batch`` rows, timed in ``rounds`` alternating rounds (``timing.interleaved``, ``min_time`` seconds
    per step in all) with ``threads`` torch threads (None: torch's default): what one fresh process measures."""
    import torch

    widths = [validate.number(f"widths[{i}]", w, low=1, high=MAX_WIDTH, integer=True)
              for i, w in enumerate(validate.sequence("widths", widths, min_length=2))]
    batch = validate.count("batch", batch, high=2**20)
    amp = getattr(torch, validate.choice("dtype", dtype, AMP_DTYPES))
    validate.choice("device", device, ("cpu", "cuda"))
    rounds = validate.count("rounds", rounds, low=2, high=100)
    min_time = validate.seconds("min_time", min_time, high=60)
    seed = validate.count("seed", seed, low=0, high=2**32 - 1)
    if threads is not None:
        torch.set_num_threads(validate.count("threads", threads, high=1024))
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
