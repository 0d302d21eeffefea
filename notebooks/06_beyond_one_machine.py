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
# # 06 · What changes when the job outgrows one machine?
#
# Notebook 05 proved data parallelism on one machine. Jobs outgrow it in two ways: they need **more
# machines** (a launcher per machine, a rendezvous, a network between them), or the model state no longer
# fits **one device** (shard it: ZeRO, FSDP). And the more machines, the likelier one dies mid-run. This
# notebook runs each of these for real, on one laptop, with the same checks as 05. You will be able to
#
# - start a job as two torchrun "nodes", two JAX processes joined by `jax.distributed`, and two TensorFlow
#   workers joined by `TF_CONFIG`, and **prove** each computes what one process computes;
# - measure what ZeRO-1 and FSDP2 save per rank against DDP and the formula;
# - survive a crash from an atomic checkpoint, and move a sharded checkpoint to a different number of ranks;
# - write the commands for a real 2-node cluster, and know what to check first when it hangs.
#
# **Minutes:** about 5 on a laptop, 60 in a workshop. **Accelerators:** everything runs on the CPU, on
# 127.0.0.1, with free ports and gloo; on a cluster the same scripts use NCCL and real addresses.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/06_beyond_one_machine.ipynb)
#
# On a Colab TPU runtime there is no TensorFlow: its parts say so in one sentence and are skipped.

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

# JAX fixes its CPU device count at its first computation: ask for several host devices BEFORE that; they stand
# in for a mesh where the runtime has one device (Going further's JAX sharding).
cu.distributed.simulate_devices(cu.devices.SIMULATED_DEVICES)
cu.notebook.setup()

# %% slideshow={"slide_type": "skip"} tags=["device"]
import os

import numpy as np
import torch
from IPython.display import display

HAVE_JAX, HAVE_TF = cu.env.available("jax"), cu.env.available("tensorflow")
QUIET = {"echo": False, "progress": False}  # launches below print only what a cell shows
plan = cu.devices.plan(cu.devices.describe())  # what this runtime offers: one device, or several
print(f"{os.cpu_count()} cores; torch sees {torch.cuda.device_count()} GPU(s); size: {cu.env.size_name()}")
if HAVE_JAX:
    print(cu.distributed.sharding_note(plan))

# %% slideshow={"slide_type": "skip"} tags=["device"]
sizes = cu.env.sizes(
    rounds=dict(smoke=3, ci=6, cpu=8),  # timing rounds: the timed calls in turns, paired for an interval
    ddp_repeats=dict(ci=8, cpu=20),  # section 1's job (05's worker): timed calls per variant,
    wide_batch=dict(ci=256, cpu=512),  # the wide MLP's global batch,
    ddp_max_bytes=dict(ci=2**22, cpu=2**24),  # and its all-reduce sweep's largest message (bytes), as 05's model
    sweep_rounds=dict(ci=5, cpu=6),  # 05's all-reduce cost model, if 05 did not run: rounds,
    sweep_repeats=dict(ci=10, cpu=12),  # calls per message size,
    sweep_max_bytes=dict(ci=2**22, cpu=2**24, gpu=2**26),  # and the largest message (bytes)
)
sizes

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 1. Two torchrun "nodes" on one machine
#
# On a cluster, every machine runs the **same** `torchrun` line; the launchers find each other through a
# **rendezvous** (`--rdzv-backend=c10d` at `--rdzv-endpoint=<host>:<port>`), agree on the world size and hand
# every worker its `RANK` (global), `LOCAL_RANK` (its GPU on that machine) and `WORLD_SIZE`. Below, the two
# lines two machines would run, with node 0's address as 127.0.0.1; `run_nodes` starts both here, adding only
# the options that collect their output. The worker is 05's `ddp_train.py`, unchanged.
#
# **Prediction:** the two nodes' ranks hold *bit-identical* weights at every checkpoint, equal to one process
# training on the whole batch up to float rounding (< 1e-5).

# %%
port = cu.distributed.free_port()  # on a cluster: a port on node 0, the rendezvous host
rendezvous = f"--rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:{port} --rdzv-id=job06"
train = (f"course_utils/workers/ddp_train.py --phases proof,timing,allreduce --repeats {sizes.ddp_repeats} "
         f"--wide-batch {sizes.wide_batch} --max-bytes {sizes.ddp_max_bytes}")
node0 = f"torchrun --nnodes=2 --nproc-per-node=1 --node-rank=0 {rendezvous} {train}"  # machine 0 runs this
node1 = f"torchrun --nnodes=2 --nproc-per-node=1 --node-rank=1 {rendezvous} {train}"  # machine 1 runs this
nodes = cu.beyond.run_nodes([node0, node1], timeout=240, progress=False)
nodes

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
diffs = cu.beyond.proof_diffs(nodes, cu.beyond.ddp_reference())
identical = all(d == 0.0 for d in diffs["ranks"].values())
equal_to_one = all(d < 1e-5 for d in diffs["single"].values())
assert identical and equal_to_one, diffs
print("ranks over both nodes:", sorted(r for ranks in nodes.node_ranks.values() for r in ranks))
print("ranks bit-identical at every checkpoint:", identical)
print("equal to one process on the whole batch (max abs diff < 1e-5):", equal_to_one)

# %%
v_nodes = cu.beyond.findings.NODES.score(
    cu.findings.equal("2 nodes x 1 rank: largest difference between ranks", max(diffs["ranks"].values()), 0,
                      unit="", source="measured"),
    cu.findings.below("DDP vs one process on the whole batch", max(diffs["single"].values()), 1e-5, unit=""),
    **cu.beyond.nodes_facts(nodes))
v_nodes

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_nodes.prose()

# %% [markdown]
# **On a real cluster** the endpoint becomes node 0's address, the network interface is named
# (`NCCL_SOCKET_IFNAME`, `GLOO_SOCKET_IFNAME`; here the launcher pins both to loopback), and each GPU gets one
# rank: `LOCAL_RANK` picks the GPU on its machine, `RANK` names the worker in the job.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### When a rank on the *other* node fails
# Node 1's rank dies, node 0's rank waits in a collective forever, and node 0's launcher knows nothing. The
# launcher watches both nodes and stops everything at the first failure. **Prediction:** the error names rank 1
# with its traceback, and no process of either node survives.

# %%
# NBVAL_CHECK_OUTPUT
failed = cu.distributed.rank_failure(cu.beyond.launch_nodes, "fail_demo.py", nnodes=2, nproc_per_node=1, timeout=90,
                                     **QUIET)
print(failed)  # the LaunchError's rank and exit code, its traceback's last line, the launch's processes still alive

# %%
v_failure = cu.beyond.findings.FAILURE.score(
    cu.findings.equal("failing rank named", failed.error.rank, 1, unit="", source="measured"),
    cu.findings.true(f"its traceback ends in its exception ({failed.exception_line.split(':')[0] or 'none'})",
                     failed.exception_line.startswith("ValueError:")),
    cu.findings.equal("processes left behind", len(failed.leftover), 0))
v_failure

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 2. Multi-process JAX: `jax.distributed` and one global mesh
#
# JAX runs **one process per machine** (each owns that machine's accelerators) or one per GPU.
# `jax.distributed.initialize` joins them through a coordinator (process 0's address); afterwards
# `jax.devices()` lists the devices of *all* processes, and one mesh spans them. Each process loads only its
# rows of the global batch. Here: 2 processes x 2 CPU devices = one mesh of 4. The worker's set-up:
#
# **Prediction:** both processes end with identical parameters, equal to one device training on the whole
# batch (< 1e-5), and the compiled step holds an all-reduce across processes.

# %%
print(cu.distributed.worker_source("jax_multiprocess.py", only=["join", "local_rows"]))

# %%
jax_run = jax_diff = jax_rec = None
if HAVE_JAX:
    jax_run = cu.beyond.jax_run(steps=10, rounds=sizes.rounds)
    jax_diff = cu.beyond.jax_compare(jax_run, cu.beyond.jax_reference(steps=10))
    jax_rec = jax_run.record("jax")
    print("\n".join(cu.beyond.allreduce_groups(jax_run)))

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_JAX:
    assert jax_diff["processes"] == 0.0 and jax_diff["single"] < 1e-5, jax_diff
    print("processes x local devices = global devices:", jax_rec["processes"], "x", jax_rec["local_devices"], "=",
          jax_rec["devices"])
    print("batch sharding:", jax_rec["batch_sharding"], "| rows loaded per process:", jax_rec["local_batch_rows"])
    print("processes identical:", jax_diff["processes"] == 0.0, "| equal to one device (< 1e-5):",
          jax_diff["single"] < 1e-5)
    print("all-reduces in the compiled step:", jax_rec["allreduce_count"])

# %%
if HAVE_JAX:
    v_jax = cu.beyond.findings.JAX.score(
        cu.findings.equal("largest difference between the processes", jax_diff["processes"], 0, unit="",
                          source="measured"),
        cu.findings.below("process 0 vs one device", jax_diff["single"], 1e-5, unit=""),
        cu.findings.true(f"{jax_rec['allreduce_count']} all-reduce(s) across the processes in the compiled step",
                         jax_rec["allreduce_count"] > 0),
        **cu.beyond.jax_facts(jax_run))
else:
    v_jax = cu.beyond.findings.JAX.not_tested("JAX is not installed in this runtime")
v_jax

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_jax.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 3. TensorFlow: `MultiWorkerMirroredStrategy` over `TF_CONFIG`
#
# TensorFlow's multi-worker strategy reads the cluster from the `TF_CONFIG` environment variable: the list of
# workers (`host:port`) and which one *this* process is. Every worker builds the strategy; collective ops
# all-reduce the gradients. The loop is a custom one: an open report (keras-team/keras#20585) says
# TensorFlow's multi-worker `model.fit` tutorial fails with Keras 3, a claim this course does not test.
#
# **Prediction:** both workers end with identical weights, equal to one worker without a strategy (< 1e-5).

# %%
print(cu.distributed.worker_source("tf_multiworker.py", only=["join_cluster"]))

# %%
tf_run = tf_diff = None
if HAVE_TF:
    print("TF_CONFIG of worker 1:", cu.beyond.tf_config(["127.0.0.1:<port0>", "127.0.0.1:<port1>"], 1))
    tf_run = cu.beyond.tf_run(steps=8)
    tf_diff = cu.beyond.tf_compare(tf_run)

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_TF:
    assert tf_diff["workers"] == 0.0 and tf_diff["single"] < 1e-5, tf_diff
    print("replicas in sync:", tf_run.record("multiworker")["replicas"])
    print("workers identical:", tf_diff["workers"] == 0.0, "| equal to one worker (< 1e-5):", tf_diff["single"] < 1e-5)

# %%
if HAVE_TF:
    v_tf = cu.beyond.findings.TF.score(
        cu.findings.equal("largest difference between the workers", tf_diff["workers"], 0, unit="", source="measured"),
        cu.findings.below("worker 0 vs one worker", tf_diff["single"], 1e-5, unit=""),
        **cu.beyond.tf_facts(tf_run))  # seconds, as quoted
else:
    v_tf = cu.beyond.findings.TF.not_tested("TensorFlow is not installed in this runtime")
v_tf

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_tf.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 4. When the model state does not fit: ZeRO-1 and FSDP2, measured
#
# With fp32 Adam a parameter costs 4 B of weight, 4 B of gradient and 8 B of moments: **16 B**, all of it on
# every DDP rank, *if* DDP is built with `gradient_as_bucket_view=True`. By default DDP copies the gradients
# into its all-reduce buckets: **20 B per parameter**. ZeRO-1 (`ZeroRedundancyOptimizer`) shards the Adam state
# over the N ranks; FSDP2 (`fully_shard`) shards weights, gradients and state (ZeRO-3). The worker builds each
# (below), then counts the bytes each rank *really* holds: a shard counts only its local part.
#
# **Prediction (formula, computed):** per rank on N = 2: DDP 16, default DDP 20, ZeRO-1 4 + 4 + 8/2 = 12,
# FSDP2 16/2 = 8 B/param, measured within 5%; all three end with the same weights.

# %%
print(cu.distributed.worker_source("fsdp_train.py", only=["build"]))

# %%
shard_run = cu.beyond.sharded_run(steps=5, rounds=sizes.rounds)
cu.beyond.memory_table(shard_run)

# %%
cu.beyond.memory_plot(shard_run)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
ratios = cu.beyond.memory_ratios(shard_run)
wdiff = cu.beyond.weight_diffs(shard_run)
params = cu.beyond.sharded_params(shard_run)
per_rank = {k: [sum(h.values()) for h in v.values()] for k, v in cu.beyond.held_bytes(shard_run).items()}
assert all(d < 1e-6 for d in wdiff.values()), wdiff
print("parameters:", f"{params:,}")
print("measured / formula within 5%:", {k: abs(r - 1) < 0.05 for k, r in ratios.items()})
print("every rank holds the same bytes:", {k: len(set(v)) == 1 for k, v in per_rank.items()})
print("ZeRO-1 and FSDP2 weights == DDP weights (max abs diff < 1e-6):", all(d < 1e-6 for d in wdiff.values()))

# %%
v_memory = cu.beyond.findings.MEMORY.score(
    *(cu.findings.within(f"{k}: measured / formula", r, 0.95, 1.05) for k, r in ratios.items()),
    cu.findings.below("ZeRO-1 and FSDP2 weights vs DDP's", max(wdiff.values()), 1e-6, unit=""),
    **cu.beyond.sharded_facts(shard_run))
v_memory

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_memory.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 5. A rank dies, training goes on
#
# With `--max-restarts=1`, torchrun restarts the whole group when a worker dies. The worker then always loads
# the newest checkpoint if one exists (weights **and** optimizer state), written atomically (a temporary file,
# then `os.replace`) so that a crash while writing leaves the old one whole. Rank 1 dies once, at step
# `CRASH_AT`; a checkpoint every `EVERY` steps.
#
# **Prediction:** the final weights equal an uninterrupted run (< 1e-5); the steps computed twice are those
# since the last checkpoint, `CRASH_AT mod EVERY` (computed below, before the run).

# %%
print(cu.distributed.worker_source("elastic_train.py", only=["save_checkpoint", "load_checkpoint"]))

# %%
STEPS, EVERY, CRASH_AT = 12, 3, 8
expected_lost = cu.beyond.lost_steps(CRASH_AT, EVERY)
print(f"predicted steps computed twice: {CRASH_AT} mod {EVERY} = {expected_lost} (computed)")
crash = cu.beyond.elastic_run(steps=STEPS, every=EVERY, crash_at=CRASH_AT, echo=False)  # the ranks' lines, shortened:
print("\n".join(f"[rank {r}] {t}" for r, t in crash.result.lines
                if t.startswith("attempt") or "simulated hardware failure" in t))  # the peers' gloo errors left out
cu.beyond.elastic_timeline(crash)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
ref_weights = cu.beyond.elastic_reference(steps=STEPS)
elastic_diff = max(float(np.max(np.abs(w - ref_weights))) for w in crash.weights.values())
assert elastic_diff < 1e-5 and crash.lost_steps == expected_lost
print(crash)
print("attempts:", crash.attempts, "| resumed from step:", crash.resumed_from, "| steps computed twice:", crash.lost_steps)
print("final weights == uninterrupted run (max abs diff < 1e-5):", elastic_diff < 1e-5)

# %%
v_elastic = cu.beyond.findings.ELASTIC.score(
    cu.findings.below("final weights vs an uninterrupted run", elastic_diff, 1e-5, unit=""),
    cu.findings.equal("steps computed twice", crash.lost_steps, expected_lost),
    **cu.beyond.elastic_facts(crash))
v_elastic

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_elastic.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A checkpoint that survives a changed cluster
# **Checkpoints need storage every node sees.** Above, rank 0 wrote into one folder and every rank tested
# `path.exists()`: on two machines without a shared file system, node 1 would find nothing and start from step 0
# with fresh weights while node 0 resumed. Sharded state makes it stricter: every FSDP2 rank holds a different
# piece, so every rank writes. `torch.distributed.checkpoint` (DCP) saves each rank's shards plus a map of where
# each slice sits, and loads them into whatever sharding the *loading* job has. Below: section 4's FSDP2 model
# trained 3 steps on 2 ranks and saved; loaded on 1 rank, trained 2 more steps and saved; loaded on 2 ranks again.
#
# **Prediction:** each load gives back exactly the state that was saved (weights and Adam state, difference 0),
# from 2 ranks to 1 and from 1 to 2.

# %%
print(cu.distributed.worker_source("fsdp_checkpoint.py", only=["save", "load"]))

# %%
shared = cu.env.build_dir("06_checkpoints")  # storage both "nodes" see: on a cluster, a shared file system
at_2 = cu.distributed.launch("fsdp_checkpoint.py", 2, args=["--steps", 3, "--save", shared / "at2"], **QUIET)
at_1 = cu.distributed.launch("fsdp_checkpoint.py", 1, args=["--load", shared / "at2", "--steps", 2,
                                                            "--save", shared / "at1"], **QUIET)
back_at_2 = cu.distributed.launch("fsdp_checkpoint.py", 2, args=["--load", shared / "at1"], **QUIET)
cu.beyond.files_table({"saved at 2 ranks": shared / "at2", "saved at 1 rank": shared / "at1"})

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
two_to_one = cu.beyond.reshard_compare(at_2, at_1)  # what 2 ranks saved against what 1 rank loaded
one_to_two = cu.beyond.reshard_compare(at_1, back_at_2)
moved = cu.beyond.reshard_changed(at_2, at_1)  # weights moved by 2 more steps: the second test is new
assert two_to_one["max diff"] == 0.0 and one_to_two["max diff"] == 0.0 and moved > 0, (two_to_one, one_to_two)
print("tensors saved (weights, Adam moments, steps):", two_to_one["tensors"])
print("2 ranks -> 1 rank: same tensors", two_to_one["same names"], "| max abs difference", two_to_one["max diff"])
print("1 rank -> 2 ranks: same tensors", one_to_two["same names"], "| max abs difference", one_to_two["max diff"])
print("files written at 2 ranks:", sorted(cu.beyond.reshard_files(shared / "at2")))

# %%
v_reshard = cu.beyond.findings.RESHARD.score(
    cu.findings.equal("2 -> 1 rank, largest difference", two_to_one["max diff"], 0, unit="", source="measured"),
    cu.findings.equal("1 -> 2 ranks", one_to_two["max diff"], 0, unit="", source="measured"),
    cu.findings.above("largest weight change between the checkpoints", moved, 0, unit=""),
    tensors=two_to_one["tensors"], shards=sum(n.endswith(".distcp") for n in cu.beyond.reshard_files(shared / "at2")))
v_reshard

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_reshard.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 6. 05's cost model meets this notebook's steps
#
# 05 fitted the ring all-reduce model T = 2(N-1)α + 2(N-1)/N · bytes/β, measured once per run
# (`cu.distributed.allreduce_cost`: this notebook reads 05's figures, or measures them the same way if 05 did not
# run). Section 1's job ran the same sweep again; the model is scored on it, then prices (computed) every
# collective a step issued: per call 2(N-1) latency steps for an all-reduce, N-1 for an all-gather,
# reduce-scatter or broadcast, per byte its ring share. A step's prediction = its compute alone (measured: the
# same step with no communication) + that price.
#
# **Prediction:** every multi-process step measured here lands within a factor of 2 of its prediction.

# %%
cost = cu.distributed.allreduce_cost(2, rounds=sizes.sweep_rounds, repeats=sizes.sweep_repeats,  # one figure
                                    max_bytes=sizes.sweep_max_bytes)  # for the run: 05's, if 05 measured it
print(cost.how)
fit = cost.model
sweep = cu.distributed.allreduce_sweep(nodes.records[0])  # this notebook's own sweep: (bytes, median seconds)
scores = cu.distributed.score(fit, *sweep, 2)  # measured here / 05's model, at each size of the sweep
predicted = cu.beyond.step_predictions(fit, shard_run, nodes.record("timing_wide"), jax_rec,
                                               (cu.beyond.gloo_ranks(jax_run) or None) if jax_run else None)
display(cu.beyond.prediction_table(predicted))
cu.beyond.prediction_plot(predicted, title="Compute + 05's ring model vs measured steps")

# %%
step_ratios = cu.beyond.prediction_ratios(predicted)
rests = "; ".join(f"*{k}* {sec * 1e3:.2f} ms" for k, sec in cu.beyond.unexplained(predicted).items()) or "none"
v_model = cu.beyond.findings.COST.score(
    *(cu.findings.within(k, r, 0.5, 2) for k, r in step_ratios.items()),  # measured / predicted, per step
    source=cost.how, beta=cu.display.format_rate(fit.bandwidth), alpha=round(fit.latency * 1e6, 1),
    low=round(min(scores), 2), high=round(max(scores), 2), rests=rests)
v_model

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_model.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 7. On a real cluster
# The same workers, with real addresses. The commands for 2 machines with 8 GPUs each:

# %%
print(cu.beyond.cluster_commands(nnodes=2, nproc_per_node=8))

# %% [markdown]
# TPU pods (`jax.distributed.initialize()` finds the pod by itself) and multi-host networks cannot run on
# this machine; the commands above are the whole difference. When it hangs:

# %%
cu.beyond.hang_checklist()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## Exercises
#
# **06.1 Predict, then look.** How many bytes of model state (weights + gradients + Adam state) does one FSDP2
# rank hold for this run's model on 2 ranks? Use the parameter count only (`params`). The check compares with
# what the rank measured.

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = 16 * params / 2
print(f"16 B/param x {params:,} parameters / 2 ranks = {cu.display.format_bytes(answer)} per FSDP2 rank")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("06.1", answer, measured=cu.beyond.largest_rank(shard_run)["fsdp2"])

# %% [markdown]
# **06.2 The price of a crash.** With this run's settings (`crash.every`, `crash.crash_at`), how many steps
# are computed twice? Write it as arithmetic, not by reading `crash.lost_steps`.

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
last_checkpoint = (crash.crash_at // crash.every) * crash.every
answer = crash.crash_at - last_checkpoint
print(f"crash at step {crash.crash_at}, last checkpoint at step {last_checkpoint}: {answer} steps computed twice")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("06.2", answer, measured=crash.lost_steps)

# %% [markdown]
# **06.3 A TF_CONFIG for a real cluster.** Write the `TF_CONFIG` JSON string of the third worker (index 2) of
# the cluster `HOSTS` below.

# %%
HOSTS = ["10.0.0.1:2222", "10.0.0.2:2222", "10.0.0.3:2222"]
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
import json

answer = json.dumps({"cluster": {"worker": HOSTS}, "task": {"type": "worker", "index": 2}})
print("TF_CONFIG =", answer)

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("06.3", answer, hosts=HOSTS, index=2)

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## Summary

# %%
formula = cu.beyond.formula_bytes(params, cu.beyond.sharded_world(shard_run))
largest = cu.beyond.largest_rank(shard_run)
step_times = cu.beyond.sharded_steps(shard_run)  # section 4's job timed each kind's step in rounds
fsdp_vs_ddp = cu.intervals.speedup(step_times["ddp"], step_times["fsdp2"])  # FSDP2's step speed over DDP's
rows = [
    ("2 nodes: ranks' max weight difference", max(diffs["ranks"].values()), "", "c10d rendezvous on 127.0.0.1"),
    ("2 nodes vs one process, max weight difference", max(diffs["single"].values()), "", "float rounding only"),
    *((f"{cu.beyond.SHARDED_LABELS[k]}: model state, largest rank", largest[k] / params, "B/param",
       f"measured; formula {formula[k] / params:g}") for k in ("ddp", "ddp_default", "zero1", "fsdp2")),
    ("FSDP2 step speed / DDP's", fsdp_vs_ddp.ratio, "x", f"{fsdp_vs_ddp.interval}; tiny model, gloo"),
    ("elastic: steps computed twice", crash.lost_steps, "steps", f"crash at {crash.crash_at}, checkpoint every {crash.every}"),
    ("elastic job, wall time", crash.seconds, "s", "two attempts, start-up included"),
    ("DCP checkpoint 2 -> 1 -> 2 ranks, max difference", max(two_to_one["max diff"], one_to_two["max diff"]), "",
     f"{two_to_one['tensors']} tensors, exact"),
    ("cost model, worst measured / predicted step", max(step_ratios.values(), key=lambda r: abs(np.log(r))), "x",
     "compute alone + 05's ring model"),
    ("cost model, steps within 2x", sum(0.5 <= r <= 2 for r in step_ratios.values()), "steps", f"of {len(step_ratios)}"),
]
if HAVE_JAX:
    rows.append(("JAX 2 processes vs one device, max diff", jax_diff["single"], "", "4 devices in one mesh"))
if HAVE_TF:
    rows.append(("TF 2 workers vs one worker, max diff", tf_diff["single"], "", "MultiWorkerMirroredStrategy"))
cu.notebook.summary_table("06_beyond_one_machine", rows)

# %% [markdown]
# **What to remember**
# - A multi-node job is the one-node job plus a rendezvous: the same worker, one launcher per machine, ranks
#   from the rendezvous; prove equality with one process before trusting it, in every framework.
# - Sharding trades communication for memory: ZeRO-1 cuts the optimizer state, FSDP all of the model state
#   (16/N B/param by the formula, against DDP's 16, or 20 with its default buckets); price a step as compute +
#   the ring cost of what it sends, and measure what the price leaves out.
# - Expect crashes: checkpoint atomically (weights + optimizer state) on storage every node sees, resume
#   automatically, and save sharded state with `torch.distributed.checkpoint` so the next job may have another size.
#
# **Next:** [07 · should we migrate?](07_should_we_migrate.ipynb): one realistic model through every technique
# of the course, and the decision in numbers.

# %%
print(cu.notebook.last_verified())

# %% [markdown] course={"lead": false, "optional": true} slideshow={"slide_type": "slide"}
# ## Going further
#
# Optional reading: what sharding costs in communication, two collectives timed alone, and FSDP as a layout in
# JAX.
#
# ### What sharding costs: communication per step
# **Prediction (ring algorithms, computed):** FSDP2 all-gathers the weights for forward *and* backward and
# reduce-scatters the gradients, 3(N-1)/N of the bytes against DDP's 2(N-1)/N: **1.5x DDP**.

# %%
cu.beyond.comm_table(shard_run)

# %%
# NBVAL_CHECK_OUTPUT
calls = cu.beyond.sharded_calls(shard_run)
for kind, counted in calls.items():
    print(f"{kind}: {counted}")

# %%
steps = cu.beyond.sharded_steps(shard_run)  # timed in rounds, the kinds in turns
fsdp_speed = cu.intervals.speedup(steps["ddp"], steps["fsdp2"])  # FSDP2's step speed over DDP's
fsdp_speed

# %%
moved_bytes = cu.beyond.moved_traffic(shard_run)  # ring factors; and as gloo runs a reduce-scatter
formula_traffic = cu.distributed.zero_traffic(1.0, 2, 3) / cu.distributed.zero_traffic(1.0, 2, 0)
v_traffic = cu.beyond.findings.TRAFFIC.score(
    cu.findings.equal("FSDP2's bytes per step over DDP's (counted calls x ring factors)", moved_bytes["ring"],
                      formula_traffic, tolerance=0.1, unit="x", source="computed"),
    speed=str(fsdp_speed), **cu.beyond.traffic_facts(fit, shard_run))
v_traffic

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_traffic.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Two collectives, each alone
# **Prediction (ring model, computed):** a reduce-scatter moves half an all-reduce's bytes in half its steps, so
# it runs 2x as fast as an all-reduce of the same buffer (within 25%: the whole interval in 1.6x-2.5x).

# %%
alone = cu.beyond.collectives_alone(shard_run)  # timed in rounds, on a buffer of all parameters
rs_speed = cu.intervals.speedup(alone["allreduce"], alone["reducescatter"])
v_rs = cu.beyond.findings.REDUCE_SCATTER.score(
    cu.findings.within("reduce-scatter over all-reduce", rs_speed, 1.6, 2.5),
    trace=" -> ".join(cu.beyond.reduce_scatter_trace(shard_run)) or "no c10d or gloo operator")
v_rs

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_rs.prose()

# %%
one_array = None
if HAVE_JAX:
    jax_alone = cu.beyond.jax_alone(jax_rec)  # one all-reduce over the 4-device mesh, timed in rounds
    one_array = cu.intervals.speedup(jax_alone["operands"], jax_alone["one array"])
    print(f"JAX: the step's bytes as one array vs as its {len(jax_rec['allreduce_operands'])} operands: {one_array}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The same idea in JAX: shard the parameters over the mesh
# In JAX, FSDP is a layout: give each weight a `NamedSharding` split over the `data` axis, and XLA inserts
# an all-gather before each use. The mesh follows the device plan, as in 05: the runtime's accelerators where it
# has several, else simulated host devices (a Colab TPU v5e-1 or a T4 is one device). **Prediction:** the
# per-device argument bytes (`memory_analysis()`) fall to about 1/N on N devices, all-gathers appear in the HLO,
# and the result is unchanged.

# %% tags=["device"]
jax_fsdp = None
if HAVE_JAX:
    jax_fsdp = cu.beyond.jax_sharding(cu.distributed.sharding_devices(plan))
    display(cu.display.Table(("layout", "arguments", "temporaries", "collectives in HLO"), tuple(
        (name, cu.display.format_bytes(jax_fsdp[name]["argument_bytes"]),
         cu.display.format_bytes(jax_fsdp[name]["temp_bytes"]),
         ", ".join(f"{c} {op}" for op, c in jax_fsdp[name]["collectives"].items() if c))
        for name in ("replicated", "sharded")),
        title=f"One SGD step, {jax_fsdp['params']:,} parameters, per device of {jax_fsdp['devices']} "
              "(XLA memory_analysis)"))

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_JAX:
    shrink = jax_fsdp["sharded"]["argument_bytes"] / jax_fsdp["replicated"]["argument_bytes"]
    gathers = jax_fsdp["sharded"]["collectives"]["all-gather"]
    assert jax_fsdp["max_diff"] < 1e-6
    print("all-gather in the sharded step:", gathers > 0, "| result unchanged (< 1e-6):", jax_fsdp["max_diff"] < 1e-6)

# %%
if HAVE_JAX:
    sharded_step = jax_fsdp["sharded"]
    v_jax_shard = cu.beyond.findings.JAX_SHARD.score(
        cu.findings.below("sharded arguments over replicated", shrink, 1.5 / jax_fsdp["devices"]),
        cu.findings.true(f"{gathers} all-gather(s) in the sharded step", gathers > 0),
        temps=round(sharded_step["temp_bytes"] / max(jax_fsdp["replicated"]["temp_bytes"], 1), 2),
        scatters=sharded_step["collectives"]["reduce-scatter"], allreduces=sharded_step["collectives"]["all-reduce"])
else:
    v_jax_shard = cu.beyond.findings.JAX_SHARD.not_tested("JAX is not installed in this runtime")
v_jax_shard

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_jax_shard.prose()
