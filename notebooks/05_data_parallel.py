# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 5
#   jupytext:
#     notebook_metadata_filter: course,kernelspec,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 05 · When does data parallelism pay, and what does it cost?
#
# Data parallelism puts a copy of the model on every device, gives each device a slice of the batch, and
# averages the gradients before every update. It is the first way to use more than one device, and the one
# most often used where it does not pay. After this notebook you will be able to
#
# - launch real multi-process PyTorch DDP with `torchrun` and **prove** that it computes what one process
#   computes on the whole batch;
# - split a step's time into compute, the all-reduce and what neither explains, and use DDP's gradient buckets
#   and `no_sync()`;
# - predict with a ring all-reduce cost model, measured on your machine with an interval, when more devices
#   make training slower;
# - write the same data-parallel step in JAX (`NamedSharding` and `jax.shard_map`) and TensorFlow
#   (`MirroredStrategy`), and know the commands for going multi-node.
#
# **Minutes:** about 5 on a laptop, 60 in a workshop. **Accelerators:** everything runs on a CPU: DDP uses
# processes and gloo, JAX simulated CPU devices, TensorFlow logical CPU devices. With several GPUs DDP uses
# NCCL and JAX uses them (Kaggle's 2x T4 or TPU v5e-8); a Colab T4 or TPU v5e-1 is one device, so JAX's mesh
# stays on simulated host devices there (the set-up cell says which). Without JAX or TensorFlow (Colab TPU
# runtimes ship no TensorFlow) their sections say so once and are skipped.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/05_data_parallel.ipynb)

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers, from a course_utils wheel uploaded to this session (make
# colab-bundle writes it) or else from the release. Colab's own torch, jax, tensorflow, numpy and ipywidgets
# are left as they are.
import glob
import subprocess
import sys

if "google.colab" in sys.modules:
    uploaded = sorted(glob.glob("course_utils-*-py3-none-any.whl"))
    source = uploaded[-1] if uploaded else "course_utils @ git+https://github.com/eager-to-compiled/course@v0.2.0"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", source], check=True)

# %% slideshow={"slide_type": "skip"} tags=["device"]
import course_utils as cu

# JAX fixes its CPU device count at its first computation: ask for several host devices BEFORE that (setup's
# report lists JAX's devices, so it comes second); they stand in for a mesh where the runtime has one device.
# Without JAX this gives 0 devices and goes on.
cu.distributed.simulate_devices(cu.devices.SIMULATED_DEVICES)
cu.notebook.setup()

# %% slideshow={"slide_type": "skip"} tags=["device"]
import os

import numpy as np
import torch
from IPython.display import display

HAVE_JAX, HAVE_TF = cu.env.available("jax"), cu.env.available("tensorflow")
ALL = torch.get_num_threads()
torch.set_num_threads(1)  # like each rank, this kernel's own small steps run on one thread (section D compares)
tf_devices = cu.distributed.tf_logical_cpus(2)  # TensorFlow splits its CPU only before its runtime starts
CORES = os.cpu_count() or 1
plan = cu.devices.plan(cu.devices.describe())  # what this runtime offers: one device, or several
print(f"{CORES} cores; torch sees {torch.cuda.device_count()} GPU(s); JAX installed: {HAVE_JAX}; "
      f"TensorFlow logical CPUs: {len(tf_devices)}")
if HAVE_JAX:
    print(cu.distributed.sharding_note(plan))

# %% slideshow={"slide_type": "skip"} tags=["device"]
sizes = cu.env.sizes(
    rounds=dict(smoke=2, ci=4, cpu=6),  # timing rounds of the DDP job: the replicates of every interval
    repeats=dict(smoke=4, ci=12, cpu=30),  # timed calls per variant in the DDP job
    wide_batch=dict(ci=256, cpu=512),  # global batch of the wide MLP
    backend=dict(ci="aot_eager", cpu="inductor"),  # torch.compile's backend for compiled DDP
    sweep_rounds=dict(ci=5, cpu=6),  # the all-reduce cost model's sweep: rounds,
    sweep_repeats=dict(ci=10, cpu=12),  # calls per message size,
    sweep_max_bytes=dict(ci=2**22, cpu=2**24, gpu=2**26),  # and its largest message (bytes)
    jax_batch=dict(ci=256, cpu=1024),  # global batch of the JAX section
)
sizes

# %% slideshow={"slide_type": "skip"}
PHASES = ["--phases", "proof,accum,timing,buckets,batchnorm,compiled"]  # one launch for the whole notebook
WORKER_ARGS = PHASES + ["--rounds", sizes.rounds, "--repeats", sizes.repeats, "--wide-batch", sizes.wide_batch,
                        "--backend", sizes.backend]
print("worker arguments:", WORKER_ARGS)

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 1. The idea in one picture
#
# Every device holds **the same weights**. The global batch is cut into N shards; each device computes the
# gradient of the mean loss on its shard; an **all-reduce** replaces every device's gradient by the mean over
# devices; every device applies the same update. The mean of N equal shards' mean gradients is the gradient
# over the whole batch, so this is *exactly* large-batch SGD, spread out.
#
# **Prediction:** the only new cost is the all-reduce: a rank computes its half of the batch in at most two
# thirds of the time one process needs for the whole batch (scored in section 3).

# %%
cu.distributed.diagram()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 2. Proof, not assertion: two DDP ranks on two processes
#
# `mp.spawn` of a function defined in a notebook fails (the child cannot import `__main__`), so the course
# runs a **real file** with the **real launcher**: `cu.distributed.launch` starts `torchrun` on 127.0.0.1,
# streams the ranks' lines into the cell and ends every process it started, whatever happens. The worker's
# lines that matter: joining the process group, and the training loop, where the recipe is one line,
# `DistributedDataParallel(model)`.

# %% slideshow={"slide_type": "subslide"}
cu.distributed.show_worker("ddp_train.py", only=["setup", "proof"])

# %% [markdown] slideshow={"slide_type": "subslide"}
# `setup` picks NCCL on GPUs and gloo on CPUs, the GPU from `LOCAL_RANK` (the rank on this machine), and
# passes the process-group timeout the launcher chose. `torch_sgd_step` is the course's one PyTorch step:
# DDP changes nothing in it, because it all-reduces the gradients inside `backward()`. One launch runs every
# phase of this notebook (each `torchrun` start costs seconds), and each process gets
# `OMP_NUM_THREADS = cores / processes` so that the ranks do not fight over the cores.
#
# **Prediction:** the two ranks' weights are *bit-identical* at every checkpoint, and equal to one process
# training on the whole batch up to float rounding.

# %%
print(" ".join(cu.distributed.torchrun_command(cu.distributed.worker_path("ddp_train.py"), 2, WORKER_ARGS,
                                               port=29500, log_dir="<tmp>/logs")))
run = cu.distributed.launch("ddp_train.py", nprocs=2, timeout=300, args=WORKER_ARGS, progress=False)
run


# %%
def train_single_process(steps=20, batch=64, every=5, lr=0.1):
    """The reference: one process, the whole global batch, the same model, data and step as the worker."""
    x_all, y_all = cu.data.classification(steps * batch, seed=0)
    model = cu.models.torch_mlp()
    step = cu.models.torch_sgd_step(model, lr=lr)
    snapshots = {}
    for s in range(steps):
        step(tuple(torch.from_numpy(a[s * batch:(s + 1) * batch]) for a in (x_all, y_all)))
        if (s + 1) % every == 0:
            snapshots[f"step{s + 1}"] = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
    return snapshots


single = train_single_process()
proof = run.arrays["proof"]
rank_diff = {c: float(np.max(np.abs(proof[0][c] - proof[1][c]))) for c in single}
single_diff = {c: float(np.max(np.abs(proof[0][c] - single[c]))) for c in single}
cu.distributed.proof_plot(rank_diff, single_diff)

# %%
# NBVAL_CHECK_OUTPUT
identical = all(d == 0.0 for d in rank_diff.values())
equal_to_one = all(d < 1e-5 for d in single_diff.values())
print("checkpoints:", list(single))
print("rank 0 and rank 1 bit-identical at every checkpoint:", identical)
print("DDP equals one process on the whole batch (max abs diff < 1e-5):", equal_to_one)

# %%
v_proof = cu.distributed.findings.PROOF.score(
    cu.findings.equal("rank 0 against rank 1, largest weight difference", max(rank_diff.values()), 0.0, unit="",
                      source="measured"),
    cu.findings.below("DDP against one process, largest weight difference", max(single_diff.values()), 1e-5, unit=""),
    steps=5 * len(single), launch_s=round(run.seconds, 1),
    phases_s=round(sum(run.record("phases")["seconds"].values()), 1), startup_s=round(run.record("startup")["seconds"], 1))
v_proof

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_proof.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 3. Where the time goes: compute, the all-reduce, and the rest
#
# The worker timed, on both ranks, in rounds: the DDP step; the same step inside `no_sync()` (no all-reduce:
# the rank's compute); and an all-reduce of a buffer as large as the gradient, alone. Rank 0 also timed, while
# the other rank waited, one process on the whole batch (the baseline) and on half of it. Two models: the
# course's **tiny** MLP and a **wide** one (hidden layers of 1024).
#
# **Prediction:** the tiny model's all-reduce, timed alone, takes longer than its compute (a fixed latency
# against little work); the wide model's takes less time than its compute.
#
# **Prediction (no other cost):** for each model the DDP step lasts its compute plus its all-reduce, each timed
# alone, within 25% (the step over the two parts lies inside [0.8x, 1.25x]).

# %%
timed = {n: cu.distributed.measurements(run.record(f"timing_{n}")) for n in ("tiny", "wide")}
parts = {n: cu.distributed.summed("compute + all-reduce", m["compute"], m["allreduce"]) for n, m in timed.items()}
info = {n: run.record(f"timing_{n}") for n in timed}
cu.distributed.breakdown_plot({
    f"{n} MLP ({info[n]['params']:,} parameters, batch {info[n]['global_batch']})": {
        "1 process, whole batch": (m["single"].median, 0.0, m["single"].median),
        "2 DDP ranks": (m["compute"].median, m["allreduce"].median, m["ddp"].median),
    } for n, m in timed.items()})

# %%
# NBVAL_CHECK_OUTPUT
for name, r in info.items():
    print(f"{name}: {r['params']:,} parameters -> {4 * r['params']:,} gradient bytes all-reduced per step")

# %%
share = {n: m["allreduce"].median / m["ddp"].median for n, m in timed.items()}  # for the summary
comm = {n: cu.intervals.speedup(m["compute"], m["allreduce"]) for n, m in timed.items()}  # < 1: all-reduce longer
v_comm = cu.distributed.findings.COMM.score(cu.findings.slower("tiny: compute over its all-reduce", comm["tiny"]),
                                            cu.findings.faster("wide: compute over its all-reduce", comm["wide"]))
rest = {n: cu.intervals.speedup(timed[n]["ddp"], parts[n]) for n in timed}  # > 1: the step outlasts its parts
v_rest = cu.distributed.findings.REST.score(
    *[cu.findings.same(f"{n}: DDP step over compute + all-reduce", rest[n], 1.25) for n in timed])
speedup = {n: cu.intervals.speedup(m["single"], m["ddp"]) for n, m in timed.items()}  # 2 ranks vs 1 process
display(v_comm)
v_rest

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_comm.prose(v_rest.sentence)

# %% [markdown]
# Against one process on the whole batch (one thread, timed by rank 0 inside the job), compare the two bars of
# each model above; the summary at the end gives the ratio with its interval. Where the two ranks' bar is the
# longer, that is the seed's warning measured: more devices, and more time per step.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Is the all-reduce the only new cost? (section 1's prediction)
# If it were, a rank's compute on half the batch would take about half of the whole-batch step. Rank 0 also
# timed, alone and in turns, half the batch in a plain model and in a one-rank DDP under `no_sync` (DDP's
# bookkeeping without a partner); the rank's compute in the job adds the partner process computing beside it.

# %%
chain = {n: cu.distributed.chain(m) for n, m in timed.items()}  # each link against the row before it
half = {n: cu.intervals.speedup(m["single"], m["compute"]) for n, m in timed.items()}  # whole batch / rank's half
v_half = cu.distributed.findings.HALF.score(
    *[cu.findings.above(f"{n}: whole-batch step over a rank's half-batch compute", s, 1.5) for n, s in half.items()],
    cores=CORES)
cu.distributed.chain_table(timed, chain)

# %%
v_half

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_half.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Gradient buckets and overlap
# DDP does not wait for the whole backward pass: it groups parameters into **buckets** of about
# `bucket_cap_mb` and all-reduces a bucket as soon as its gradients exist, while backward continues (overlap).
# Small buckets start early but pay the per-call latency often; one huge bucket waits for the end of backward.
# The worker trained a deeper MLP (9 layers of 256) with several caps and counted the all-reduce calls.
#
# **Prediction:** the bucket count falls as the cap grows, and the fastest cap lies in between, faster than
# both the smallest and the largest cap beyond the noise.

# %%
bucket_runs = [r for r in run.records[0] if r["kind"] == "bucket"]
bucket_ms = {r["cap_mb"]: cu.timing.Measurement(f"cap {r['cap_mb']:g} MB", tuple(r["times"]), rounds=tuple(r["rounds"]))
             for r in bucket_runs}
cu.plotting.time_bars({f"bucket_cap_mb={r['cap_mb']:g} ({r['buckets']} buckets)": bucket_ms[r["cap_mb"]]
                       for r in bucket_runs}, title="DDP step time of the deep MLP against bucket size")

# %%
# NBVAL_CHECK_OUTPUT
counts = [r["buckets"] for r in bucket_runs]
caps = [r["cap_mb"] for r in bucket_runs]
falls = counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
print("bucket caps (MB):", caps)
print("all-reduce calls per step:", counts)
print("fewer buckets for every larger cap:", falls)

# %%
fastest = min(caps, key=lambda c: bucket_ms[c].median)
vs_ends = {c: cu.intervals.speedup(bucket_ms[c], bucket_ms[fastest]) for c in (caps[0], caps[-1]) if c != fastest}
v_buckets = cu.distributed.findings.BUCKETS.score(
    cu.findings.true(f"the bucket count ({counts[0]} at {caps[0]:g} MB, {counts[-1]} at {caps[-1]:g} MB) falls as "
                     "the cap grows", falls),
    cu.findings.true(f"the fastest median ({fastest:g} MB) lies between the end caps",
                     fastest not in (caps[0], caps[-1])),
    *[cu.findings.faster(f"{fastest:g} MB over {c:g} MB", s) for c, s in vs_ends.items()])
v_buckets

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_buckets.prose()

# %% [markdown]
# On a CPU every gloo call costs a fixed latency and competes with backward for the same cores; on GPUs NCCL
# overlaps communication with backward on its own streams. Tune buckets on the hardware you train on.

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 4. Gradient accumulation with `no_sync()`: fewer all-reduces
#
# The seed article asks: *"would gradient accumulation reduce the synchronisation frequency?"* With K
# micro-batches per optimizer step, DDP all-reduces after every backward; inside `model.no_sync()` it only
# accumulates locally, and the last micro-batch's backward all-reduces the sum once:

# %%
cu.distributed.show_worker("ddp_train.py", only=["accumulate"])

# %% [markdown]
# **Exercise 05.1 (predict before you look).** With K = 4 micro-batches of the tiny model (its gradient fits
# in DDP's first bucket of 1 MiB), how many all-reduce calls does one optimizer step make when syncing every
# micro-batch, and with `no_sync`? Answer a pair `(every_micro_batch, no_sync)`.

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
K = 4
buckets_tiny = -(-4 * info["tiny"]["params"] // (1024 * 1024))  # gradient bytes over DDP's 1 MiB first bucket
answer = (K * buckets_tiny, 1 * buckets_tiny)  # every backward syncs, or only the last one
print(f"{K} micro-batches x {buckets_tiny} bucket(s): {answer[0]} all-reduce calls syncing every micro-batch, "
      f"{answer[1]} with no_sync")

# %%
# NBVAL_CHECK_OUTPUT
naive, lazy = run.record("accum_every_micro_batch"), run.record("accum_no_sync")
cu.exercises.check("05.1", answer, every_micro_batch=naive["allreduce_calls"], no_sync=lazy["allreduce_calls"])

# %% [markdown]
# **Prediction:** 4 all-reduce calls naively and 1 with `no_sync`, the same gradient (that of one batch of
# K x 2 ranks x 32 samples), and an optimizer step faster with `no_sync`, beyond the noise.

# %%
accum = cu.distributed.measurements(run.record("accum_timing"))
cu.plotting.time_bars({"sync every micro-batch": accum["every"], "no_sync, one all-reduce": accum["no_sync"],
                       "no communication at all": accum["local"]},
                      title="4 micro-batches on 2 ranks: time per optimizer step")

# %%
# NBVAL_CHECK_OUTPUT
x_big, y_big = cu.data.classification(4 * 2 * 32, seed=1)  # the worker's data: K x world x micro-batch
big = cu.models.torch_mlp()
torch.nn.functional.cross_entropy(big(torch.from_numpy(x_big)), torch.from_numpy(y_big)).backward()
big_grad = torch.cat([p.grad.flatten() for p in big.parameters()]).numpy()
grads = run.arrays["accum"]
accum_diff = max(float(np.max(np.abs(grads[r]["no_sync"] - big_grad))) for r in grads)
same_grad = accum_diff < 1e-6 and np.array_equal(grads[0]["no_sync"], grads[1]["no_sync"])
print("all-reduce calls per optimizer step: every micro-batch", naive["allreduce_calls"], "| no_sync",
      lazy["allreduce_calls"])
print("no_sync gradient == large-batch gradient on both ranks (max abs diff < 1e-6):", same_grad)

# %%
no_sync_gain = cu.intervals.speedup(accum["every"], accum["no_sync"])
v_accum = cu.distributed.findings.ACCUM.score(
    cu.findings.equal("all-reduce calls syncing every micro-batch", naive["allreduce_calls"], 4),
    cu.findings.equal("all-reduce calls under no_sync", lazy["allreduce_calls"], 1),
    cu.findings.below("no_sync gradient against the large-batch gradient, largest difference", accum_diff, 1e-6,
                      unit=""),
    cu.findings.true("both ranks' no_sync gradients identical",
                     np.array_equal(grads[0]["no_sync"], grads[1]["no_sync"])),
    cu.findings.faster("no_sync over syncing every micro-batch", no_sync_gain), k=4, removed=3)
v_accum

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What did `no_sync` save?
# The cost model's view: `no_sync` removes K - 1 all-reduces of the gradient, nothing else. The worker timed
# K - 1 all-reduces back to back beside the two loops, and, in a third loop with a timing hook, how long each
# synced micro-batch spent inside its all-reduce call.
#
# **Prediction:** the saving per optimizer step is K - 1 all-reduces as timed back to back, within a factor
# of 2.

# %%
saving = cu.distributed.accumulation_saving(run.record("accum_timing"))
v_saving = cu.distributed.findings.SAVING.score(cu.findings.within(
    f"saved per step over {saving['k'] - 1} all-reduces back to back", saving["saved"] / saving["back_to_back"],
    0.5, 2))
saving["table"]

# %%
v_saving

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_accum.prose(v_saving.sentence)

# %% [markdown]
# The table's last rows take a sync apart. Inside the call a rank waits for its partner to finish its own
# backward (the two ranks share the cores): time no back-to-back measurement contains. DDP's own work around the
# call (hooks, copying the gradient into its bucket and back) is the other candidate, not measured apart.

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 5. When more devices are slower: the ring all-reduce cost model
#
# The seed article warns: *"multi-machine training can be slower than a single card when the model fits on
# one card"*. Section 3 measured it. To predict it elsewhere, model the all-reduce. In a ring of N devices each
# device sends and receives 2(N-1) chunks of bytes/N:
#
# $$T(N) = 2(N-1)\,\alpha + \frac{2(N-1)}{N}\,\frac{\text{bytes}}{\beta}$$
#
# with α the latency per ring step and β the link bandwidth. `cu.distributed.allreduce_cost` measures it the
# one way the course does: a 2-rank job sweeps the message size in rounds, fits α and β on each round, and
# keeps them for the rest of this run (a later notebook that asks reads the same figures).
#
# **Prediction:** the model is within a factor of 2 of its own sweep at every size, and of section 3's
# all-reduce of the wide gradient, timed inside the training job.

# %%
cost = cu.distributed.allreduce_cost(2, rounds=sizes.sweep_rounds, repeats=sizes.sweep_repeats,
                                    max_bytes=sizes.sweep_max_bytes)
cu.distributed.allreduce_fit_plot(cost)

# %%
cost

# %%
fit_ratio = cu.distributed.score(cost.model, *cost.sweep, 2)  # measured / model at each size
wide_bytes = 4 * info["wide"]["params"]
wide_model = cost.predict(wide_bytes, 2)  # (seconds, low, high): computed
wide_ratio = timed["wide"]["allreduce"].median / wide_model[0]
v_fit = cu.distributed.findings.FIT.score(
    cu.findings.within("the sweep's lowest measured/model", float(fit_ratio.min()), 0.5, 2),
    cu.findings.within("the sweep's highest measured/model", float(fit_ratio.max()), 0.5, 2),
    cu.findings.within(f"the wide gradient's all-reduce in the job, {timed['wide']['allreduce'].median * 1e3:.2f} ms, "
                       f"over the model's {wide_model[0] * 1e3:.2f} ms (computed; 95% interval "
                       f"{wide_model[1] * 1e3:.2f} to {wide_model[2] * 1e3:.2f} ms)", wide_ratio, 0.5, 2))
v_fit

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_fit.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# A model fitted on 2 processes is worth something only if it predicts other N. That needs a core per process:
# where N exceeds the cores, a ring step may wait for its next process to be scheduled, which no latency fitted
# on 2 processes contains.
#
# **Prediction:** on 3 processes, each with a core of its own, the model fitted on 2 is within a factor of 2 at
# every size.

# %%
if CORES >= 3:
    three = cu.distributed.allreduce_cost(3, rounds=sizes.sweep_rounds, repeats=sizes.sweep_repeats,
                                          max_bytes=sizes.sweep_max_bytes)
    out_ratio = cu.distributed.score(cost.model, *three.sweep, 3)
    v_three = cu.distributed.findings.THREE.score(
        cu.findings.within("N=3, the sweep's lowest measured/model", float(out_ratio.min()), 0.5, 2),
        cu.findings.within("N=3, the sweep's highest measured/model", float(out_ratio.max()), 0.5, 2))
else:
    v_three = cu.distributed.findings.THREE.not_tested(f"this machine has {CORES} cores, so 3 processes cannot each "
                                                       "have one")
v_three

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### From this machine to real links
# This CPU's compute and a GPU cluster's links never meet in one machine, so the compute time per step has to
# be an **assumption**: each device computes its share of the wide model's step in **1 ms**, a GPU-class time.
# The links are typical data-sheet values. Everything below is computed from the ring formula, not measured.

# %%
ASSUMED_COMPUTE = 1e-3  # seconds per step per device: an assumption about a GPU, not a measurement
LINKS = {"10 GbE (1.25 GB/s, 20 µs)": (1.25e9, 20e-6), "100 Gb InfiniBand (12.5 GB/s, 5 µs)": (12.5e9, 5e-6),
         "NVLink-class (300 GB/s, 2 µs)": (300e9, 2e-6)}
cu.distributed.scaling_plot(wide_bytes, ASSUMED_COMPUTE, LINKS, devices=[2, 8, 64, 512],
                            compute_label="assumed GPU compute per step")

# %%
# NBVAL_CHECK_OUTPUT
bw_growth = cu.distributed.ring_allreduce_time(1e8, 512, 1e10, 0) / cu.distributed.ring_allreduce_time(1e8, 8, 1e10, 0)
lat_growth = cu.distributed.ring_allreduce_time(0, 512, 1e10, 1e-6) / cu.distributed.ring_allreduce_time(0, 8, 1e10, 1e-6)
print(f"computed for a ring: from 8 to 512 devices the bandwidth term grows {bw_growth:.2f}x, the latency term "
      f"{lat_growth:.0f}x")

# %%
cu.display.table(["link", *(f"{n} devices" for n in (8, 64, 512))],
                 [(name, *(f"{cu.distributed.ring_allreduce_time(wide_bytes, n, bw, lat) * 1e3:.2f} ms"
                           for n in (8, 64, 512))) for name, (bw, lat) in LINKS.items()],
                 title=f"Ring all-reduce of the wide model's {wide_bytes / 1e6:.1f} MB gradient (computed), against "
                       f"{ASSUMED_COMPUTE * 1e3:.0f} ms of assumed compute per step")

# %% [markdown]
# In a ring the bandwidth term hardly grows with N and the latency term grows linearly, so small messages on
# many devices are latency-bound. That linear growth belongs to the ring: at scale NCCL picks tree algorithms,
# whose latency grows with log N, and on NVLink switches NVLS, where the switch itself reduces. Nor is a
# 512-device NVLink ring a real configuration: NVLink joins 8 GPUs in a server, 72 in an NVL72 rack, and beyond
# that the traffic crosses the network; that column extends the formula, nothing more.
#
# Where the all-reduce
# exceeds the compute, adding devices at a fixed per-device batch mostly adds waiting, unless the all-reduce
# overlaps backward (buckets) or the per-device batch grows: the seed's pitfall, in arithmetic.

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 6. JAX: shardings in the types, and `shard_map`
#
# JAX needs no launcher on one host. A **mesh** names the devices along axes; a `NamedSharding(mesh,
# P("data"))` says which array dimension is split over which mesh axis; `jax.jit` compiles one program for all
# devices and inserts the collectives. With `jax.shard_map` you write instead what *one* device runs on its
# shard, and the communication (`psum`) is yours. The devices come from the device plan (the set-up cell says
# which): the runtime's accelerators where it has several (Kaggle's TPU v5e-8, 2x T4), else simulated host CPU
# devices, since a Colab TPU (v5e-1) or a T4 is one device. `pmap` is the legacy API: do not start new code with it.
#
# **Prediction:** the `NamedSharding` step equals the single-device step, with an all-reduce in its compiled
# program, and the `shard_map` step equals the `NamedSharding` step.

# %% tags=["device"]
if HAVE_JAX:
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh_devices = cu.distributed.sharding_devices(plan)  # several accelerators, or the simulated host devices
    mesh = jax.make_mesh((len(mesh_devices),), ("data",), axis_types=(jax.sharding.AxisType.Explicit,),
                         devices=mesh_devices)  # Explicit: older JAX (Colab's) defaults to Auto
    x_np, y_np = cu.data.classification(sizes.jax_batch, seed=0)
    params, x_1, y_1 = jax.device_put((cu.models.jax_mlp_params(), x_np, y_np), mesh_devices[0])  # one device
    p_s = jax.device_put(params, NamedSharding(mesh, P()))  # replicated: every device holds all of it
    x_s = jax.device_put(x_np, NamedSharding(mesh, P("data")))  # the batch split over the "data" axis
    y_s = jax.device_put(y_np, NamedSharding(mesh, P("data")))
    print(mesh)
    print("batch:", jax.typeof(x_s), "| first weight:", jax.typeof(p_s[0]["w"]))


# %% tags=["device"]
def loss_fn(params, x, y):
    logits = cu.models.jax_mlp_apply(params, x)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


def sgd(params, grads):
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def shard_step(params, x, y):
    """What ONE device runs on its shard: the loss is the psum of the shards' sums over the global batch."""
    def loss(p):
        nll = -jnp.take_along_axis(jax.nn.log_softmax(cu.models.jax_mlp_apply(p, x)), y[:, None], axis=1)
        return lax.psum(jnp.sum(nll), "data") / lax.psum(x.shape[0], "data")

    return sgd(params, jax.grad(loss)(params))


if HAVE_JAX:
    train_step = jax.jit(lambda p, x, y: sgd(p, jax.grad(loss_fn)(p, x, y)))
    shard_mapped = jax.jit(jax.shard_map(shard_step, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                                         out_specs=P()))
    one_device = train_step(params, x_1, y_1)
    sharded = train_step(p_s, x_s, y_s)
    manual = shard_mapped(p_s, x_s, y_s)
    collectives = cu.compiled.hlo_summary(train_step.lower(p_s, x_s, y_s).compile().as_text()).collectives()
    print("updated weight:", jax.typeof(sharded[0]["w"]), "| collectives in the compiled step:",
          {k: v for k, v in collectives.items() if v})

# %% tags=["device"]
# NBVAL_CHECK_OUTPUT
if HAVE_JAX:
    def max_diff(a, b):
        return max(jax.tree.leaves(jax.tree.map(lambda u, v: float(np.max(np.abs(np.asarray(u) - np.asarray(v)))),
                                                a, b)))  # as NumPy: one device's arrays against the mesh's

    jax_diff, map_diff = max_diff(one_device, sharded), max_diff(sharded, manual)
    print("the mesh spans several devices:", len(mesh_devices) > 1)
    print("all-reduce in the compiled sharded step:", collectives.get("all-reduce", 0) >= 1)
    print("NamedSharding step == single-device step (max abs diff < 1e-6):", jax_diff < 1e-6)
    print("shard_map step == NamedSharding step (max abs diff < 1e-6):", map_diff < 1e-6)

# %%
if HAVE_JAX:
    v_jax = cu.distributed.findings.JAX.score(
        cu.findings.true(f"an all-reduce in the compiled step ({collectives.get('all-reduce', 0)} found)",
                         collectives.get("all-reduce", 0) >= 1),
        cu.findings.below("NamedSharding against one device, largest difference", jax_diff, 1e-6, unit=""),
        cu.findings.below("shard_map against NamedSharding, largest difference", map_diff, 1e-6, unit=""),
        **cu.distributed.mesh_facts(plan, CORES))
    jax_times = cu.timing.interleaved({"one device": lambda: train_step(params, x_1, y_1),
                                       "NamedSharding": lambda: train_step(p_s, x_s, y_s),
                                       "shard_map": lambda: shard_mapped(p_s, x_s, y_s)}, rounds=4, min_time=0.3)
    display(cu.plotting.time_bars(jax_times, title="One JAX training step, in alternating rounds"))
else:
    v_jax = cu.distributed.findings.JAX.not_tested("JAX is not installed in this runtime",
                                                   **cu.distributed.mesh_facts(plan, CORES))
v_jax

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_jax.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 7. TensorFlow: `MirroredStrategy` over logical devices
#
# `tf.distribute.MirroredStrategy` replicates a Keras model over the devices it is given, splits each global
# batch between the replicas and all-reduces the gradients; `model.fit` needs no other change. Here the
# devices are the two logical CPUs configured at the top (with GPUs, pass nothing and it uses them all).
#
# **Prediction:** the same 2 epochs of SGD give the same weights as without a strategy.

# %%
if HAVE_TF:
    tf = cu.env.import_tensorflow()
    import keras

    tf.get_logger().setLevel("WARNING")  # MirroredStrategy logs every all-reduce it builds at INFO level
    tf_batches = tf.data.Dataset.from_tensor_slices(cu.data.classification(512, seed=0)).batch(64)  # in order


def keras_fit(strategy, epochs=2):
    with strategy.scope():
        model = cu.models.keras_mlp()
        model.compile(optimizer=keras.optimizers.SGD(0.1),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(tf_batches, epochs=epochs, shuffle=False, verbose=0)
    return model


if HAVE_TF:
    mirrored = tf.distribute.MirroredStrategy([d.name for d in tf_devices])
    mirrored_one = tf.distribute.MirroredStrategy([tf_devices[0].name])  # the strategy's machinery, one replica
    with cu.env.silenced_stderr():  # TF's C++ notices about its per-device iterators
        fits = {"no strategy": keras_fit(tf.distribute.get_strategy()), "MirroredStrategy x 1": keras_fit(mirrored_one),
                f"MirroredStrategy x {mirrored.num_replicas_in_sync}": keras_fit(mirrored)}
        tf_diff = max(float(np.max(np.abs(a - b))) for a, b in zip(fits["no strategy"].get_weights(),
                                                                   list(fits.values())[-1].get_weights()))
        tf_times = cu.timing.interleaved({k: (lambda m=m: m.fit(tf_batches, shuffle=False, verbose=0))
                                          for k, m in fits.items()}, rounds=4, min_time=0.6)
    display(cu.plotting.time_bars(tf_times, title="One Keras epoch (8 steps of 64)"))

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_TF:
    print("replicas in sync:", mirrored.num_replicas_in_sync)
    print("MirroredStrategy weights == no strategy after 2 epochs (max abs diff < 1e-5):", tf_diff < 1e-5)

# %%
if HAVE_TF:
    v_tf = cu.distributed.findings.TF.score(
        cu.findings.below("largest weight difference after 2 epochs", tf_diff, 1e-5, unit=""), cores=CORES)
else:
    v_tf = cu.distributed.findings.TF.not_tested("TensorFlow is not installed in this runtime", cores=CORES)
v_tf

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_tf.prose()

# %% [markdown]
# On a Cloud TPU VM with TensorFlow the same code runs with `TPUStrategy`; not run in this course.

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 8. Beyond one machine
#
# The same three programs scale out with a launcher per node and a rendezvous address; notebook 06 runs two
# "nodes" on this machine:
#
# ```bash
# # PyTorch: on each of 4 nodes with 8 GPUs (c10d rendezvous on node 0)
# torchrun --nnodes=4 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=node0.example:29400 \
#          --rdzv-id=job42 course_utils/workers/ddp_train.py --out ddp_out
# ```
# ```python
# # JAX: one process per host, before any other JAX call; then jax.devices() lists all hosts' devices
# jax.distributed.initialize(coordinator_address="node0.example:1234", num_processes=4, process_id=RANK)
# # TensorFlow: TF_CONFIG='{"cluster": {"worker": ["node0:12345", "node1:12345"]}, "task": {"type": "worker", "index": 0}}'
# strategy = tf.distribute.MultiWorkerMirroredStrategy()
# ```
#
# Between nodes the link is the network (section 5's 10-100 Gb rows), so the all-reduce grows expensive, and
# every device still keeps a **full copy** of weights, gradients and optimizer state: ZeRO and FSDP shard those
# (Going further, and notebook 06).

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## Exercises
#
# **05.2 The largest model per device.** With an H200's 141 GB per device and 16 bytes per parameter (ignore
# activations), what is the largest model that trains on 64 devices with ZeRO stage 0, 2 and 3? Answer a
# dict `{0: params, 2: params, 3: params}`.
#
# <details><summary>Hint</summary><code>memory_per_device</code> is linear in the parameter count: divide the
# device's bytes by what <code>memory_per_device(1, 64, stage)</code> returns.</details>

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = {stage: 141e9 / cu.distributed.memory_per_device(1, 64, stage) for stage in (0, 2, 3)}
print({stage: f"{p / 1e9:.1f} B parameters" for stage, p in answer.items()})

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("05.2", answer, device_bytes=141e9, n=64)

# %% [markdown]
# **05.3 How many devices until communication dominates?** On the 100 Gb InfiniBand link of section 5, with
# the assumed 1 ms of compute per step, what is the smallest N in 2..1024 for which the wide model's
# all-reduce takes longer than the compute (no overlap)? Answer an int, or `None` if there is none.
#
# <details><summary>Hint</summary><code>cu.distributed.ring_allreduce_time(wide_bytes, n, bw, lat)</code>
# against <code>ASSUMED_COMPUTE</code>; <code>next(...)</code> over a range gives the first N, or None.</details>

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
bw, lat = LINKS["100 Gb InfiniBand (12.5 GB/s, 5 µs)"]
answer = next((n for n in range(2, 1025)
               if cu.distributed.ring_allreduce_time(wide_bytes, n, bw, lat) > ASSUMED_COMPUTE), None)
print("first N where the all-reduce exceeds the assumed compute:", answer)

# %%
# NBVAL_CHECK_OUTPUT
ib_bw, ib_lat = LINKS["100 Gb InfiniBand (12.5 GB/s, 5 µs)"]
cu.exercises.check("05.3", answer, nbytes=wide_bytes, compute_seconds=ASSUMED_COMPUTE, bandwidth=ib_bw, latency=ib_lat)

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.notebook.summary_table("05_data_parallel", [
    ("DDP ranks' max weight difference", max(rank_diff.values()), "", "2 ranks, 20 steps"),
    ("DDP vs one process, max weight difference", max(single_diff.values()), "", "float rounding only"),
    ("tiny model: 2 DDP ranks over 1 process", speedup["tiny"].ratio, "x",
     f"95% interval {speedup['tiny'].low:.2f}-{speedup['tiny'].high:.2f}x; < 1: slower (seed: it can be)"),
    ("wide model: 2 DDP ranks over 1 process", speedup["wide"].ratio, "x",
     f"95% interval {speedup['wide'].low:.2f}-{speedup['wide'].high:.2f}x; 1 thread per process"),
    ("tiny model: all-reduce alone / DDP step", share["tiny"] * 100, "%", "medians"),
    ("wide model: all-reduce alone / DDP step", share["wide"] * 100, "%", "medians"),
    ("no_sync over syncing every micro-batch", no_sync_gain.ratio, "x",
     f"95% interval {no_sync_gain.low:.2f}-{no_sync_gain.high:.2f}x; 4 micro-batches"),
    ("all-reduce latency α", cost.model.latency * 1e6, "µs",
     "95% interval {:.0f}-{:.0f} µs; gloo, 2 processes".format(*(v * 1e6 for v in cost.latency_interval))),
    ("all-reduce bandwidth β", cost.model.bandwidth / 1e9, "GB/s", f"95% interval {cost.bandwidth_text}"),
    ("torchrun launch, all phases", run.seconds, "s", "start-up included"),
])

# %% [markdown]
# **What to remember**
# - Data parallelism is large-batch SGD spread out: prove it (ranks identical, equal to one process on the
#   whole batch) before you trust a speed-up, in every framework, and scale the learning rate with the batch.
# - Each step pays an all-reduce of the whole gradient, in a ring ~2(N-1)/N x bytes / bandwidth plus 2(N-1) latencies,
#   and costs no formula shows: per-operator overhead that does not shrink with the batch, ranks waiting for
#   each other, processes sharing cores. Buckets and `no_sync` accumulation are the first remedies.
# - Measure the cost model where you will run, with an interval, and check it on a case you did not fit.
#
# **Next:** [06 · beyond one machine](06_beyond_one_machine.ipynb): two torchrun "nodes", multi-process JAX
# and TensorFlow, ZeRO and FSDP with their memory measured, and an elastic restart.

# %%
print(cu.notebook.last_verified())

# %% [markdown] course={"lead": false, "optional": true} slideshow={"slide_type": "slide"}
# ## Going further
#
# Optional reading: what the notebook's main path does not need, with its own predictions and verdicts.
#
# ### A. What changes at scale that a single-process demo hides
#
# **Learning rate against global batch.** Section 2 proved that DDP over N ranks is SGD on an N times larger
# batch, so a data-parallel job at 8x the devices takes 8x fewer, larger steps per epoch. The *linear scaling
# rule* multiplies the learning rate by the same factor, and a *warm-up* ramps it up over the first steps,
# while the weights are still far from anything sensible. Measured here on one process (it computes what DDP
# computes), 3 epochs each, loss on held-out samples (the test loss), from 3 seeds of the initial weights:
#
# **Prediction:** at 8x the batch, keeping the learning rate ends with a higher test loss than the small
# batch, and the linear rule with warm-up closes more than half of that gap (means over the seeds).
#
# **Prediction (warm-up):** with the linear rule, 10 warm-up steps end at a lower test loss than none, from
# every seed.

# %%
x_lr, y_lr = (torch.from_numpy(a) for a in cu.data.classification(8192 + 2048, seed=5))
(x_train, x_test), (y_train, y_test) = (t.split([8192, 2048]) for t in (x_lr, y_lr))


def train(batch, lr, warmup_steps=0, seed=1, epochs=3):
    """SGD over the same samples at a given batch and learning rate; returns the held-out loss."""
    model = cu.models.torch_mlp(seed=seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    if warmup_steps:  # from lr / 8 up to lr over the first steps
        warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / 8, total_iters=warmup_steps)
    for _ in range(epochs):
        for i in range(0, len(x_train), batch):
            loss = torch.nn.functional.cross_entropy(model(x_train[i:i + batch]), y_train[i:i + batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if warmup_steps:
                warmup.step()
    with torch.no_grad():
        return float(torch.nn.functional.cross_entropy(model(x_test), y_test))


BASE_BATCH, BASE_LR, SCALE, SEEDS = 32, 0.1, 8, (1, 2, 3)
RUNS = {"batch 32, lr 0.1": (BASE_BATCH, BASE_LR, 0),
        "batch 256, lr 0.1 (unchanged)": (SCALE * BASE_BATCH, BASE_LR, 0),
        "batch 256, lr 0.8 (linear rule)": (SCALE * BASE_BATCH, SCALE * BASE_LR, 0),
        "batch 256, lr 0.8 + 10 warm-up steps": (SCALE * BASE_BATCH, SCALE * BASE_LR, 10)}
held_out = {run_name: [train(b, lr, warmup, seed) for seed in SEEDS] for run_name, (b, lr, warmup) in RUNS.items()}
cu.display.table(["run", *(f"seed {s}" for s in SEEDS), "mean"],
                 [(k, *(f"{x:.3f}" for x in v), f"{np.mean(v):.3f}") for k, v in held_out.items()],
                 title="Same samples seen, 3 epochs: held-out loss against the global batch (measured)")

# %%
small, unchanged, linear, warm = (float(np.mean(v)) for v in held_out.values())
v_lr = cu.distributed.findings.LR.score(
    cu.findings.above("mean test loss at batch 256, lr unchanged, against batch 32's", unchanged, small, unit=""),
    cu.findings.below("mean test loss with the linear rule and warm-up, against the gap's midpoint", warm,
                      (small + unchanged) / 2, unit=""))
v_warm = cu.distributed.findings.WARMUP.score(
    *[cu.findings.below(f"seed {s} (test loss with warm-up, against the linear rule alone)", w, lin, unit="")
      for s, w, lin in zip(SEEDS, held_out["batch 256, lr 0.8 + 10 warm-up steps"],
                           held_out["batch 256, lr 0.8 (linear rule)"])])
display(v_lr)
v_warm

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_lr.prose(v_warm.sentence)

# %% [markdown]
# **Batch normalisation.** A `BatchNorm` layer normalises with the statistics of *its* batch. Under DDP that is
# each rank's shard: with small per-device batches the ranks normalise differently from each other and from the
# global batch. `torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)` normalises with the global batch's
# statistics instead: its forward all-gathers each rank's mean, inverse standard deviation and sample count and
# combines them, its backward all-reduces two sums (of the gradient, and of the gradient times the centred
# input). The worker ran one forward of a Linear + BatchNorm layer (momentum 1, so the running mean *is* the
# batch mean), plain and converted:

# %%
cu.distributed.show_worker("ddp_train.py", only=["batchnorm"])

# %% [markdown]
# **Prediction (without it):** the two ranks' batch means differ, and their average is the global batch's mean.
#
# **Prediction (with it):** both ranks hold the global batch's mean.

# %%
torch.manual_seed(0)
reference = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.BatchNorm1d(16, momentum=1.0))
reference(torch.from_numpy(cu.data.classification(64, seed=4)[0]))  # one process, the whole global batch
global_mean = reference[1].running_mean.detach().numpy()
bn = run.arrays["batchnorm"]
ranks_apart = float(np.max(np.abs(bn[0]["plain"] - bn[1]["plain"])))
average_off = float(np.max(np.abs((bn[0]["plain"] + bn[1]["plain"]) / 2 - global_mean)))
v_bn = cu.distributed.findings.BN.score(
    cu.findings.above("plain BatchNorm, the ranks' means apart", ranks_apart, 1e-3, unit=""),
    cu.findings.below("their average against the global batch's mean", average_off, 1e-5, unit=""))
refused = [r for r in run.records[0] if r["kind"] == "batchnorm_refused"]
if refused:
    v_sync = cu.distributed.findings.SYNC.not_tested(f"this torch runs SyncBatchNorm only on GPUs "
                                                     f"({refused[0]['error']})")
else:
    sync_off = max(float(np.max(np.abs(bn[r]["sync"] - global_mean))) for r in bn)
    v_sync = cu.distributed.findings.SYNC.score(
        cu.findings.below("SyncBatchNorm, every rank against the global batch's mean", sync_off, 1e-5, unit=""))
display(v_bn)
v_sync

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_bn.prose(v_sync.sentence)

# %% [markdown]
# **DDP with `torch.compile`.** Compiling the DDP-wrapped model hands the graph to Dynamo's *DDPOptimizer*,
# which splits it at DDP's bucket boundaries so that each bucket's all-reduce can start while the rest of
# backward runs. The worker compiled the deep MLP in DDP (1 MB buckets; at `ci` size with the `aot_eager`
# backend, which splits the same way but generates no code, to stay within the time budget):

# %%
cu.distributed.show_worker("ddp_train.py", only=["DeepMLP", "compiled_ddp"])

# %% [markdown]
# **Prediction:** `torch.compile` of the DDP model compiles one graph per gradient bucket.

# %%
comp = run.record("compiled")
comp_times = cu.distributed.measurements(comp)
compiled_gain = cu.intervals.speedup(comp_times["eager"], comp_times["compiled"])
v_compiled = cu.distributed.findings.COMPILED.score(
    cu.findings.equal(f"graphs compiled ({comp['backend']})", comp["graphs"], comp["buckets"]),
    cu.findings.true(f"more than one DDP bucket ({comp['buckets']})", comp["buckets"] > 1),
    graphs_sequential=comp["graphs_sequential"], first_call=round(comp["first_call"], 1), gain=str(compiled_gain),
    backend=comp["backend"])
v_compiled

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_compiled.prose()

# %% [markdown]
# **The `shard_map` gradient trap.** `shard_map` checks which values vary across devices, and under that check
# the gradient with respect to a *replicated* input comes back already summed over devices (the transpose of
# "replicate" is "sum"). So the tempting `pmean(grad(local_loss))` is N times too large.
#
# **Prediction:** `pmean` of the local gradient is N times the true gradient.

# %%
def grad_then_pmean(params, x, y):
    """The trap: the local gradient is already summed over devices; pmean does not undo that."""
    return lax.pmean(jax.grad(loss_fn)(params, x, y), "data")


if HAVE_JAX:
    g_true = jax.jit(jax.grad(loss_fn))(params, x_1, y_1)
    g_trap = jax.jit(jax.shard_map(grad_then_pmean, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                                   out_specs=P()))(p_s, x_s, y_s)
    trap_w, true_w = np.asarray(g_trap[0]["w"]), np.asarray(g_true[0]["w"])  # the mesh's and one device's
    trap_ratio = float(np.sum(trap_w * true_w) / np.sum(true_w**2))
    v_trap = cu.distributed.findings.TRAP.score(cu.findings.equal(
        f"pmean(grad) over the true gradient on {len(mesh_devices)} devices", trap_ratio, len(mesh_devices),
        tolerance=1e-3, unit="x", source="measured"))
else:
    v_trap = cu.distributed.findings.TRAP.not_tested("JAX is not installed in this runtime")
v_trap

# %% [markdown]
# ### B. When a rank fails
# A failing rank must not leave its partner waiting forever in an all-reduce, nor leave orphans behind.
# `fail_demo.py` makes rank 1 raise while rank 0 sleeps (standing in for a rank blocked in a collective).
#
# **Prediction:** `launch` raises `LaunchError` naming rank 1 with its traceback, and no process survives.

# %%
cu.distributed.show_worker("fail_demo.py")

# %%
# NBVAL_CHECK_OUTPUT
failed = cu.distributed.rank_failure(cu.distributed.launch, "fail_demo.py", nprocs=2, timeout=60, echo=False)
print(failed)  # the LaunchError's rank and exit code, its traceback's last line, the launch's processes still alive

# %%
v_fail = cu.distributed.findings.FAIL.score(
    cu.findings.equal("the rank LaunchError names", failed.error.rank, 1),
    cu.findings.true(f"its traceback ends in the ValueError ({failed.exception_line.split(':')[0] or 'nothing'})",
                     failed.exception_line.startswith("ValueError:")),
    cu.findings.equal("processes left behind", len(failed.leftover), 0))
print(failed.error)
v_fail

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_fail.prose()

# %% [markdown]
# That timeout is torch's 30 minutes for gloo and 10 for NCCL unless you set it; `launch` sets it to half its
# own timeout (`cu.distributed.pg_timeout_for`), so a rank stuck in a collective fails with its own traceback
# before the launcher gives up on the job. Pressing Ctrl-C, even twice, ends every process too: a reaper process
# ends the job whatever the notebook does meanwhile.

# %% [markdown]
# ### C. Where a DataLoader meets DDP
# The worker slices each global batch by hand (`shard`). With a `DataLoader`, `DistributedSampler` does it:
# each rank gets a disjoint 1/N of the indices, shuffled with a seed plus the epoch, so call
# `sampler.set_epoch(epoch)` at the start of every epoch: without it, every epoch repeats the same order.

# %%
# NBVAL_CHECK_OUTPUT
from torch.utils.data import DistributedSampler

dataset = list(range(16))
samplers = [DistributedSampler(dataset, num_replicas=2, rank=r, shuffle=True, seed=0) for r in (0, 1)]
epoch0 = [list(s) for s in samplers]
same_without_set_epoch = [list(s) for s in samplers] == epoch0
for s in samplers:
    s.set_epoch(1)
print("ranks' indices disjoint and covering the dataset:", sorted(epoch0[0] + epoch0[1]) == dataset)
print("epoch 1 repeats epoch 0's order without set_epoch:", same_without_set_epoch)
print("after set_epoch(1) the order changes:", [list(s) for s in samplers] != epoch0)

# %% [markdown]
# ### D. One process with every thread: the better baseline?
# Each rank above had one thread. One process could instead give torch every thread: it splits each large
# operator over its intra-op (OpenMP) threads. A thread that waits at the end of an operator may **spin**
# (busy-wait) before it sleeps, so CPU time over wall time cannot tell computing from waiting; the OpenMP
# runtime reads its wait policy once, at start-up, so the step is also timed in two fresh processes, one with
# `OMP_WAIT_POLICY=passive` (waiting threads sleep).
#
# **Prediction:** with every thread the whole-batch step is at least as fast as with one thread, for both
# models, within 10% (every thread over one thread lies above 1/1.1 = 0.91x).

# %%
WORKLOADS = {"tiny": ((32, 64, 64, 10), info["tiny"]["global_batch"]),
             "wide": ((32, 1024, 1024, 10), info["wide"]["global_batch"])}
threads = {}
for name, (sizes, batch) in WORKLOADS.items():
    x_k, y_k = cu.data.classification(batch, seed=2)
    step_k = cu.models.torch_sgd_step(cu.models.torch_mlp(sizes), lr=0.1)
    threads[name] = cu.distributed.time_threads(step_k, (torch.from_numpy(x_k), torch.from_numpy(y_k)),
                                                threads=(1, ALL))
fresh = {policy: cu.distributed.mlp_threads_fresh(WORKLOADS, [ALL], env, min_time=0.1)
         for policy, env in (("default", {}), ("passive", {"OMP_WAIT_POLICY": "passive"}))}
cu.distributed.threads_table(threads, fresh, CORES)

# %%
thread_gain = {n: cu.intervals.speedup(t[1].measurement, t[ALL].measurement) for n, t in threads.items()}
v_threads = cu.distributed.findings.THREADS.score(
    *[cu.findings.above(f"{n}: {ALL} threads over 1 thread", s, 1 / 1.1) for n, s in thread_gain.items()])
v_threads

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_threads.prose()

# %% [markdown]
# The table's fresh processes, one per wait policy, are a hint, not a result this run can decide. A spinning
# thread holds a core another process (a second rank, a data worker) could use: one reason the course gives each
# rank `OMP_NUM_THREADS = cores / processes`.

# %% [markdown]
# ### E. Sharding the model state: ZeRO and FSDP
# Data parallelism keeps a full copy of weights, gradients and optimizer state on every device. ZeRO stage 1
# shards the optimizer state over the N devices, stage 2 also the gradients, stage 3 (FSDP) also the weights.
# In the ZeRO paper's scheme stages 1 and 2 move the same volume as DDP; stage 3 gathers the weights again for
# the backward pass, about 1.5x DDP's traffic. With mixed-precision Adam (16 bytes per parameter) a 7B model
# needs 112 GB per device unsharded: more than an 80 GB H100 holds (vendor datasheets, not measured here).

# %%
# NBVAL_CHECK_OUTPUT
PARAMS = 7e9
cu.display.table(["devices", *(f"ZeRO-{s} memory (GB)" for s in range(4)), "ZeRO-3 traffic / DDP"],
                 [(n, *(f"{cu.distributed.memory_per_device(PARAMS, n, s) / 1e9:.1f}" for s in range(4)),
                   f"{cu.distributed.zero_traffic(2 * PARAMS, n, 3) / cu.distributed.zero_traffic(2 * PARAMS, n, 0):.2f}"
                   if n > 1 else "-") for n in (1, 8, 64)],
                 title="7B parameters, mixed-precision Adam: model state per device and bf16 traffic (computed)")
