"""The sentences of notebook 03's speed section (section 5), one function per paragraph, each reading the stored
verdict and the outcome label that ``speed`` computed from the intervals; re-exported by ``story``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from course_utils import intervals, machine, validate
from course_utils.display import Prose, Verdict, format_bytes, format_flops, format_rate, percent, prose
from course_utils.precision.library import LibraryReport
from course_utils.precision.speed import CLAIM_BAND, CLAIM_OUTCOMES, STEP_OUTCOMES, UnitBound

MATMUL_OUTCOMES = ("within bound", "beyond bound", "not faster", "slower", "not slower")
HALVING_OUTCOMES = ("as predicted", "beyond 2x", "not faster")


def _speedup(name: str, value: Any) -> intervals.Speedup:
    return validate.instance(name, value, intervals.Speedup)


def matmul_speed(v: Verdict, kind: str, speed: intervals.Speedup, bound: UnitBound, *, n: int,
                 flops: Mapping[str, float]) -> Prose:
    """Section 5: torch's bf16 matmul against fp32, read against the bound the prediction came from."""
    validate.instance("v", v, Verdict)
    validate.choice("kind", kind, MATMUL_OUTCOMES)
    speed = _speedup("speed", speed)
    validate.instance("bound", bound, UnitBound)
    n = validate.positive("n", n, integer=True)
    validate.instance("flops", flops, Mapping)
    head = (f"torch's bf16 matmul ran at **{speed}** the speed of fp32 ({format_flops(flops['torch bf16'])} against "
            f"{format_flops(flops['torch fp32'])}, n = {n}). ")
    if bound.ratio is None:
        head += f"This machine has no bf16 units ({bound.source}). "
    elif math.isinf(bound.ratio):
        head += f"No bound is computed for {bound.unit}: {bound.source}. "
    else:
        head += f"The bound, {bound.ratio:g}x for {bound.unit}, is {bound.source}. "
    if kind == "within bound":
        tail = "bf16 was faster beyond the noise and within that bound, as predicted."
    elif kind == "beyond bound":
        tail = (f"The whole interval lies above it, so the units do not explain all of it: the fp32 kernel at this "
                f"size is the slow side, running at most {percent(bound.ratio / speed.ratio)} of the rate an fp32 "
                "kernel as efficient as the bf16 one would reach (computed: bound over measured ratio). Why is not "
                "established here; Going further reads what the fp32 library reported.")
    elif kind == "not faster":
        tail = ("The units were there, yet bf16 was not faster beyond the noise at this size: the library did not "
                "turn them into speed here; why is not established by this run.")
    elif kind == "slower":
        tail = ("bf16 ran slower beyond the noise, as predicted: without units every value is converted to fp32 in "
                "software, so bf16 is a memory format here, not a speed-up.")
    else:
        tail = ("bf16 was not slower beyond the noise, which the prediction did not expect without units; why is not "
                "established by this run.")
    return prose(head, tail)


def which_kernel(report: LibraryReport, *, dot_operands: tuple[str, ...] | None = None, converts: int = 0,
                 jax_speed: intervals.Speedup | None = None, device_type: str = "cpu") -> Prose:
    """Section 5: which kernels ran, from the libraries' own lines (MKL, oneDNN) and from XLA's optimized HLO."""
    validate.instance("report", report, LibraryReport)
    validate.choice("device_type", device_type, ("cpu", "cuda"))
    converts = validate.non_negative("converts", converts, integer=True)
    parts = ["On the GPU the matmuls above ran in cuBLAS; the lines printed are this machine's CPU libraries. "
             if device_type == "cuda" else ""]
    if report.mkl_ran:
        parts.append(f"MKL ran the fp32 matmul ({report.mkl_calls[0][0]}) on the code path it chose at run time: "
                     f"\"{report.mkl_path or 'not printed'}\". ")
    else:
        parts.append("MKL printed no GEMM line: torch's fp32 matmul did not go through MKL here. ")
    kernel = report.bf16_kernel
    if kernel and "amx" in kernel:
        parts.append(f"oneDNN ran the bf16 matmul as `{kernel}`: on AMX tiles. ")
    elif kernel:
        parts.append(f"oneDNN ran the bf16 matmul as `{kernel}`. ")
    elif report.onednn_isa:
        parts.append("oneDNN printed no bf16 matmul: torch ran it in its own loop (the fallback). ")
    else:
        parts.append("oneDNN printed nothing: this torch does not use it for the bf16 matmul. ")
    if dot_operands is not None:
        widened = dot_operands == ("f32",)
        parts.append(f"\n\nXLA's optimized HLO for JAX's bf16 matmul holds a dot on {'/'.join(dot_operands)} operands "
                     f"and {converts} convert ops: " + (
                         "XLA widens the bf16 inputs to fp32 and runs an fp32 dot, so bf16 units sit idle"
                         if widened else "the dot itself runs on 16-bit operands")
                     + (f"; JAX's bf16 ran at {_speedup('jax_speed', jax_speed)} its fp32 speed. " if jax_speed
                        else ". ")
                     + "The hardware decides what is possible, the library what you get.")
    return prose("".join(parts))


def fp32_roof(fp32_flops: float, figures: machine.MachineFigures, *, n: int) -> Prose:
    """Section 5: torch's fp32 matmul against the machine's compute roof (measured once for the run)."""
    fp32_flops = validate.positive("fp32_flops", fp32_flops)
    validate.instance("figures", figures, machine.MachineFigures)
    n = validate.positive("n", n, integer=True)
    share = fp32_flops / figures.peak_flops
    text = (f"torch's fp32 matmul reached {format_flops(fp32_flops)} at n = {n}: {percent(share)} of this machine's "
            f"compute roof ({figures.flops_probe}, {format_flops(figures.peak_flops)}, measured once for the run). ")
    if share > 1:
        text += ("Above 100% means the roof's probe, timed at another moment, under-read what this CPU sustains; "
                 "read that roof as a lower bound here. ")
    return prose(text)


def halved_bytes(v: Verdict, halving: Mapping[str, intervals.Speedup], kinds: Mapping[str, str], *,
                 shares: Mapping[str, float], figures: machine.MachineFigures, array_bytes: int,
                 llc: int | None) -> Prose:
    """Section 5: the STREAM copy and triad in bf16 against fp32 (half the bytes), and their share of the roof."""
    validate.instance("v", v, Verdict)
    validate.instance("halving", halving, Mapping)
    validate.instance("kinds", kinds, Mapping)
    validate.instance("shares", shares, Mapping)
    validate.instance("figures", figures, machine.MachineFigures)
    array_bytes = validate.positive("array_bytes", array_bytes, integer=True)
    parts = ["In bf16, " + " and ".join(f"the {op} ran at {_speedup('halving', sp)} the speed of fp32"
                                         for op, sp in halving.items())
             + f", on {format_bytes(array_bytes)} fp32 arrays (half that in bf16). "]
    for op, kind in kinds.items():
        validate.choice(f"kinds[{op!r}]", kind, HALVING_OUTCOMES)
        if kind == "as predicted":
            parts.append(f"The {op}: faster beyond the noise and not beyond 2x, so half the bytes bought the time. ")
        elif kind == "beyond 2x":
            cache = format_bytes(llc) if llc else "its"
            parts.append(f"The {op} gained more than half the bytes explain, beyond the noise; a candidate: each bf16 "
                         f"array is half the size, so more of it stays in the {cache} last-level cache (not "
                         "established by this run). ")
        else:
            why = ("converting each value to fp32 and back for the arithmetic" if op == "triad" else
                   "the load on this shared machine during the bf16 rounds (a copy converts nothing)")
            parts.append(f"The {op} was not faster beyond the noise: something besides the bytes cost bf16 time (a "
                         f"candidate: {why}; not established by this run). ")
    parts.append("\n\nOn the roofline the triads reached " + " and ".join(
        f"{percent(s)} ({label})" for label, s in shares.items()) + f" of the memory roof ({figures.bandwidth_probe}, "
        f"{format_rate(figures.bandwidth)}). ")
    if any(s > 1 for s in shares.values()):
        parts.append("Above 100% means the roof's probe, timed once at another moment, under-read the bandwidth these "
                     "ops got; read it as a lower bound here. ")
    if llc and array_bytes < 4 * llc:
        parts.append(f"Each fp32 array is under 4x the last-level cache this machine reports ({format_bytes(llc)}), so "
                     "part of the traffic may be served from cache. ")
    parts.append("The prediction held." if v.held else "The prediction failed (see the verdict).")
    return prose("".join(parts))


def _step_reason(kind: str, step: intervals.Speedup, mm: intervals.Speedup) -> str:
    if kind == "diluted":
        return "the rest of the step diluted the matmul's gain, beyond the noise of both, as predicted. "
    if kind == "noise of matmul":
        return (f"the two intervals overlap ({step.low:.2f}x to {step.high:.2f}x and {mm.low:.2f}x to "
                f"{mm.high:.2f}x), so this run shows no dilution it can resolve. ")
    if kind == "noise of 1":
        return "the step's interval holds 1x: no change this run can resolve. "
    if kind == "further":
        return ("the step moved further from 1 than the matmul did, beyond the noise; why is not established (a "
                "candidate: the step's matmul shapes run at other rates than the square matmul). ")
    return "the step moved the other way from 1 than the matmul did; why is not established by this run. "


def step_speed(v: Verdict, kind: str, step: intervals.Speedup, matmul_speed: intervals.Speedup, *,
               shares: Mapping[str, float], step_flops: int, amp_name: str) -> Prose:
    """Section 5: the whole training step's speed-up against the bare matmul's, and the matmuls' share of it."""
    validate.instance("v", v, Verdict)
    validate.choice("kind", kind, STEP_OUTCOMES)
    step, matmul_speed = _speedup("step", step), _speedup("matmul_speed", matmul_speed)
    validate.instance("shares", shares, Mapping)
    step_flops = validate.positive("step_flops", step_flops, integer=True)
    validate.text("amp_name", amp_name)
    text = (f"The {amp_name} autocast step ran at **{step}** the speed of the fp32 step, against {matmul_speed} for "
            f"the bare matmul: " + _step_reason(kind, step, matmul_speed))
    text += (f"\n\nAt the bare matmul's rates, the step's matmuls ({step_flops / 1e9:.2f} GFLOP, computed from the "
             f"layer widths) would take {percent(shares['fp32'])} of the fp32 step's median time and "
             f"{percent(shares['bf16'])} of the 16-bit step's (computed, assuming the step's shapes run at the square "
             "matmul's rate)")
    if max(shares.values()) > 1:
        text += ("; above 100%, the estimate cannot size the matmuls' share here (the step's shapes ran faster than "
                 "the square matmul did when it was timed). ")
    else:
        text += ". "
    return prose(text + ("" if v.held else "The prediction failed."))


def seed_claim(v: Verdict, claim: str, step: intervals.Speedup, *, native: bool) -> Prose:
    """Section 5: the seed's "~30% faster" against the step's interval, and what this machine could not test."""
    validate.instance("v", v, Verdict)
    validate.choice("claim", claim, CLAIM_OUTCOMES)
    step = _speedup("step", step)
    validate.instance("native", native, bool)
    low, high = CLAIM_BAND
    text = {"held": (f"The seed's \"~30% faster\" holds in this run: the step was faster beyond the noise, at "
                     f"{step.ratio:.2f}x, inside the {low:.1f}x to {high:.1f}x read as \"about 1.3x\". "),
            "unresolved": (f"This run cannot decide the seed's \"~30% faster\": the step's interval ({step.low:.2f}x "
                           f"to {step.high:.2f}x) reaches the {low:.1f}x to {high:.1f}x read as \"about 1.3x\", but "
                           + ("also holds 1x. " if step.low <= 1 <= step.high else
                              f"its ratio, {step.ratio:.2f}x, lies outside it. ")),
            "exceeded": (f"The seed's \"~30% faster\" was exceeded: this step ran {step.ratio:.2f}x, and even its "
                         f"interval's low end ({step.low:.2f}x) is above {high:.1f}x. "),
            "short": (f"The seed's \"~30% faster\" does not hold in this run: even the interval's high end "
                      f"({step.high:.2f}x) is below {low:.1f}x. ")}[claim]
    text += ("That is one step, on this machine's 16-bit units, at this size; a step with more work outside the "
             "matmuls was not tested here. Measure it on your model." if native else
             "Whether the claim holds where the hardware has 16-bit units was not tested here: this machine has none, "
             "and a small or cast-heavy step can come out slower. Measure it on your model.")
    return prose(text)
