"""Floating-point formats, measured: bit layouts, range and precision from ``finfo``, rounding, and long sums.

Every number here is computed from NumPy's / ml_dtypes' ``finfo`` or from real arrays; nothing is typed in.
TF32 has no NumPy type: it is fp32's exponent with fp16's mantissa, rounded here by bit masking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import display, validate

FORMATS = ("float32", "tf32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
SHORT = {"float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16",
         "float8_e4m3fn": "fp8 e4m3", "float8_e5m2": "fp8 e5m2"}


def check_format(name: Any, argument: str = "name") -> str:
    """Return ``name`` if it is one of ``FORMATS``; TypeError/ValueError naming ``argument`` otherwise."""
    validate.instance(argument, name, str)
    return validate.choice(argument, name, FORMATS)


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype storing format ``name`` (tf32 is stored in float32: it has no type of its own)."""
    check_format(name)
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


def float_format(name: str) -> FloatFormat:
    """Bits, epsilon and range from ``np.finfo`` / ``ml_dtypes.finfo`` (tf32: fp32's range, fp16's mantissa)."""
    check_format(name)
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
class FormatTable:
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

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def format_table(names: Sequence[str] = FORMATS) -> FormatTable:
    """A ``FormatTable`` of ``names`` (default: fp32, tf32, fp16, bf16, fp8 e4m3, fp8 e5m2)."""
    validate.non_empty("names", names)
    return FormatTable(tuple(float_format(check_format(n, "names")) for n in names))


def _as_float64(name: str, x: Any) -> np.ndarray:
    if x is None or isinstance(x, (str, bytes, bool)):
        raise TypeError(f"{name} must be a number or an array of numbers; got {type(x).__name__} {x!r}")
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().float().cpu().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number or an array of numbers; got {type(x).__name__}") from exc


def round_to(x: Any, name: str) -> np.ndarray:
    """``x`` rounded to format ``name`` (nearest, ties to even) and returned as float64; overflow gives inf or nan."""
    check_format(name)
    x = _as_float64("x", x)
    with np.errstate(over="ignore", invalid="ignore"):
        if name == "tf32":
            u = x.astype(np.float32).view(np.uint32)
            lsb = (u >> np.uint32(13)) & np.uint32(1)
            rounded = ((u + np.uint32(0x0FFF) + lsb) & np.uint32(0xFFFFE000)).view(np.float32)
            return np.where(np.isfinite(x.astype(np.float32)), rounded, x.astype(np.float32)).astype(np.float64)
        return x.astype(numpy_dtype(name)).astype(np.float64)


def relative_rounding_error(magnitudes: Any, name: str, *, samples: int = 256, seed: int = 0) -> np.ndarray:
    """Largest relative error of storing values in [m, 2m) in format ``name``, for each magnitude m.

    1.0 means the value was flushed to zero; inf means it overflowed (inf or nan).
    """
    check_format(name)
    validate.number("samples", samples, low=1, high=100_000, integer=True)
    validate.non_negative("seed", seed, integer=True)
    m = _as_float64("magnitudes", magnitudes).reshape(-1, 1)
    if m.size == 0:
        raise ValueError("magnitudes must not be empty")
    if not np.all(np.isfinite(m)) or np.any(m <= 0):
        raise ValueError("magnitudes must be finite positive numbers")
    x = m * (1.0 + np.random.default_rng(seed).random((1, samples)))
    r = round_to(x, name)
    with np.errstate(invalid="ignore"):
        err = np.where(np.isfinite(r), np.abs(r - x) / x, np.inf)
    return err.max(axis=1)


def accumulation_error(lengths: Sequence[int], *, seed: int = 0) -> dict[str, np.ndarray]:
    """Relative error of summing n bf16 values from U(0, 1), for each n in ``lengths``, three ways.

    "bf16 accumulator": every partial sum rounded to bf16 (a naive loop); "fp32 accumulator": bf16 inputs,
    fp32 running sum (what matmul units do); "fp32 accumulator, bf16 result": the same, rounded once at the end.
    The reference is the float64 sum of the same bf16 inputs.
    """
    import ml_dtypes

    validate.non_empty("lengths", lengths)
    for n in lengths:
        validate.positive("lengths", n if not isinstance(n, np.integer) else int(n), integer=True)
    validate.number("lengths", max(int(n) for n in lengths), high=10**8)
    validate.non_negative("seed", seed, integer=True)
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

