"""Notebook 05's predictions, each declared once: one sentence per outcome its checks can reach (scored in the
notebook, ``cu.distributed.findings.PROOF.score(...)``). What holds whatever the outcome is in its Markdown."""

from __future__ import annotations

from course_utils.findings import Template

_ON_BOUND = "{undecided} lies exactly on its bound: this run cannot tell rounding from a difference."

PROOF = Template(
    "distributed.proof", ("equal", "below"),
    held="After {steps} steps the two ranks hold **bit-identical** weights, and rank 0 differs from one process on "
         "the whole batch only by float32 rounding (the mean over 64 samples is summed as two halves of 32). Of the "
         "launch's **{launch_s} s** the phases ran {phases_s} s; the rest was start-up and shut-down (a rank "
         "needed {startup_s} s to join the group): why the course launches once for all phases.",
    above="{failed} came out too large: DDP did not compute large-batch SGD in this run. Look at the worker before "
          "trusting any number below.",
    below="{failed} came out below zero, which a largest absolute difference cannot do: a bug in this cell.",
    undecided=_ON_BOUND)

COMM = Template(
    "distributed.comm", ("below", "above"),
    held="As predicted, a fixed latency weighs most where there is little to compute: the tiny model's all-reduce "
         "outlasts its compute, the wide model's does not.",
    above="The all-reduce was the shorter of the two beyond the noise ({failed}): its fixed latency did not "
          "outweigh the compute on this machine.",
    below="The all-reduce was the longer of the two beyond the noise ({failed}): that gradient costs more to "
          "all-reduce than to compute on this machine.",
    undecided="Compute and all-reduce lie within each other's noise ({undecided}): this run cannot rank them.")

REST = Template(
    "distributed.rest", ("within",),
    held="Compute plus the all-reduce, timed alone, account for each model's DDP step within the margin.",
    above="{failed}: the step outlasts compute plus all-reduce beyond the margin, time neither measurement contains. "
          "Candidates: a rank waiting at the all-reduce for its partner, DDP copying gradients into its bucket "
          "(section 4 measures both for the tiny model).",
    below="{failed}: compute plus the all-reduce, timed apart, outlast the step itself beyond the margin. Inside the "
          "step DDP starts a bucket's all-reduce while backward still runs (overlap), or the alone-measurements "
          "carry waits the step does not; which, this run does not establish.",
    undecided="{undecided}: across an edge of the margin, so this run cannot tell whether the step is its parts.")

HALF = Template(
    "distributed.half", ("above",),
    held="So computing half the batch took at most two thirds of the whole-batch time: for these models the "
         "all-reduce is the visible new cost.",
    below="Half the batch took more than two thirds of the time ({failed}): per-operator costs (Python, dispatch, "
          "autograd) do not shrink with the rows, DDP adds its bookkeeping, and the partner shares the {cores} cores. "
          "The table shows which link added time; measure one rank's compute, do not assume it is 1/N.",
    undecided="The interval straddles 1.5x ({undecided}): this run cannot tell whether half the batch took two "
              "thirds of the time.")

BUCKETS = Template(
    "distributed.buckets", ("true", "above"),
    held="An optimum in between stood out: early buckets overlap backward, and few enough of them keep the "
         "per-call latency down.",
    failed="Contrary to the prediction, this is false here: {failed}.",
    below="{failed} came out under 1x: the cap with the fastest median was not the faster one over paired rounds.",
    undecided="{undecided}: within the noise, so this run cannot tell that cap from the fastest.")

ACCUM = Template(
    "distributed.accum", ("equal", "below", "true", "above"),
    held="So the seed's suggestion holds, on a condition: it pays where communication is a large share of the step, "
         "and the optimizer then steps {k} times less often.",
    above="Contrary to the prediction, {failed} came out too high.",
    below="Contrary to the prediction, {failed} came out too low.",
    failed="Contrary to the prediction, {failed} is false: the two ranks ended with different gradients.",
    undecided="{undecided}: whether removing {removed} of {k} all-reduces saves time here, more rounds would tell.")

SAVING = Template(
    "distributed.saving", ("within",),
    held="The saving per update matches what the removed all-reduces cost back to back, within a factor of 2: the "
         "cost model's view, fewer all-reduces and nothing else, accounts for it.",
    above="The saving per update is more than twice what the removed all-reduces cost back to back: the cost "
          "model's view, fewer all-reduces and nothing else, does not account for it.",
    below="The saving per update is under half of what the removed all-reduces cost back to back: the cost model's "
          "view does not account for it.",
    undecided="{undecided}: this run cannot tell whether the saving is the removed all-reduces' cost.")

FIT = Template(
    "distributed.fit", ("within",),
    held="A two-parameter model holds this machine's all-reduce within a factor of 2, in the sweep it was fitted on "
         "and in a job it was not.",
    above="Measured over twice what the model computes ({failed}): gloo changes algorithm with the message size, "
          "and a job's all-reduce competes with its ranks' compute; which of the two, this run does not establish.",
    below="Measured under half of what the model computes ({failed}): gloo changes algorithm with the message "
          "size, which two parameters cannot follow; this run does not establish more.",
    undecided="{undecided}: this run cannot tell whether the model holds there.")

THREE = Template(
    "distributed.three", ("within",),
    held="The model fitted on 2 processes predicts 3 within a factor of 2 at every size.",
    above="Measured over twice the model ({failed}): the ring's extra steps cost more than the latency fitted on 2 "
          "processes.",
    below="Measured under half the model ({failed}): the fit on 2 processes overstates the cost on 3.",
    undecided="{undecided}: this run cannot tell whether the model carries over to 3 processes.",
    untested="The model was not checked on 3 processes: {why}.")

JAX = Template(
    "distributed.jax", ("true", "below"),
    held="The weights stay replicated because XLA summed the per-device gradients with the all-reduce DDP's hooks "
         "perform, inserted from the shardings alone; the `shard_map` step, whose `psum` you write, computes the same "
         "update. {where}",
    failed="Contrary to the prediction, {failed} is false: XLA did not insert the collective.",
    above="{failed} came out beyond float rounding: a sharded step computes something else than the single-device "
          "one.",
    undecided=_ON_BOUND,
    untested="Sections 2 to 5 carry the same lesson in PyTorch; the JAX programs above run unchanged wherever JAX is "
             "installed ({why}).")

TF = Template(
    "distributed.tf", ("below",),
    held="Same weights with and without the strategy: the replicas' averaged gradient is the whole batch's. Two "
         "logical devices on one CPU add no computing power: both replicas compute on the same {cores} cores, so the "
         "epoch times show the strategy's own cost (distributed datasets, per-replica functions), not a speed-up.",
    above="{failed} came out beyond float rounding: the replicas' update differs from the single-device one.",
    undecided=_ON_BOUND,
    untested="Sections 2 to 6 carry the same lesson in PyTorch and JAX ({why}).")

LR = Template(
    "distributed.lr", ("above", "below"),
    held="At 8x the batch the optimizer takes 8x fewer steps over the same samples: with the learning rate unchanged "
         "the test loss ended higher, and the linear rule with warm-up closed more than half of that gap. So when "
         "DDP multiplies the global batch, multiply the learning rate with it.",
    below="{failed} came out no higher than the small batch's: at this scale the unchanged learning rate did not "
          "lag, so the rule had no gap to close.",
    above="{failed} came out above the gap's midpoint: the rule with warm-up closed less than half of it. The rule "
          "is a starting point, not a law: it holds until the batch nears the task's critical batch size, beyond "
          "which larger batches stop paying; tune the learning rate at the batch you train with.",
    undecided=_ON_BOUND)

WARMUP = Template(
    "distributed.warmup", ("below",),
    held="Warm-up lowered the test loss from every one of these initial weights: ramp the learning rate up over the "
         "first steps, while the weights are far from anything sensible and large steps overshoot.",
    above="Warm-up ended higher than the linear rule alone for {failed}: at this scale the reduced first steps cost "
          "more than they saved. Do not add warm-up by default: add it where the first full-rate steps diverge.",
    undecided="{undecided} lies exactly on its bound: this run cannot tell whether warm-up helped.")

BN = Template(
    "distributed.bn", ("above", "below"),
    held="Each rank normalised with its own half's mean: under DDP a BatchNorm model trains on other statistics than "
         "on one device, the more so the smaller the per-device batch, and DDP broadcasts rank 0's running "
         "statistics at every forward (`broadcast_buffers`), so the saved model keeps rank 0's.",
    below="{failed} came out under its bound: the two halves of this batch happen to share their mean.",
    above="{failed} came out above its bound: the ranks' shards are not the two halves of the global batch.",
    undecided=_ON_BOUND)

SYNC = Template(
    "distributed.sync", ("below",),
    held="With `SyncBatchNorm` every rank normalised with the global batch's statistics: worth its collectives "
         "where per-device batches are small.",
    above="With `SyncBatchNorm` the statistics were not the global batch's: {failed} came out above its bound.",
    undecided=_ON_BOUND,
    untested="`SyncBatchNorm` did not run here: {why}. Use it where per-device batches are small: it adds its "
             "collectives to every BatchNorm layer.")

COMPILED = Template(
    "distributed.compiled", ("equal", "true"),
    held="One graph per DDP bucket: each bucket's all-reduce can start once its part of backward is done, as in "
         "eager DDP. Around a bare `nn.Sequential` the same call compiled {graphs_sequential} graph(s): DDP's forward "
         "breaks the graph, and Dynamo starts no new one inside torch's own modules; wrap the layers in a module of "
         "your own, as `DeepMLP` does.\n\nThe first compiled call took {first_call} s (compilation); then the compiled "
         "step ran {gain} against eager DDP (backend `{backend}`).",
    above="{failed} came out above the bucket count: `TORCH_LOGS=ddp_graphs` prints how DDPOptimizer split.",
    below="{failed} came out below the bucket count: `TORCH_LOGS=ddp_graphs` prints how DDPOptimizer split.",
    failed="Contrary to the prediction, {failed} is false: with one bucket there is nothing to split.")

TRAP = Template(
    "distributed.trap", ("equal",),
    held="The local gradient was already the sum over the devices (the transpose of \"replicate\" is \"sum\"), and "
         "`pmean` of N equal sums is that sum, N times the mean: write the loss over the global batch, with a "
         "`psum` as `shard_step` does, and take its gradient.",
    above="{failed} came out above N: this JAX version treats a replicated input's gradient differently.",
    below="{failed} came out below N: this JAX version treats a replicated input's gradient differently.",
    untested="The trap was not run here ({why}).")

FAIL = Template(
    "distributed.fail", ("equal", "true"),
    held="`launch` named rank 1 and showed its traceback, read from the rank's own `stderr.log` (the console "
         "interleaves a rank's stdout and stderr), then stopped rank 0, which would otherwise have slept on: in a "
         "real job, waited in an all-reduce until the process group timed out.",
    above="Contrary to the prediction, {failed} came out too high: a bug to report.",
    below="Contrary to the prediction, {failed} came out too low: a bug to report.",
    failed="Contrary to the prediction, {failed} is false: the launcher lost the rank's exception, a bug to report.")

THREADS = Template(
    "distributed.threads", ("above",),
    held="With every thread no model's step was slower than with one thread by more than the margin.",
    below="Every thread made the step slower than one, beyond the margin ({failed}): operators too small to split "
          "well (the threads meet at a barrier after each, and a waiting thread spins), or other processes' cores.",
    undecided="The interval reaches across the margin ({undecided}): this run cannot tell whether every thread "
              "costs that model time.")
