"""Notebook 03's predictions, each declared once: one sentence per outcome its checks can reach. The notebook scores
them (``cu.precision.findings.UNDERFLOW.score(...)``); the core words the evidence, these texts only explain."""

from __future__ import annotations

from course_utils.findings import Template

_EDGE = "{undecided} landed exactly on its bound: not decided."
_NOT_ESTABLISHED = "; why is not established by this run."

UNDERFLOW = Template(
    "precision.underflow", ("above", "below", "equal"),
    held="After {steps} fp32 steps (loss {final_loss}) the fp32 values alone predicted {predicted} flushed (those "
         "at or below 2^-25); multiplying the loss by 2^{scale_log2} lifted most of them into fp16's range, as "
         "predicted. These activation gradients feed the weight gradients, which are sums over the batch and so sit "
         "higher.",
    above="{failed} came out above the prediction: 2^{scale_log2} did not lift enough of the activation gradients "
          "into fp16's range, or some overflowed (the histogram shows where they sit).",
    below="{failed} came out below the prediction: after {steps} fp32 steps (loss {final_loss}) fewer activation "
          "gradients sat at or below 2^-25 than predicted (the fp32 values alone predicted {predicted}).",
    undecided=_EDGE)

LOSS_SCALE = Template(
    "precision.loss_scale", ("true", "within", "equal"),
    held="The scale started at 2^{start}; {skipped} of {steps} steps were skipped, none after the first clean step "
         "with the scale below the ceiling computed from the weight gradients, and it settled between "
         "2^{settled_low} and 2^{settled_high}, just under that ceiling (median 2^{ceiling_median}), as predicted.",
    failed="{failed}: 2^{start} fitted this model's gradients from the start.",
    above="{failed} came out above the prediction (steps skipped after the first clean step with the scale below the "
          "ceiling: {below_steps}). The ceiling is a median over clean steps of the weight gradients alone: a weight "
          "gradient above that median, or another fp16 tensor of the backward pass overflowing first, sets a lower "
          "limit; this run did not record which.",
    below="{failed} came out below the prediction: the scale's top lay more than half a power of two above the "
          "ceiling's median (2^{ceiling_median}); the ceiling moves from step to step, and the scale grew on steps "
          "whose gradients were smaller.",
    undecided="{undecided} landed exactly on an edge of its margin: not decided.")

ACCUMULATION = Template(
    "precision.accumulation", ("above", "below"),
    held="`torch.sum` on a bf16 tensor returned {torch_sum} for 1000 ones because it accumulates in fp32 inside; a "
         "Python loop adding 300 of them in bf16 returned {loop_sum}. As predicted: mixed precision means "
         "low-precision storage and multiplies, fp32 sums, fp32 master weights and fp32 optimizer updates.",
    above="{failed} came out above the prediction: that sum lost more than the mantissa width predicts on these "
          "inputs.",
    below="{failed} came out below the prediction: the bf16 accumulator lost less than a stalled sum would on these "
          "inputs.",
    undecided=_EDGE)

DTYPES = Template(
    "precision.dtypes", ("true", "below"),
    held="On the same batch the {frameworks} framework(s) measured kept the dtypes predicted (fp32 master weights, "
         "16-bit activations, fp32 loss and gradients) and gave losses within 0.05 of each other.",
    failed="{failed}: false; that framework's dtype table shows which dtype it kept instead.",
    above="{failed} came out above 0.05: the 16-bit roundings moved the frameworks' losses apart on this batch.",
    undecided=_EDGE)

MATMUL = Template(
    "precision.matmul", ("within", "above", "below"),
    held="torch's {dtype} matmul reached {fast_rate} against {fp32_rate} for fp32 (n = {n}), as predicted from the "
         "units: {bound}.",
    above="{failed} came out above the prediction from the units ({bound}): something besides the {dtype} units sets "
          "this ratio, such as an fp32 kernel that is slow at this size; which, this run does not establish (Going "
          "further reads what the fp32 library reported).",
    below="{failed} came out below the prediction: the units ({bound}) were there, yet {dtype} ran slower beyond the "
          "noise at this size: the library did not turn them into speed" + _NOT_ESTABLISHED,
    undecided="{undecided}: this run cannot place the ratio against the units' prediction ({bound}).")

HALVING = Template(
    "precision.halving", ("within",),
    held="Half the bytes bought the time: both ops ran faster and not beyond 2x, as predicted.",
    above="{failed} gained more than half the bytes explain; a candidate: each bf16 array is half the size, so more of "
          "it stays in the last-level cache ({llc}; not established by this run).",
    below="{failed} ran slower beyond the noise: something besides the bytes cost bf16 time (candidates: converting "
          "each value to fp32 and back for the arithmetic, or the load on this shared machine; not established by this "
          "run).",
    undecided="{undecided}: this run cannot place it against half the bytes.")

STEP = Template(
    "precision.step", ("above", "below"),
    held="The rest of the step diluted the matmul's ratio toward 1x, beyond the noise of both, as predicted.",
    above="{failed} came out above its bound: the step's ratio did not land between 1x and the bare matmul's"
          + _NOT_ESTABLISHED,
    below="{failed} came out below its bound: the step's ratio did not land between 1x and the bare matmul's"
          + _NOT_ESTABLISHED,
    undecided="{undecided}: this run shows no dilution it can resolve.")

CLAIM = Template(
    "precision.claim", ("within",),
    held="The seed's \"~30% faster\" holds on this machine: across fresh processes the step's whole interval lies "
         "inside the band read as \"about 1.3x\". The in-process figure beside it: {in_process}.",
    above="The seed's \"~30% faster\" was exceeded on this machine: across fresh processes the step's whole interval "
          "lies above the band. The in-process figure beside it: {in_process}.",
    below="The seed's \"~30% faster\" does not hold on this machine: across fresh processes the step's whole interval "
          "lies below the band. The in-process figure beside it: {in_process}.",
    undecided="Across fresh processes the step's interval reaches past an edge of the band: this run cannot decide the "
              "seed's \"~30% faster\". The in-process figure beside it: {in_process}.")

SEEDS = Template(
    "precision.seeds", ("below",),
    held="Over {seeds} seeds fp32 ended at a mean final loss of {fp32_mean} (seeds from {fp32_min} to "
         "{fp32_max}), and both mixed-precision runs within one seed spread of it, as predicted: with {seeds} "
         "seeds that is as far as this run can see. What the model learns should not move with the format.",
    above="{failed} came out above its bound: with {seeds} seeds this is a hint, not proof, but here the format moved "
          "the result (fp32's mean final loss {fp32_mean}, seeds from {fp32_min} to {fp32_max}).",
    undecided=_EDGE)

STATE = Template(
    "precision.state", ("equal",),
    held="On the {n_params}-parameter MLP, autocast + Adam holds what fp32 + Adam holds, all fp32; its 16-bit weight "
         "copies ({copies_per_param} B per parameter) live from the forward pass to the backward only, as "
         "predicted: autocast saves nothing on the parameter side.",
    above="{failed} came out above the prediction: autocast kept more than the fp32 state plus per-step copies.",
    below="{failed} came out below the prediction: autocast kept less than the fp32 state plus per-step copies.")

ACTIVATIONS = Template(
    "precision.activations", ("below", "equal"),
    held="As predicted: the seed's \"saves memory\" is about activations, and pays off with large batches or long "
         "sequences.",
    above="{failed} came out above the prediction: the saved bytes did not split into a smaller per-sample part plus "
          "the weight copies here.",
    below="{failed} came out below the prediction: autocast's constant was smaller than the 16-bit weight copies.",
    undecided=_EDGE)

REMAT = Template(
    "precision.remat", ("below", "within"),
    held="As predicted. The peak of live tensors falls less than the saved bytes: the backward pass's own temporaries "
         "and one recomputed block are alive in both cases, which the formula counts.",
    above="{failed} came out above the prediction; why is not established by this run (candidates: for the peak, "
          "tensors the formula does not count; for the time, a recomputation dearer than predicted).",
    below="{failed} came out below the prediction" + _NOT_ESTABLISHED,
    undecided="{undecided}: this run cannot place it against the prediction's edges.")

NO_SCALER = Template(
    "precision.no_scaler", ("above", "below"),
    held="The lost gradients matter once the gradients as a whole sit low, as predicted: the scaler moves them back "
         "into fp16's range, which is what it is for. Each ratio is one seed (section 6 measures the seeds' spread).",
    below="{failed} came out below 1.5x: without a scaler the 2^-12 loss did less harm than predicted. Why training "
          "absorbed the lost gradients is not established; a candidate: Adam undoes a uniform scale for the gradients "
          "that still arrive. Loss scaling matters where more gradients flush, or for an optimizer whose step follows "
          "the gradient's size, such as SGD.",
    above="{failed} came out above 1.2x fp32's loss: one seed cannot separate that from the seed's luck (section 6 "
          "measures the seeds' spread).",
    undecided=_EDGE)

JAX_REMAT = Template(
    "precision.jax_remat", ("within", "below", "true"),
    held="The extra FLOPs are the recomputed first matmul of each block and the temp buffers fell below half, as "
         "predicted. The table's \"saved for backward\" row holds the `jax.vjp` residuals: what a forward hands to a "
         "separate backward.",
    above="{failed} came out above the prediction; what XLA kept or recomputed beyond it is not established by this "
          "run: measure both on your backend before relying on the saving.",
    below="{failed} came out below the prediction: XLA recomputed less than the first matmul of each block. A "
          "candidate from its counts, not established by this run: it recomputes the exact GELU (its erf is a long "
          "polynomial) but keeps the matmul's 4D-wide output, even with `prevent_cse=True`.",
    failed="{failed}: false on this backend, so the temp buffers are not compared here.",
    undecided=_EDGE,
    untested="What XLA keeps of `jax.checkpoint` is not measured here (the verdict says why).")

FP8_FORMATS = Template(
    "precision.fp8_formats", ("below",),
    held="So the split follows the bits, as predicted: activations and weights need precision within a narrow range "
         "(e4m3), gradients need range (e5m2). torchao's default recipe casts inputs and weights to e4m3 and output "
         "gradients to e5m2; bf16 stored the activations with a relative error of {bf16_error}, unscaled, and fp8 "
         "recipes keep master weights, sums and the optimizer in higher precision.",
    above="{failed} came out above the prediction: on this model's tensors the formats' bits did not order the errors "
          "this way, though the split fp8 recipes use rests on them.",
    undecided=_EDGE)

FP8_TRAINING = Template(
    "precision.fp8_training", ("above", "within"),
    held="fp8 training ran faster beyond the noise than bf16 and ended within 5% of its loss, as predicted.",
    above="{failed} came out above the prediction: fp8's final loss ended more than 5% above bf16's.",
    below="{failed} came out below the prediction: fp8 ran slower than bf16 beyond the noise, or ended more than 5% "
          "below its loss.",
    undecided="{undecided}: this run cannot rank fp8 against bf16.",
    untested="On a GPU with fp8 units the cell above trains the same model in bf16 and in fp8 and compares their "
             "losses and step times (the verdict says why it did not run here).")
