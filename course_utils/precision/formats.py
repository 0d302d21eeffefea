"""Floating-point formats read from ``finfo`` (TF32, which has no NumPy type, is fp32's exponent with fp16's
mantissa, rounded by bit masking), rounding, and long sums."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import declare, display
from course_utils.declare import NonEmpty, Range

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

