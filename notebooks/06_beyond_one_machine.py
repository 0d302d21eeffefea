# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 5
#       workshop: 60
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
# - measure what ZeRO-1 and FSDP2 save per rank, against DDP and the 16 B/param formula, and what they
#   cost in communication;
# - survive a crash: an elastic restart from an atomic checkpoint that loses only the steps since it;
# - write the commands for a real 2-node cluster, and know what to check first when it hangs.
#
# **Minutes:** about 5 on a laptop, 60 in a workshop. **Accelerators:** everything runs on the CPU, on
# 127.0.0.1, with free ports and gloo; on a cluster the same scripts use NCCL and real addresses.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/06_beyond_one_machine.ipynb)
#
# On a Colab TPU runtime there is no TensorFlow: its parts say so in one sentence and are skipped.

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@v0.2.0"], check=True)

# %% slideshow={"slide_type": "skip"}
import course_utils as cu

# JAX fixes its CPU device count at its first computation: section 4 shards parameters over 4 devices.
N_SIM = 4
cu.distributed.simulate_devices(N_SIM)
cu.notebook.setup()

# %% slideshow={"slide_type": "skip"}
import os

import numpy as np
import psutil
import torch
from IPython.display import Markdown, display

from course_utils.distributed import beyond_findings as findings
from course_utils.distributed import beyond_plots, comms, elastic, jaxmulti, multinode, sharded, tfmulti

CORES = os.cpu_count() or 1
SIZE = cu.env.pick(ci={"repeats": 6, "ddp": ["--repeats", 6, "--wide-batch", 256, "--max-bytes", 2**22]},
                   cpu={"repeats": 15, "ddp": ["--repeats", 15, "--wide-batch", 512, "--max-bytes", 2**24]})
print(f"{CORES} cores; torch sees {torch.cuda.device_count()} GPU(s); size: {cu.env.size_name()}")

# %% [markdown] course={"lead": false, "minutes": 10} slideshow={"slide_type": "slide"}
# ## 1. Two torchrun "nodes" on one machine
#
# On a cluster, every machine runs the **same** `torchrun` line; the launchers find each other through a
# **rendezvous** (`--rdzv-backend=c10d` at `--rdzv-endpoint=<host>:<port>`), agree on the world size and hand
# every worker its `RANK` (global), `LOCAL_RANK` (its GPU on that machine) and `WORLD_SIZE`. Here two
# launcher processes play the two machines, with the endpoint on 127.0.0.1 and a free port. The worker is
# 05's `ddp_train.py`, unchanged: the backend follows the device type (NCCL on GPUs, gloo on CPUs) and each
# rank binds `LOCAL_RANK`'s GPU, exactly what it would do on a cluster:

# %% slideshow={"slide_type": "subslide"}
cu.distributed.show_worker("ddp_train.py", only=["setup", "proof"])

# %% [markdown] slideshow={"slide_type": "subslide"}
# The two commands `launch_nodes` runs (identical but for `--node-rank`; c10d itself assigns the ranks), shown
# with port 29400, torchrun's usual rendezvous port; the launch below takes a free port instead:

# %%
for n in range(2):
    print(" ".join(multinode.node_command("ddp_train.py", nnodes=2, node_rank=n, nproc_per_node=1, port=29400,
                                          log_dir="<tmp>/logs", args=["--phases", "proof,timing,allreduce"])))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Prediction:** the two nodes' ranks hold *bit-identical* weights at every checkpoint, and equal one process
# training on the whole batch up to float rounding (< 1e-5), exactly as within one machine in 05.

# %%
nodes = multinode.launch_nodes("ddp_train.py", nnodes=2, nproc_per_node=1, timeout=240, progress=False,
                               args=["--phases", "proof,timing,allreduce", *SIZE["ddp"]])
nodes

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
diffs = multinode.proof_diffs(nodes, multinode.ddp_reference())
identical = all(d == 0.0 for d in diffs["ranks"].values())
equal_to_one = all(d < 1e-5 for d in diffs["single"].values())
assert identical and equal_to_one, diffs
print("ranks per node (from the workers' RANK):", nodes.node_ranks)
print("ranks bit-identical at every checkpoint:", identical)
print("equal to one process on the whole batch (max abs diff < 1e-5):", equal_to_one)

# %%
cu.display.verdict(identical and equal_to_one,
                   f"2 nodes x 1 rank: ranks differ by {max(diffs['ranks'].values()):.1e}, "
                   f"DDP vs one process by {max(diffs['single'].values()):.1e}",
                   "the ranks or the single-process run disagree: see the differences above")

# %%
warned = [(n, line[line.index("node_rank is only"):].strip()) for n, lines in enumerate(nodes.node_output)
          for line in lines if "node_rank is only used for static" in line]  # torchrun's own warning, if it gave one
split = multinode.time_split(nodes)  # the workers' own clocks: phases, process start -> group joined
Markdown(
    f"Node 0 ran rank(s) {nodes.node_ranks.get(0)}, node 1 rank(s) {nodes.node_ranks.get(1)}; the whole job took "
    f"{split['wall']:.1f} s, of which the three phases ran {split['phases']:.1f} s: {split['outside'] / split['wall']:.0%} "
    f"went to start-up, rendezvous and shut-down (each rank took up to {split['startup']:.1f} s from its process start "
    "to joining the group). "
    + (f"Node {warned[0][0]}'s torchrun warned `{warned[0][1]}` With c10d the rendezvous decides who is rank 0, "
       "so never write code that assumes node 0 holds rank 0. " if warned else
       "With c10d the rendezvous, not `--node-rank`, decides the ranks. ")
    + "**What changes on a real cluster:** the endpoint becomes node 0's address; the network interface is named "
    "(`NCCL_SOCKET_IFNAME`, `GLOO_SOCKET_IFNAME`; here `launch` pins them to the loopback interface); the backend "
    "becomes NCCL, with one GPU per rank: `LOCAL_RANK` picks the GPU, `RANK` identifies the worker. "
    + (f"With {torch.cuda.device_count()} GPU(s) here, NCCL cannot run: two ranks need two GPUs."
       if torch.cuda.device_count() < 2 else "This machine has the GPUs: the ranks above ran NCCL.")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### When a rank on the *other* node fails
# Two launchers make failure harder: node 1's rank dies, node 0's rank waits in a collective forever, and
# node 0's launcher knows nothing. `launch_nodes` watches both launchers, stops everything at the first
# failure and names the failing rank. **Prediction:** `LaunchError` names rank 1 with its traceback, and no
# process of either node survives.

# %%
# NBVAL_CHECK_OUTPUT
try:
    multinode.launch_nodes("fail_demo.py", nnodes=2, nproc_per_node=1, timeout=90, echo=False, progress=False)
except cu.distributed.LaunchError as error:
    failure = error
leftover = [p for p in psutil.process_iter(["cmdline"]) if "fail_demo.py" in " ".join(p.info["cmdline"] or [])]
print(type(failure).__name__, "| failing rank:", failure.rank)
print("last line of its traceback:", failure.traceback.splitlines()[-1])
print("processes left behind:", len(leftover))

# %%
exception_line = failure.traceback.splitlines()[-1] if failure.traceback else ""
cu.display.verdict(failure.rank == 1 and exception_line.startswith("ValueError:") and not leftover,
                   f"rank {failure.rank} named, its traceback ends in its exception "
                   f"({exception_line.split(':')[0] or 'none'}), {len(leftover)} processes left",
                   "the error named another rank, lost the rank's exception line, or processes survived")

# %% [markdown] course={"lead": false, "minutes": 6} slideshow={"slide_type": "slide"}
# ## 2. Multi-process JAX: `jax.distributed` and one global mesh
#
# JAX runs **one process per machine** (each owns that machine's accelerators) or one process per GPU
# (`jax.distributed.initialize(..., local_device_ids=[LOCAL_RANK])`). `jax.distributed.initialize`
# connects them through a coordinator (process 0 at `127.0.0.1:<port>` here, node 0's address on a
# cluster); afterwards `jax.devices()` lists the devices of *all* processes, and a mesh can span them. Each
# process loads only its rows of the global batch (`make_array_from_process_local_data`). Here: 2 processes x
# 2 CPU devices each (`jax_num_cpu_devices`) = one mesh of 4.
#
# **Prediction:** both processes end with identical parameters, equal to one device training on the whole
# batch (< 1e-5), and the compiled step holds an all-reduce across all 4 devices, i.e. across processes.

# %%
HAVE_JAX = cu.notebook.needs("jax")
if HAVE_JAX:
    display(cu.distributed.show_worker("jax_multiprocess.py", only=["main"]))

# %%
if HAVE_JAX:
    jax_run = jaxmulti.run(steps=10, repeats=SIZE["repeats"])
    jax_diff = jaxmulti.compare(jax_run, jaxmulti.reference(steps=10))
    print("\n".join(jaxmulti.allreduce_groups(jax_run)))

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_JAX:
    rec = jax_run.record("jax")
    assert jax_diff["processes"] == 0.0 and jax_diff["single"] < 1e-5, jax_diff
    print("processes x local devices = global devices:", rec["processes"], "x", rec["local_devices"], "=", rec["devices"])
    print("batch sharding:", rec["batch_sharding"], "| rows loaded per process:", rec["local_batch_rows"])
    print("processes identical:", jax_diff["processes"] == 0.0, "| equal to one device (< 1e-5):", jax_diff["single"] < 1e-5)
    print("all-reduces in the compiled step:", len(rec["allreduces"]))

# %%
if HAVE_JAX:
    display(cu.display.verdict(jax_diff["processes"] == 0.0 and jax_diff["single"] < 1e-5 and len(rec["allreduces"]) > 0,
                               f"processes differ by {jax_diff['processes']:.1e}, vs one device {jax_diff['single']:.1e}, "
                               f"{len(rec['allreduces'])} all-reduce(s) over {rec['devices']} devices",
                               "see the differences and the HLO above"))
    display(Markdown(
        f"Device ids {rec['device_ids']}: JAX numbers each process's devices in its own range, and the mesh spans "
        f"all {rec['devices']}. XLA merged the {len(jax_run.arrays['jax'][0])} gradients into {len(rec['allreduces'])} "
        f"all-reduce(s) of {len(rec['allreduce_operands'])} operands in all"
        + (" (the extra one is the loss, a scalar)" if len(rec["allreduce_operands"]) == len(jax_run.arrays["jax"][0]) + 1
           and 1 in rec["allreduce_operands"] else "")
        + f"; section 6 measures what each operand costs. It runs over gloo's TCP here, with "
        f"{jaxmulti.gloo_ranks(jax_run)} gloo ranks (gloo's own "
        "log lines: one per device, not per process), over NCCL or a TPU pod's ICI on real hardware. A step took "
        f"{np.median(rec['step_times']) * 1e3:.2f} ms (median); section 6 predicts it."))

# %% [markdown] course={"lead": false, "minutes": 4} slideshow={"slide_type": "slide"}
# ## 3. TensorFlow: `MultiWorkerMirroredStrategy` over `TF_CONFIG`
#
# TensorFlow's multi-worker strategy reads the cluster from the `TF_CONFIG` environment variable: the
# list of workers (`host:port`) and which one *this* process is. Every worker builds the strategy, and
# collective ops all-reduce the gradients. We use a custom training loop: Keras 3 does not support
# `MultiWorkerMirroredStrategy` in `model.fit` (keras-team/keras#20585, open). That concerns the multi-worker
# strategy only: 05's `model.fit` under the one-process `MirroredStrategy` ran and was checked there.
#
# **Prediction:** both workers end with identical weights, equal to one worker without a strategy (< 1e-5).

# %%
HAVE_TF = cu.notebook.needs("tensorflow")
if HAVE_TF:
    print("TF_CONFIG of worker 1:", tfmulti.tf_config(["127.0.0.1:<port0>", "127.0.0.1:<port1>"], 1))
    tf_run = tfmulti.run(steps=8)
    tf_diff = tfmulti.compare(tf_run)

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_TF:
    assert tf_diff["workers"] == 0.0 and tf_diff["single"] < 1e-5, tf_diff
    print("replicas in sync:", tf_run.record("multiworker")["replicas"])
    print("workers identical:", tf_diff["workers"] == 0.0, "| equal to one worker (< 1e-5):", tf_diff["single"] < 1e-5)

# %%
if HAVE_TF:
    tf_time = tfmulti.time_split(tf_run)  # where the job's wall time went, from the workers' own clocks
    display(cu.display.verdict(tf_diff["workers"] == 0.0 and tf_diff["single"] < 1e-5,
                               f"workers differ by {tf_diff['workers']:.1e}, vs one worker {tf_diff['single']:.1e}",
                               "the workers or the one-worker run disagree"))
    display(Markdown(
        f"The two workers agreed bit for bit and differed from one worker by {tf_diff['single']:.1e}. The loop divides "
        "the summed loss by the **global** batch, because the strategy *sums* the replicas' gradients. "
        f"The job took {tf_time['wall']:.1f} s; by the workers' own clocks (the slower of the two, side by side) "
        f"{tf_time['import']:.1f} s went to importing TensorFlow, {tf_time['joined']:.1f} s from process start to a "
        f"joined strategy (import included), {tf_time['work']:.1f} s to training and the one-worker check, and the "
        f"other {tf_time['outside']:.1f} s to torchrun's own start and shut-down. On a cluster, each machine sets its "
        "own `TF_CONFIG`."))

# %% [markdown] course={"lead": true, "minutes": 15} slideshow={"slide_type": "slide"}
# ## 4. When the model state does not fit: ZeRO-1 and FSDP2, measured
#
# DDP keeps everything on every rank: with fp32 Adam, 4 B of weights + 4 B of gradients + 8 B of moments =
# **16 B per parameter**. ZeRO-1 (`ZeroRedundancyOptimizer`) shards the Adam state over the N ranks; FSDP2
# (`torch.distributed.fsdp.fully_shard`, here on a CPU mesh with gloo) shards weights, gradients and state
# (ZeRO-3). FSDP1 (`FullyShardedDataParallel`) runs on CPUs too in torch 2.13, but only when given
# `device_id=torch.device("cpu")`: without a `device_id` and with no accelerator, it refuses. The worker
# counts the bytes each rank *really* holds (a shard counts only its local part), counts the collectives of
# one step and times them.
#
# **Prediction (formula, computed):** per rank on N = 2: DDP 16, ZeRO-1 4 + 4 + 8/2 = 12, FSDP2 16/2 = 8 B/param;
# measured within 5% of that; all three end with the same weights.

# %%
cu.distributed.show_worker("fsdp_train.py", only=["build", "local_bytes"])

# %%
shard_run = sharded.run(steps=5, repeats=SIZE["repeats"])
sharded.memory_table(shard_run)

# %%
held0 = {sharded.KINDS[k][0]: v[0] for k, v in sharded.held_bytes(shard_run).items()}
params = shard_run.record("ddp")["params"]
formula = {sharded.KINDS[k][0]: v for k, v in sharded.formula_bytes(params, 2).items()}
beyond_plots.memory_plot(held0, formula, ranks=2)

# %%
sharded.rank_table(shard_run)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
per_param = {k: max(sum(h.values()) for h in v.values()) / params for k, v in sharded.held_bytes(shard_run).items()}
ratios = {k: per_param[k] * params / sharded.formula_bytes(params, 2)[k] for k in per_param}
wdiff = sharded.weight_diffs(shard_run)
assert all(d < 1e-6 for d in wdiff.values()), wdiff
per_rank = {k: [sum(h.values()) for h in v.values()] for k, v in sharded.held_bytes(shard_run).items()}
print("parameters:", f"{params:,}")
print("measured / formula within 5%:", {k: abs(r - 1) < 0.05 for k, r in ratios.items()})
print("every rank holds the same bytes:", {k: len(set(v)) == 1 for k, v in per_rank.items()})
print("ZeRO-1 and FSDP2 weights == DDP weights (max abs diff < 1e-6):", all(d < 1e-6 for d in wdiff.values()))

# %%
cu.display.verdict(all(abs(r - 1) < 0.05 for r in ratios.values()) and all(d < 1e-6 for d in wdiff.values()),
                   "measured / formula: " + ", ".join(f"{k} {r:.3f}" for k, r in ratios.items())
                   + f"; weights vs DDP within {max(wdiff.values()):.1e}",
                   "a kind held more (or less) than its formula; the table shows which part")

# %%
zero_opt = {r: h["optimizer"] for r, h in sharded.held_bytes(shard_run)["zero1"].items()}
peak = sharded.gathered(shard_run)  # the most layers FSDP2 held unsharded at once, rank 0
fsdp_ranks = ", ".join(f"rank {r} {cu.display.format_bytes(b)}" for r, b in enumerate(per_rank["fsdp2"]))
Markdown(
    f"FSDP2 held {ratios['fsdp2']:.3f}x and ZeRO-1 {ratios['zero1']:.3f}x the formula's bytes on their largest rank. "
    f"ZeRO-1 shards by whole tensors, so its ranks are uneven: Adam state {cu.display.format_bytes(zero_opt[0])} on "
    f"rank 0 vs {cu.display.format_bytes(zero_opt[1])} on rank 1. FSDP2 splits every tensor along its first "
    f"dimension: {fsdp_ranks}, "
    + ("equal, because every first dimension of this model divides by 2. " if len(set(per_rank["fsdp2"])) == 1 else
       f"{max(per_rank['fsdp2']) / min(per_rank['fsdp2']):.3f}x apart: a first dimension that does not divide evenly. ")
    + "Not in this table: FSDP2 gathers a layer's full weights just before using it, and in backward prefetches the "
    "next layer's all-gather (documented behaviour). "
    + (f"Measured from FSDP2's own profiler labels (a layer counts from its all-gather to its reshard): at most "
       f"{peak['layers']} layer(s) held full weights at once (modules {', '.join(peak['names'])} of the `nn.Sequential`: "
       f"{cu.display.format_bytes(peak['bytes'])}, against {cu.display.format_bytes(peak['largest'])} for the largest "
       f"layer and {cu.display.format_bytes(peak['all'])} for all weights), on top of the sharded state. " if peak else
       "This run's trace had no FSDP2 labels, so the peak is not measured here: by the documentation, up to two "
       "layers are unsharded at once. ")
    + "Activations are not sharded at all: each rank keeps those of its own rows."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What sharding costs: communication per step
# **Prediction (ring algorithms, computed):** DDP sends 2(N-1)/N x gradient bytes per step (one all-reduce);
# FSDP2 all-gathers the weights for forward *and* backward and reduce-scatters the gradients:
# 3(N-1)/N, i.e. **1.5x DDP**; ZeRO-1 all-reduces like DDP, then broadcasts each updated shard. The table also
# times them: the profiler's own events of the backend (`gloo:all_reduce`, ...) give the wall time per step
# with a collective running, without a barrier or a forced wait.

# %%
sharded.comm_table(shard_run)

# %%
# NBVAL_CHECK_OUTPUT
calls = {k: shard_run.record(k)["calls"] for k in sharded.KINDS}
for k, c in calls.items():
    print(f"{k}: {dict(sorted(c.items()))}")

# %%
traffic = cu.distributed.zero_traffic(4 * params, 2, 3) / cu.distributed.zero_traffic(4 * params, 2, 0)
steps = sharded.step_medians(shard_run)
N = shard_run.record("ddp")["world"]
moved = findings.traffic(shard_run)  # ring factors; and as gloo runs it (a reduce-scatter as an all-reduce)
counted = moved["ring"]
cu.display.verdict(abs(counted - traffic) < 0.1 and not moved["inside"],
                   f"FSDP2 moves {counted:.2f}x DDP's bytes per step (computed from counted calls with the ring "
                   f"factors), formula {traffic:.2f}x"
                   + (f"; gloo ran each reduce-scatter as `gloo:all_reduce` (rank 0's trace), so priced as the "
                      f"all-reduce it is, FSDP2 moves {moved['gloo']:.2f}x (computed)" if moved["inside"] else ""),
                   "the counted collectives differ from the ring formula" if abs(counted - traffic) >= 0.1 else
                   "on gloo the reduce-scatter runs as an all-reduce, so the ring factor (N-1)/N assumed for it "
                   "does not hold here")

# %%
prof = sharded.profiled_steps(shard_run)  # share of the profiled step in collectives; profiled vs plain step
events = sharded.backend_events(shard_run)["fsdp2"]
slower = prof["fsdp2"]["scaled"] / prof["ddp"]["scaled"]
fit = cu.distributed.fit_allreduce(*comms.allreduce_sweep(nodes.records[0]), n=2)  # section 6's fit, priced early
Markdown(
    f"Counted: DDP one all-reduce, FSDP2 {calls['fsdp2'].get('allgather', 0)} all-gathers and "
    f"{calls['fsdp2'].get('reduce_scatter', 0)} reduce-scatters (one per layer and pass). Timed: a collective ran "
    f"{prof['ddp']['share']:.0%} of a profiled DDP step and {prof['fsdp2']['share']:.0%} of FSDP2's. "
    + findings.profiled_finding({k: prof[k] for k in ("ddp", "fsdp2")})
    + f"Scaled to the plain steps (share x step, as section 6 does; this assumes a plain step spends the profiled "
    f"share in collectives: not established by this run), DDP spent {prof['ddp']['scaled'] * 1e3:.2f} ms and "
    f"FSDP2 {prof['fsdp2']['scaled'] * 1e3:.2f} ms in collectives: FSDP2's time in collectives is "
    + findings.collective_time_finding(slower, counted, fit, shard_run)
    + "FSDP2's profile shows what gloo ran per step: " + ", ".join(f"{c:g} x `{n}`" for n, c in events.items())
    + (": its reduce-scatters appear as `gloo:all_reduce`, i.e. gloo runs an all-reduce inside each (section 6 "
       "times one alone). "
       if "gloo:all_reduce" in events and "allreduce" not in calls["fsdp2"] else ". ")
    + f"Whole steps (median, rank 0): DDP {steps['ddp'] * 1e3:.2f} ms, ZeRO-1 {steps['zero1'] * 1e3:.2f} ms, "
    f"FSDP2 {steps['fsdp2'] * 1e3:.2f} ms ({steps['fsdp2'] / steps['ddp']:.1f}x DDP); section 6 predicts each. "
    "Sharding buys memory, not speed: use it when the state does not fit."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The same idea in JAX: shard the parameters over the mesh
# In JAX, FSDP is a layout: give each weight a `NamedSharding` split over the `data` axis, and XLA inserts
# an all-gather before each use. **Prediction:** the per-device argument bytes (`memory_analysis()`) fall to
# about 1/4 on 4 devices, all-gathers appear in the HLO, and the result is unchanged.

# %%
if cu.notebook.needs("jax"):
    jax_fsdp = sharded.jax_sharding()
    display(cu.display.Table(("layout", "arguments", "temporaries", "collectives in HLO"), tuple(
        (name, cu.display.format_bytes(jax_fsdp[name]["argument_bytes"]), cu.display.format_bytes(jax_fsdp[name]["temp_bytes"]),
         ", ".join(f"{c} {op}" for op, c in jax_fsdp[name]["collectives"].items() if c)) for name in ("replicated", "sharded")),
        title=f"One SGD step, {jax_fsdp['params']:,} parameters, per device of {jax_fsdp['devices']} (XLA memory_analysis)"))

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_JAX:
    shrink = jax_fsdp["sharded"]["argument_bytes"] / jax_fsdp["replicated"]["argument_bytes"]
    gathers = jax_fsdp["sharded"]["collectives"]["all-gather"]
    assert jax_fsdp["max_diff"] < 1e-6
    print("all-gather in the sharded step:", gathers > 0, "| result unchanged (< 1e-6):", jax_fsdp["max_diff"] < 1e-6)

# %%
if HAVE_JAX:
    display(cu.display.verdict(shrink < 1.5 / jax_fsdp["devices"] and gathers > 0,
                               f"arguments {shrink:.2f}x of replicated, {gathers} all-gather(s)",
                               "the arguments did not shrink to about 1/N or no all-gather was inserted"))
    display(Markdown(
        f"The sharded step's arguments are {shrink:.2f}x the replicated ones, while its temporaries are "
        f"{jax_fsdp['sharded']['temp_bytes'] / max(jax_fsdp['replicated']['temp_bytes'], 1):.2f}x: the gathered "
        "weights live there for the step. Gradients are reduced with "
        + ("reduce-scatters" if jax_fsdp["sharded"]["collectives"]["reduce-scatter"] else
           "all-reduces (XLA's CPU backend did not form reduce-scatters here)") + "."))

# %% [markdown] course={"lead": false, "minutes": 5} slideshow={"slide_type": "slide"}
# ## 5. A rank dies, training goes on
#
# With `--max-restarts=1`, torchrun restarts the whole group when a worker dies. The worker must then
# resume: it always loads the newest checkpoint if one exists (weights **and** optimizer state), written
# atomically (temporary file + `os.replace`) so that a crash while writing leaves the old one whole. Rank 1
# dies once, at step `CRASH_AT`; a checkpoint every `EVERY` steps (the cell below sets both).
#
# **Prediction:** the final weights equal an uninterrupted run (< 1e-5); the work lost is the steps since the
# last checkpoint: `CRASH_AT mod EVERY` steps computed twice (computed below, before the run).

# %%
cu.distributed.show_worker("elastic_train.py", only=["save_checkpoint", "load_checkpoint"])

# %%
STEPS, EVERY, CRASH_AT = 12, 3, 8
expected_lost = elastic.lost_steps(CRASH_AT, EVERY)
print(f"predicted steps computed twice: {CRASH_AT} mod {EVERY} = {expected_lost} (computed)")
crash = elastic.run(steps=STEPS, every=EVERY, crash_at=CRASH_AT, echo=False)  # the ranks' lines, shortened:
print("\n".join(f"[rank {r}] {t}" for r, t in crash.result.lines
                if t.startswith("attempt") or "simulated hardware failure" in t))  # the peers' gloo errors left out
beyond_plots.elastic_timeline(crash.computed, every=crash.every, crash_at=crash.crash_at, steps=crash.steps)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
ref_weights = elastic.reference(steps=STEPS)
elastic_diff = max(float(np.max(np.abs(w - ref_weights))) for w in crash.weights.values())
assert elastic_diff < 1e-5 and crash.lost_steps == expected_lost
print(crash)
print("attempts:", crash.attempts, "| resumed from step:", crash.resumed_from, "| steps computed twice:", crash.lost_steps)
print("final weights == uninterrupted run (max abs diff < 1e-5):", elastic_diff < 1e-5)

# %%
cu.display.verdict(elastic_diff < 1e-5 and crash.lost_steps == expected_lost,
                   f"weights vs uninterrupted {elastic_diff:.1e}, {crash.lost_steps} step(s) lost, "
                   f"{expected_lost} predicted",
                   "the resumed run diverged or lost other steps than predicted")

# %%
spent = crash.timeline  # where the elastic job's wall time went (seconds, from the ranks' own clocks)
Markdown(
    f"The job crashed at step {crash.crash_at}, torchrun restarted both ranks, they resumed at step "
    f"{crash.resumed_from} and finished with the weights of an uninterrupted run (difference {elastic_diff:.1e}). "
    f"Lost: {crash.lost_steps} step(s) of compute plus the restart. The whole job took {crash.seconds:.1f} s; by the "
    f"ranks' own clocks, starting a process and joining the group took {spent['startup 0']:.1f} s before the crash "
    f"and {spent['startup 1']:.1f} s after it, training {spent['training 0'] + spent['training 1']:.1f} s in all, and "
    f"the other {spent['outside']:.1f} s went to torchrun's own start, noticing the failure, restarting the group "
    "and shutting down. Checkpoint more often and you lose less per crash but pay the write every time. Found on the way (torch 2.13, gloo): restarted workers reuse the launcher's key-value "
    "store and read the dead workers' addresses; `elastic_train.py` keeps each attempt's keys apart."
)

# %% [markdown] course={"lead": true, "minutes": 5} slideshow={"slide_type": "slide"}
# ## 6. The cost model meets the measurement
#
# 05 fitted the ring all-reduce model T = 2(N-1)α + 2(N-1)/N · bytes/β. Fitted on each size's median in the
# all-reduce sweep of section 1's two-node job (the statistic the steps below are scored with), it now prices
# (computed) every collective this notebook counted: per call its latency steps (2(N-1) for an all-reduce,
# N-1 for an all-gather, reduce-scatter or broadcast), per byte its ring share. A step's prediction = its
# compute alone (measured: the same step with no communication) + that price. **Prediction:** every
# multi-process step measured here (the wide DDP step, re-measured in this two-node job; DDP, ZeRO-1 and FSDP2;
# and the two-process JAX step) lands within a factor of 2 of its prediction. A step that holds is not thereby
# explained: the cell after the verdicts names any time that neither compute nor collectives cover.

# %%
fit = cu.distributed.fit_allreduce(*comms.allreduce_sweep(nodes.records[0]), n=2)  # each size's median, as scored
jax_rec = jax_run.record("jax") if HAVE_JAX else None
predicted = sharded.step_predictions(fit, shard_run, nodes.record("timing_wide"), jax_rec,
                                     jaxmulti.gloo_ranks(jax_run) if HAVE_JAX else None)
display(sharded.prediction_table(predicted))
beyond_plots.prediction_plot(predicted, title="Compute + ring model (fitted on 2 nodes) vs measured steps")

# %%
ratio = {k: r["measured"] / r["predicted"] for k, r in predicted.items()}
for name, row in predicted.items():
    display(cu.display.verdict(0.5 <= ratio[name] <= 2, f"{name}: measured {row['measured'] * 1e3:.2f} ms, "
                               f"predicted {row['predicted'] * 1e3:.2f} ms ({ratio[name]:.2f}x)",
                               sharded.prediction_why(name, row)))

# %%
worst = max(ratio, key=lambda k: abs(np.log(ratio[k])))
off = [k for k, r in ratio.items() if not 0.5 <= r <= 2]
fsdp, parts = predicted["FSDP2 (ZeRO-3) step"], sharded.phase_medians(shard_run)
most = max(parts["fsdp2"], key=lambda part: parts["fsdp2"][part] - parts["ddp"][part])
Markdown(
    f"Fit: β = {cu.display.format_rate(fit.bandwidth)}, α = {fit.latency * 1e6:.1f} µs per ring step. "
    + ((f"Every step held within a factor of 2 (worst: *{worst}*, {ratio[worst]:.2f}x)"
        + (". " if findings.unexplained(predicted) else ", and no step left more unaccounted for than the "
           "model's communication: compute plus bytes and latencies account for these steps within that band. "))
       if not off else
       f"{len(ratio) - len(off)} of {len(ratio)} steps held; outside a factor of 2: "
       + ", ".join(f"*{k}* ({ratio[k]:.2f}x)" for k in off) + ". The verdicts say where the time went instead. ")
    + findings.unexplained_finding(predicted)
    + f"FSDP2's step took {fsdp['measured'] * 1e3:.2f} ms against {fsdp['compute'] * 1e3:.2f} ms of compute alone, "
    f"about {fsdp['comm measured'] * 1e3:.2f} ms of it with a collective running (model: "
    f"{fsdp['comm model'] * 1e3:.2f} ms). Its parts against DDP's (median, rank 0): " + ", ".join(
        f"{part.replace('_', ' ')} {parts['fsdp2'][part] * 1e3:.2f} vs {parts['ddp'][part] * 1e3:.2f} ms"
        for part in parts["ddp"])
    + f". Most of the difference is in *{most.replace('_', ' ')}*, "
    + ("which holds FSDP2's per-layer gathers, reduce-scatters and hooks: Python and waiting that no "
       "communication model contains." if most == "forward_backward" else
       "where FSDP2 works on DTensor shards instead of plain tensors: work no communication model contains.")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Two collectives, each alone: gloo's reduce-scatter against an all-reduce of the same buffer (the ring model
# says half, for any N), and JAX's one all-reduce of the step's operands against one array of the same bytes:

# %%
spread = sharded.spread  # "median ms (p25-p75)"
alone, nbytes = sharded.collectives_alone(shard_run), sharded.collective_medians(shard_run)["nbytes"]
half = sharded.model_comm_seconds(fit, {"reduce_scatter": 1}, {"reduce_scatter": nbytes}, 2) / fit.time(nbytes, 2)
rs_ratio = alone["reducescatter"].median / alone["allreduce"].median
print(f"torch, {cu.display.format_bytes(nbytes)}, median (25-75%): "
      + ", ".join(f"{op} {spread(m)}" for op, m in alone.items()))
print(f"reduce-scatter / all-reduce: {rs_ratio:.2f}x measured, {half:.2f}x in the ring model (computed)")
print("rank 0's profiler during one reduce-scatter:", " -> ".join(sharded.reduce_scatter_trace(shard_run)))
if HAVE_JAX:
    jax_alone, k = jaxmulti.alone(jax_rec), len(jax_rec["allreduce_operands"])
    labels = {"one float": "one float", "one array": "the step's bytes as one array", "operands": f"the step's {k} operands"}
    print("JAX, one all-reduce over the mesh alone, median (25-75%):",
          ", ".join(f"{labels[n]} {spread(jax_alone[n])}" for n in labels))
    print(f"per operand beyond the first: {jaxmulti.per_operand(jax_rec) * 1e3:.2f} ms (computed from the medians)")

# %%
said = sharded.reduce_scatter_finding(shard_run, half)  # judged by cu.timing.apart: beyond the noise or not
if HAVE_JAX:
    said += jaxmulti.operand_finding(jax_rec, predicted["JAX step, 2 processes"])
Markdown(said + f"Compute and communication also share the same {CORES} cores here. On a cluster, fit α and β on the "
         "real network and for each collective and library your training uses: an inter-node link is not loopback.")

# %% [markdown] course={"lead": true, "minutes": 2} slideshow={"slide_type": "slide"}
# ## 7. On a real cluster
# The same workers, with real addresses. The commands for 2 machines with 8 GPUs each:

# %%
print(multinode.cluster_commands(nnodes=2, nproc_per_node=8))

# %% [markdown]
# TPU pods (`jax.distributed.initialize()` finds the pod by itself) and multi-host networks cannot run on
# this machine; the commands above are the whole difference. When it hangs:

# %%
multinode.hang_checklist()

# %% [markdown] course={"lead": false, "minutes": 4} slideshow={"slide_type": "slide"}
# ## Exercises
#
# **06.1 Predict, then look.** Before reading section 4's table: how many bytes of model state
# (weights + gradients + Adam state) does one FSDP2 rank hold for this run's model on 2 ranks? Use the
# parameter count only (`params`). The check compares with what the rank measured.

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = 16 * params / 2
print(f"16 B/param x {params:,} parameters / 2 ranks = {cu.display.format_bytes(answer)} per FSDP2 rank")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("06.1", answer, measured=sum(sharded.held_bytes(shard_run)["fsdp2"][0].values()))

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

# %% [markdown] course={"lead": true, "minutes": 5} slideshow={"slide_type": "slide"}
# ## Summary

# %%
per_formula = {k: b / params for k, b in sharded.formula_bytes(params, N).items()}
rows = [
    ("2 nodes: ranks' max weight difference", max(diffs["ranks"].values()), "", "c10d rendezvous on 127.0.0.1"),
    ("2 nodes vs one process, max weight difference", max(diffs["single"].values()), "", "float rounding only"),
    ("DDP model state per rank", per_param["ddp"], "B/param", f"measured; formula {per_formula['ddp']:g}"),
    ("ZeRO-1 model state, largest rank", per_param["zero1"], "B/param",
     f"measured; formula {per_formula['zero1']:g} (N = {N})"),
    ("FSDP2 model state, largest rank", per_param["fsdp2"], "B/param",
     f"measured; formula {per_formula['fsdp2']:g} (N = {N})"),
    ("FSDP2 / DDP time in collectives per step", slower, "x",
     f"share x plain step; bytes {counted:.2f}x computed from counted calls with ring factors"
     + (f", {moved['gloo']:.2f}x with the reduce-scatters as the all-reduces gloo runs" if moved["inside"] else "")
     + f"; profiled / plain step (3 steps): DDP {prof['ddp']['slowdown']:.2f}x, FSDP2 {prof['fsdp2']['slowdown']:.2f}x"),
    ("FSDP2 step / DDP step", steps["fsdp2"] / steps["ddp"], "x", "tiny model, gloo"),
    ("elastic: steps computed twice", crash.lost_steps, "steps", f"crash at {crash.crash_at}, checkpoint every {crash.every}"),
    ("elastic job, wall time", crash.seconds, "s", "two attempts, start-up included"),
    ("cost model, worst measured/predicted step", ratio[worst], "x", worst),
    ("cost model, steps within 2x", len(ratio) - len(off), "steps", f"of {len(ratio)}"),
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
#   (16/N B/param by the formula), at 3(N-1)/N instead of 2(N-1)/N of the bytes and many more collectives;
#   price a step as compute + the ring cost of what it sends, and measure what the price leaves out.
# - Expect crashes: checkpoint atomically (weights + optimizer state), resume automatically, and count what a
#   crash costs: the steps since the last checkpoint plus a restart.
#
# **Next:** [07 · should we migrate?](07_should_we_migrate.ipynb): one realistic model through every technique
# of the course, and the decision in numbers.

# %%
print(cu.notebook.last_verified())
