"""fp16 underflow and loss scaling: which gradients a format flushes to zero, and what scaling the loss rescues.

Gradients are read from real backward passes (torch hooks on every ``nn.Linear`` output) and compared with
the same computed in fp32; ``simulate_cast`` predicts the same from the fp32 values alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import validate
from course_utils.precision.formats import _as_float64, check_format, float_format, round_to


@dataclass(frozen=True)
class UnderflowStats:
    """How many nonzero reference values a low-precision version lost (flushed to 0) or overflowed (inf/nan)."""

    nonzero: int
    flushed: int
    overflowed: int

    @property
    def flushed_fraction(self) -> float:
        return self.flushed / self.nonzero if self.nonzero else 0.0

    @property
    def overflowed_fraction(self) -> float:
        return self.overflowed / self.nonzero if self.nonzero else 0.0


def underflow_stats(reference: Any, low: Any) -> UnderflowStats:
    """Compare gradients computed in high precision (``reference``) with the same computed in low precision."""
    ref, lo = _as_float64("reference", reference).ravel(), _as_float64("low", low).ravel()
    if ref.shape != lo.shape:
        raise ValueError(f"reference and low must have the same size; got {ref.size} and {lo.size}")
    if ref.size == 0:
        raise ValueError("reference must not be empty")
    nonzero = ref != 0
    return UnderflowStats(int(nonzero.sum()), int((nonzero & (lo == 0)).sum()), int((~np.isfinite(lo)).sum()))


def simulate_cast(values: Any, name: str = "float16", scale: float = 1.0) -> UnderflowStats:
    """What casting ``values * scale`` to format ``name`` does to them (flushed / overflowed counts)."""
    check_format(name)
    validate.positive("scale", scale)
    ref = _as_float64("values", values).ravel()
    return underflow_stats(ref, round_to(ref * scale, name))


def overflow_exponent(values: Any, name: str = "float16") -> int:
    """The smallest k for which ``values * 2**k`` overflows format ``name``: ceil(log2(max / max|v|)), computed."""
    check_format(name)
    v = _as_float64("values", values)
    top = float(np.max(np.abs(v[np.isfinite(v)]), initial=0.0))
    if top == 0.0:
        raise ValueError("values must hold a finite nonzero value")
    return math.ceil(math.log2(float_format(name).max / top))


def torch_activation_grads(model: Any, x: Any, y: Any, *, dtype: Any = None, scale: float = 1.0) -> Any:
    """Gradients of the loss with respect to every ``nn.Linear`` output of ``model``, flattened, unscaled, fp32.

    ``dtype`` (e.g. ``torch.float16``) runs forward and backward under ``torch.autocast`` in that dtype; the loss
    is multiplied by ``scale`` before ``backward`` and the gradients divided by it afterwards (static loss
    scaling), so values that underflowed in ``dtype`` come back as exact zeros.
    """
    import torch

    validate.instance("model", model, torch.nn.Module)
    validate.instance("x", x, torch.Tensor)
    validate.instance("y", y, torch.Tensor)
    validate.positive("scale", scale)
    if dtype is not None:
        validate.choice("dtype", dtype, (torch.float16, torch.bfloat16, torch.float32))
    outputs: list[torch.Tensor] = []

    def keep(module: Any, inputs: Any, output: torch.Tensor) -> None:
        output.retain_grad()
        outputs.append(output)

    hooks = [m.register_forward_hook(keep) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not hooks:
        raise ValueError("model must contain at least one torch.nn.Linear")
    device_type = next(model.parameters()).device.type
    try:
        with torch.autocast(device_type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        (loss.float() * scale).backward()
    finally:
        for h in hooks:
            h.remove()
    model.zero_grad(set_to_none=True)
    return torch.cat([o.grad.float().flatten() / scale for o in outputs])


def torch_fp16_overflows(model: Any, x: Any, y: Any, exponents: Any) -> dict[int, bool]:
    """For each k in ``exponents``: does an fp16 autocast backward with the loss scaled by 2**k overflow?"""
    import torch

    validate.non_empty("exponents", exponents)
    result = {}
    for k in exponents:
        k = int(validate.number("exponents", k, low=-60, high=60, integer=True))
        grads = torch_activation_grads(model, x, y, dtype=torch.float16, scale=2.0**k)
        result[k] = bool((~torch.isfinite(grads)).any())
    return result


def torch_weight_grads(model: Any, x: Any, y: Any, *, dtype: Any = None, multiplier: float = 1.0) -> Any:
    """The gradients of every parameter of ``model`` (flattened, as the optimizer receives them: fp32 ``.grad``)
    after one backward pass of the loss times ``multiplier``, no loss scaling; ``dtype`` (e.g. ``torch.float16``)
    runs the forward pass under ``torch.autocast``, so that a weight gradient computed in fp16 which underflowed
    arrives as an exact zero."""
    import torch

    validate.instance("model", model, torch.nn.Module)
    validate.instance("x", x, torch.Tensor)
    validate.instance("y", y, torch.Tensor)
    validate.positive("multiplier", multiplier)
    if dtype is not None:
        validate.choice("dtype", dtype, (torch.float16, torch.bfloat16, torch.float32))
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model must have a parameter that requires a gradient")
    model.zero_grad(set_to_none=True)
    with torch.autocast(next(model.parameters()).device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    (loss.float() * multiplier).backward()
    grads = torch.cat([p.grad.detach().float().flatten() for p in params])
    model.zero_grad(set_to_none=True)
    return grads


def adam_eps_share(grads: Any, eps: float = 1e-8) -> float:
    """How far Adam's ``eps`` shortens a typical update for gradients of the size of ``grads`` (computed): for a
    gradient steady over steps Adam's step is lr * g / (|g| + eps), so this is the median of |g| / (|g| + eps)
    over the nonzero entries. Near 1.0, multiplying every gradient by one constant leaves Adam's update as it
    was; it shrinks only once the gradients come near ``eps``."""
    validate.positive("eps", eps)
    g = np.abs(_as_float64("grads", grads).ravel())
    g = g[np.isfinite(g) & (g > 0)]
    if g.size == 0:
        raise ValueError("grads must hold a finite nonzero value")
    return float(np.median(g / (g + eps)))


@dataclass(frozen=True)
class ScaleTrace:
    """What a dynamic loss scale did over a run (log2 units): skipped steps, the range it settled in after the
    first clean step, the ceiling computed from each clean step's largest gradient, log2(max / max|g|), and the
    steps (from 0) after the first clean one skipped although the scale lay below that ceiling's median (an overflow
    the ceiling misses)."""

    steps: int
    skipped: int
    first_skipped: bool
    start: float
    settled_low: float
    settled_high: float
    ceiling_median: float
    skipped_below: tuple[int, ...] = ()

    @property
    def gap(self) -> float:
        """Powers of two from the settled scale's top up to the ceiling's median (negative: the top is above)."""
        return self.ceiling_median - self.settled_high


def scale_trace(scales: Any, skipped: Any, grad_max: Any, name: str = "float16") -> ScaleTrace:
    """Summarise a run's per-step ``scales``, ``skipped`` flags and largest unscaled gradients ``grad_max``
    (``TrainRun.scale``, ``.skipped``, ``.grad_max``) against format ``name``'s largest value."""
    check_format(name)
    for arg, seq in (("scales", scales), ("skipped", skipped), ("grad_max", grad_max)):
        if isinstance(seq, (str, bytes)):
            raise TypeError(f"{arg} must be a sequence of per-step values, not a string")
    scales = _as_float64("scales", scales).ravel()
    flags = np.asarray(skipped, dtype=bool).ravel()
    gmax = _as_float64("grad_max", grad_max).ravel()
    if not (len(scales) == len(flags) == len(gmax)) or len(scales) == 0:
        raise ValueError(f"scales, skipped and grad_max must hold one value per step; got {len(scales)}, "
                         f"{len(flags)} and {len(gmax)}")
    if not np.all(np.isfinite(scales)) or np.any(scales <= 0):
        raise ValueError("scales must be finite positive numbers")
    if flags.all():
        raise ValueError("every step was skipped: the scale never fitted, there is nothing settled to summarise")
    logs = np.log2(scales)
    clean = np.isfinite(gmax) & (gmax > 0) & ~flags
    ceiling = np.log2(float_format(name).max / gmax[clean])
    median = float(np.median(ceiling)) if ceiling.size else math.nan
    first_clean = int(np.argmax(~flags))  # the skips before it are the descent from the initial scale
    below = tuple(first_clean + int(i) for i in np.flatnonzero(flags[first_clean:] & (logs[first_clean:] < median)))
    settled = logs[first_clean:]
    return ScaleTrace(len(scales), int(flags.sum()), bool(flags[0]), float(logs[0]), float(settled.min()),
                      float(settled.max()), median, below)
