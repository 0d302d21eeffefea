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
# # 05 · When does data parallelism pay, and what does it cost?
#
# Data parallelism puts a copy of the model on every device, gives each device a slice of the batch, and
# averages the gradients before every update. It is the first way to use more than one device, and the one
# most often used where it does not pay. After this notebook you will be able to
#
# - launch real multi-process PyTorch DDP with `torchrun` and **prove** that it computes exactly what one
#   process computes on the whole batch;
# - split a step's time into compute and communication, and explain DDP's gradient buckets and `no_sync()`;
# - predict, with a ring all-reduce cost model fitted to your own measurements and checked on process counts
#   it was not fitted on, when more devices make training slower;
# - write the same data-parallel step in JAX (a mesh with explicit sharding, `jax.shard_map`) and TensorFlow
#   (`MirroredStrategy`), and know the commands for going multi-node.
#
# **Minutes:** about 5 on a laptop, 60 in a workshop. **Accelerators:** everything runs on a CPU: DDP uses
# processes and gloo, JAX simulated CPU devices, TensorFlow logical CPU devices. With several GPUs DDP uses
# NCCL and JAX/TF use the GPUs; on a Colab TPU JAX uses the TPU cores. Colab TPU runtimes ship no TensorFlow:
# its section says so in one sentence and is skipped (likewise JAX's where JAX is missing).
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/05_data_parallel.ipynb)

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@v0.2.0"], check=True)

# %% slideshow={"slide_type": "skip"}
import course_utils as cu

# JAX fixes its CPU device count at its first computation: ask for several devices BEFORE that
# (setup's report lists JAX's devices, so it comes second). Without JAX this gives 0 devices and goes on.
N_SIM = 4
cu.distributed.simulate_devices(N_SIM)
cu.notebook.setup()

# %% slideshow={"slide_type": "skip"}
import os

import numpy as np
import psutil
import torch
from IPython.display import Markdown, display

HAVE_JAX, HAVE_TF = cu.env.available("jax"), cu.env.available("tensorflow")
tf_devices = cu.distributed.tf_logical_cpus(2)  # TensorFlow splits its CPU only before its runtime starts
CORES = os.cpu_count() or 1
WORKER_ARGS = cu.env.pick(ci=["--repeats", 8, "--wide-batch", 256, "--max-bytes", 2**22],
                          cpu=["--repeats", 20, "--wide-batch", 512, "--max-bytes", 2**24])
print(f"{CORES} cores; torch sees {torch.cuda.device_count()} GPU(s); JAX installed: {HAVE_JAX}; "
      f"TensorFlow logical CPUs: {len(tf_devices)}; worker arguments: {WORKER_ARGS}")

apart = cu.timing.apart  # True when two measurements' quartile ranges do not overlap

# %% [markdown] course={"lead": false, "minutes": 2} slideshow={"slide_type": "slide"}
# ## 1. The idea in one picture
#
# Every device holds **the same weights**. The global batch of B samples is cut into N shards; each device
# computes the gradient of the mean loss on its shard; an **all-reduce** replaces every device's gradient by
# the mean over devices; every device applies the same update, so the weights stay identical without ever
# being sent. The mean of N shard-mean gradients is the gradient of the mean over all B samples (equal
# shards), so this is *exactly* large-batch SGD, only spread out.
#
# **Prediction:** the only new cost is the all-reduce: a rank computes half the batch in about half the time
# one process needs for the whole batch, and the step adds one all-reduce of the gradient (in a ring of N
# devices each sends 2(N-1)/N x the gradient bytes, 1x for N = 2, whatever the batch size). Scored in section 3.

# %%
cu.distributed.diagram()

# %% [markdown] course={"lead": false, "minutes": 11} slideshow={"slide_type": "slide"}
# ## 2. Proof, not assertion: two DDP ranks on two processes
#
# `mp.spawn` of a function defined in a notebook fails (the child cannot import `__main__`), so the course
# runs **real files** with the **real launcher**: `cu.distributed.launch` starts `torchrun` as a subprocess,
# every address given as 127.0.0.1 (no host name is looked up), streams the ranks' lines into the cell,
# collects what the workers record, and kills every process it started if anything goes wrong (a failing
# rank, a timeout, or you interrupting the kernel). The lines of the worker that matter:

# %% slideshow={"slide_type": "subslide"}
cu.distributed.show_worker("ddp_train.py", only=["setup", "proof"])

# %% [markdown] slideshow={"slide_type": "subslide"}
# `setup` picks the backend from the device *type* (NCCL for CUDA, gloo otherwise) and the GPU from
# `LOCAL_RANK`, the rank on this machine: on the second node of a multi-node job `RANK` is 8 but the GPU is
# still `cuda:0`. Rank 0 prints the backend and why (the first line of the run below). Every node decides on
# its own, so a fallback to gloo on a node with too few GPUs would give a job whose nodes use different
# backends, and it would hang in its first collective. So a machine with some GPUs but fewer than its local
# ranks stops with a clear error, and after joining, the ranks compare their choices over gloo and all stop if
# they differ (a GPU node beside a CPU-only one); only a job with no GPU anywhere runs gloo on the CPU.
# `torch_sgd_step` is the course's one PyTorch step (forward, backward, SGD update): DDP
# changes nothing in it, because it all-reduces the gradients inside `backward()`. The rest of the file
# (timing loops, counters) is plumbing. The command that `launch` runs (`--tee=3` prefixes each rank's lines
# with `[defaultN]:`, which is how the cell knows which rank said what; the cell shows `[rank N]` instead):

# %%
print(" ".join(cu.distributed.torchrun_command(cu.distributed.worker_path("ddp_train.py"), 2, WORKER_ARGS,
                                               port=29500, log_dir="<tmp>/logs")))
print("environment added:", cu.distributed.loopback_env(), "and OMP_NUM_THREADS =", max(1, CORES // 2))

# %% [markdown] slideshow={"slide_type": "subslide"}
# One launch runs every phase of this notebook (each `torchrun` start costs seconds: imports and rendezvous).
# Each process gets `OMP_NUM_THREADS = cores / processes` threads, so that two ranks do not fight over the
# cores; the one-process baseline measured inside the job has the same single thread (section 3 also times
# it with every core).
#
# **Prediction:** the two ranks' weights are *bit-identical* at every checkpoint (both apply the same averaged
# gradient to the same weights), and equal to one process training on the whole batch up to float rounding
# (the sum is taken in a different order).

# %%
run = cu.distributed.launch("ddp_train.py", nprocs=2, timeout=240, args=WORKER_ARGS, progress=False)
display(run)


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


def proof_plot():
    fig, (ax,) = cu.plotting.figure(width=6.4, height=3.4)
    steps = [int(c[4:]) for c in single]
    ax.plot(steps, [max(v, 1e-12) for v in single_diff.values()], marker="o", label="DDP rank 0 vs one process")
    ax.plot(steps, [max(v, 1e-12) for v in rank_diff.values()], marker="s", label="rank 0 vs rank 1 (0 drawn at 1e-12)")
    ax.axhline(1e-5, color="#333333", linestyle="--", linewidth=1, label="tolerance 1e-5")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("max |weight difference|")
    ax.set_title("Two DDP ranks vs each other and vs one process on the whole batch")
    ax.legend(fontsize=8)
    return fig


proof_plot()

# %%
# NBVAL_CHECK_OUTPUT
identical = all(d == 0.0 for d in rank_diff.values())
equal_to_one = all(d < 1e-5 for d in single_diff.values())
print("checkpoints:", list(single))
print("rank 0 and rank 1 bit-identical at every checkpoint:", identical)
print("DDP equals one process on the whole batch (max abs diff < 1e-5):", equal_to_one)

# %%
cu.display.verdict(identical and equal_to_one,
                   f"ranks differ by {max(rank_diff.values()):.1e}, DDP vs one process by {max(single_diff.values()):.1e}",
                   "the ranks diverged or DDP computed something else than large-batch SGD: look at the worker")

# %% slideshow={"slide_type": "skip"}
assert identical and equal_to_one, (rank_diff, single_diff)

# %%
phase_s = run.record("phases")["seconds"]
startup_s = run.record("startup")["seconds"]
overhead = run.seconds - sum(phase_s.values())
Markdown(
    f"After {len(single) * 5} steps the two ranks hold "
    + ("**bit-identical** weights" if identical else f"weights {max(rank_diff.values()):.1e} apart")
    + f", and rank 0 differs from the single-process run by at most **{max(single_diff.values()):.1e}** (float32 "
    "rounding: the mean over 64 samples is summed as two halves of 32, then averaged). "
    f"The launch took **{run.seconds:.1f} s** of wall time, of which the five phases ran "
    f"{sum(phase_s.values()):.1f} s: **{overhead / run.seconds:.0%}** was start-up and shut-down (torchrun, "
    f"Python and torch imports, rendezvous; each rank needed {startup_s:.1f} s from process start to joining "
    "the group). That is why the course launches once for all phases."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Where a DataLoader meets DDP
# The worker slices each global batch by hand (`shard`). With a `DataLoader`, the same job is done by
# `DistributedSampler`: each rank gets a disjoint 1/N of the indices. It shuffles with a seed plus the epoch,
# so call `sampler.set_epoch(epoch)` at the start of every epoch: without it, every epoch repeats the same order.

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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### When a rank fails
# A failing rank must not leave its partner waiting forever in an all-reduce, nor leave orphans behind.
# `fail_demo.py` makes rank 1 raise while rank 0 sleeps (standing in for a rank blocked in a collective).
# **Prediction:** `launch` raises `LaunchError` naming rank 1 with its traceback, and no process survives.

# %%
cu.distributed.show_worker("fail_demo.py")

# %%
# NBVAL_CHECK_OUTPUT
try:
    cu.distributed.launch("fail_demo.py", nprocs=2, timeout=60, echo=False)
except cu.distributed.LaunchError as error:
    failure = error
leftover = [p for p in psutil.process_iter(["cmdline"]) if "fail_demo.py" in " ".join(p.info["cmdline"] or [])]
print(type(failure).__name__, "| failing rank:", failure.rank, "| exit code:", failure.exitcode)
print("last line of its traceback:", failure.traceback.splitlines()[-1])
print("processes left behind:", len(leftover))

# %%
print(failure)

# %%
exception_line = failure.traceback.splitlines()[-1] if failure.traceback else ""
cu.display.verdict(failure.rank == 1 and exception_line.startswith("ValueError:") and not leftover,
                   f"LaunchError names rank {failure.rank}, its traceback ends in the rank's exception "
                   f"({exception_line.split(':')[0] or 'none'}), {len(leftover)} process(es) left behind",
                   "the launcher blamed another rank, lost the rank's exception line or left processes running")

# %%
from torch.distributed import constants as pg_constants

nccl_timeout = getattr(pg_constants, "default_pg_nccl_timeout", None)  # None in a torch built without NCCL
print("default process-group timeout in this torch (gloo):", pg_constants.default_pg_timeout)
print("default for NCCL:", nccl_timeout if nccl_timeout is not None else
      "this torch has no NCCL; PyTorch's documentation gives 10 minutes (not measured here)")

# %%
Markdown(
    (f"`launch` named rank {failure.rank} and showed its traceback, read from the rank's own `stderr.log` "
     "(in the console torchrun interleaves a rank's stdout and stderr, so the line the rank printed first can "
     "land inside its traceback there), then stopped rank 0, which would otherwise have slept on (in a real "
     "job: waited in an all-reduce until the process group timed out, after the default printed above). "
     if failure.rank == 1 and exception_line.startswith("ValueError:") else
     f"`launch` blamed rank {failure.rank} and its traceback ends in {exception_line!r}, not rank 1's "
     "`ValueError`: the launcher lost the failing rank's exception. ")
    + ("No process of the job is left." if not leftover else
       f"{len(leftover)} process(es) survived: the launcher's clean-up missed them, which is a bug to report.")
)

# %% [markdown] course={"lead": true, "minutes": 11} slideshow={"slide_type": "slide"}
# ## 3. Where the time goes: compute, communication, threads
#
# The worker timed, on both ranks at once: the DDP step; the same step inside `no_sync()` (DDP skips the
# all-reduce: pure compute); an all-reduce of a buffer as large as the gradient; and rank 0 alone, without
# DDP, on the whole global batch (the one-process baseline) and on half of it, plain and wrapped in a DDP of
# its own (one rank, `no_sync`). Each process had `OMP_NUM_THREADS = 1`; the kernel below also times the
# whole-batch step with one thread and with all of its threads. Two models: the course's **tiny** MLP and a
# **wide** one (hidden layers of 1024 instead of 64); their parameter counts and gradient bytes are printed
# below.
#
# **Prediction:** for the tiny model, whose whole-batch step takes a fraction of a millisecond, the
# all-reduce (fixed latency) costs more than the compute, so communication is more than half of the DDP
# step; the wide model's compute grows with the batch and its communication share is smaller.

# %%
timings = {name: run.record(f"timing_{name}") for name in ("tiny", "wide")}
PARTS = ("ddp", "compute", "allreduce", "single", "single_half", "solo_ddp")
spread = {n: {k: cu.timing.Measurement.from_times(k, r[k]) for k in PARTS} for n, r in timings.items()}
med = {n: {k: m.median for k, m in parts.items()} for n, parts in spread.items()}
ALL = torch.get_num_threads()
threads = {}  # the same whole-batch step in this kernel: one thread, then every thread torch has here
for name, sizes in (("tiny", (32, 64, 64, 10)), ("wide", (32, 1024, 1024, 10))):
    x_k, y_k = cu.data.classification(timings[name]["global_batch"], seed=2)
    step_k = cu.models.torch_sgd_step(cu.models.torch_mlp(sizes), lr=0.1)
    threads[name] = cu.distributed.devices.time_threads(step_k, (torch.from_numpy(x_k), torch.from_numpy(y_k)),
                                                        threads=(1, ALL))
kernel = {n: t[ALL].measurement.median for n, t in threads.items()}
cu.distributed.breakdown_plot({
    f"{n} MLP ({timings[n]['params']:,} parameters, batch {timings[n]['global_batch']})": {
        f"1 process, {ALL} thread{'s' if ALL > 1 else ''} (kernel)": (kernel[n], 0.0),
        "1 process, 1 thread": (m["single"], 0.0),
        "2 DDP ranks, 1 thread each": (m["compute"], max(m["ddp"] - m["compute"], 0.0)),
    } for n, m in med.items()})

# %%
# NBVAL_CHECK_OUTPUT
for name, r in timings.items():
    print(f"{name}: {r['params']:,} parameters -> {4 * r['params']:,} gradient bytes all-reduced per step")

# %%
share = {n: max(m["ddp"] - m["compute"], 0.0) / m["ddp"] for n, m in med.items()}
speedup = {n: m["single"] / m["ddp"] for n, m in med.items()}
cu.display.verdict(share["tiny"] > 0.5 and share["wide"] < share["tiny"],
                   f"communication is {share['tiny']:.0%} of the tiny model's DDP step, {share['wide']:.0%} of the wide one's",
                   "the tiny model's exposed communication stayed under half of its step"
                   if share["tiny"] <= 0.5 else "the wide model's communication share was not smaller")

# %%
same_job = cu.distributed.comms.allreduce_sweep(run.records[0])  # this job's sweep: section 5 fits the ring model on it
same_fit = cu.distributed.fit_allreduce(*same_job, n=2)


def step_parts(n):
    """The model's step, compute and all-reduce alone (medians), and what is left of the step."""
    return (f"a DDP step takes **{med[n]['ddp'] * 1e3:.2f} ms**, of which compute is {med[n]['compute'] * 1e3:.2f} ms, "
            f"so communication is **{share[n]:.0%}** of the step. An all-reduce of its "
            f"{cu.display.format_bytes(4 * timings[n]['params'])} gradient alone takes {med[n]['allreduce'] * 1e3:.2f} ms, "
            + cu.distributed.findings.remainder_finding(spread[n]["ddp"], spread[n]["compute"], spread[n]["allreduce"],
                                                        same_fit, same_job, 4 * timings[n]["params"]))


Markdown(
    "Tiny model: " + step_parts("tiny")
    + "Wide model" + (" (its communication share smaller, as predicted): " if share["wide"] < share["tiny"] else
                      " (its communication share not smaller: the prediction failed there): ") + step_parts("wide")
    + ("" if apart(spread["wide"]["ddp"], spread["wide"]["compute"]) else
       "Its step and its compute alone overlap in their quartiles: the wide model's communication is lost in this "
       "run's noise. ")
    + f"Against one process with one thread on the whole batch, measured by rank 0 inside the job, two ranks give a "
    f"speed-up of **{speedup['tiny']:.2f}x** (tiny) and **{speedup['wide']:.2f}x** (wide), scaling efficiency "
    f"{speedup['tiny'] / 2:.0%} and {speedup['wide'] / 2:.0%}. The next two subsections take the step apart, and then "
    "ask whether one process with every thread would have been the better baseline."
)


# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Is the all-reduce the only new cost? (section 1's prediction)
# If it were, a rank's compute on half the batch would take about half of the one-process, whole-batch step.
# Three other suspects, each measured on its own by rank 0 while the other rank waited: the fixed cost of
# every operator, which does not shrink with the batch (half the batch, plain model); DDP's own bookkeeping
# (half the batch in a one-rank DDP under `no_sync`: DDP's hooks, no partner, no all-reduce); and the partner
# process computing at the same time (both ranks under `no_sync`). Rank 0 took its three alone-measurements in
# turns, one call of each per round, so that a change in the machine's load falls on all three alike.

# %%
half_ratio = {n: m["compute"] / m["single"] for n, m in med.items()}
cu.display.verdict(all(r < 0.65 for r in half_ratio.values()),
                   f"a rank's half-batch compute is {half_ratio['tiny']:.2f}x (tiny) and {half_ratio['wide']:.2f}x "
                   "(wide) of one process's whole-batch step; ~0.5x was predicted",
                   "computing half the batch did not halve the time: the all-reduce is not the only new cost")

# %%
CHAIN = {"single": "whole batch, plain model (baseline)", "single_half": "half batch, plain model",
         "solo_ddp": "half batch, one-rank DDP, no_sync", "compute": "half batch, DDP, partner running, no_sync",
         "ddp": "half batch, DDP step with its all-reduce"}
cu.display.table(
    ["rank 0's step", *(f"{n}: median (quartiles)" for n in med), *(f"{n} / baseline" for n in med)],
    [(label, *(f"{spread[n][k].median * 1e3:.2f} ms ({spread[n][k].p25 * 1e3:.2f}-{spread[n][k].p75 * 1e3:.2f})"
               for n in med), *(f"{med[n][k] / med[n]['single']:.2f}x" for n in med)) for k, label in CHAIN.items()],
    title="One suspect at a time: rank 0's step, 1 thread per process (measured)",
    note="Rows 1-3: rank 0 alone while the other rank waits; rows 4-5: both ranks at once. "
         "Baseline = one process, whole batch, 1 thread.")


# %%
def change(n, before, after, what):
    a, b = spread[n][before], spread[n][after]
    if not apart(a, b):
        return f"{what}, no measurable change ({a.median * 1e3:.2f} → {b.median * 1e3:.2f} ms, quartiles overlap)"
    return f"{what}, {b.median / a.median:.2f}x ({a.median * 1e3:.2f} → {b.median * 1e3:.2f} ms)"


STEPS = [("single", "single_half", "halving the batch"), ("single_half", "solo_ddp", "DDP's hooks without a partner"),
         ("solo_ddp", "compute", "the partner rank computing at the same time"), ("compute", "ddp", "the all-reduce")]
hidden = {n: {what: med[n][b] - med[n][a] for a, b, what in STEPS[1:3]
              if apart(spread[n][a], spread[n][b]) and med[n][b] > med[n][a]} for n in med}
Markdown(
    " ".join(f"**{n.capitalize()} model**: " + "; ".join(change(n, *step) for step in STEPS) + "." for n in med)
    + f"\n\nSo between half the batch alone ({med['tiny']['single_half'] / med['tiny']['single']:.2f}x, tiny) and a "
    f"rank's compute in the job ({med['tiny']['compute'] / med['tiny']['single']:.2f}x) the tiny model's step grew by "
    + (" and ".join(f"{cu.display.format_time(v)} from {k}" for k, v in hidden["tiny"].items()) + " (measured). "
       if hidden["tiny"] else
       (f"{cu.display.format_time(med['tiny']['compute'] - med['tiny']['single_half'])}, and end to end that "
        f"growth is beyond the quartiles ({spread['tiny']['single_half'].p25 * 1e3:.2f}-"
        f"{spread['tiny']['single_half'].p75 * 1e3:.2f} ms against {spread['tiny']['compute'].p25 * 1e3:.2f}-"
        f"{spread['tiny']['compute'].p75 * 1e3:.2f} ms), while each single step in between is within the noise: "
        "the hidden cost is real, but which of DDP's hooks and the partner rank carries it is not established by "
        "this run. " if apart(spread["tiny"]["single_half"], spread["tiny"]["compute"])
        and med["tiny"]["compute"] > med["tiny"]["single_half"] else
        "nothing that stands out from the quartiles, end to end or step by step: within this run's noise. "))
    + "Halving the batch saves little for a small model: its step is a few dozen operator calls, each with a "
    "fixed cost (Python, dispatch, autograd, the optimizer loop) that does not shrink with the rows. "
    + ("Even under `no_sync`, DDP runs its forward bookkeeping and an autograd hook per parameter. "
       if STEPS[1][2] in hidden["tiny"] else "")
    + (f"The partner rank shares this machine's {CORES} cores, caches and memory bandwidth (load average "
       f"{os.getloadavg()[0]:.1f} now), with gloo's threads besides. " if STEPS[2][2] in hidden["tiny"] else "")
    + "So the all-reduce is the visible new cost, and per-operator overhead, DDP's bookkeeping and the shared "
    "machine are the candidates for the hidden ones: measure one rank's compute, do not assume it is 1/N."
)


# %% [markdown] slideshow={"slide_type": "subslide"}
# ### One process with every thread: the better baseline?
# Each rank above had one thread, so that two ranks do not fight over the cores. One process could instead give
# torch every thread: it splits each large operator over its intra-op threads (OpenMP), which meet at a barrier
# at the end of every parallel operator. `cu.distributed.devices.time_threads` timed the whole-batch step in
# this kernel (section 3's first cell) with 1 thread and with all of them, and how many cores the process kept
# busy meanwhile: its CPU time over wall time, over all its threads and for the calling thread alone.
#
# Read that number with care: a thread that computes keeps a core busy, but so does one that waits by
# **spinning**. An OpenMP thread that reaches the barrier early busy-waits for a while before it sleeps
# (libgomp, PyTorch's OpenMP runtime here, reads `OMP_WAIT_POLICY` and `GOMP_SPINCOUNT`; Intel's runtime
# reads `KMP_BLOCKTIME`), so CPU time over wall time cannot tell computing from waiting. The runtime reads
# the policy once, when it starts, so the step is also timed in two fresh processes with every thread: one
# with the default policy, one with `OMP_WAIT_POLICY=passive` (waiting threads sleep).
#
# **Prediction:** with every thread the whole-batch step is at least as fast as with one thread (their
# quartile ranges overlap, or all threads win), for both models.

# %%
WORKLOADS = {n: (sizes, timings[n]["global_batch"]) for n, sizes in (("tiny", (32, 64, 64, 10)),
                                                                     ("wide", (32, 1024, 1024, 10)))}
fresh = {policy: cu.distributed.devices.mlp_threads_fresh(WORKLOADS, [ALL], env)
         for policy, env in (("default", {}), ("passive", {"OMP_WAIT_POLICY": "passive"}))}
fmt = cu.display.format_time
rows = [(n, "this kernel", r.threads, r.measurement, r) for n, t in threads.items() for r in t.values()]
rows += [(n, f"fresh process, {policy} wait", ALL, t[ALL].measurement, t[ALL]) for policy, f in fresh.items()
         for n, t in f.items()]
cu.display.table(["model", "where", "threads", "median", "quartiles", "cores busy", "of which the calling thread"],
                 [(n, where, k, fmt(m.median), f"{fmt(m.p25)} to {fmt(m.p75)}", f"{r.cores_busy:.2f}",
                   f"{r.caller_busy:.2f}") for n, where, k, m, r in rows],
                 title=f"The whole-batch step ({CORES} cores, load average {os.getloadavg()[0]:.1f})",
                 note="cores busy: the process's CPU seconds per wall second, every thread; the calling thread's alone "
                      "beside it.")

# %%
slower = [n for n, t in threads.items() if t[ALL].measurement.p25 > t[1].measurement.p75]
thread_ratio = {n: t[ALL].measurement.median / t[1].measurement.median for n, t in threads.items()}
cu.display.verdict(not slower, "in this kernel, " + ", ".join(f"{n}: {ALL} threads took {cu.display.ratio(r)} the "
                                                             "1-thread time" for n, r in thread_ratio.items()),
                   f"with {ALL} threads the {' and the '.join(slower)} step was slower than with one, beyond the quartiles")

# %%
def one_thread_busy(n):
    """The 1-thread run's cores: with one thread torch computes on the caller, so the rest is other threads."""
    r = threads[n][1]
    return (f"with 1 thread the calling thread kept {r.caller_busy:.2f} cores busy"
            + (f" and the process's other threads {r.cores_busy - r.caller_busy:.2f} more: not torch's compute, "
               "which runs on the caller at 1 thread, but another of this kernel's threads (it holds JAX's, "
               "TensorFlow's and NumPy's pools besides torch's); which one is not established by this run"
               if r.cores_busy - r.caller_busy > 0.1 else ", the process hardly more"))


def spin(n):
    """The same step with every thread in two fresh processes: default OpenMP wait policy, then passive."""
    return cu.distributed.findings.spin_finding(fresh["default"][n][ALL], fresh["passive"][n][ALL])


contended = [n for n in threads if threads[n][1].caller_busy < 0.9]  # one thread that did not get a whole core


busy = {n: threads[n][ALL].cores_busy for n in threads}
Markdown(
    " ".join(
        f"**{n.capitalize()} model**: {ALL} threads took **{cu.display.ratio(thread_ratio[n])}** the 1-thread time "
        f"and kept {busy[n]:.2f} cores busy, {one_thread_busy(n)}. "
        + (("Slower beyond the quartiles with every thread. " if n in slower else
            "Faster beyond the quartiles. " if apart(threads[n][1].measurement, threads[n][ALL].measurement) else
            "No measurable difference in time, the quartile ranges overlap. ")
           + (f"Against the {ALL}-thread step two ranks ran at {kernel[n] / med[n]['ddp']:.2f}x, the fairer "
              "comparison since both use every core. " if n not in slower else ""))
        + spin(n)
        for n in threads)
    + (f" With one thread the calling thread got only {min(threads[n][1].caller_busy for n in contended):.2f} of a "
       f"core: other processes on this machine (load average {os.getloadavg()[0]:.1f} on {CORES} cores) took the "
       "rest, so every number in this table was measured on contended cores." if contended else "")
    + " A spinning thread holds a core that another process (a second rank, a data worker) could have used: that "
    "is one reason the course gives each rank `OMP_NUM_THREADS = cores / processes`.\n\n"
    + "Two 1-thread baselines, side by side: " + "; ".join(
        cu.distributed.findings.baseline_finding(threads[n][1].measurement, spread[n]["single"], f"{n} model")
        for n in threads)
    + f". Section 3's speed-ups ({speedup['tiny']:.2f}x tiny, {speedup['wide']:.2f}x wide) use the job's, measured "
    f"beside the other rank and gloo; this table's thread ratios and the {ALL}-thread comparison above use this "
    "kernel's. Tiny model, " + cu.distributed.findings.fresh_agreement(
        threads["tiny"][1].measurement, threads["tiny"][ALL].measurement, fresh["default"]["tiny"][ALL].measurement)
    + "."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Gradient buckets and overlap
# DDP does not wait for the whole backward pass: it groups parameters into **buckets** of about
# `bucket_cap_mb` and all-reduces a bucket as soon as all its gradients exist, while backward continues
# on earlier layers (overlap). Small buckets start communicating earlier but pay the per-call latency more
# often; one huge bucket waits for the end of backward. The worker trained a deeper MLP (9 layers of 256) with
# several caps, counted the all-reduce calls with a communication hook, and timed a model without the hook.
#
# **Prediction:** the bucket count falls as the cap grows; step time has a shallow optimum in between: the
# fastest cap is neither the smallest nor the largest, and its quartile range lies below both ends'. (On a
# CPU, gloo's communication competes with the compute for the same cores, so overlap may gain little; on GPUs
# NCCL runs on its own streams and overlap matters.)

# %%
bucket_runs = [r for r in run.records[0] if r["kind"] == "bucket"]
bucket_ms = {r["cap_mb"]: cu.timing.Measurement(f"cap {r['cap_mb']:g}", tuple(r["times"])) for r in bucket_runs}
cu.plotting.time_bars({f"bucket_cap_mb={r['cap_mb']:g} ({r['buckets']} buckets)": bucket_ms[r["cap_mb"]]
                       for r in bucket_runs}, title="DDP step time of the deep MLP against bucket size")

# %%
# NBVAL_CHECK_OUTPUT
counts = [r["buckets"] for r in bucket_runs]
print("bucket caps (MB):", [r["cap_mb"] for r in bucket_runs])
print("all-reduce calls per step:", counts)
print("fewer buckets for every larger cap:", counts == sorted(counts, reverse=True) and counts[0] > counts[-1])

# %%
caps = [r["cap_mb"] for r in bucket_runs]
medians = [bucket_ms[c].median for c in caps]
fastest = caps[int(np.argmin(medians))]
inside = fastest not in (caps[0], caps[-1])
beats_ends = all(bucket_ms[fastest].p75 < bucket_ms[c].p25 for c in (caps[0], caps[-1]))
falls = counts == sorted(counts, reverse=True)
cu.display.verdict(falls and inside and beats_ends,
                   f"{counts[0]} -> {counts[-1]} buckets; the fastest cap was {fastest:g} MB "
                   f"({bucket_ms[fastest].median * 1e3:.2f} ms, quartiles {bucket_ms[fastest].p25 * 1e3:.2f}-"
                   f"{bucket_ms[fastest].p75 * 1e3:.2f} ms)",
                   "the bucket count did not fall" if not falls else
                   f"the fastest setting is at the {'smallest' if fastest == caps[0] else 'largest'} cap, not in between"
                   if not inside else "its quartile range overlaps an end's: no optimum stands out from the noise")

# %%
ranges = ", ".join(f"{c:g} MB {bucket_ms[c].median * 1e3:.2f} ({bucket_ms[c].p25 * 1e3:.2f}-"
                   f"{bucket_ms[c].p75 * 1e3:.2f})" for c in caps)
pairs = [(a, b) for i, a in enumerate(caps) for b in caps[i + 1:] if apart(bucket_ms[a], bucket_ms[b])]
if not pairs:
    trend = ("every setting's quartile range overlaps every other's: **no measurable effect of the bucket size** at "
             "this size on this machine")
elif falls and all(apart(bucket_ms[a], bucket_ms[b]) and bucket_ms[b].median < bucket_ms[a].median
                   for a, b in zip(caps, caps[1:])):
    trend = "step time fell at every larger cap, beyond the quartiles: fewer, larger all-reduces won"
else:
    trend = ("the pairs that differ are " + "; ".join(f"{a:g} vs {b:g} MB" for a, b in pairs) + ". "
             + (f"The fastest, {fastest:g} MB, lies between the ends and clear of both: a measurable optimum"
                if inside and beats_ends else
                f"The fastest median, {fastest:g} MB, is "
                + ("an end of the range" if not inside else "not clear of both ends")
                + ": no optimum in between stands out from the noise at this size on this machine"))
Markdown(
    f"With a {caps[0]:g} MB cap DDP issued **{counts[0]}** all-reduces per step, with {caps[-1]:g} MB **{counts[-1]}**. "
    f"Step time, median (quartiles) in ms: {ranges}. Compared by their quartile ranges, {trend}. "
    "On a CPU every gloo call costs a fixed latency and competes with backward for the same cores; on GPUs "
    "NCCL overlaps communication with backward on its own streams. Tune buckets on the hardware you train on."
)

# %% [markdown] course={"lead": false, "minutes": 4} slideshow={"slide_type": "slide"}
# ## 4. Gradient accumulation with `no_sync()`: fewer all-reduces
#
# The seed article asks: *"would gradient accumulation reduce the synchronisation frequency?"* With K
# micro-batches per optimizer step, naive DDP all-reduces after every backward; inside `model.no_sync()` it
# only accumulates locally, and the last micro-batch's backward all-reduces the sum once. The worker counted
# the all-reduce calls with a communication hook, and timed the same two loops on a model without the hook
# (a Python hook costs time of its own).
#
# **Exercise 05.1 (predict before you look).** With K = 4 micro-batches of the tiny model (one gradient
# bucket: its gradient bytes, printed in section 3, fit in DDP's first bucket of 1 MiB), how many all-reduce
# calls does one optimizer step make when
# syncing every micro-batch, and with `no_sync`? Answer a pair `(every_micro_batch, no_sync)`.

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
K = 4
buckets_tiny = -(-4 * timings["tiny"]["params"] // (1024 * 1024))  # gradient bytes over DDP's 1 MiB first bucket
answer = (K * buckets_tiny, 1 * buckets_tiny)  # every backward syncs, or only the last one
print(f"{K} micro-batches x {buckets_tiny} bucket(s): {answer[0]} all-reduce calls syncing every micro-batch, "
      f"{answer[1]} with no_sync")

# %%
# NBVAL_CHECK_OUTPUT
naive, lazy = run.record("accum_every_micro_batch"), run.record("accum_no_sync")
cu.exercises.check("05.1", answer, every_micro_batch=naive["allreduce_calls"], no_sync=lazy["allreduce_calls"])

# %% [markdown]
# **Prediction:** K = 4 micro-batches cost 4 all-reduce calls naively and 1 with `no_sync`, the gradient is
# the same (equal to that of one large batch of K x 2 ranks x 32 samples), and the step gets faster beyond
# the noise (the two settings' quartile ranges apart).

# %%
accum_times = {"sync every micro-batch": cu.timing.Measurement("every", tuple(naive["times"])),
               "no_sync, one all-reduce": cu.timing.Measurement("no_sync", tuple(lazy["times"]))}
cu.plotting.time_bars(accum_times, title="4 micro-batches on 2 ranks: time per optimizer step")

# %%
# NBVAL_CHECK_OUTPUT
x_big, y_big = cu.data.classification(4 * 2 * 32, seed=1)  # the worker's data: K x world x micro-batch
big = cu.models.torch_mlp()
torch.nn.functional.cross_entropy(big(torch.from_numpy(x_big)), torch.from_numpy(y_big)).backward()
big_grad = torch.cat([p.grad.flatten() for p in big.parameters()]).numpy()
grads = run.arrays["accum"]
accum_diff = max(float(np.max(np.abs(grads[r]["no_sync"] - big_grad))) for r in grads)
same_grad = accum_diff < 1e-6 and np.array_equal(grads[0]["no_sync"], grads[1]["no_sync"])
print("all-reduce calls per optimizer step: every micro-batch", naive["allreduce_calls"], "| no_sync", lazy["allreduce_calls"])
print("no_sync gradient == large-batch gradient on both ranks (max abs diff < 1e-6):", same_grad)

# %%
every_m, lazy_m = accum_times["sync every micro-batch"], accum_times["no_sync, one all-reduce"]
saved = 1 - lazy_m.median / every_m.median
faster = saved > 0 and apart(every_m, lazy_m)
counts_ok = (naive["allreduce_calls"], lazy["allreduce_calls"]) == (4, 1)
cu.display.verdict(counts_ok and same_grad and faster,
                   f"{naive['allreduce_calls']} vs {lazy['allreduce_calls']} all-reduces, gradient equal to "
                   f"{accum_diff:.1e}, step time {saved:.0%} shorter (medians; quartiles "
                   f"{every_m.p25 * 1e3:.2f}-{every_m.p75 * 1e3:.2f} vs {lazy_m.p25 * 1e3:.2f}-{lazy_m.p75 * 1e3:.2f} ms)",
                   "the calls or the gradient differ" if not (counts_ok and same_grad) else
                   "the two settings' quartile ranges overlap: no saving stands out from this run's noise")

# %%
Markdown(
    f"Syncing every micro-batch took **{every_m.median * 1e3:.2f} ms** per update, `no_sync` "
    f"**{lazy_m.median * 1e3:.2f} ms** "
    + (f"({saved:.0%} less)" if saved > 0 else f"({-saved:.0%} more)")
    + f", with 3 of 4 all-reduces gone and the gradient unchanged (max difference to the large batch "
    f"{accum_diff:.1e}). The quartile ranges were {every_m.iqr * 1e3:.2f} and {lazy_m.iqr * 1e3:.2f} ms wide, and "
    + ("they do not overlap: the saving is beyond this run's noise. So the article's suggestion holds, with a "
       "condition: it pays when communication is a large share of the step, as for this tiny model; in exchange "
       "the optimizer steps K times less often." if faster else
       "they overlap: the three saved all-reduces did not stand out from this run's noise. What else moved the "
       "step is not established by this run; fewer all-reduces pay where communication is a large share of the "
       "step, so measure on the machine you train on.")
)

# %% [markdown] course={"lead": true, "minutes": 7} slideshow={"slide_type": "slide"}
# ## 5. When more devices are slower: the ring all-reduce cost model
#
# The seed article warns: *"multi-machine training can be slower than a single card when the model fits on
# one card"*. Section 3 measured it for the tiny model. To predict it elsewhere, model the all-reduce. In a
# ring of N devices each device sends and receives 2(N-1) chunks of bytes/N:
#
# $$T(N) = 2(N-1)\,\alpha + \frac{2(N-1)}{N}\,\frac{\text{bytes}}{\beta}$$
#
# with α the latency per ring step and β the link bandwidth. The worker swept the message size on 2
# processes: small messages pin α, large ones β. A model fitted on N = 2 only is worth something if it
# predicts other N, so two more short jobs measure the same sweep on 3 and 4 processes. Fit and scores use
# the same statistic of each size's repeats, the median (`cu.distributed.comms.allreduce_sweep`): fitting on
# the fast quartile and scoring against medians would call every measurement slow by construction.
#
# **Prediction:** where each of the N processes has a core of its own (N ≤ this machine's cores), the model
# fitted on N = 2 predicts the sweep within a factor of 2 at every message size (N = 2 itself included: a
# two-parameter model that misses its own data by more is no model). Where N exceeds the cores the run is
# **oversubscribed**: a ring step may wait for its next process to be scheduled, time that no latency fitted on
# 2 processes contains, so there the model is expected to *leave* the factor-2 band. Each N is scored against
# what it is expected to do on this machine, and the verdict says which N tested the model out of sample.

# %%
def sweep_of(result):
    """(bytes, median seconds) of rank 0's all-reduce sweep: the statistic the fit and every score use."""
    return cu.distributed.comms.allreduce_sweep(result.records[0])


sweeps = {2: sweep_of(run)}
for n in (3, 4):
    extra = cu.distributed.launch("ddp_train.py", nprocs=n, timeout=180, echo=False, progress=False,
                                  args=["--phases", "allreduce", "--repeats", 4, "--min-bytes", 2**12,
                                        "--max-bytes", WORKER_ARGS[-1]])
    sweeps[n] = sweep_of(extra)
fit = cu.distributed.fit_allreduce(*sweeps[2], n=2)
cu.distributed.allreduce_fit_plot(sweeps, fit)

# %%
ratio = {n: cu.distributed.score(fit, *sweeps[n], n) for n in sweeps}  # measured / model at each size
for n, r in ratio.items():
    print(f"N={n}{' (fitted)' if n == 2 else ''}: measured / model between {r.min():.2f} and {r.max():.2f}")
in_band = {n: bool(0.5 <= r.min() and r.max() <= 2) for n, r in ratio.items()}
expected = {n: n <= CORES for n in sweeps}  # inside the band only where every process has a core
in_sample_ok = in_band[2]
out_of_sample = [n for n in expected if n > 2 and expected[n]]  # the N that test the model where it should hold
left = [n for n in expected if n > 2 and not in_band[n]]  # out of the band
surprises = [n for n in expected if in_band[n] != expected[n]]
cu.display.verdict(not surprises,
                   "; ".join(f"N={n} ({'fitted, ' if n == 2 else ''}{'a core each' if expected[n] else 'oversubscribed'}"
                             f" on {CORES} cores, expected {'inside' if expected[n] else 'outside'}): "
                             f"{ratio[n].min():.2f}-{ratio[n].max():.2f}x, {'inside' if in_band[n] else 'outside'}"
                             for n in expected)
                   + ("" if out_of_sample else f"; with {CORES} cores no N > 2 has a core per process, so the "
                      "model's out-of-sample claim is untested on this machine"),
                   " and ".join(f"N={n} {'stayed inside' if in_band[n] else 'left'} the factor-2 band"
                                for n in surprises) + ", against its expectation (the next cell says what that means)")

# %%
Markdown(
    f"Fitted on 2 processes: **β = {fit.bandwidth / 1e9:.2f} GB/s** and **α = {fit.latency * 1e6:.1f} µs** per "
    f"ring step (gloo, TCP over the loopback interface, this machine). In sample the measurements are "
    f"{ratio[2].min():.2f}-{ratio[2].max():.2f}x the model"
    + (", a fair fit. " if in_sample_ok else ": even on N = 2 the two-parameter model misses some sizes by more "
       "than 2x; whether scheduling noise or gloo switching algorithms with the size is not established by this "
       "run. ")
    + ("Out of sample: " + "; ".join(f"N = {n} {ratio[n].min():.2f}-{ratio[n].max():.2f}x" for n in expected if n > 2)
       + ". ")
    + (f"With {CORES} cores here, {', '.join(f'N = {n}' for n in expected if not expected[n])} "
       f"{'was' if sum(not e for e in expected.values()) == 1 else 'were'} oversubscribed. "
       + ("" if out_of_sample else "No larger N had a core per process, so on this machine the model was scored "
          "only where it should fail; a machine with more cores tests it where it should hold. ")
       if not all(expected.values()) else f"Each of the {max(sweeps)} processes had a core of its own. ")
    + (f"{' and '.join(f'N = {n}' for n in left if not expected[n])} left the band, as expected: a cost model "
       "fitted where every process has a core does not hold where processes take turns on the cores. "
       if any(not expected[n] for n in left) else "")
    + (f"{' and '.join(f'N = {n}' for n in expected if not expected[n] and in_band[n])} stayed inside although "
       "oversubscribed: gloo waits for its peers in blocking socket calls, which sleep and give the core away, "
       "so a ring whose processes mostly wait can share fewer cores than it has processes; why "
       + ("it held while " + " and ".join(f"N = {n}" for n in left) + " did not"
          if left else "the oversubscription cost so little")
       + " is not established by this run. " if any(not expected[n] and in_band[n] for n in expected) else "")
    + (f"{' and '.join(f'N = {n}' for n in left if expected[n])} had a core per process and still left the band: "
       "the ring's extra steps cost more than the latency fitted on 2 processes, or gloo picks another algorithm "
       "for more ranks; which, is not established by this run. " if any(expected[n] for n in left) else "")
    + "Notebook 06 fits the same model on its own two-node job, another launch at another moment of the "
    "machine: its α and β differ from these by what that job measured, so each notebook prices its collectives "
    "with its own fit. A cost model is only as good as the conditions it was fitted in: fit it where you will "
    "run, and check it on a case you did not fit."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### From this machine to real links
# This CPU's compute and the links of a GPU cluster never meet in one machine, so pairing them would predict
# nothing. To ask "when does the all-reduce exceed the compute?" for real links, the compute time per step
# has to be an **assumption**, stated as one. Assume each device computes its share of a step of the wide
# model (its fp32 gradient bytes printed in section 3) in **1 ms**, a GPU-class time for a per-device batch of
# a few thousand samples; the link numbers are typical data-sheet values. Everything below is computed from
# the formula, not measured.

# %%
ASSUMED_COMPUTE = 1e-3  # seconds per step per device: an assumption about a GPU, not a measurement
LINKS = {"10 GbE (1.25 GB/s, 20 µs)": (1.25e9, 20e-6), "100 Gb InfiniBand (12.5 GB/s, 5 µs)": (12.5e9, 5e-6),
         "NVLink-class (300 GB/s, 2 µs)": (300e9, 2e-6)}
wide_bytes = 4 * timings["wide"]["params"]
cu.distributed.scaling_plot(wide_bytes, ASSUMED_COMPUTE, LINKS, devices=[2, 8, 64, 512],
                            compute_label="assumed GPU compute per step")

# %%
# NBVAL_CHECK_OUTPUT
bw_growth = cu.distributed.ring_allreduce_time(1e8, 512, 1e10, 0) / cu.distributed.ring_allreduce_time(1e8, 8, 1e10, 0)
lat_growth = cu.distributed.ring_allreduce_time(0, 512, 1e10, 1e-6) / cu.distributed.ring_allreduce_time(0, 8, 1e10, 1e-6)
print(f"computed: from 8 to 512 devices the bandwidth term grows {bw_growth:.2f}x, the latency term {lat_growth:.0f}x")

# %%
rows = "\n".join(
    f"| {name} | " + " | ".join(f"{cu.distributed.ring_allreduce_time(wide_bytes, n, bw, lat) * 1e3:.2f} ms"
                                for n in (8, 64, 512)) + " |" for name, (bw, lat) in LINKS.items())
own = fit.time(wide_bytes, 2)
Markdown(
    f"Computed all-reduce of the wide model's {wide_bytes / 1e6:.1f} MB gradient, against the assumed "
    f"{ASSUMED_COMPUTE * 1e3:.0f} ms of compute per step:\n\n| link | 8 devices | 64 devices | 512 devices |\n"
    f"|---|---|---|---|\n{rows}\n\nThe bandwidth term hardly grows with N; the latency term grows linearly, so "
    "small messages on many devices are latency-bound. Where the all-reduce exceeds the compute, adding devices "
    "(at a fixed per-device batch) mostly adds waiting, unless the all-reduce overlaps with backward (buckets) "
    "or the per-device batch grows. On this machine, with its own measured compute, the fitted model gives "
    f"{own * 1e3:.2f} ms (computed) for that all-reduce on 2 processes, against {med['wide']['allreduce'] * 1e3:.2f} ms "
    f"measured for it in section 3 (medians both; measured / model {med['wide']['allreduce'] / own:.2f}x"
    + (", within the factor 2 the fit was held to" if 0.5 <= med['wide']['allreduce'] / own <= 2 else
       ", outside the factor 2 the fit was held to: the same job's all-reduce of this size, timed alone at another "
       "moment than the sweep, disagrees with the sweep's fit; why is not established by this run")
    + f") and {med['wide']['compute'] * 1e3:.1f} ms of one-thread compute, all on the same machine. The same "
    "arithmetic is the seed's pitfall: a model that fits on one card gains nothing from a slow network."
)

# %% [markdown] course={"lead": false, "minutes": 10} slideshow={"slide_type": "slide"}
# ## 6. JAX: a mesh, shardings in the types, and `shard_map`
#
# JAX needs no launcher on one host. A **mesh** names the devices along axes; a `PartitionSpec` (`jax.P`)
# says which array dimension is split over which axis; `jax.jit` compiles one program for all devices and
# inserts the collectives. A mesh axis has one of three types, and the pinned JAX makes **Explicit** the
# default for `jax.make_mesh`:
#
# - **Auto**: the sharding is not part of an array's type; the compiler (GSPMD/Shardy) propagates it and may
#   pick layouts you did not ask for.
# - **Explicit**: the sharding is part of the type, visible with `jax.typeof` (`float32[256@data,32]`), and
#   every operation's output sharding follows rules you can read; where it would be ambiguous, JAX asks you
#   to say it (`out_sharding=`) or to move data yourself with `jax.reshard`.
# - **Manual** (`jax.shard_map`): you write what *one* device runs on its shard, and the communication
#   (`psum`, `pmean`, ...) is explicit.
#
# `jax.set_mesh(mesh)` makes a mesh the current one, so `jax.device_put(x, jax.P("data"))` needs no
# `NamedSharding`. The devices are the simulated CPU devices requested at the top (a Colab TPU: its cores).
# `pmap` is the legacy API: do not start new code with it.
#
# **Prediction:** the parameters stay replicated and the batch split over `data` (both visible in the types);
# the compiled step contains an all-reduce (XLA combines all gradients into one all-reduce, a tuple of
# arrays); the result equals the single-device step.

# %%
if cu.notebook.needs("jax"):
    import jax
    import jax.numpy as jnp
    from jax import lax

    mesh = jax.make_mesh((len(jax.devices()),), ("data",))
    jax.set_mesh(mesh)
    params = cu.models.jax_mlp_params()
    x_np, y_np = cu.data.classification(cu.env.pick(ci=256, cpu=1024), seed=0)
    p_s = jax.device_put(params, jax.P())  # replicated: every device holds all of it
    x_s, y_s = jax.device_put(x_np, jax.P("data")), jax.device_put(y_np, jax.P("data"))
    print(mesh)
    print("batch:", jax.typeof(x_s), "| first weight:", jax.typeof(p_s[0]["w"]))
    print("gathered with jax.reshard(x_s, jax.P()):", jax.typeof(jax.reshard(x_s, jax.P())))


# %%
def loss_fn(params, x, y):
    logits = cu.models.jax_mlp_apply(params, x)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


if HAVE_JAX:
    @jax.jit
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss

    one_device = train_step(params, jnp.asarray(x_np), jnp.asarray(y_np))
    sharded = train_step(p_s, x_s, y_s)
    hlo = train_step.lower(p_s, x_s, y_s).compile().as_text()
    print("updated weight:", jax.typeof(sharded[0][0]["w"]), "| loss:", jax.typeof(sharded[1]))
    print("\n".join(line.strip()[:150] for line in hlo.splitlines() if " all-reduce(" in line))

# %%
if HAVE_JAX:
    jax_times = {
        "jax, one device": cu.timing.benchmark(train_step, params, jnp.asarray(x_np), jnp.asarray(y_np), label="one"),
        f"jax, batch sharded over {len(jax.devices())} devices": cu.timing.benchmark(train_step, p_s, x_s, y_s, label="sh"),
    }
    display(cu.plotting.time_bars(jax_times, title="JAX train step: one device vs a sharded batch"))

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_JAX:
    jax_diff = max(jax.tree.leaves(jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a - b))), one_device[0], sharded[0])))
    replicated_out = jax.typeof(sharded[0][0]["w"]).sharding.spec == jax.P(None, None)
    print("devices in the mesh == simulated devices:", len(jax.devices()) == N_SIM or cu.env.accelerator() != "cpu")
    print("all-reduce in the compiled sharded step:", " all-reduce(" in hlo)
    print("updated weights replicated (no @data in their type):", replicated_out)
    print("sharded step == single-device step (max abs diff < 1e-6):", jax_diff < 1e-6)

# %%
if HAVE_JAX:
    n_allreduce = sum(" all-reduce(" in line for line in hlo.splitlines())
    display(cu.display.verdict(n_allreduce >= 1 and replicated_out and jax_diff < 1e-6,
                               f"{n_allreduce} all-reduce(s) in the HLO, weights replicated, max difference {jax_diff:.1e}",
                               "the sharded step differs from one device or has no all-reduce"))
    display(Markdown(
        f"The batch's type carries its sharding (`@data`), the weights' does not: they are replicated, and so "
        f"are the updated weights, because XLA summed the per-device gradients with **{n_allreduce}** "
        + ("all-reduce, one tuple holding every gradient. That is one operation, not one buffer: DDP copies its "
           "gradients into one flat bucket buffer and all-reduces that, while XLA:CPU's tuple all-reduce still "
           "handles each operand on its own (notebook 06 times the same gradient bytes as one array and as the "
           "step's separate arrays). " if n_allreduce == 1 else "all-reduces. ")
        + f"The result matches one device within {jax_diff:.1e}: the compiler inserted the communication that "
        "DDP's hooks perform, from the shardings alone."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### `shard_map`: write the per-device program yourself, and mind the gradient trap
# With `jax.shard_map` (Manual mode) you write what *one* device runs on its shard. Below, the loss is the
# `psum` of the per-shard sums divided by the global batch: the gradient of that is the true gradient. The
# trap: `shard_map` checks which values vary across devices (`check_vma=True`, the default), and under that
# check the gradient with respect to a **replicated** input comes back already summed over devices (the
# transpose of "replicate" is "sum"), so the tempting `pmean(grad(local_loss))` is N times too large.
#
# **Prediction:** `psum` loss -> equal to the single-device gradient; `pmean` of the gradient -> N times it.

# %%
def grad_psum_loss(params, x, y):
    """Per-device program: explicit psum of the shard's summed loss over the global batch."""
    global_batch = lax.psum(x.shape[0], "data")

    def loss(p):
        logits = cu.models.jax_mlp_apply(p, x)
        nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)
        return lax.psum(jnp.sum(nll), "data") / global_batch

    return jax.grad(loss)(params)


def grad_then_pmean(params, x, y):
    """The trap: the local gradient is already summed over devices; pmean does not undo that."""
    return lax.pmean(jax.grad(loss_fn)(params, x, y), "data")


if HAVE_JAX:
    specs = {"in_specs": (jax.P(), jax.P("data"), jax.P("data")), "out_specs": jax.P(), "check_vma": True}
    g_true = jax.jit(jax.grad(loss_fn))(params, jnp.asarray(x_np), jnp.asarray(y_np))
    g_psum = jax.jit(jax.shard_map(grad_psum_loss, **specs))(p_s, x_s, y_s)
    g_trap = jax.jit(jax.shard_map(grad_then_pmean, **specs))(p_s, x_s, y_s)
    trap_ratio = float(jnp.sum(g_trap[0]["w"] * g_true[0]["w"]) / jnp.sum(g_true[0]["w"] ** 2))

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_JAX:
    psum_diff = max(jax.tree.leaves(jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a - b))), g_true, g_psum)))
    print("shard_map + psum loss == single-device gradient (max abs diff < 1e-6):", psum_diff < 1e-6)
    print("pmean(grad) is (number of devices) x the true gradient:", abs(trap_ratio - len(jax.devices())) < 1e-3)

# %%
if HAVE_JAX:
    display(cu.display.verdict(psum_diff < 1e-6 and abs(trap_ratio - len(jax.devices())) < 1e-3,
                               f"psum loss within {psum_diff:.1e} of the true gradient; pmean(grad) = "
                               f"{trap_ratio:.2f}x it on {len(jax.devices())} devices",
                               "this JAX version treats the replicated input's gradient differently"))
    display(Markdown(
        f"On {len(jax.devices())} devices the sharded step ran in {jax_times[list(jax_times)[1]].median * 1e3:.2f} ms "
        f"against {jax_times['jax, one device'].median * 1e3:.2f} ms on one device: simulated devices are threads "
        f"sharing the same {CORES} cores, so this shows correctness and the compiled collective, not speed. "
        f"The trap's gradient was **{trap_ratio:.2f}x** the true one"
        + (", exactly the device count: " if abs(trap_ratio - len(jax.devices())) < 1e-3 else ", not the device count: ")
        + "always check a sharded gradient against a single-device run."))

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
# ## 7. TensorFlow: `MirroredStrategy` over logical devices
#
# `tf.distribute.MirroredStrategy` replicates a Keras model over the devices it is given, splits each global
# batch between the replicas and all-reduces the gradients; `model.fit` needs no other change. Here the
# devices are the two logical CPUs configured at the top (on a machine with GPUs, pass nothing and it uses
# them all). The batches come from `tf.data.Dataset.from_tensor_slices`, a tf.data dataset that the strategy
# splits between the replicas. During these fits TensorFlow's C++ layer logs two notices about its own
# per-device iterators (a generator dataset it cannot optimise, a cancelled read at the end of each epoch);
# they show only in a process that imported JAX before TensorFlow, as this one did, and
# `cu.env.silenced_stderr()` drops them in that cell (Python warnings and errors still show).
# **Prediction:** the same 2 epochs of SGD give the same weights as without a strategy.

# %%
if cu.notebook.needs("tensorflow"):
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


# %%
if HAVE_TF:
    mirrored = tf.distribute.MirroredStrategy([d.name for d in tf_devices])
    mirrored_one = tf.distribute.MirroredStrategy([tf_devices[0].name])  # the strategy's machinery, one replica
    with cu.env.silenced_stderr():  # TF's C++ notices about its per-device iterators (see above)
        plain_model, mirrored_model = keras_fit(tf.distribute.get_strategy()), keras_fit(mirrored)
        tf_diff = max(float(np.max(np.abs(a - b))) for a, b in zip(plain_model.get_weights(),
                                                                   mirrored_model.get_weights()))
        fit_once = {"keras fit, no strategy": plain_model,
                    "keras fit, MirroredStrategy x 1": keras_fit(mirrored_one),
                    f"keras fit, MirroredStrategy x {mirrored.num_replicas_in_sync}": mirrored_model}
        tf_times = {label: cu.timing.benchmark(lambda m=m: m.fit(tf_batches, shuffle=False, verbose=0),
                                               min_time=0.3, min_repeats=3, max_repeats=5, label=label)
                    for label, m in fit_once.items()}  # (timing trains the models on: compared before it)
    display(cu.plotting.time_bars(tf_times, title="One Keras epoch (8 steps of 64)"))

# %%
# NBVAL_CHECK_OUTPUT
if HAVE_TF:
    print("replicas in sync:", mirrored.num_replicas_in_sync)
    print("MirroredStrategy weights == no strategy after 2 epochs (max abs diff < 1e-5):", tf_diff < 1e-5)

# %%
if HAVE_TF:
    plain_t, one_t, two_t = tf_times.values()
    tf_slow = two_t.median / plain_t.median
    display(cu.display.verdict(tf_diff < 1e-5, f"max weight difference {tf_diff:.1e} after 2 epochs",
                               "the replicas' update differs from the single-device one"))
    display(Markdown(
        f"{'Same' if tf_diff < 1e-5 else 'Different'} weights (max difference {tf_diff:.1e}), and an epoch "
        f"**{tf_slow:.1f}x** the time without a strategy "
        f"({fmt(two_t.median)} against {fmt(plain_t.median)}, medians). The same strategy over one device, with "
        f"nothing to all-reduce across devices, took {fmt(one_t.median)}: "
        + ("the strategy's own machinery (distributed datasets, per-replica functions) is "
           f"{(one_t.median - plain_t.median) / (two_t.median - plain_t.median):.0%} of the slowdown, beyond the "
           "quartiles, " if apart(plain_t, one_t) and two_t.median > plain_t.median else
           "within the noise of no strategy, so the machinery alone explains none of the slowdown, ")
        + ("and the second replica added the rest, beyond the quartiles. " if apart(one_t, two_t) else
           "and the second replica added nothing this run's noise can show. ")
        + "What in the second replica costs that time (its all-reduce, splitting each batch, two replicas "
        f"computing on the same {CORES} cores) is not established by this run; two logical devices on one CPU add no "
        "computing power. "
        "On a Cloud TPU VM with TensorFlow installed (Colab TPU runtimes no longer ship it) the same code runs with "
        "`TPUStrategy` (`TPUClusterResolver`, `tf.tpu.experimental.initialize_tpu_system`, then build and compile "
        "inside `strategy.scope()`); not run in this course."))

# %% [markdown] course={"lead": false, "minutes": 2} slideshow={"slide_type": "slide"}
# ## 8. Beyond one machine
#
# The same three programs scale out with a launcher per node and a rendezvous address (every node runs the
# same command; notebook 06 runs it with two "nodes" on this machine):
#
# ```bash
# # PyTorch: on each of 4 nodes with 8 GPUs (c10d rendezvous on node 0; ddp_train picks NCCL and cuda:LOCAL_RANK,
# # and each rank writes its records and arrays into --out, ./ddp_out by default, never the working directory)
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
# Between nodes the link is the network (section 5's 10-100 Gb rows), so the all-reduce grows expensive.
# And data parallelism keeps a **full copy** of weights, gradients and optimizer state on every device.
# ZeRO / FSDP shard those instead: stage 1 the optimizer state, stage 2 also the gradients, stage 3 (FSDP)
# also the weights. In the ZeRO paper's scheme stages 1 and 2 move the **same volume** as DDP (a
# reduce-scatter of the gradients and an all-gather of the updated weights instead of one all-reduce); only
# stage 3 gathers the weights again for the backward pass, about **1.5x** DDP's traffic. Implementations
# differ: PyTorch's `ZeroRedundancyOptimizer` (ZeRO-1) keeps DDP's full all-reduce of the gradients and then
# broadcasts each rank's updated shard, so it moves *more* than DDP; notebook 06 counts its collectives and
# bytes against DDP's. With mixed-precision Adam (16 bytes per parameter) a 7B
# model needs 112 GB per device without sharding: more than an 80 GB A100/H100 holds, less than an H200
# (141 GB), a B200 (180-192 GB of HBM3e, depending on the system) or an MI300X (192 GB), before any activations
# (memory sizes from the vendors' datasheets, not measured here). The table is computed from these formulas.

# %%
# NBVAL_CHECK_OUTPUT
PARAMS = 7e9
cu.display.table(["devices", *(f"ZeRO-{s} memory (GB)" for s in range(4)), "ZeRO-3 traffic / DDP"],
                 [(n, *(f"{cu.distributed.memory_per_device(PARAMS, n, s) / 1e9:.1f}" for s in range(4)),
                   f"{cu.distributed.zero_traffic(2 * PARAMS, n, 3) / cu.distributed.zero_traffic(2 * PARAMS, n, 0):.2f}"
                   if n > 1 else "-") for n in (1, 8, 64)],
                 title="7B parameters, mixed-precision Adam: model state per device and bf16 traffic (computed)")

# %% [markdown] course={"lead": false, "minutes": 2} slideshow={"slide_type": "slide"}
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

# %% [markdown] course={"lead": true, "minutes": 2} slideshow={"slide_type": "slide"}
# ## Summary

# %%
rows = [
    ("DDP ranks' max weight difference", max(rank_diff.values()), "", "2 ranks, 20 steps: bit-identical"),
    ("DDP vs one process, max weight difference", max(single_diff.values()), "", "float rounding only"),
    ("tiny model: DDP step, 2 ranks", med["tiny"]["ddp"] * 1e3, "ms", f"{timings['tiny']['params']:,} parameters"),
    ("tiny model: one process, whole batch", med["tiny"]["single"] * 1e3, "ms",
     "1 thread, rank 0 in the job: the speed-ups' baseline"),
    ("tiny model: communication share", share["tiny"] * 100, "%", "seed: multi-device can be slower"),
    ("tiny model: speed-up of 2 ranks", speedup["tiny"], "x", "vs 1 process, 1 thread; < 1 means slower"),
    ("wide model: speed-up of 2 ranks", speedup["wide"], "x", f"{timings['wide']['params']:,} parameters"),
    ("rank's half-batch compute / whole-batch step", half_ratio["tiny"], "x", "tiny model; 0.5 if compute halved"),
    ("half batch alone / whole batch", med["tiny"]["single_half"] / med["tiny"]["single"], "x",
     "tiny model, 1 process: the per-operator cost"),
    ("whole-batch step, all threads / 1 thread", thread_ratio["tiny"], "x",
     f"tiny model, measured in this kernel, {ALL} threads, {CORES} cores; "
     + ("a fresh process agreed" if cu.distributed.findings.fresh_agrees(
         threads["tiny"][1].measurement, threads["tiny"][ALL].measurement, fresh["default"]["tiny"][ALL].measurement)
        else "a fresh process did not agree")),
    ("no_sync: step time saved", saved * 100, "%", "4 micro-batches, 1 all-reduce instead of 4"),
    ("fitted all-reduce bandwidth", fit.bandwidth / 1e9, "GB/s", "gloo, 2 processes, this machine"),
    ("fitted all-reduce latency", fit.latency * 1e6, "µs", "per ring step"),
    ("N=4 all-reduce, worst measured / model", float(max(ratio[4].max(), 1 / ratio[4].min())), "x",
     f"out of sample, {CORES} cores" + (" (oversubscribed)" if 4 > CORES else "")),
    ("torchrun launch, all phases", run.seconds, "s", f"{overhead / run.seconds:.0%} start-up and shut-down"),
]
if HAVE_JAX:
    rows.append(("JAX sharded step / one device", jax_times[list(jax_times)[1]].median
                 / jax_times["jax, one device"].median, "x", f"{len(jax.devices())} simulated devices"))
if HAVE_TF:
    rows.append(("TF MirroredStrategy epoch / no strategy", tf_slow, "x", "2 logical CPUs"))
    rows.append(("TF MirroredStrategy x 1 epoch / no strategy", one_t.median / plain_t.median, "x",
                 "the strategy's machinery, one replica"))
cu.notebook.summary_table("05_data_parallel", rows)

# %% [markdown]
# **What to remember**
# - Data parallelism is large-batch SGD spread out: prove it (ranks identical, equal to one process on the
#   whole batch) before you trust a speed-up, in every framework, and check sharded gradients against one device.
# - Each step pays an all-reduce of the whole gradient, ~2(N-1)/N x bytes / bandwidth plus 2(N-1) latencies,
#   and hidden costs: per-operator overhead that does not shrink with the batch, and processes sharing cores.
#   Buckets (overlap) and `no_sync` accumulation (fewer syncs) are the first remedies.
# - Fit a cost model where you will run, check it on a case you did not fit, and state what you assume.
#
# **Next:** [06 · beyond one machine](06_beyond_one_machine.ipynb): two torchrun "nodes", multi-process JAX
# and TensorFlow, ZeRO and FSDP with their memory measured, and an elastic restart.

# %%
print(cu.notebook.last_verified())
