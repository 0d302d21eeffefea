"""The sentences of notebook 03's speed section, generated from the run's numbers: which bf16 units the CPU
has and what they can give (computed), where the fp32 matmul stands against its roofs, whether a difference
is beyond the noise, and what became of the seed's "~30% faster".

Every function returns text or an outcome label; the notebook decides nothing from what was seen last time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from course_utils import display, validate

# The seed's claim, "~30% faster", read as a band: a measured quartile range that reaches it is "about 1.3x".
CLAIM_BAND = (1.2, 1.4)
# VDPBF16PS (AVX512-BF16) multiplies two bf16 pairs per fp32 lane where an fp32 FMA multiplies one pair.
AVX512_BF16_RATIO = 2.0


def _band(name: str, value: Any) -> tuple[float, float]:
    validate.non_empty(name, value)
    if len(value) != 2:
        raise ValueError(f"{name} must be a (low, high) pair; got {value!r}")
    low, high = (float(validate.positive(name, v)) for v in value)
    if low > high:
        raise ValueError(f"{name} must have low <= high; got {value!r}")
    return low, high


def ratio_band(base: Any, other: Any) -> tuple[float, float, float]:
    """Speed of ``other`` over ``base`` (two timing.Measurements): median ratio, and the low and high ends from
    the quartiles (base's fast quartile over other's slow one, and the reverse), as ``timing.compare`` does."""
    for name, m in (("base", base), ("other", other)):
        if not all(hasattr(m, a) for a in ("median", "p25", "p75")):
            raise TypeError(f"{name} must be a timing.Measurement; got {type(m).__name__}")
    return base.median / other.median, base.p25 / other.p75, base.p75 / other.p25


def bf16_units(flags: Sequence[str]) -> tuple[str, ...]:
    """The bf16 units the CPU flags show, named with their flags ('AMX (amx_bf16, amx_tile)', 'AVX512-BF16
    (avx512_bf16)'); empty where it has none."""
    validate.instance("flags", flags, (list, tuple))
    have = set(flags)
    units = []
    if have & {"amx_bf16", "amx_tile"}:
        units.append(f"AMX ({', '.join(f for f in ('amx_bf16', 'amx_tile') if f in have)})")
    if "avx512_bf16" in have:
        units.append("AVX512-BF16 (avx512_bf16)")
    return tuple(units)


def bf16_unit_ratio(flags: Sequence[str]) -> float | None:
    """bf16 over fp32 multiply-adds per instruction (computed): 2.0 where AVX512-BF16 is the only bf16 unit;
    None with AMX (its tile multiply is not bounded by that ratio, and none is computed here) or with no unit."""
    validate.instance("flags", flags, (list, tuple))
    have = set(flags)
    if have & {"amx_bf16", "amx_tile"} or "avx512_bf16" not in have:
        return None
    return AVX512_BF16_RATIO


def fp32_share_text(fp32_flops: float, n: int, *, roof_flops: float, roof_label: str,
                    peak_flops: float | None) -> str:
    """The fp32 matmul's rate as a fraction of this run's measured fp32 roof and of the computed peak."""
    fp32_flops = validate.positive("fp32_flops", fp32_flops)
    n = validate.positive("n", n, integer=True)
    roof_flops = validate.positive("roof_flops", roof_flops)
    validate.text("roof_label", roof_label)
    text = (f"fp32 reached {display.format_flops(fp32_flops)} at n = {n}: {display.percent(fp32_flops / roof_flops)} "
            f"of the fp32 matmul roof measured in this run ({roof_label}: {display.format_flops(roof_flops)})")
    if peak_flops is None:
        text += " (no computed peak: this OS does not report the clock). "
    else:
        peak_flops = validate.positive("peak_flops", peak_flops)
        text += (f" and {display.percent(fp32_flops / peak_flops)} of the computed fp32 peak "
                 f"({display.format_flops(peak_flops)}, notebook 00's formula). ")
    if fp32_flops > roof_flops:
        text += ("Above 100% of the measured roof means that probe, one timing taken at another moment of this run, "
                 "under-read what this CPU sustains; why (the load on this shared machine then is a candidate) is not "
                 "established by this run. ")
    return text


def _triple(name: str, value: Any) -> tuple[float, float, float]:
    validate.non_empty(name, value)
    if len(value) != 3:
        raise ValueError(f"{name} must be (median, low, high); got {value!r}")
    mid, low, high = (float(validate.positive(name, v)) for v in value)
    if not low <= mid <= high:
        raise ValueError(f"{name} must be (median, low, high) with low <= median <= high; got {value!r}")
    return mid, low, high


def bf16_units_text(flags: Sequence[str], speed: tuple[float, float, float], *, fp32_flops: float, bf16_flops: float,
                    peak_flops: float | None) -> str:
    """What the bf16 units present can give (computed) against the measured bf16/fp32 matmul speed-up ``speed``
    (median, low, high from the quartiles); where even its low end exceeds what the units allow, the fp32 side is
    named as the slow one."""
    units = bf16_units(flags)
    mid, low, high = _triple("speed", speed)
    fp32_flops, bf16_flops = validate.positive("fp32_flops", fp32_flops), validate.positive("bf16_flops", bf16_flops)
    if not units:
        return "The CPU flags show no bf16 unit (no avx512_bf16, amx_bf16 or amx_tile). "
    text = f"The bf16 unit{'s' if len(units) > 1 else ''} this CPU's flags show: {' and '.join(units)}"
    bound = bf16_unit_ratio(flags)
    if bound is None:
        return text + (". AMX multiplies whole tiles, so no per-instruction bound like AVX512-BF16's 2x applies; "
                       f"none is computed here, and the measured {mid:.2f}x is not compared with one. ")
    text += (f"; no AMX (no amx_bf16 or amx_tile flag). Its VDPBF16PS instruction does two bf16 multiply-adds per "
             f"fp32 lane where an fp32 FMA does one: at equal instruction rates bf16 can be at most "
             f"**{bound:.0f}x** faster (computed). ")
    if peak_flops is not None:
        peak_flops = validate.positive("peak_flops", peak_flops)
        share = bf16_flops / (bound * peak_flops)
        text += (f"bf16 reached {display.format_flops(bf16_flops)}, {display.percent(share)} of {bound:.0f}x the "
                 "computed fp32 peak" + (": above 100%, so the computed peak is too low for this run (a clock above "
                                         "the one the formula used is a candidate; not established by this run). "
                                         if share > 1 else ". "))
    spread = f"quartiles {low:.2f}x to {high:.2f}x"
    if low > bound:
        return text + (f"The measured {mid:.2f}x ({spread}) exceeds the {bound:.0f}x the units can give, beyond the "
                       "noise, so the bf16 units do not explain all of it: the fp32 kernel at this size is the slow "
                       f"side. By the {bound:.0f}x bound it ran at most {display.percent(bound / mid)} (computed: "
                       f"{bound:.0f} / {mid:.2f}) of the rate an fp32 kernel as efficient as the bf16 one would reach "
                       "on these cores; why the fp32 kernel falls short at this size is not established by this run. ")
    if mid > bound:
        return text + (f"The measured {mid:.2f}x is above that bound by its median, but its {spread} reach the bound: "
                       f"within the noise of {bound:.0f}x, so this run cannot say whether the fp32 side ran slow. ")
    if mid > 1:
        return text + f"The measured {mid:.2f}x ({spread}) is within the {bound:.0f}x the units allow. "
    return text + (f"Yet bf16 ran at {mid:.2f}x of fp32 ({spread}): the library did not get the units' gain at this "
                   "size; why is not established by this run. ")


def step_outcome(step: tuple[float, float, float], matmul: tuple[float, float, float]) -> str:
    """How a training step's bf16/fp32 speed-up (median, low, high) relates to the bare matmul's: 'diluted' (its
    quartile range lies between 1 and the matmul's), 'noise of matmul' (the two ranges overlap), 'noise of 1'
    (its range holds 1), 'further' (beyond the matmul's, apart) or 'opposite' (the other side of 1)."""
    s, s_low, s_high = _triple("step", step)
    m, m_low, m_high = _triple("matmul", matmul)
    if (m > 1 and 1 < s_low and s_high < m_low) or (m < 1 and m_high < s_low and s_high < 1):
        return "diluted"
    if s_low <= m_high and m_low <= s_high:
        return "noise of matmul"
    if s_low <= 1 <= s_high:
        return "noise of 1"
    return "further" if (s > m > 1 or s < m < 1) else "opposite"


def step_reason(outcome: str, step: tuple[float, float, float], matmul: tuple[float, float, float], n: int) -> str:
    """The 'why' of a failed dilution prediction, for each ``step_outcome`` other than 'diluted'."""
    validate.choice("outcome", outcome, ("noise of matmul", "noise of 1", "further", "opposite"))
    n = validate.positive("n", n, integer=True)
    s, s_low, s_high = step
    m, m_low, m_high = matmul
    if outcome == "noise of matmul":
        inside = s_low <= m <= s_high
        return (f"the step's {s:.2f}x is within the noise of the matmul's ratio: "
                + (f"the matmul's {m:.2f}x lies inside the step's quartiles ({s_low:.2f}x to {s_high:.2f}x)"
                   if inside else f"the quartile ranges ({s_low:.2f}x to {s_high:.2f}x and {m_low:.2f}x to "
                   f"{m_high:.2f}x) overlap")
                + ", so this run shows no dilution")
    if outcome == "noise of 1":
        return f"the step's quartiles ({s_low:.2f}x to {s_high:.2f}x) hold 1x: no change this run can resolve"
    if outcome == "further":
        return (f"it moved further from 1 than the matmul did, beyond the noise ({s_low:.2f}x to {s_high:.2f}x "
                f"against {m_low:.2f}x to {m_high:.2f}x); why is not established by this run (a candidate: the "
                f"step's matmul shapes run at other rates than the n = {n} square matmul)")
    return "it moved the other way from 1 than the matmul did; why is not established by this run"


def mlp_step_flops(sizes: Sequence[int], batch: int) -> int:
    """Matmul FLOPs of one MLP training step (computed): 2·B·in·out per layer forward, the same again for its
    weight gradient and for its input gradient, except the first layer's (its input needs none)."""
    validate.non_empty("sizes", sizes)
    if len(sizes) < 2:
        raise ValueError(f"sizes must hold at least an input and an output width; got {sizes!r}")
    widths = [validate.positive("sizes", s, integer=True) for s in sizes]
    batch = validate.positive("batch", batch, integer=True)
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


def matmul_share_text(shares: Mapping[str, float], step_flops: float, outcome: str) -> str:
    """The ``matmul_shares`` in a sentence, and what they say about a ``step_outcome`` of 'noise of matmul'."""
    validate.instance("shares", shares, Mapping)
    step_flops = validate.positive("step_flops", step_flops)
    validate.text("outcome", outcome)
    fp32, bf16 = (validate.positive("shares", shares[f]) for f in ("fp32", "bf16"))
    text = (f"At the bare matmul's rates, the step's matmuls ({step_flops / 1e9:.2f} GFLOP, computed from the layer "
            f"widths) would take {display.percent(fp32)} of the fp32 step's median time and {display.percent(bf16)} of "
            "the bf16 step's (computed from measured rates, assuming the step's shapes run at the bare matmul's rate)")
    if max(fp32, bf16) > 1:
        return text + (": above 100% means the step's matmuls ran faster than the bare matmul did when it was timed "
                       "(other shapes, or another moment on a shared machine), so the estimate cannot size the "
                       "matmuls' share of the step here"
                       + ("; whether much dilution was to be expected is not established by this run. "
                          if outcome == "noise of matmul" else ". "))
    text += ". "
    if outcome != "noise of matmul":
        return text
    if min(fp32, bf16) >= 0.7:
        return text + ("On that estimate the step is mostly matmuls, so little dilution was to be expected, and what "
                       "there is hides in the noise; that reading rests on the estimate, not on a separate "
                       "measurement. ")
    return text + ("On that estimate a good part of the step is not matmuls, yet no dilution shows beyond the noise; "
                   "why is not established by this run. ")


def claim_outcome(low: float, high: float, band: tuple[float, float] = CLAIM_BAND) -> str:
    """'held' where the quartile range [low, high] reaches the claim's band, 'exceeded' where even ``low`` is above
    it, 'short' where even ``high`` is below it."""
    low, high = _band("quartiles", (low, high))
    b_low, b_high = _band("band", band)
    if low > b_high:
        return "exceeded"
    if high < b_low:
        return "short"
    return "held"


def claim_text(outcome: str, speedup: float, low: float, high: float, band: tuple[float, float] = CLAIM_BAND) -> str:
    """The sentence on the seed's "~30% faster" for a ``claim_outcome``."""
    validate.choice("outcome", outcome, ("held", "exceeded", "short"))
    b_low, b_high = _band("band", band)
    if outcome == "exceeded":
        return (f"The seed's \"~30% faster\" was exceeded: this step ran {speedup:.2f}x the fp32 step's speed, not "
                f"~1.3x, and even its slow end ({low:.2f}x) is above the {b_low:.1f}x-{b_high:.1f}x read as \"about "
                "1.3x\". ")
    if outcome == "short":
        return (f"The seed's \"~30% faster\" does not hold in this run: even the fast end ({high:.2f}x) is below "
                f"{b_low:.1f}x. ")
    return (f"The seed's \"~30% faster\" holds in this run: the quartile range reaches the {b_low:.1f}x-{b_high:.1f}x "
            "read as \"about 1.3x\". ")


def bandwidth_text(bw: Mapping[str, tuple[float, float, float]], time_ratios: Mapping[str, float], *,
                   array_bytes: int, llc: int | None) -> str:
    """Per op, whether bf16 kept fp32's bandwidth (``bw``: op -> (median, low, high) share from
    ``bandwidth_ratio``): within the noise, above it or below it, and what that does and does not establish."""
    validate.non_empty("bw", bw)
    validate.instance("time_ratios", time_ratios, Mapping)
    array_bytes = validate.positive("array_bytes", array_bytes, integer=True)
    same = [op for op, (_, lo, hi) in bw.items() if lo <= 1 <= hi]
    above = [op for op, (_, lo, _h) in bw.items() if lo > 1]
    below = [op for op, (_, _l, hi) in bw.items() if hi < 1]
    parts = []
    if same:
        parts.append(f"In the {' and '.join(same)} bf16's bandwidth is within the noise of fp32's (the quartile "
                     "range holds 100%): half the bytes took half the time. ")
    for op in above:
        cache = f"the {display.format_bytes(llc)} last-level cache" if llc else "the cache"
        parts.append(f"In the {op} bf16 moved bytes faster than fp32, beyond the noise (the whole quartile range lies "
                     f"above 100%): the bf16 {op} took {time_ratios[op]:.2f}x the fp32 time, less than half. That much "
                     "is established; why is not established by this run (candidates: each bf16 array is half the "
                     f"size, {display.format_bytes(array_bytes // 2)}, so more of it may be served from {cache}; or "
                     f"torch's bf16 {op} loop differs from its fp32 one). ")
    for op in below:
        candidate = ("converting each value to fp32 and back for the arithmetic, or the load on this shared machine "
                     "during the bf16 timings" if op == "triad" else
                     "the load on this shared machine during the bf16 timings (a copy converts nothing)")
        parts.append(f"In the {op} bf16 moved bytes slower than fp32, beyond the noise (the whole quartile range lies "
                     f"below 100%): the bf16 {op} took {time_ratios[op]:.2f}x the fp32 time, more than half, so "
                     f"something besides the bytes cost bf16 time; what is not established by this run (a candidate: "
                     f"{candidate}). ")
    return "".join(parts)


def roof_share_text(shares: Mapping[str, float], roof: float, probe_bytes: int | None) -> str:
    """What a share of the memory roof above 100% means: this run's roof probe under-read the bandwidth the op got
    (the roof is the best probe, measured once, earlier); empty when every share is at most 100%."""
    validate.non_empty("shares", shares)
    roof = validate.positive("roof", roof)
    over = {k: validate.positive("shares", v) for k, v in shares.items() if v > 1}
    if not over:
        return ""
    probe = f" on {display.format_bytes(probe_bytes)} arrays" if probe_bytes else ""
    points = f"The {' and '.join(over)} point{'s' if len(over) > 1 else ''}"
    return (f"{points} reached {' and '.join(display.percent(v) for v in over.values())} of "
            "the memory roof: "
            f"the roof is this run's best bandwidth probe ({display.format_rate(roof)}, timed once before these "
            f"ops{probe}), so above 100% means that probe under-read the bandwidth available when these ops ran. By "
            "how much, and why (the load on this shared machine at that moment is a candidate), is not established by "
            "this run; read the roof as a lower bound here, not as the machine's limit. ")
