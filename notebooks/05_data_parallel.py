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
# - predict, with the ring all-reduce cost model fitted to your own measurements, when more devices make
#   training slower;
# - write the same data-parallel step in JAX (`jax.jit` + `NamedSharding`, `jax.shard_map`) and TensorFlow
#   (`MirroredStrategy`), and know the commands for going multi-node.
#
# **Minutes:** about 5 on a laptop, 60 in a workshop. **Accelerators:** everything runs on a CPU: DDP uses
# processes and gloo, JAX simulated CPU devices, TensorFlow logical CPU devices. With several GPUs DDP uses
# NCCL and JAX/TF use the GPUs; on a Colab TPU JAX uses the TPU cores.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/main/notebooks/05_data_parallel.ipynb)

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@main"], check=True)

# %% slideshow={"slide_type": "skip"}
import course_utils as cu

# JAX reads its CPU device count once, when it starts: ask for several devices BEFORE anything imports jax
# (setup_notebook's report lists JAX's devices, so it comes second).
N_SIM = 4
cu.distributed.simulate_devices(N_SIM)
cu.env.setup_notebook()

# %% slideshow={"slide_type": "skip"}
import os

import numpy as np
import psutil
import torch
import torch.nn.functional as F
from IPython.display import Markdown

# TensorFlow, likewise, splits its CPU into logical devices only before its runtime starts.
tf_devices = cu.distributed.tf_logical_cpus(2)
CORES = os.cpu_count() or 1
WORKER_ARGS = cu.env.pick(ci=["--repeats", 8, "--wide-batch", 256, "--max-bytes", 2**22],
                          cpu=["--repeats", 20, "--wide-batch", 512, "--max-bytes", 2**24])
print(f"{CORES} cores; torch sees {torch.cuda.device_count()} GPU(s); "
      f"TensorFlow logical CPUs: {len(tf_devices)}; worker arguments: {WORKER_ARGS}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The idea in one picture
#
# Every device holds **the same weights**. The global batch of B samples is cut into N shards; each device
# computes the gradient of the mean loss on its shard; an **all-reduce** replaces every device's gradient by
# the mean over devices; every device applies the same update, so the weights stay identical without ever
# being sent. The mean of N shard-mean gradients is the gradient of the mean over all B samples (equal
# shards), so this is *exactly* large-batch SGD, only spread out.
#
# **Prediction:** the only new cost is the all-reduce: every step moves about 2 x (gradient bytes) per device,
# whatever the batch size. Large batches and small models make it cheap; small batches and big models do not.

# %%
cu.distributed.diagram()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Proof, not assertion: two DDP ranks on two processes
#
# `mp.spawn` of a function defined in a notebook fails (the child cannot import `__main__`), so the course
# runs **real files** with the **real launcher**: `cu.distributed.launch` starts `torchrun` as a subprocess
# on 127.0.0.1 with a free port, streams the ranks' output into the cell, collects what the workers record,
# and kills every process it started if anything goes wrong (a failing rank, a timeout, or you interrupting
# the kernel). This is the worker; read `proof` and `step` first (the other phases come later):

# %% slideshow={"slide_type": "subslide"}
cu.distributed.show_worker("ddp_train.py")

# %% [markdown] slideshow={"slide_type": "subslide"}
# The command that `launch` runs (`--tee=3` copies each rank's output to the console with a `[defaultN]:`
# prefix, which is how the cell knows which rank said what):

# %%
print(" ".join(cu.distributed.torchrun_command(cu.distributed.worker_path("ddp_train.py"), 2, WORKER_ARGS,
                                               port=29500, log_dir="<tmp>/logs")))

# %% [markdown] slideshow={"slide_type": "subslide"}
# One launch runs every phase of this notebook (each `torchrun` start costs seconds: imports and rendezvous).
# **Prediction:** the two ranks' weights are *bit-identical* at every checkpoint (both apply the same averaged
# gradient to the same weights), and equal to one process training on the whole batch up to float rounding
# (the sum is taken in a different order).

# %%
run = cu.distributed.launch("ddp_train.py", nprocs=2, timeout=240, args=WORKER_ARGS)
run


# %%
def train_single_process(steps=20, batch=64, every=5, lr=0.1):
    """The reference: one process, the whole global batch, the same model, data and update as the worker."""
    x_all, y_all = cu.data.classification(steps * batch, seed=0)
    model = cu.models.torch_mlp()
    snapshots = {}
    for s in range(steps):
        x, y = (torch.from_numpy(a[s * batch:(s + 1) * batch]) for a in (x_all, y_all))
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
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
assert all(d == 0.0 for d in rank_diff.values()), rank_diff
assert all(d < 1e-5 for d in single_diff.values()), single_diff
print("checkpoints:", list(single))
print("rank 0 and rank 1 bit-identical at every checkpoint:", all(d == 0.0 for d in rank_diff.values()))
print("DDP equals one process on the whole batch (max abs diff < 1e-5):", all(d < 1e-5 for d in single_diff.values()))

# %%
Markdown(
    f"After {len(single) * 5} steps the two ranks hold **bit-identical** weights, and they differ from the "
    f"single-process run by at most **{max(single_diff.values()):.1e}** (float32 rounding: the mean over 64 "
    f"samples is summed as two halves of 32, then averaged). The launch took {run.seconds:.1f} s of wall time "
    "for all phases; most of a short job's time is process start-up, which is why the course launches rarely."
)

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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Where the time goes: compute, communication, buckets
#
# The worker timed, on both ranks at once: the DDP step; the same step inside `no_sync()` (DDP skips the
# all-reduce: pure compute); an all-reduce of a buffer as large as the gradient; and rank 0 alone running the
# whole global batch without DDP (the one-device baseline). Two models: the course's **tiny** MLP (7k
# parameters, 64 samples) and a **wide** one (1.1M parameters).
#
# **Prediction:** for the tiny model the all-reduce (fixed latency) costs more than its microsecond-scale
# compute, so communication dominates; the wide model's compute grows with the batch and hides more of it.

# %%
timings = {name: run.record(f"timing_{name}") for name in ("tiny", "wide")}
med = {name: {k: float(np.median(r[k])) for k in ("ddp", "compute", "allreduce", "single")}
       for name, r in timings.items()}
cu.distributed.breakdown_plot({
    f"{n} MLP ({timings[n]['params']:,} parameters, batch {timings[n]['global_batch']})": {
        "1 process, whole batch": (m["single"], 0.0),
        "2 DDP ranks, half each": (m["compute"], max(m["ddp"] - m["compute"], 0.0)),
    } for n, m in med.items()})

# %%
# NBVAL_CHECK_OUTPUT
for name, r in timings.items():
    print(f"{name}: {r['params']:,} parameters -> {4 * r['params']:,} gradient bytes all-reduced per step")

# %%
share = {n: max(m["ddp"] - m["compute"], 0.0) / m["ddp"] for n, m in med.items()}
speedup = {n: m["single"] / m["ddp"] for n, m in med.items()}
Markdown(
    f"Tiny model: a DDP step takes **{med['tiny']['ddp'] * 1e3:.2f} ms**, of which compute is "
    f"{med['tiny']['compute'] * 1e3:.2f} ms, so communication is **{share['tiny']:.0%}** of the step. An "
    f"all-reduce of its {4 * timings['tiny']['params'] / 1e3:.0f} KB alone takes "
    f"{med['tiny']['allreduce'] * 1e3:.2f} ms; the rest of the exposed time is synchronisation: a step ends only "
    "when the slower rank has sent its gradient, DDP copies gradients into its buckets and waits on gloo's "
    "thread, and on shared cores a rank often waits to be scheduled. "
    f"Wide model: step {med['wide']['ddp'] * 1e3:.1f} ms, compute "
    f"{med['wide']['compute'] * 1e3:.1f} ms, communication **{share['wide']:.0%}**. Against one process doing "
    f"the whole batch, two ranks give a speed-up of **{speedup['tiny']:.2f}x** (tiny) and "
    f"**{speedup['wide']:.2f}x** (wide), i.e. scaling efficiency {speedup['tiny'] / 2:.0%} and "
    f"{speedup['wide'] / 2:.0%}. On this {CORES}-core machine the two ranks also share the cores with "
    "everything else, so the ideal 2x is out of reach even before communication."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Gradient buckets and overlap
# DDP does not wait for the whole backward pass: it groups parameters into **buckets** of about
# `bucket_cap_mb` and all-reduces a bucket as soon as all its gradients exist, while backward continues
# on earlier layers (overlap). Small buckets start communicating earlier but pay the per-call latency more
# often; one huge bucket waits for the end of backward. The worker trained a deeper MLP (9 layers of 256) with
# several caps and counted the all-reduce calls with a communication hook.
#
# **Prediction:** the bucket count falls as the cap grows; step time has a shallow optimum in between. (On a
# shared 2-core CPU, gloo's communication competes with compute for cores, so overlap gains little here; on
# GPUs NCCL runs on its own streams and overlap matters.)

# %%
bucket_runs = [r for r in run.records[0] if r["kind"] == "bucket"]
cu.plotting.time_bars({f"bucket_cap_mb={r['cap_mb']:g} ({r['buckets']} buckets)":
                       cu.distributed.measurement(f"cap {r['cap_mb']:g}", r["times"]) for r in bucket_runs},
                      title="DDP step time of the deep MLP against bucket size")

# %%
# NBVAL_CHECK_OUTPUT
counts = [r["buckets"] for r in bucket_runs]
assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
print("bucket caps (MB):", [r["cap_mb"] for r in bucket_runs])
print("all-reduce calls per step:", counts)

# %%
bucket_ms = {r["cap_mb"]: cu.distributed.measurement("", r["times"]) for r in bucket_runs}
fastest = min(bucket_ms, key=lambda c: bucket_ms[c].median)
spread = max(m.median for m in bucket_ms.values()) - min(m.median for m in bucket_ms.values())
noise = max(m.iqr for m in bucket_ms.values())
Markdown(
    f"With a {bucket_runs[0]['cap_mb']:g} MB cap DDP issued **{bucket_runs[0]['buckets']}** all-reduces per step, "
    f"with {bucket_runs[-1]['cap_mb']:g} MB **{bucket_runs[-1]['buckets']}**. The fastest setting here was "
    f"`bucket_cap_mb={fastest:g}` at {bucket_ms[fastest].median * 1e3:.2f} ms; the medians span "
    f"{spread * 1e3:.2f} ms while one setting's quartile range reaches {noise * 1e3:.2f} ms, so "
    + ("the differences are within this machine's noise. " if spread < noise else "the differences exceed the noise. ")
    + "Tune buckets on the hardware you train on: GPUs overlap NCCL with backward far better than gloo on 2 cores."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Gradient accumulation with `no_sync()`: fewer all-reduces
#
# The seed article asks: *"would gradient accumulation reduce the synchronisation frequency?"* With K
# micro-batches per update, a naive loop all-reduces after every micro-batch. Inside `model.no_sync()` DDP
# only accumulates locally; the last micro-batch, outside it, all-reduces the accumulated sum once.
#
# **Prediction:** K = 4 micro-batches cost 4 all-reduce calls naively and 1 with `no_sync`; the gradient is
# the same, and equal to the gradient of one large batch of K x 2 ranks x 32 samples.

# %%
naive, lazy = run.record("accum_every_micro_batch"), run.record("accum_no_sync")
accum_times = {"sync every micro-batch": cu.distributed.measurement("every", naive["times"]),
               "no_sync, one all-reduce": cu.distributed.measurement("no_sync", lazy["times"])}
cu.plotting.time_bars(accum_times, title="4 micro-batches on 2 ranks: time per optimizer step")

# %%
# NBVAL_CHECK_OUTPUT
x_big, y_big = cu.data.classification(4 * 2 * 32, seed=1)  # the worker's data: K x world x micro-batch
big = cu.models.torch_mlp()
F.cross_entropy(big(torch.from_numpy(x_big)), torch.from_numpy(y_big)).backward()
big_grad = torch.cat([p.grad.flatten() for p in big.parameters()]).numpy()
grads = run.arrays["accum"]
accum_diff = max(float(np.max(np.abs(grads[r]["no_sync"] - big_grad))) for r in grads)
assert naive["allreduce_calls"] == 4 and lazy["allreduce_calls"] == 1
assert accum_diff < 1e-6 and np.array_equal(grads[0]["no_sync"], grads[1]["no_sync"])
print("all-reduce calls per optimizer step: every micro-batch", naive["allreduce_calls"], "| no_sync", lazy["allreduce_calls"])
print("no_sync gradient == large-batch gradient (max abs diff < 1e-6):", accum_diff < 1e-6)
print("ranks hold identical accumulated gradients:", np.array_equal(grads[0]["no_sync"], grads[1]["no_sync"]))

# %%
saved = 1 - accum_times["no_sync, one all-reduce"].median / accum_times["sync every micro-batch"].median
Markdown(
    f"Syncing every micro-batch took **{accum_times['sync every micro-batch'].median * 1e3:.2f} ms** per update, "
    f"`no_sync` **{accum_times['no_sync, one all-reduce'].median * 1e3:.2f} ms** ({saved:.0%} less), with "
    f"3 of 4 all-reduces gone and the gradient unchanged (max difference to the large batch {accum_diff:.1e}). "
    "So the article's suggestion holds, with a condition: it pays when communication is a large share of the "
    "step, as for this tiny model."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. When more devices are slower: the ring all-reduce cost model
#
# The seed article warns: *"multi-machine training can be slower than a single card when the model fits on
# one card"*. Section 3 measured it for the tiny model. To predict it elsewhere, model the all-reduce. In a
# ring of N devices each device sends and receives 2(N-1) chunks of bytes/N:
#
# $$T(N) = 2(N-1)\,\alpha + \frac{2(N-1)}{N}\,\frac{\text{bytes}}{\beta}$$
#
# with α the latency per step and β the link bandwidth. **Prediction:** the bandwidth term barely grows with
# N (it tends to 2 x bytes / β), but the latency term grows linearly, so small messages on many devices are
# latency-bound. We fit α and β to the all-reduce times measured on 2 processes.

# %%
sweep = [r for r in run.records[0] if r["kind"] == "allreduce"]
sizes_b = [r["nbytes"] for r in sweep]
# Lower quartile of the repeats: what the link can do, without the scheduling noise of a shared machine.
quick = [float(np.percentile(r["times"], 25)) for r in sweep]
fit = cu.distributed.fit_allreduce(sizes_b, quick, n=2)
cu.distributed.allreduce_fit_plot(sizes_b, quick, fit)

# %%
LINKS = {"10 GbE (1.25 GB/s, 20 µs)": (1.25e9, 20e-6), "100 Gb InfiniBand (12.5 GB/s, 5 µs)": (12.5e9, 5e-6),
         "NVLink-class (300 GB/s, 2 µs)": (300e9, 2e-6)}
wide_bytes = 4 * timings["wide"]["params"]
cu.distributed.scaling_plot(fit, wide_bytes, med["wide"]["compute"], LINKS, devices=[2, 8, 64, 512])

# %%
# NBVAL_CHECK_OUTPUT
assert fit.bandwidth > 0 and fit.latency >= 0
bw_growth = cu.distributed.ring_allreduce_time(1e8, 512, 1e10, 0) / cu.distributed.ring_allreduce_time(1e8, 8, 1e10, 0)
lat_growth = cu.distributed.ring_allreduce_time(0, 512, 1e10, 1e-6) / cu.distributed.ring_allreduce_time(0, 8, 1e10, 1e-6)
print("fitted bandwidth > 0 and latency >= 0:", fit.bandwidth > 0 and fit.latency >= 0)
print(f"from 8 to 512 devices the bandwidth term grows {bw_growth:.2f}x, the latency term {lat_growth:.0f}x")

# %%
rows = "\n".join(
    f"| {name} | " + " | ".join(f"{cu.distributed.ring_allreduce_time(wide_bytes, n, bw, lat) * 1e3:.2f} ms"
                                for n in (8, 64, 512)) + " |"
    for name, (bw, lat) in {"this machine (fit)": (fit.bandwidth, fit.latency), **LINKS}.items())
Markdown(
    f"The fit gives **β = {fit.bandwidth / 1e9:.2f} GB/s** and **α = {fit.latency * 1e6:.1f} µs** per ring step "
    f"for gloo between two processes on this machine (TCP over the loopback interface), fitted to the lower "
    f"quartile of each size's repeats; at the largest size measured the model says "
    f"{fit.time(sizes_b[-1], 2) * 1e3:.2f} ms, the measurement {quick[-1] * 1e3:.2f} ms. "
    f"Predicted all-reduce of the wide model's {wide_bytes / 1e6:.1f} MB gradient, against its measured compute "
    f"of {med['wide']['compute'] * 1e3:.1f} ms per step:\n\n| link | 8 devices | 64 devices | 512 devices |\n"
    f"|---|---|---|---|\n{rows}\n\nWhere the all-reduce exceeds the compute, adding devices (at a fixed "
    "per-device batch) mostly adds waiting, unless the all-reduce overlaps with backward (buckets) or the "
    "per-device batch grows. The same arithmetic is the seed's pitfall: a model that fits on one card gains "
    "nothing from a slow network."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. JAX: a sharded batch over a `Mesh`, and `shard_map` with an explicit `psum`
#
# JAX needs no launcher on one host: a `Mesh` names the devices, `NamedSharding` says how each array is
# laid out, and `jax.jit` compiles one program for all devices, inserting the all-reduce itself. Here the
# devices are the simulated CPU devices requested at the top (on a Colab TPU, the TPU cores; on GPUs, the
# GPUs). `pmap` is the legacy API: do not start new code with it.
#
# **Prediction:** the parameters are replicated and the batch split over the `data` axis; the compiled
# program contains an all-reduce (XLA may combine all gradients into one, as DDP's buckets do); the
# result equals the single-device step.

# %%
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((len(jax.devices()),), ("data",))
params = cu.models.jax_mlp_params()
x_np, y_np = cu.data.classification(cu.env.pick(ci=256, cpu=1024), seed=0)


def loss_fn(params, x, y):
    logits = cu.models.jax_mlp_apply(params, x)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss


one_device = train_step(params, jnp.asarray(x_np), jnp.asarray(y_np))
replicated, batch_sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
p_s = jax.device_put(params, replicated)
x_s, y_s = jax.device_put(x_np, batch_sharded), jax.device_put(y_np, batch_sharded)
sharded = train_step(p_s, x_s, y_s)
hlo = train_step.lower(p_s, x_s, y_s).compile().as_text()
print(mesh)
print("batch layout:", x_s.sharding.spec, "| params layout:", p_s[0]["w"].sharding.spec)
print("\n".join(line.strip()[:150] for line in hlo.splitlines() if " all-reduce(" in line))

# %%
jax_times = {
    "jax, one device": cu.timing.benchmark(train_step, params, jnp.asarray(x_np), jnp.asarray(y_np), label="one"),
    f"jax, batch sharded over {len(jax.devices())} devices": cu.timing.benchmark(train_step, p_s, x_s, y_s, label="sh"),
}
cu.plotting.time_bars(jax_times, title="JAX train step: one device vs a sharded batch")

# %%
# NBVAL_CHECK_OUTPUT
jax_diff = max(jax.tree.leaves(jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a - b))), one_device[0], sharded[0])))
assert jax_diff < 1e-6
print("devices in the mesh == simulated devices:", len(jax.devices()) == N_SIM or cu.env.accelerator() != "cpu")
print("all-reduce in the compiled sharded step:", " all-reduce(" in hlo)
print("sharded step == single-device step (max abs diff < 1e-6):", jax_diff < 1e-6)


# %% [markdown] slideshow={"slide_type": "subslide"}
# ### `shard_map`: write the per-device program yourself, and mind the gradient trap
# With `jax.shard_map` you write what *one* device runs on its shard, and the communication is explicit.
# Below, the loss is the `psum` of the per-shard sums divided by the global batch: the gradient of that is
# the true gradient. The trap (seen on this team's machines): inside `shard_map`, the gradient with respect to
# a **replicated** input already comes back summed over devices, so the tempting
# `pmean(grad(local_loss))` is N times too large.
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


specs = {"mesh": mesh, "in_specs": (P(), P("data"), P("data")), "out_specs": P()}
g_true = jax.jit(jax.grad(loss_fn))(params, jnp.asarray(x_np), jnp.asarray(y_np))
g_psum = jax.jit(jax.shard_map(grad_psum_loss, **specs))(p_s, x_s, y_s)
g_trap = jax.jit(jax.shard_map(grad_then_pmean, **specs))(p_s, x_s, y_s)
trap_ratio = float(jnp.sum(g_trap[0]["w"] * g_true[0]["w"]) / jnp.sum(g_true[0]["w"] ** 2))

# %%
# NBVAL_CHECK_OUTPUT
psum_diff = max(jax.tree.leaves(jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a - b))), g_true, g_psum)))
assert psum_diff < 1e-6 and abs(trap_ratio - len(jax.devices())) < 1e-3
print("shard_map + psum loss == single-device gradient (max abs diff < 1e-6):", psum_diff < 1e-6)
print("pmean(grad) is (number of devices) x the true gradient:", abs(trap_ratio - len(jax.devices())) < 1e-3)

# %%
Markdown(
    f"On {len(jax.devices())} devices the sharded step ran in {jax_times[list(jax_times)[1]].median * 1e3:.2f} ms "
    f"against {jax_times['jax, one device'].median * 1e3:.2f} ms on one device: simulated devices are threads "
    f"sharing the same {CORES} cores, so this shows correctness and the compiled collective, not speed. "
    f"The trap's gradient was **{trap_ratio:.2f}x** the true one, exactly the device count: always check a "
    "sharded gradient against a single-device run."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. TensorFlow: `MirroredStrategy` over logical devices
#
# `tf.distribute.MirroredStrategy` replicates a Keras model over the devices it is given, splits each global
# batch between the replicas and all-reduces the gradients; `model.fit` needs no other change. Here the
# devices are the two logical CPUs configured at the top (on a machine with GPUs, pass nothing and it uses
# them all). **Prediction:** the same 2 epochs of SGD give the same weights as without a strategy.

# %%
tf = cu.env.import_tensorflow()
import keras

tf.get_logger().setLevel("WARNING")  # MirroredStrategy logs every all-reduce it builds at INFO level
x_tf, y_tf = cu.data.classification(512, seed=0)


def keras_fit(strategy, epochs=2):
    with strategy.scope():
        model = cu.models.keras_mlp()
        model.compile(optimizer=keras.optimizers.SGD(0.1),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x_tf, y_tf, batch_size=64, epochs=epochs, shuffle=False, verbose=0)
    return model


mirrored = tf.distribute.MirroredStrategy([d.name for d in tf_devices])
plain_model, mirrored_model = keras_fit(tf.distribute.get_strategy()), keras_fit(mirrored)
tf_times = {
    "keras fit, no strategy": cu.timing.benchmark(lambda: plain_model.fit(x_tf, y_tf, batch_size=64, verbose=0),
                                                  min_time=0.3, min_repeats=3, max_repeats=5, label="plain"),
    f"keras fit, MirroredStrategy x {mirrored.num_replicas_in_sync}": cu.timing.benchmark(
        lambda: mirrored_model.fit(x_tf, y_tf, batch_size=64, verbose=0),
        min_time=0.3, min_repeats=3, max_repeats=5, label="mirrored"),
}
cu.plotting.time_bars(tf_times, title="One Keras epoch (8 steps of 64)")

# %%
# NBVAL_CHECK_OUTPUT
tf_diff = max(float(np.max(np.abs(a - b))) for a, b in zip(keras_fit(tf.distribute.get_strategy()).get_weights(),
                                                           keras_fit(mirrored).get_weights()))
assert tf_diff < 1e-5
print("replicas in sync:", mirrored.num_replicas_in_sync)
print("MirroredStrategy weights == no strategy after 2 epochs (max abs diff < 1e-5):", tf_diff < 1e-5)

# %%
tf_slow = tf_times[list(tf_times)[1]].median / tf_times["keras fit, no strategy"].median
Markdown(
    f"Same weights (max difference {tf_diff:.1e}), and an epoch **{tf_slow:.1f}x** the time without a strategy: "
    "two logical devices on one CPU add the per-replica bookkeeping and the all-reduce, and no compute. "
    "On a Colab TPU the same code runs with `TPUStrategy`:\n\n"
    "```python\nresolver = tf.distribute.cluster_resolver.TPUClusterResolver()\n"
    "tf.config.experimental_connect_to_cluster(resolver)\ntf.tpu.experimental.initialize_tpu_system(resolver)\n"
    "strategy = tf.distribute.TPUStrategy(resolver)\nwith strategy.scope():\n    model = ...  # build and compile\n```"
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Beyond one machine
#
# The same three programs scale out with a launcher per node and a rendezvous address (a real address
# replaces 127.0.0.1; every node runs the same command):
#
# ```bash
# # PyTorch: on each of 4 nodes, 8 GPUs each (c10d rendezvous on node 0)
# torchrun --nnodes=4 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=node0.example:29400 \
#          --rdzv-id=job42 course_utils/workers/ddp_train.py
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
# also the weights, at the price of more communication (weights are gathered for each layer's use).
# **Prediction:** with mixed-precision Adam (16 bytes per parameter) a 7B model needs 112 GB per device
# without sharding, more than any single GPU's memory; stage 3 over 64 devices needs 1/64 of that.

# %%
# NBVAL_CHECK_OUTPUT
PARAMS = 7e9
print(f"{'devices':>8} | " + " | ".join(f"ZeRO-{s} (GB)" for s in range(4)))
for n in (1, 8, 64):
    print(f"{n:>8} | " + " | ".join(f"{cu.distributed.memory_per_device(PARAMS, n, s) / 1e9:11.1f}" for s in range(4)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# **1. How many devices until communication dominates?** With the fitted model of this machine and the
# 100 Gb InfiniBand link, find the smallest N in 2..1024 for which the wide model's all-reduce takes longer
# than its measured compute per step (no overlap), for both links.
#
# <details><summary>Hint</summary><code>cu.distributed.ring_allreduce_time(wide_bytes, n, bw, lat)</code>
# against <code>med["wide"]["compute"]</code>; <code>next(...)</code> over a range gives the first N, or None.</details>

# %% jupyter={"source_hidden": true}
for name, (bw, lat) in {"this machine (fit)": (fit.bandwidth, fit.latency),
                        "100 Gb InfiniBand": LINKS["100 Gb InfiniBand (12.5 GB/s, 5 µs)"]}.items():
    first = next((n for n in range(2, 1025)
                  if cu.distributed.ring_allreduce_time(wide_bytes, n, bw, lat) > med["wide"]["compute"]), None)
    print(f"{name}: communication exceeds compute from N = {first}" if first else
          f"{name}: communication stays below compute up to N = 1024")

# %% [markdown]
# **2. The largest model per device.** With 80 GB per device and 16 bytes per parameter (ignore
# activations), what is the largest model that trains on 64 devices with ZeRO stage 0, 2 and 3?
#
# <details><summary>Hint</summary><code>memory_per_device</code> is linear in the parameter count: divide 80 GB
# by the bytes per parameter that <code>memory_per_device(1, 64, stage)</code> returns.</details>

# %% jupyter={"source_hidden": true}
for stage in (0, 2, 3):
    print(f"ZeRO-{stage}: {80e9 / cu.distributed.memory_per_device(1, 64, stage) / 1e9:.1f} B parameters")

# %% [markdown]
# **3. A correct `pmean` in `shard_map`.** Write a per-device gradient function that uses `lax.pmean` and is
# still correct, and check it against `g_true`.
#
# <details><summary>Hint</summary>Take the gradient of the <em>pmean-ed loss</em>, not the pmean of the
# gradient: <code>jax.grad(lambda p: lax.pmean(loss_fn(p, x, y), "data"))</code>.</details>

# %% jupyter={"source_hidden": true}
def grad_pmean_loss(params, x, y):
    return jax.grad(lambda p: lax.pmean(loss_fn(p, x, y), "data"))(params)


g_ok = jax.jit(jax.shard_map(grad_pmean_loss, **specs))(p_s, x_s, y_s)
ok_diff = max(jax.tree.leaves(jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a - b))), g_true, g_ok)))
assert ok_diff < 1e-6
print("grad of pmean(loss) == true gradient:", ok_diff < 1e-6)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.summary.table("05_data_parallel", [
    ("DDP ranks' max weight difference", max(rank_diff.values()), "", "2 ranks, 20 steps: bit-identical"),
    ("DDP vs one process, max weight difference", max(single_diff.values()), "", "float rounding only"),
    ("tiny model: DDP step, 2 ranks", med["tiny"]["ddp"] * 1e3, "ms", f"{timings['tiny']['params']:,} parameters"),
    ("tiny model: one process, whole batch", med["tiny"]["single"] * 1e3, "ms", "the baseline"),
    ("tiny model: communication share", share["tiny"] * 100, "%", "seed: multi-device can be slower"),
    ("tiny model: speed-up of 2 ranks", speedup["tiny"], "x", "< 1 means slower"),
    ("wide model: speed-up of 2 ranks", speedup["wide"], "x", f"{timings['wide']['params']:,} parameters"),
    ("no_sync: step time saved", saved * 100, "%", "4 micro-batches, 1 all-reduce instead of 4"),
    ("fitted all-reduce bandwidth", fit.bandwidth / 1e9, "GB/s", "gloo, 2 processes, this machine"),
    ("fitted all-reduce latency", fit.latency * 1e6, "µs", "per ring step"),
    ("JAX sharded step / one device", jax_times[list(jax_times)[1]].median / jax_times["jax, one device"].median,
     "x", f"{len(jax.devices())} simulated devices"),
    ("TF MirroredStrategy epoch / no strategy", tf_slow, "x", "2 logical CPUs"),
    ("torchrun launch, all phases", run.seconds, "s", "start-up included"),
])

# %% [markdown]
# **What to remember**
# - Data parallelism is large-batch SGD spread out: prove it (ranks identical, equal to one process on the
#   whole batch) before you trust a speed-up, in every framework, and check sharded gradients against one device.
# - Each step pays an all-reduce of the whole gradient: ~2(N-1)/N x bytes / bandwidth plus 2(N-1) latencies.
#   Small models, small per-device batches and slow links make more devices *slower*; buckets (overlap) and
#   `no_sync` accumulation (fewer syncs) are the first remedies.
# - Launch real processes with the real launcher (`torchrun`), on 127.0.0.1 for one machine, and make sure a
#   failing rank takes the whole job down with a readable traceback and no orphans.
#
# **Next:** [06 · should we migrate?](06_should_we_migrate.ipynb): one realistic model through every technique
# of the course, and the decision in numbers.

# %%
print(cu.summary.last_verified())
