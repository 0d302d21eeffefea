"""Every sentence notebook 03 tells about its run, one function per paragraph, each reading the stored verdict(s)
and the measurements it is given; nothing here measures or decides a prediction again. The speed section's
paragraphs are in ``story_speed``, the "Going further" section's in ``story_further``; both are re-exported here, so
the notebook reaches all of them as ``cu.precision.story.<name>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from course_utils import validate
from course_utils.display import Prose, Verdict, format_bytes, percent, prose
from course_utils.precision.formats import FormatTable
from course_utils.precision.remat import Remat
from course_utils.precision.scaling import ScaleTrace, UnderflowStats
from course_utils.precision.story_further import fp8_formats, fp8_scaling, fp8_training, jax_remat, mkl, no_scaler
from course_utils.precision.story_speed import (
    fp32_roof,
    halved_bytes,
    matmul_speed,
    seed_claim,
    step_speed,
    which_kernel,
)
from course_utils.precision.training import SeedSpread

__all__ = ["accumulation", "activations", "apis", "autocast_ops", "formats", "fp32_roof", "fp8_formats",
           "fp8_scaling", "fp8_training", "halved_bytes", "jax_remat", "loss_scale", "matmul_speed",
           "mkl", "no_scaler", "remat", "seed_claim", "seeds", "state_memory", "step_speed", "underflow",
           "which_kernel"]


def _verdict(v: Any) -> Verdict:
    return validate.instance("v", v, Verdict)


def formats(table: FormatTable) -> Prose:
    """Section 1: what ``finfo`` says about fp16 and bf16 (definitions, read from the table, not predictions)."""
    validate.instance("table", table, FormatTable)
    f32, f16, b16 = table["fp32"], table["fp16"], table["bf16"]
    e4, e5 = table["fp8 e4m3"], table["fp8 e5m2"]
    sub = round(math.log2(f16.min_subnormal))
    return prose(
        f"From `finfo`: fp16 keeps {f16.decimal_digits:.1f} decimal digits but tops out at {f16.max:,.0f}, and its "
        f"smallest subnormal is 2^{sub} ({f16.min_subnormal:.2e}): round-to-nearest sends everything at or below half "
        f"of it, 2^{sub - 1}, to zero. bf16 keeps only {b16.decimal_digits:.1f} digits but reaches {b16.max:.2e}, like "
        f"fp32 ({f32.max:.2e}). In the plot each format has a flat floor of eps/2 in its normal range (bf16 "
        f"{b16.unit_roundoff:.1e}, fp16 {f16.unit_roundoff:.1e}), a rising error through its subnormals, 1.0 where "
        f"values flush to zero and a dotted wall where they overflow. The fp8 formats (eps {e4.eps:g} and {e5.eps:g}) "
        "work only with a per-tensor scale: see Going further.")


def underflow(v: Verdict, plain: UnderflowStats, scaled: UnderflowStats, *, predicted: float, steps: int,
              final_loss: float, scale_log2: float) -> Prose:
    """Section 2: how many activation gradients fp16 flushed, with and without a static loss scale."""
    v = _verdict(v)
    validate.instance("plain", plain, UnderflowStats)
    validate.instance("scaled", scaled, UnderflowStats)
    predicted = validate.fraction("predicted", predicted)
    steps = validate.positive("steps", steps, integer=True)
    final_loss = validate.non_negative("final_loss", final_loss)
    scale_log2 = validate.number("scale_log2", scale_log2, low=-64, high=64)
    rescued = 1 - scaled.flushed / max(plain.flushed, 1)
    outcome = (", as predicted. " if v.held else
               ", which is not what the prediction said: the histogram shows where this run's gradients sit. ")
    return prose(
        f"After {steps} fp32 steps (loss {final_loss:.3f}), fp16 autocast flushed "
        f"**{percent(plain.flushed_fraction, 1)}** of the {plain.nonzero:,} nonzero activation gradients to zero; "
        f"the fp32 values alone predicted {percent(predicted, 1)} (those at or below 2^-25). With the loss "
        f"multiplied by 2^{scale_log2:g}, "
        f"{percent(scaled.flushed_fraction, 2)} are lost and {scaled.overflowed} overflowed: loss scaling rescued "
        f"**{percent(rescued)}** of the flushed gradients" + outcome
        + "These activation gradients feed the weight gradients, which are sums over the batch and so sit higher.")


def loss_scale(v: Verdict, trace: ScaleTrace, *, overflow_log2: int, growth_interval: int) -> Prose:
    """Section 2: what the dynamic scale of ``GradScaler`` did against the ceiling computed from the gradients."""
    v = _verdict(v)
    validate.instance("trace", trace, ScaleTrace)
    overflow_log2 = validate.number("overflow_log2", overflow_log2, low=-200, high=200, integer=True)
    growth_interval = validate.positive("growth_interval", growth_interval, integer=True)
    side = "below" if trace.gap >= 0 else "above"
    return prose(
        f"The scale started at 2^{trace.start:.0f}; {trace.skipped} of {trace.steps} steps were skipped and it "
        f"settled between 2^{trace.settled_low:.0f} and 2^{trace.settled_high:.0f}, its top {abs(trace.gap):.1f} "
        f"powers of two {side} the ceiling computed from each step's largest weight gradient (median 2^"
        f"{trace.ceiling_median:.1f}): the prediction {'held' if v.held else 'failed'}.",
        f"For the *activation* gradients, Exercise 1's formula gives a higher overflow point, 2^{overflow_log2} "
        "(computed from `g32`), "
        f"{overflow_log2 - trace.ceiling_median:.0f} powers of two above the weight gradients' ceiling; that weight "
        "gradients sum over the batch is a candidate reason, not established by this run. A skipped step costs a "
        f"forward and a backward pass, which is why the default growth interval is long ({growth_interval} steps).")


def accumulation(v: Verdict, at_1e4: Mapping[str, float], *, bound: float, torch_sum: float, loop_sum: float) -> Prose:
    """Section 3: the three ways of summing bf16 values, at 10^4 terms."""
    v = _verdict(v)
    validate.instance("at_1e4", at_1e4, Mapping)
    bound = validate.positive("bound", bound)
    torch_sum, loop_sum = validate.number("torch_sum", torch_sum), validate.number("loop_sum", loop_sum)
    lead = "The prediction held: " if v.held else "The prediction failed, but the lesson stands: "
    return prose(
        f"At 10^4 terms the bf16 accumulator is off by **{percent(at_1e4['bf16 accumulator'])}**, the fp32 "
        f"accumulator by {at_1e4['fp32 accumulator']:.1e}, and the fp32 sum rounded once to bf16 by "
        f"{at_1e4['fp32 accumulator, bf16 result']:.1e} (bound: {bound:.1e}). `torch.sum` on a bf16 tensor returned "
        f"{torch_sum:g} for 1000 ones because it accumulates in fp32 internally; a Python loop in bf16 stalls at "
        f"{loop_sum:g}. " + lead + "mixed precision means low-precision storage and multiplies, fp32 sums, fp32 "
        "master weights and fp32 optimizer updates.")


# PyTorch's documented CUDA autocast list sends these probe ops to fp32 (torch.amp docs, "CUDA Ops that can
# autocast to float32"); the CPU list does not name softmax, layer_norm, sum or exp.
CUDA_FP32_OPS = ("softmax", "layer_norm", "sum", "exp", "cross_entropy")


def autocast_ops(ops: Mapping[str, str], *, device_type: str, amp_name: str) -> Prose:
    """Section 4: which ops autocast ran in 16 bits and which in fp32 on this device, measured by the probe."""
    validate.instance("ops", ops, Mapping)
    validate.non_empty("ops", ops)
    validate.choice("device_type", device_type, ("cpu", "cuda"))
    low = [op for op, dt in ops.items() if dt in ("bfloat16", "float16")]
    wide = [op for op, dt in ops.items() if dt == "float32"]
    text = (f"Under autocast on this {'CUDA GPU' if device_type == 'cuda' else 'CPU'}, "
            + (f"{', '.join(low)} returned {amp_name}" if low else "no probed op returned a 16-bit result")
            + (f" and {', '.join(wide)} returned float32. " if wide else ". "))
    if device_type == "cuda":
        return prose(text + "That is PyTorch's CUDA list: matmuls in 16 bits, reductions, softmax and losses in fp32.")
    differ = [op for op in CUDA_FP32_OPS if op in low]
    if differ:
        text += (f"The CPU list is not CUDA's: there {', '.join(differ)} would be widened to fp32 (PyTorch's "
                 f"documented CUDA list), here {'they keep' if len(differ) > 1 else 'it keeps'} the 16-bit input's "
                 "dtype (reductions may still accumulate in fp32 inside the kernel, as `torch.sum` did above).")
    return prose(text)


def apis(v: Verdict, losses: Mapping[str, float]) -> Prose:
    """Section 4: the frameworks' dtypes and losses on the same batch, and who decides the casts (a framework
    missing here was already named by the cell that skipped it)."""
    v = _verdict(v)
    validate.instance("losses", losses, Mapping)
    validate.non_empty("losses", losses)
    spread = max(losses.values()) - min(losses.values())
    found = ("and the dtypes predicted: fp32 master weights, 16-bit activations, fp32 loss and gradients. "
             if v.held else "but not everything matched the prediction (see the verdict). ")
    return prose(
        f"On the same batch the {len(losses)} framework(s) measured gave losses within {spread:.4f} of each other "
        + found + "They differ in who casts: autocast decides per operation (the list above), Keras per layer (the "
        "policy's compute dtype), and in JAX you decide, in the function you write.")


def seeds(v: Verdict, spread: SeedSpread) -> Prose:
    """Section 6: fp32 against the mixed-precision runs over seeds."""
    v = _verdict(v)
    validate.instance("spread", spread, SeedSpread)
    base = spread.final_losses("fp32")
    n = spread.seeds()
    found = (f"Both mixed-precision runs ended within one seed spread of it: with {n} seeds, that is as far as this "
             "run can see; a smaller difference would need many more seeds to show. " if v.held else
             f"At least one mixed-precision configuration ended further from fp32 than the seeds spread: with {n} "
             "seeds this is a hint, not proof, but here the format did move the result. ")
    return prose(
        f"Over {n} seeds, fp32 ended at a final loss of {base.mean():.3f} (seeds from {base.min():.3f} to "
        f"{base.max():.3f}). " + found + "Mixed precision changes speed (section 5) and memory (section 7); what the "
        "model learns should not move.")


def state_memory(v: Verdict, per_param: Mapping[str, float], *, copies: int, n_params: int, amp_name: str) -> Prose:
    """Section 7: the training state held after a step, and the 16-bit weight copies alive during the forward."""
    v = _verdict(v)
    validate.instance("per_param", per_param, Mapping)
    n_params = validate.positive("n_params", n_params, integer=True)
    copies = validate.non_negative("copies", copies, integer=True)
    fp32, amp = per_param["fp32"], per_param[f"{amp_name} autocast"]
    lead = "So the prediction held: " if v.held else "The prediction failed; what was measured: "
    return prose(
        f"Measured on the {n_params:,}-parameter MLP: after a step, fp32 + Adam holds {fp32:g} bytes per parameter and "
        f"{amp_name} autocast + Adam {amp:g}, all fp32. During the autocast forward pass autograd saved "
        f"{format_bytes(copies)} of 16-bit weight copies ({copies / n_params:.2f} B per parameter), freed by the "
        "backward pass. " + lead + "autocast saves nothing on the parameter side. The standard accounting in the "
        "chart (computed) gives 16 B/param for fp32 Adam and for mixed precision with fp32 master weights; only pure "
        "bf16 (no fp32 master, with its accuracy risks) halves it. What mixed precision shrinks is the activations.")


def activations(v: Verdict, *, per_sample: Mapping[str, float], constant: float, copies: int, batch: int,
                at_batch: Mapping[str, float], state: int, amp_name: str) -> Prose:
    """Section 7: activation bytes per sample in fp32 and under autocast, and the constant of the weight copies."""
    v = _verdict(v)
    validate.instance("per_sample", per_sample, Mapping)
    validate.instance("at_batch", at_batch, Mapping)
    batch = validate.positive("batch", batch, integer=True)
    constant, copies = validate.number("constant", constant), validate.non_negative("copies", copies)
    state = validate.non_negative("state", state)
    f32, f16 = per_sample["fp32"], per_sample[f"{amp_name} autocast"]
    end = ", as predicted." if v.held else "; this run did not show it as cleanly as predicted (see the verdict)."
    return prose(
        f"Per sample, autograd kept {format_bytes(f32)} in fp32 and {format_bytes(f16)} under {amp_name} autocast "
        f"(**{f16 / f32:.2f}x**); autocast added a constant {format_bytes(constant)} (the 16-bit weight copies: "
        f"{format_bytes(copies)}). At batch {batch} that is {format_bytes(at_batch['fp32'])} against "
        f"{format_bytes(at_batch[f'{amp_name} autocast'])}, beside {format_bytes(state)} of fp32 + Adam state "
        "(computed). So the seed's \"saves memory\" is about activations, and pays off with large batches or long "
        "sequences" + end)


def remat(v: Verdict, r: Remat, *, predicted_peak: int | None) -> Prose:
    """Section 7: torch activation checkpointing: saved bytes, the live-tensor peak against the formula, time."""
    v = _verdict(v)
    validate.instance("r", r, Remat)
    cost = r.cost
    parts = [f"torch kept {format_bytes(r.saved[0])} for backward without checkpointing and {format_bytes(r.saved[1])} "
             f"with it (**{r.saved_ratio:.2f}x**), for a step that took {cost} as long (with over without)"]
    if r.live_peak[0] is not None and r.live_peak[1] is not None and predicted_peak:
        miss = r.live_peak[1] / predicted_peak - 1
        parts.append(f"; the peak of live tensors went from {format_bytes(r.live_peak[0])} to "
                     f"{format_bytes(r.live_peak[1])}, against {format_bytes(predicted_peak)} computed ({miss:+.0%}). ")
        parts.append("The peak falls less than the saved bytes because the backward pass's own temporaries and the "
                     "recomputed block are there in both cases, as the formula says. " if abs(miss) <= 0.1 else
                     "The live-tensor peak missed the formula by more than 10%: something besides the saved "
                     "activations, the backward temporaries and one recomputed block was alive at the peak. ")
    else:
        parts.append(". This platform did not report the peak of live tensors. ")
    parts.append("\n\n")
    if r.peak[0] is not None and r.live_peak[0] is not None and r.peak != r.live_peak:
        parts.append(f"The process RSS peaked at {format_bytes(r.peak[0])} and {format_bytes(r.peak[1])}, above the "
                     "live tensors by what the allocator keeps mapped after tensors are freed. ")
    parts.append("The prediction held." if v.held else "The prediction failed: see the verdict for which part.")
    return prose("".join(parts))
