"""Speed per format on this machine: which bf16 units the CPU flags show and how much faster they can make a matmul
(the bound the prediction comes from, and the check built from it), a STREAM op as a roofline point, the matmul FLOPs
of a training step and the checks that its speed-up dilutes the bare matmul's (the sentences are in ``findings``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import findings, intervals, roofline, validate

# Published dense peaks of one NVIDIA A100 SXM (datasheet); shown as published, never as measured.
A100_PUBLISHED = {"A100 fp32": 19.5e12, "A100 tf32 (tensor cores)": 156e12, "A100 bf16 / fp16": 312e12}
# VDPBF16PS (AVX512-BF16) multiplies two bf16 pairs per fp32 lane where an fp32 FMA multiplies one pair.
AVX512_BF16_RATIO = 2.0
# Intel's published per-core rates: AMX-BF16 1,024 FLOPs per cycle; AVX-512 fp32 with two FMA units 64.
AMX_BF16_FLOPS_PER_CYCLE, AVX512_FP32_FLOPS_PER_CYCLE = 1024, 64
# The seed's claim, "~30% faster", read as a band: an interval inside it is "about 1.3x".
CLAIM_BAND = (1.2, 1.4)
STREAM_OPS = ("copy", "triad")
_STREAM = {"copy": (2, 0), "triad": (3, 2)}  # arrays touched per element (read + write), FLOPs per element


def _flags(flags: Sequence[str]) -> set[str]:
    if isinstance(flags, (str, bytes)):
        raise TypeError("flags must be a list or tuple of CPU flag names, not a string")
    validate.instance("flags", flags, (list, tuple))
    for i, f in enumerate(flags):
        validate.instance(f"flags[{i}]", f, str)
    return set(flags)


@dataclass(frozen=True)
class UnitBound:
    """How much faster than fp32 the CPU's best bf16 unit can make a matmul, and where that figure comes from."""

    unit: str
    ratio: float | None
    source: str

    def __str__(self) -> str:
        """'AMX: at most 16x (...)', 'none: ...', 'tensor cores: no bound computed (...)'."""
        if self.ratio is None:
            return f"{self.unit}: {self.source}"
        if math.isinf(self.ratio):
            return f"{self.unit}: no bound computed ({self.source})"
        return f"{self.unit}: at most {self.ratio:g}x ({self.source})"


def bf16_bound(flags: Sequence[str], device_type: str = "cpu") -> UnitBound:
    """The bound a bf16 matmul's speed-up over fp32 is predicted from: AMX 16x (Intel's published per-core rates,
    1,024 bf16 FLOPs per cycle against 64 fp32 FLOPs of two AVX-512 FMA units), AVX512-BF16 2x (computed from
    the instruction: two bf16 products per fp32 lane), none without bf16 units (ratio None). On a CUDA device,
    tensor cores, with no bound computed here (ratio inf: the prediction is only "faster")."""
    have = _flags(flags)
    validate.choice("device_type", device_type, ("cpu", "cuda"))
    if device_type == "cuda":
        return UnitBound("tensor cores", math.inf, "not computed here: it depends on the GPU (an A100's datasheet "
                                                   "gives 16x, see the plot)")
    if "amx_bf16" in have:
        return UnitBound("AMX", AMX_BF16_FLOPS_PER_CYCLE / AVX512_FP32_FLOPS_PER_CYCLE,
                         f"Intel's published per-core rates: {AMX_BF16_FLOPS_PER_CYCLE:,} bf16 FLOPs per cycle "
                         f"with AMX against {AVX512_FP32_FLOPS_PER_CYCLE} fp32 FLOPs with two AVX-512 FMA units")
    if "avx512_bf16" in have:
        return UnitBound("AVX512-BF16", AVX512_BF16_RATIO,
                         "computed from the instruction: VDPBF16PS does two bf16 multiply-adds per fp32 lane where "
                         "an fp32 FMA does one")
    return UnitBound("none", None, "no avx512_bf16 or amx_bf16 flag: bf16 is converted to fp32 in software")


def matmul_check(speed: intervals.Speedup, bound: UnitBound) -> findings.Check:
    """The check of torch's bf16 matmul over fp32 against the units' bound: inside [1x, bound] with units, faster
    where no bound is computed (a GPU's tensor cores), slower without units (bf16 converted in software)."""
    validate.instance("speed", speed, intervals.Speedup)
    validate.instance("bound", bound, UnitBound)
    name = "torch bf16 matmul over fp32"
    if bound.ratio is None:
        return findings.slower(name, speed)
    if math.isinf(bound.ratio):
        return findings.faster(name, speed)
    return findings.within(name, speed, 1.0, bound.ratio)


def stream_point(name: str, seconds: Any, n_bytes_fp32: int) -> roofline.Point:
    """The roofline ``Point`` of a STREAM op ('triad bf16', 'copy fp32', ...) over ``n_bytes_fp32 // 4`` elements
    that took ``seconds`` (a number, or a Measurement whose median is used)."""
    validate.text("name", name)
    op, _, fmt = name.partition(" ")
    if op not in _STREAM or fmt not in ("fp32", "bf16"):
        raise ValueError(f"name must be '<copy|triad> <fp32|bf16>'; got {name!r}")
    n_bytes_fp32 = validate.number("n_bytes_fp32", n_bytes_fp32, low=4096, high=2**40, integer=True)
    count = n_bytes_fp32 // 4
    arrays, flops = _STREAM[op]
    seconds = validate.positive("seconds", getattr(seconds, "median", seconds))
    return roofline.Point(name, flops * count, arrays * count * (4 if fmt == "fp32" else 2), float(seconds))


def mlp_step_flops(sizes: Sequence[int], batch: int) -> int:
    """Matmul FLOPs of one MLP training step (computed): 2·B·in·out per layer forward, the same again for its
    weight gradient and for its input gradient, except the first layer's (its input needs none)."""
    if isinstance(sizes, (str, bytes)):
        raise TypeError("sizes must be a sequence of layer widths, not a string")
    validate.non_empty("sizes", sizes)
    if len(sizes) < 2:
        raise ValueError(f"sizes must hold at least an input and an output width; got {sizes!r}")
    widths = [validate.number("sizes", s, low=1, high=2**20, integer=True) for s in sizes]
    batch = validate.number("batch", batch, low=1, high=2**24, integer=True)
    products = [a * b for a, b in zip(widths[:-1], widths[1:])]
    return int(2 * batch * (3 * sum(products) - products[0]))


def matmul_shares(step_flops: float, flops: Mapping[str, float], step_seconds: Mapping[str, float]) -> dict[str, float]:
    """Per format ('fp32', 'bf16'), the share of the step's median time its matmuls would take at the bare
    matmul's measured rate (computed): ``step_flops`` / ``flops[f]`` / ``step_seconds[f]``."""
    step_flops = validate.positive("step_flops", step_flops)
    for name, mapping in (("flops", flops), ("step_seconds", step_seconds)):
        validate.instance(name, mapping, Mapping)
        if set(mapping) != {"fp32", "bf16"}:
            raise ValueError(f"{name} must map exactly 'fp32' and 'bf16'; got {sorted(mapping)}")
    return {f: step_flops / validate.positive("flops", flops[f]) / validate.positive("step_seconds", step_seconds[f])
            for f in ("fp32", "bf16")}


def step_checks(step: intervals.Speedup, matmul: intervals.Speedup, bound: UnitBound) -> tuple[findings.Check, ...]:
    """The checks of "the rest of the step dilutes the matmul's ratio": with bf16 units the step is faster beyond the
    noise and its whole interval lies below the bare matmul's low end; without units, slower beyond the noise and
    above the matmul's high end."""
    validate.instance("step", step, intervals.Speedup)
    validate.instance("matmul", matmul, intervals.Speedup)
    validate.instance("bound", bound, UnitBound)
    name = "autocast step over the fp32 step"
    if bound.ratio is None:
        return (findings.slower(name, step), findings.above(f"{name}, against the bare matmul's high end", step,
                                                            matmul.high))
    return findings.faster(name, step), findings.below(f"{name}, against the bare matmul's low end", step, matmul.low)
