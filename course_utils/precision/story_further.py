"""The sentences of notebook 03's "Going further" section, one function per paragraph, each reading the stored
verdict and the measurements; re-exported by ``story``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from course_utils import intervals, validate
from course_utils.display import Prose, Verdict, format_bytes, percent, prose
from course_utils.precision.fp8 import CastTable, DelayedScaling, Fp8Status, Fp8Training
from course_utils.precision.library import VENDORS, LibraryReport
from course_utils.precision.remat import Remat
from course_utils.precision.scaling import UnderflowStats


def no_scaler(v: Verdict, final: Mapping[str, float], *, lost: Mapping[str, UnderflowStats], eps_share: float,
              adam_eps: float, batch: int) -> Prose:
    """Going further: fp16 with and without a GradScaler, at the loss's natural size and with the loss x 2^-12."""
    validate.instance("v", v, Verdict)
    validate.instance("final", final, Mapping)
    validate.instance("lost", lost, Mapping)
    eps_share = validate.fraction("eps_share", eps_share)
    adam_eps = validate.positive("adam_eps", adam_eps)
    batch = validate.positive("batch", batch, integer=True)
    ref, ref1 = final["fp32, loss x 2^-12"], final["fp32, loss x 1"]
    small = lost["2^-12"]
    no_small, gs_small = final["fp16, no scaler, loss x 2^-12"] / ref, final["fp16 + GradScaler, loss x 2^-12"] / ref
    no_1, gs_1 = final["fp16, no scaler, loss x 1"] / ref1, final["fp16 + GradScaler, loss x 1"] / ref1
    first = (f"With the loss x 2^-12, fp16 without a scaler ended at **{no_small:.2f}x** fp32's final loss and the "
             f"`GradScaler` run at **{gs_small:.2f}x**; at natural size at {no_1:.2f}x and {gs_1:.2f}x. Each is one "
             "seed: how much of a ratio is the format and how much the seed is not established here (section 6 "
             "measures the seeds' spread).")
    second = (f"Without a scaler, fp16 flushed **{percent(small.flushed_fraction, 1)}** of the {small.nonzero:,} "
              f"nonzero weight gradients at loss x 2^-12 ({percent(lost['1'].flushed_fraction, 2)} at natural size), "
              f"measured on the trained model and one batch of {batch}. Adam divides each update by the root of its "
              f"running mean square of the gradient, so a uniform scale cancels, except against its eps "
              f"({adam_eps:g}): at loss x 2^-12 eps shortens a typical update to **{percent(eps_share, 1)}** of its "
              "exact length (computed). ")
    if v.held:
        second += ("So the lost gradients matter once the gradients as a whole sit low: the scaler moves them back "
                   "into fp16's range, which is what it is for.")
    elif small.flushed_fraction < 0.5 and eps_share > 0.9:
        second += ("So the 2^-12 loss did little harm without a scaler: most gradients still reached Adam, which undid "
                   "the scale. Loss scaling matters where more gradients flush, or for an optimizer whose step follows "
                   "the gradient's size, such as SGD.")
    else:
        second += ("The loss moved less than predicted although many gradients flushed or eps took over; why training "
                   "absorbed it is not established by this run.")
    return prose(first, second)


def jax_remat(v: Verdict, r: Remat | None, checks: Mapping[str, Any], *, batch: int, width: int,
              blocks: int) -> Prose | None:
    """Going further: what XLA made of ``jax.checkpoint``, from its own FLOP count, dot count and temp buffers;
    ``checks`` holds the verdict's two conditions ('flops', 'temp') and the 'computed extra' FLOPs. None where JAX
    was not there (the verdict already said so)."""
    validate.instance("v", v, Verdict)
    if not v.tested:
        return None
    validate.instance("r", r, Remat)
    validate.instance("checks", checks, Mapping)
    computed_extra = validate.positive("checks['computed extra']", checks["computed extra"])
    batch, width = validate.positive("batch", batch, integer=True), validate.positive("width", width, integer=True)
    blocks = validate.positive("blocks", blocks, integer=True)
    extra = r.flops[1] - r.flops[0]
    per_element = extra / (batch * 4 * width * blocks)
    first = (f"XLA's own numbers: the compiled step has {r.flops[0] / 1e9:.2f} GFLOP without and "
             f"{r.flops[1] / 1e9:.2f} GFLOP with checkpointing, and {r.dots[0]} against {r.dots[1]} dot ops. ")
    if checks["flops"]:
        first += "The extra is the recomputed first matmul of each block, as predicted. "
    else:
        first += (f"The extra is {extra / computed_extra:.2f}x the recomputed-matmul estimate, {per_element:.0f} FLOPs "
                  f"per element of the B x 4D x L GELU input. A candidate from these counts, not established by this "
                  "run: XLA recomputes the exact GELU (its erf is a long polynomial) but keeps the matmul's 4D-wide "
                  "output from the forward pass, even with `prevent_cse=True`. ")
    before, after = r.temp
    unit = batch * 4 * width * 4
    if before is None or after is None:
        second = "XLA did not report the temp buffers on this backend. "
    else:
        second = (f"The temp buffers went from {format_bytes(before)} to {format_bytes(after)} "
                  f"({after / before - 1:+.0%})")
        if checks["temp"]:
            second += ": below half, as the `jax.vjp` residuals suggest. "
        elif after > before:
            second += (f": they grew, by {(after - before) / unit:.1f} 4x-wide block activations (computed); which "
                       "buffers XLA added, and why, is not established by this run. ")
        else:
            second += (f": a saving of {(before - after) / unit:.1f} 4x-wide block activations (computed), less than "
                       "half; which buffers XLA kept is not established by this run. ")
    second += (f"The `jax.vjp` residuals (what a forward hands to a separate backward) fell to {r.saved_ratio:.2f}x. "
               + ("The prediction held." if v.held else "So on this backend the saving shows where forward and "
                  "backward are separate programs; measure both on yours before relying on it."))
    return prose(first, second)


def mkl(vendor: str, report: LibraryReport, *, flags: Sequence[str], jax_over_torch: intervals.Speedup | None) -> Prose:
    """Going further: the known MKL-on-AMD candidate, told from this run's CPU vendor, what MKL printed, and how
    JAX's fp32 matmul compared with torch's (``jax_over_torch``: torch's time over JAX's; None without JAX)."""
    validate.choice("vendor", vendor, VENDORS)
    validate.instance("report", report, LibraryReport)
    if isinstance(flags, (str, bytes)):
        raise TypeError("flags must be a list or tuple of CPU flag names, not a string")
    if jax_over_torch is not None:
        validate.instance("jax_over_torch", jax_over_torch, intervals.Speedup)
    if not report.mkl_ran:
        return prose("MKL printed no GEMM call: torch's fp32 matmul did not go through MKL on this machine, so MKL's "
                     "vendor dispatch is not the story here.")
    compared = ("" if jax_over_torch is None else
                f"JAX's fp32 matmul (XLA's own kernels) ran at {jax_over_torch} torch's speed: "
                + {"faster": "JAX faster beyond the noise. ", "slower": "JAX slower beyond the noise. ",
                   "within the noise": "within the noise. "}[jax_over_torch.outcome])
    trails = jax_over_torch is not None and jax_over_torch.faster
    path = report.mkl_path or "not printed"
    narrower = "avx512f" in flags and "AVX-512" not in path
    if vendor == "Intel":
        return prose(compared, f"This is an Intel CPU, where MKL takes its Intel code paths (here: \"{path}\"), so "
                     "the AMD candidate does not apply" + ("; why torch's fp32 trails is not established by this "
                                                             "run (a candidate on a shared machine: MKL's threads "
                                                             "waiting for each other under load; the load average is "
                                                             "in the report at the top). " if trails else ". ")
                     + "On AMD CPUs MKL has been reported to choose narrower code paths by vendor; run this notebook "
                     "there to see what its header says.")
    if vendor == "AMD":
        seen = ("Here MKL reported a path without AVX-512 although the CPU has avx512f: a narrower path, observed. "
                if narrower else f"Here MKL reported \"{path}\". ")
        return prose(compared + "A known candidate on AMD: MKL chooses its code path by CPU vendor at run time, and "
                     "has been reported to choose narrower paths on AMD than the CPU supports. " + seen
                     + ("Whether torch's fp32 matmul trails another library's here was not measured (no second "
                        "library in this runtime)." if jax_over_torch is None else
                        "That stays a candidate for the shortfall, not a measurement: this run did not time MKL on "
                        "another path or another BLAS on this CPU." if trails else
                        "The shortfall seen on other AMD machines did not show in this run."))
    return prose(compared + "MKL's vendor dispatch is a known issue on AMD CPUs; this CPU is neither Intel nor AMD, so "
                 f"that candidate is not tested here (MKL reported \"{path}\").")


def fp8_formats(v: Verdict, errors: CastTable) -> Prose:
    """Going further: e4m3 against e5m2 (and bf16) on the trained model's activations and gradients."""
    validate.instance("v", v, Verdict)
    validate.instance("errors", errors, CastTable)
    act, grad = errors["activations"], errors["gradients"]
    text = (f"Scaled per tensor, e4m3 stored the activations with a relative error of {act['e4m3'].error:.1e} and "
            f"e5m2 with {act['e5m2'].error:.1e} (bf16, unscaled: {act['bf16'].error:.1e}); of the gradients, e4m3 "
            f"flushed {percent(grad['e4m3'].flushed, 1)} to zero and e5m2 {percent(grad['e5m2'].flushed, 1)}. ")
    if v.held:
        text += ("So the split follows the bits: activations and weights need precision within a narrow range (e4m3), "
                 "gradients need range (e5m2). torchao's default recipe casts inputs and weights to e4m3 and output "
                 "gradients to e5m2; bf16 stays well ahead of both, which is why fp8 recipes keep master weights, "
                 "sums and the optimizer in higher precision.")
    else:
        text += ("The prediction failed on this model's tensors (see the verdict): the split fp8 recipes use rests on "
                 "the formats' bits, and these tensors did not show it.")
    return prose(text)


def fp8_scaling(delayed: Mapping[str, DelayedScaling]) -> Prose:
    """Going further: a scale from an amax history (delayed scaling) against the current amax (dynamic)."""
    validate.instance("delayed", delayed, Mapping)
    validate.non_empty("delayed", delayed)
    window = next(iter(delayed.values())).window
    counts = "; ".join(f"{d.kind}: {d.saturated} of {d.checked} layer-steps outgrew their history"
                       + (f", by up to {d.worst_overshoot:.2f}x" if d.saturated else "")
                       + f", {d.unused_log2:.1f} powers of two of range left unused (median)"
                       for d in delayed.values())
    saturated = sum(d.saturated for d in delayed.values())
    return prose(
        f"A scale taken from the last {window} steps' amax (delayed scaling, as in Transformer Engine's recipe), over "
        f"the fp32 training run: {counts}. "
        + ("Those steps' top values would saturate at fp8's max. " if saturated else
           "None outgrew its history in this run, so delayed scaling would have saturated nothing here. ")
        + "A scale from the current amax (dynamic scaling, the only kind torchao 0.18's float8 training offers) never "
        "saturates and uses the whole range, at the price of one amax reduction before every cast.")


def fp8_training(v: Verdict, status: Fp8Status, result: Fp8Training | None = None) -> Prose:
    """Going further: fp8 training with torchao where the GPU has fp8 units; on other runtimes, what it needs."""
    validate.instance("v", v, Verdict)
    validate.instance("status", status, Fp8Status)
    recipe = ("`convert_to_float8_training` swaps every `nn.Linear` for a `Float8Linear`, whose matmuls take e4m3 "
              "inputs and weights and e5m2 output gradients with dynamic per-tensor scales, accumulating in higher "
              "precision.")
    if not v.tested or result is None:
        return prose("On a GPU with fp8 units the cell above trains the same model in bf16 and in fp8 and compares "
                     "their losses and step times (the verdict says why it did not run here). " + recipe)
    validate.instance("result", result, Fp8Training)
    loss = result.final_loss
    end = " The prediction held." if v.held else " The prediction failed (see the verdict)."
    return prose(f"On {status.why}, fp8 training ran at {result.speed} the speed of bf16, ending at a loss of "
                 f"{loss['fp8']:.4g} against {loss['bf16']:.4g}. " + recipe + end)
