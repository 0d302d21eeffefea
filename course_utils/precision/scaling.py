"""fp16 underflow and loss scaling: which gradients a format flushes to zero, and what scaling the loss
rescues. Also the declarations of torch arguments (``Tensor``, ``Module``) the package's other files use."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from course_utils import declare
from course_utils.declare import PositiveFloat, Range, SameLength
from course_utils.precision.formats import Format, _as_float64, float_format, round_to


@dataclass(frozen=True)
class _TorchType:
    """A declared constraint: an instance of ``torch.<path>`` (torch is imported at the check, not at import)."""

    path: str

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        import torch

        if not isinstance(value, operator.attrgetter(self.path)(torch)):
            raise TypeError(f"{name} must be a torch.{self.path}; got {type(value).__name__} {value!r:.60}")


def torch_type(path: str) -> Any:
    """``Annotated[Any, ...]`` declaring an instance of ``torch.<path>`` ('Tensor', 'nn.Module', ...)."""
    return Annotated[Any, _TorchType(path)]


Tensor, Module = torch_type("Tensor"), torch_type("nn.Module")


def _dtype(dtype: Any) -> Any:
    """torch's dtype for a name ('float16') or a torch dtype (torch.float16 as the notebook writes it)."""
    import torch

    if dtype is None or isinstance(dtype, torch.dtype):
        if dtype not in (None, torch.float16, torch.bfloat16, torch.float32):
            raise ValueError(f"dtype must be torch.float16, torch.bfloat16, torch.float32 or None; got {dtype}")
        return dtype
    return getattr(torch, dtype)


@dataclass(frozen=True)
class UnderflowStats:
    """How many nonzero reference values a low-precision version lost (flushed to 0) or overflowed (inf/nan)."""

    nonzero: int
    flushed: int
    overflowed: int

    @property
    def flushed_fraction(self) -> float:
        return self.flushed / self.nonzero if self.nonzero else 0.0


@declare.checked
def underflow_stats(reference: Any, low: Any) -> UnderflowStats:
    """Compare gradients computed in high precision (``reference``) with the same computed in low precision."""
    ref, lo = _as_float64("reference", reference).ravel(), _as_float64("low", low).ravel()
    if ref.shape != lo.shape or ref.size == 0:
        raise ValueError(f"reference and low must hold the same number of values, at least one; got {ref.size} and "
                         f"{lo.size}")
    nonzero = ref != 0
    return UnderflowStats(int(nonzero.sum()), int((nonzero & (lo == 0)).sum()), int((~np.isfinite(lo)).sum()))


@declare.checked
def simulate_cast(values: Any, name: Format = "float16", scale: PositiveFloat = 1.0) -> UnderflowStats:
    """What casting ``values * scale`` to format ``name`` does to them (flushed / overflowed counts)."""
    ref = _as_float64("values", values).ravel()
    return underflow_stats(ref, round_to(ref * scale, name))


@declare.checked
def overflow_exponent(values: Any, name: Format = "float16") -> int:
    """The smallest k for which ``values * 2**k`` overflows format ``name``: ceil(log2(max / max|v|)), computed."""
    v = _as_float64("values", values)
    top = float(np.max(np.abs(v[np.isfinite(v)]), initial=0.0))
    if top == 0.0:
        raise ValueError("values must hold a finite nonzero value")
    return math.ceil(math.log2(float_format(name).max / top))


def _loss(model: Any, x: Any, y: Any, dtype: Any) -> Any:
    """The cross-entropy loss of ``model`` on (x, y), its forward under autocast in ``dtype`` (None: none)."""
    import torch

    with torch.autocast(next(model.parameters()).device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
        return torch.nn.functional.cross_entropy(model(x), y)


def _linear_outputs(model: Any, x: Any, y: Any, dtype: Any = None, scale: float = 1.0) -> list[Any]:
    """Every ``nn.Linear`` output of ``model`` on (x, y), its gradient kept, after a backward pass of the loss
    times ``scale`` (forward under autocast in ``dtype``)."""
    import torch

    outputs: list[Any] = []

    def keep(module: Any, inputs: Any, output: Any) -> None:
        output.retain_grad()
        outputs.append(output)

    hooks = [m.register_forward_hook(keep) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not hooks:
        raise ValueError("model must contain at least one torch.nn.Linear")
    try:
        (_loss(model, x, y, dtype).float() * scale).backward()
    finally:
        for h in hooks:
            h.remove()
    model.zero_grad(set_to_none=True)
    return outputs


@declare.checked
def torch_activation_grads(model: Module, x: Tensor, y: Tensor, *, dtype: Any = None,
                           scale: PositiveFloat = 1.0) -> Any:
    """Every ``nn.Linear`` output's gradient, fp32, flattened, divided by ``scale`` (the loss's multiplier), so
    that values that underflowed come back as zeros; forward under autocast in ``dtype``."""
    import torch

    return torch.cat([o.grad.float().flatten() / scale for o in _linear_outputs(model, x, y, _dtype(dtype), scale)])


@declare.checked
def torch_fp16_overflows(model: Module, x: Tensor, y: Tensor,
                         exponents: Annotated[Iterable[Annotated[int, Range(-60, 60)]], declare.NonEmpty],
                         ) -> dict[int, bool]:
    """For each k in ``exponents``: does an fp16 autocast backward with the loss scaled by 2**k overflow?"""
    import torch

    result = {}
    for k in exponents:
        grads = torch_activation_grads(model, x, y, dtype=torch.float16, scale=2.0**k)
        result[k] = bool((~torch.isfinite(grads)).any())
    return result


@declare.checked
def torch_weight_grads(model: Module, x: Tensor, y: Tensor, *, dtype: Any = None,
                       multiplier: PositiveFloat = 1.0) -> Any:
    """Every parameter's fp32 ``.grad``, flattened, after a backward pass of the loss times ``multiplier``."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model must have a parameter that requires a gradient")
    model.zero_grad(set_to_none=True)
    (_loss(model, x, y, _dtype(dtype)).float() * multiplier).backward()
    grads = torch.cat([p.grad.detach().float().flatten() for p in params])
    model.zero_grad(set_to_none=True)
    return grads


@declare.checked
def adam_eps_share(grads: Any, eps: PositiveFloat = 1e-8) -> float:
    """How far Adam's ``eps`` shortens a typical update for gradients like ``grads`` (computed): the median of
    |g| / (|g| + eps) over the nonzero entries; near 1.0 a uniform gradient scale leaves Adam's update as it was."""
    g = np.abs(_as_float64("grads", grads).ravel())
    g = g[np.isfinite(g) & (g > 0)]
    if g.size == 0:
        raise ValueError("grads must hold a finite nonzero value")
    return float(np.median(g / (g + eps)))


@dataclass(frozen=True)
class ScaleTrace:
    """What a dynamic loss scale did (log2 units): skipped steps, its settled range, the median ceiling
    log2(max / max|g|) of clean steps, and the steps skipped below that ceiling (overflows it misses)."""

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


@declare.checked
def scale_trace(scales: Annotated[Sequence[PositiveFloat], declare.NonEmpty],
                skipped: Annotated[Sequence[bool], SameLength("scales")],
                grad_max: Annotated[Any, SameLength("scales")], name: Format = "float16") -> ScaleTrace:
    """Summarise a run's ``scales``, ``skipped`` flags and largest gradients against format ``name``'s max."""
    scales = np.asarray(scales, dtype=np.float64)
    flags = np.asarray(skipped, dtype=bool)
    gmax = _as_float64("grad_max", grad_max).ravel()
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
