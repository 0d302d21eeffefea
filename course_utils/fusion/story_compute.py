"""Notebook 02's sentences for sections 6-8: the matmul sweep, the epilogue, the custom op and attention, each a
function of the stored verdict and the measurements (``cu.fusion.story`` re-exports them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from course_utils import compiled, display, intervals, machine, roofline, validate
from course_utils.display import format_bytes, format_flops, percent
from course_utils.fusion import story_words as w
from course_utils.fusion.attention import AttentionBytes
from course_utils.fusion.traffic import Traffic

#: a framework's own matmul probe this many times under the best one is called out beside the roof
LIBRARY_GAP = 1.25


def matmul_sweep(v: display.Verdict, points: Sequence[roofline.Point], figures: machine.MachineFigures, *,
                 to_probe: float, cpu: str) -> display.Prose:
    """Section 6: each matmul's share of the compute roof, the ridge in n, the sweep against torch's own probe,
    and torch's probe against the best framework's (with the known candidate on AMD CPUs)."""
    v = w.verdict(v)
    validate.instance("points", points, Sequence)
    validate.non_empty("points", points)
    for i, p in enumerate(points):
        validate.instance(f"points[{i}]", p, roofline.Point)
    validate.instance("figures", figures, machine.MachineFigures)
    to_probe = validate.positive("to_probe", to_probe)
    validate.instance("cpu", cpu, str)
    peak, ridge = figures.peak_flops, figures.ridge_intensity
    first = (f"Share of the compute roof ({format_flops(peak)}, {figures.flops_probe}), an MFU-like ratio for one "
             "kernel: " + ", ".join(f"{p.label} {percent(p.achieved_flops / peak)}" for p in points)
             + f". The ridge point, {ridge:.1f} FLOP/byte, is n ≈ {6 * ridge:.0f}: smaller matmuls are bound by "
             "memory or by the call itself, larger ones can approach the roof.")
    if v.held:
        second = (f"The largest ran at {to_probe:.2f}x torch's own probe of the same size: the sweep and the machine "
                  "figures agree.")
    elif v.failed:
        second = (f"The largest ran at {to_probe:.2f}x torch's own probe of the same size, which was measured at "
                  "another moment of this run: one of the two is off by more than 20%, and this run does not "
                  "establish which.")
    else:
        second = w.untested(v, "The sweep against the probe")
    torch_peak = figures.roofs["torch"].peak_flops if "torch" in figures.roofs else peak
    if torch_peak * LIBRARY_GAP < peak:
        third = (f"Torch's fp32 matmul probe reached {percent(torch_peak / peak)} of the best framework's: the roof is "
                 "the machine's best, and a torch kernel can sit under it for its library's sake.")
        if "AMD" in cpu:
            third += (" On AMD CPUs a known candidate is MKL's code-path dispatch, which picks its kernels by CPU "
                      "vendor; `MKL_VERBOSE=1` prints the path MKL took. A candidate, not measured here.")
    else:
        third = "Torch's own matmul probe reached within 1.25x of the best framework's."
    return display.prose(first, second, third)


def epilogue(v: display.Verdict, gains: Mapping[str, intervals.Speedup], extra: Mapping[str, intervals.Speedup], *,
             extern: list[str], kernels: list[str], xla: str | None) -> display.Prose:
    """Section 6's epilogue: what each compiler did with the matmul and its epilogue, the fused epilogue against
    the eager one, and what the fused epilogue still adds to the matmul alone."""
    v = w.verdict(v)
    gains, extra = w.gains("gains", gains), w.gains("extra", extra)
    extern, kernels = w.names("extern", extern), w.names("kernels", kernels)
    if xla is not None:
        validate.text("xla", xla)
    first = (f"Inductor's launch code calls `{', '.join(extern) or 'no library'}` and {len(kernels)} generated "
             f"kernel{'s' if len(kernels) != 1 else ''} for the epilogue"
             + (f"; XLA hands the dot to {xla} and fuses the epilogue into a loop after it" if xla else "")
             + ". Fused epilogue over eager epilogue: " + "; ".join(f"{fw} {g}" for fw, g in gains.items()) + ".")
    if v.held:
        first += " Fusing the epilogue paid in every framework; the matmul itself is untouched."
    elif v.failed:
        first += (" Not beyond the noise in " + w.listed(fw for fw, g in gains.items() if not g.faster)
                  + ": this run does not separate the two epilogues there.")
    else:
        first += " " + w.untested(v, "The fused epilogue")
    second = ("With its fused epilogue the call took, against the matmul alone: "
              + "; ".join(f"{g.ratio:.3g}x in {fw} ({'beyond the noise' if g.faster else 'within the noise'})"
                          for fw, g in extra.items())
              + ". Fusion is a lever for the memory-bound work around a matmul, not for the matmul.")
    return display.prose(first, second)


def custom_op(v: display.Verdict, breaks: Any, gain: intervals.Speedup, *, kernels: int,
              callback: compiled.HloSummary | None, tf_refusal: str | None) -> display.Prose:
    """Section 7: graphs and breaks before and after registering the legacy op, the timing of the two, and what
    JAX and TensorFlow did with the same operator."""
    v = w.verdict(v)
    for attr in ("graph_count", "break_count", "reasons"):
        if not hasattr(breaks, attr):
            raise TypeError(f"breaks must be cu.graphs.torch_graph_breaks(...)'s result; got {type(breaks).__name__}")
    validate.instance("gain", gain, intervals.Speedup)
    kernels = validate.non_negative("kernels", kernels, integer=True)
    if callback is not None:
        validate.instance("callback", callback, compiled.HloSummary)
    if tf_refusal is not None:
        validate.text("tf_refusal", tf_refusal)
    reason = breaks.reasons[0] if breaks.reasons else "none given"
    first = (f"Dynamo split the legacy chain into **{breaks.graph_count} graphs** at {breaks.break_count} breaks "
             f"(first reason: *{reason}*). ")
    if v.held:
        first += f"Registered as a custom op it compiles to **one graph** with {kernels} fused kernels around the call."
    elif v.failed:
        first += "Registered, the graph count or the kernels around the op differ from the prediction (see above)."
    else:
        first += w.untested(v, "The registered op")
    second = f"Registered over broken: {gain}. "
    if gain.faster:
        second += "Registration also saved the glue between graphs."
    elif gain.slower:
        second += "The registered version was slower beyond the noise; why is not established by this run."
    else:
        second += ("The NumPy operator dominates the time, so registration did not make this call measurably "
                   "faster; what it buys is one graph, which pays once the code around the op grows.")
    third = []
    if callback is not None:
        third.append(f"JAX's HLO has the same shape: {callback.n_fusions} fusions around "
                     f"{len(callback.custom_calls)} host callback.")
    if tf_refusal is not None:
        third.append(f"TensorFlow's XLA refuses the `numpy_function` ({tf_refusal}), so that function runs as a "
                     "plain graph.")
    third.append("For your own model: `cu.graphs.torch_graph_breaks(your_fn, *inputs)`, and count.")
    return display.prose(first, second, " ".join(third))


def attention(v: display.Verdict, gain: intervals.Speedup, *, peaks: Mapping[str, int | None],
              counts: AttentionBytes, traffic: Traffic, xla_plan: Mapping[str, int] | None,
              jax_gain: intervals.Speedup | None) -> display.Prose:
    """Section 8: the bytes of attention unfused and blocked, the peaks and time that test the prediction, and
    what XLA planned for the JAX version."""
    v = w.verdict(v)
    validate.instance("gain", gain, intervals.Speedup)
    validate.instance("peaks", peaks, Mapping)
    validate.instance("counts", counts, AttentionBytes)
    validate.instance("traffic", traffic, Traffic)
    if jax_gain is not None:
        validate.instance("jax_gain", jax_gain, intervals.Speedup)
    first = (f"Unfused, attention runs {traffic.n_ops} eager ops that move {format_bytes(traffic.unfused_bytes)} "
             f"(computed), {traffic.unfused_bytes / counts.scores:.1f} score matrices' worth of "
             f"{format_bytes(counts.scores)}. FlexAttention's blocked kernel moves {format_bytes(counts.blocked)} "
             f"(computed from the block mask: it visits {counts.visited} of {counts.blocks} block pairs and skips "
             f"the rest), {traffic.unfused_bytes / counts.blocked:.0f}x less.")
    if v.tested:
        flex, unfused = (validate.positive(f"peaks[{k!r}]", peaks.get(k), integer=True)
                         for k in ("FlexAttention, compiled", "unfused attention"))
        measured = (f"Measured peaks: FlexAttention {format_bytes(flex)}, unfused {format_bytes(unfused)}; "
                    f"FlexAttention over unfused: {gain}. ")
        second = measured + ("The score matrix never reached memory, and the masked blocks were never computed."
                             if v.held else f"The prediction failed: {v.why}.")
    else:
        second = w.untested(v, "Peak memory") + f" FlexAttention over unfused: {gain}."
    parts = [first, second]
    if xla_plan is not None:
        validate.instance("xla_plan", xla_plan, Mapping)
        temp = validate.non_negative("xla_plan['temp']", xla_plan.get("temp"), integer=True)
        held = temp >= counts.scores
        parts.append(f"For the jitted `jax.nn.dot_product_attention` XLA planned {format_bytes(temp)} of temporary "
                     f"buffers, {temp / counts.scores:.1f} score matrices: "
                     + ("on this device its XLA implementation writes the scores to memory (the fused one, "
                        "`implementation='cudnn'`, needs an NVIDIA GPU and fp16 or bf16)" if held else
                        "under one score matrix, so XLA did not keep the whole matrix in memory here")
                     + (f"; it ran {w.outcome(jax_gain)} than the unfused torch version" if jax_gain else "") + ".")
    return display.prose(*parts)
