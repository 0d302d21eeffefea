"""Floating-point formats from ``finfo`` (TF32: fp32's exponent, fp16's mantissa, by bit masking), rounding, long
sums; fp16 underflow and loss scaling; and the torch argument declarations (``Tensor``, ``Module``) the package uses."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import declare, display
from course_utils.declare import NonEmpty, PositiveFloat, Range, SameLength

FORMATS = ("float32", "tf32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
Format = Literal["float32", "tf32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
SHORT = {"float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16",
         "float8_e4m3fn": "fp8 e4m3", "float8_e5m2": "fp8 e5m2"}
Seed = Annotated[int, Range(0, 2**32 - 1)]


@declare.checked
def numpy_dtype(name: Format) -> np.dtype:
    """The NumPy dtype storing format ``name`` (tf32 is stored in float32: it has no type of its own)."""
    if name in ("float32", "tf32"):
        return np.dtype(np.float32)
    if name == "float16":
        return np.dtype(np.float16)
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


@dataclass(frozen=True)
class FloatFormat:
    """Layout and limits of one floating-point format, read from ``finfo``."""

    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    eps: float
    min_normal: float
    min_subnormal: float
    max: float

    @property
    def short(self) -> str:
        return SHORT[self.name]

    @property
    def unit_roundoff(self) -> float:
        """Largest relative error of round-to-nearest in the normal range: eps / 2."""
        return self.eps / 2

    @property
    def decimal_digits(self) -> float:
        """Significant decimal digits, -log10(eps / 2)."""
        return -math.log10(self.unit_roundoff)


@declare.checked
def float_format(name: Format) -> FloatFormat:
    """Bits, epsilon and range from ``np.finfo`` / ``ml_dtypes.finfo`` (tf32: fp32's range, fp16's mantissa)."""
    import ml_dtypes

    if name == "tf32":
        f32, f16 = np.finfo(np.float32), np.finfo(np.float16)
        mant = int(f16.nmant)
        return FloatFormat("tf32", 1 + int(f32.nexp) + mant, int(f32.nexp), mant, 2.0**-mant,
                           float(f32.smallest_normal), float(f32.smallest_normal) * 2.0**-mant,
                           float((2 - 2.0**-mant) * 2.0**f32.maxexp / 2))
    info = ml_dtypes.finfo(numpy_dtype(name))
    return FloatFormat(name, int(info.bits), int(info.nexp), int(info.nmant), float(info.eps),
                       float(info.smallest_normal), float(info.smallest_subnormal), float(info.max))


@dataclass(frozen=True, repr=False)
class FormatTable(display.Tabled):
    """Several formats side by side; shows as a ``display.Table``."""

    formats: tuple[FloatFormat, ...]

    def __getitem__(self, name: str) -> FloatFormat:
        for f in self.formats:
            if name in (f.name, f.short):
                return f
        raise KeyError(f"no format {name!r}; have {[f.name for f in self.formats]}")

    def table(self) -> display.Table:
        rows = [(f.short, f"{f.bits} (1/{f.exponent_bits}/{f.mantissa_bits})", f"{f.eps:.3g}",
                 f"{f.decimal_digits:.1f}", f"{f.min_subnormal:.3g}", f"{f.min_normal:.3g}", f"{f.max:.3g}")
                for f in self.formats]
        return display.table(["format", "bits (s/e/m)", "eps", "digits", "min subnormal", "min normal", "max"],
                             rows, title="Formats, read from finfo")


@declare.checked
def format_table(names: Annotated[Sequence[Format], NonEmpty] = FORMATS) -> FormatTable:
    """A ``FormatTable`` of ``names`` (default: fp32, tf32, fp16, bf16, fp8 e4m3, fp8 e5m2)."""
    return FormatTable(tuple(float_format(n) for n in names))


def _as_float64(name: str, x: Any) -> np.ndarray:
    if x is None or isinstance(x, (str, bytes, bool)):
        raise TypeError(f"{name} must be a number or an array of numbers; got {type(x).__name__} {x!r}")
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().float().cpu().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number or an array of numbers; got {type(x).__name__}") from exc


@declare.checked
def round_to(x: Any, name: Format) -> np.ndarray:
    """``x`` rounded to format ``name`` (nearest, ties to even) and returned as float64; overflow gives inf or nan."""
    x = _as_float64("x", x)
    with np.errstate(over="ignore", invalid="ignore"):
        if name == "tf32":
            u = x.astype(np.float32).view(np.uint32)
            lsb = (u >> np.uint32(13)) & np.uint32(1)
            rounded = ((u + np.uint32(0x0FFF) + lsb) & np.uint32(0xFFFFE000)).view(np.float32)
            return np.where(np.isfinite(x.astype(np.float32)), rounded, x.astype(np.float32)).astype(np.float64)
        return x.astype(numpy_dtype(name)).astype(np.float64)


@declare.checked
def relative_rounding_error(magnitudes: Annotated[Sequence[declare.PositiveFloat], NonEmpty], name: Format, *,
                            samples: Annotated[int, Range(1, 100_000)] = 256, seed: Seed = 0) -> np.ndarray:
    """Largest relative error of storing values in [m, 2m) in format ``name``, per magnitude m (1: flushed)."""
    m = np.asarray(magnitudes, dtype=np.float64).reshape(-1, 1)
    x = m * (1.0 + np.random.default_rng(seed).random((1, samples)))
    r = round_to(x, name)
    with np.errstate(invalid="ignore"):
        err = np.where(np.isfinite(r), np.abs(r - x) / x, np.inf)
    return err.max(axis=1)


@declare.checked
def accumulation_error(lengths: Annotated[Sequence[Annotated[int, Range(1, 10**8)]], NonEmpty], *,
                       seed: Seed = 0) -> dict[str, np.ndarray]:
    """Relative error of summing n bf16 values from U(0, 1) in a bf16 accumulator, in an fp32 one (what matmul
    units do), and in fp32 rounded once, per n in ``lengths``."""
    import ml_dtypes

    lengths = np.asarray(lengths, dtype=np.int64)
    x = np.random.default_rng(seed).random(int(lengths.max())).astype(ml_dtypes.bfloat16)
    exact = np.cumsum(x.astype(np.float64))[lengths - 1]
    acc32 = np.cumsum(x.astype(np.float32), dtype=np.float32)[lengths - 1].astype(np.float64)
    sums = {
        "bf16 accumulator": np.cumsum(x, dtype=ml_dtypes.bfloat16)[lengths - 1].astype(np.float64),
        "fp32 accumulator": acc32,
        "fp32 accumulator, bf16 result": round_to(acc32, "bfloat16"),
    }
    return {k: np.abs(v - exact) / exact for k, v in sums.items()}


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

    return getattr(torch, dtype) if isinstance(dtype, str) else dtype


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


@contextmanager
def linear_hooks(model: Any, hook: Callable[[Any, Any, Any], Any]) -> Iterator[None]:
    """``hook`` as a forward hook of every ``nn.Linear`` of ``model`` while the block runs (ValueError: none)."""
    import torch

    hooks = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not hooks:
        raise ValueError("model must contain at least one torch.nn.Linear")
    try:
        yield
    finally:
        for h in hooks:
            h.remove()


def _linear_outputs(model: Any, x: Any, y: Any, dtype: Any = None, scale: float = 1.0) -> list[Any]:
    """Every ``nn.Linear`` output of ``model`` on (x, y), its gradient kept, after a backward pass of the loss
    times ``scale`` (forward under autocast in ``dtype``)."""
    outputs: list[Any] = []

    def keep(module: Any, inputs: Any, output: Any) -> None:
        output.retain_grad()
        outputs.append(output)

    with linear_hooks(model, keep):
        (_loss(model, x, y, dtype).float() * scale).backward()
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
                grad_max: Any, name: Format = "float16") -> ScaleTrace:
    """Summarise a run's ``scales``, ``skipped`` flags and largest gradients against format ``name``'s max."""
    scales = np.asarray(scales, dtype=np.float64)
    flags = np.asarray(skipped, dtype=bool)
    gmax = _as_float64("grad_max", grad_max).ravel()
    if len(gmax) != len(scales):
        raise ValueError(f"grad_max and scales must be the same length; got {len(gmax)} and {len(scales)}")
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
