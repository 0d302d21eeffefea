"""Section 5's training step in a module, for ``cu.fresh.replicate`` (a fresh Python cannot import a notebook's
function): ``train_step`` is section 2's recipe without its multiplier and clip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from course_utils import declare, models, timing
from course_utils.declare import MinItems, Range

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
