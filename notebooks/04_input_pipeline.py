# ---
# jupyter:
#   course:
#     minutes:
#       ci: 2
#       laptop: 4
#       workshop: 40
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
# # 04 · Is my accelerator waiting for my CPU?
#
# A training step needs a batch. If reading, decoding and augmenting that batch takes longer than the step
# computes, the accelerator sits idle, and no compiler can help. After this notebook you will be able to
#
# - record, for every step of a training loop, the time spent **waiting for data** and the time spent
#   **computing**, draw it as a timeline and turn it into **utilisation = compute / step time**;
# - remove the wait in each framework: PyTorch `DataLoader` workers, `tf.data` parallel `map` + `prefetch`
#   + `cache`, and a prefetching iterator for JAX;
# - say, from measurements, when more workers stop helping (cores, the GIL, memory).
#
# **Minutes:** about 4 on a laptop, 40 in a workshop. **Accelerators:** every section runs on a CPU; on a GPU
# the models run on the device and `pin_memory` is switched on; no section needs a TPU.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/main/notebooks/04_input_pipeline.ipynb)

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@main"], check=True)

# %% slideshow={"slide_type": "skip"}
import course_utils as cu

# On a CPU-only machine the "accelerator" is the CPU itself. We give the model one core (our stand-in
# accelerator) and leave the others to the input pipeline, as a GPU would. This must run before JAX starts.
compute_threads = cu.pipeline.limit_compute_threads(1)
cu.env.setup_notebook()

# %% slideshow={"slide_type": "skip"}
import math
import multiprocessing
import os
import threading

import jax
import numpy as np
import tensorflow as tf
import torch
from IPython.display import Markdown, display
from torch.utils.data import DataLoader

CORES = os.cpu_count() or 1
SIZE = cu.env.pick(ci=64, cpu=64)  # image side in pixels
BATCH = cu.env.pick(ci=32, cpu=32, gpu=128)
STEPS = cu.env.pick(ci=16, cpu=48, gpu=48)  # steps per epoch
HIDDEN = cu.env.pick(ci=512, cpu=512, gpu=4096)  # the MLP's width sets how long a step computes
data = cu.pipeline.SyntheticImages(STEPS * BATCH, size=SIZE, work=4, seed=0)
print(data, f"| {BATCH} images per batch, {STEPS} steps per epoch, {CORES} cores, compute threads {compute_threads}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. A dataset that costs CPU time
#
# One seed article warns that *"sometimes the bottleneck is not the model but reading the images from disk"*
# and tells product managers to ask *"is data loading multi-process? (so the GPU does not wait for the
# CPU)"*. To measure that without downloads, `cu.pipeline.SyntheticImages` makes every sample from its
# index and a seed: a small stored picture is **decoded** (upsampled and smoothed with NumPy, the stand-in
# for a JPEG codec) and **augmented** (random crop, flip, brightness and contrast, normalisation).
#
# **Prediction:** a batch costs `BATCH` times the cost of one sample, all of it on the CPU, before the
# model sees a single number.

# %%
one_sample = cu.timing.benchmark(data.__getitem__, 0, label="decode + augment one sample")
decode_only = cu.timing.benchmark(data.decode, 0, label="decode only")
batch_cost = one_sample.median * BATCH
print(one_sample.summary())
print(decode_only.summary())
print(f"predicted data time per batch of {BATCH}: {cu.timing.format_time(batch_cost)}")


# %% slideshow={"slide_type": "subslide"}
def show_samples(dataset, count=8):
    """The first ``count`` augmented samples, as the model receives them (normalised, shown rescaled)."""
    fig, axes = cu.plotting.figure(count, width=1.2 * count, height=1.6)
    for i, ax in enumerate(axes):
        x, y = dataset[i]
        image = np.clip(x.transpose(1, 2, 0) * 0.25 + 0.5, 0, 1)
        ax.imshow(image)
        ax.set_title(f"class {y}", fontsize=9)
        ax.axis("off")
    fig.suptitle("Synthetic samples after decode + augment (seeded: the same on every run)")
    return fig


show_samples(data)

# %%
# NBVAL_CHECK_OUTPUT
x3, y3 = data[3]
again = cu.pipeline.SyntheticImages(len(data), size=SIZE, work=4, seed=0)[3]
assert np.array_equal(x3, again[0]) and y3 == again[1]
print("sample dtype:", x3.dtype, "| channels:", x3.shape[0], "| label dtype:", y3.dtype)
print("same sample from a new dataset object with the same seed:", np.array_equal(x3, again[0]))

# %%
Markdown(
    f"One sample costs {cu.timing.format_time(one_sample.median)} of CPU time, of which decoding is "
    f"{cu.timing.format_time(decode_only.median)}; a batch of {BATCH} therefore needs about "
    f"{cu.timing.format_time(batch_cost)} before the step can start. Whether that matters depends on how "
    "long the step computes: the next section measures both, step by step."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. An instrumented training loop
#
# `cu.pipeline.run_loop(batches, step)` runs one SGD step of the course's MLP per batch and reads the
# clock three times per step: before asking for the batch, when it arrives, and after the step's result
# is **synchronised** (`cu.timing.sync`: without it JAX, TensorFlow on a GPU and CUDA would return before
# computing, and the compute would be booked as waiting). The first step of each epoch includes the
# loader's start-up, so utilisation is computed over the steady steps and the start-up is reported apart.
#
# **Prediction:** with the data made in the training process itself (`num_workers=0`), the step cannot
# overlap anything, so utilisation ≈ compute / (compute + data time per batch).

# %%
sizes = (data.features, HIDDEN, data.classes)
train_step = {fw: cu.pipeline.make_train_step(fw, sizes) for fw in ("torch", "jax", "tensorflow")}
first = data.batch(range(BATCH))
warm = {  # the first call compiles (jax.jit, tf.function): do it before the clock runs
    "torch": train_step["torch"](tuple(torch.from_numpy(a) for a in first)),
    "jax": train_step["jax"](jax.device_put(first)),
    "tensorflow": train_step["tensorflow"](tuple(tf.constant(a) for a in first)),
}
torch_base = cu.pipeline.run_loop(DataLoader(data, batch_size=BATCH), train_step["torch"],
                                  label="torch, num_workers=0")
print(torch_base.summary())

# %%
cu.pipeline.timeline_plot([torch_base], title="PyTorch, data made in the training process")

# %%
# NBVAL_CHECK_OUTPUT
assert all(w > 0 for w in torch_base.waits) and all(c > 0 for c in torch_base.computes)
print("every step waited and computed:", all(w > 0 for w in torch_base.waits) and all(c > 0 for c in torch_base.computes))
print("utilisation is a fraction in (0, 1):", 0 < torch_base.utilisation < 1)
print("warm-up losses finite:", all(math.isfinite(float(v)) for v in warm.values()))

# %%
predicted_util = torch_base.compute_time / (torch_base.compute_time + batch_cost)
Markdown(
    f"Each step waited {torch_base.wait_time * 1e3:.1f} ms for its batch and computed for "
    f"{torch_base.compute_time * 1e3:.1f} ms: utilisation **{torch_base.utilisation:.0%}** (predicted from the "
    f"per-sample cost: {predicted_util:.0%}). The seed article quotes 40-60% as typical for eager frameworks and "
    "credits compilers with raising it to 80%+; here the idle time comes from the input pipeline, which no "
    "compiler touches. Grey in the timeline is time the accelerator had nothing to do."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. PyTorch: `DataLoader` workers
#
# With `num_workers=N` the `DataLoader` starts N worker processes that build batches ahead
# (`prefetch_factor` batches each) while the training process computes. Processes, not threads: each has
# its own Python interpreter, so the GIL does not serialise them.
#
# **The trap in a notebook.** On Linux, Python up to 3.13 starts workers with `fork` by default, which copies
# the kernel, including threads that TensorFlow, JAX and OpenMP have running; a child that inherits a
# held lock can deadlock. `spawn` and `forkserver` start clean interpreters, which must **import** the
# dataset: a class or function defined in the notebook cannot be found there. So the dataset lives in a
# module (`course_utils/pipeline.py`) and the context comes from `cu.pipeline.worker_context()`.

# %%
def add_noise(batch):  # defined in the notebook: lives in __main__, which a worker cannot import
    return batch


threads_now = threading.active_count()
ctx = cu.pipeline.worker_context()
print("threads running in this kernel:", threads_now, "| start method for workers:", ctx.get_start_method())

# %%
# NBVAL_CHECK_OUTPUT
print("kernel has more than one thread (fork would be unsafe):", threads_now > 1)
print("workers avoid fork:", ctx.get_start_method() != "fork")
print("module-level dataset, unpickled in a fresh process:", cu.pipeline.unpickles_in_fresh_process(data))
print("notebook-defined function, unpickled in a fresh process:", cu.pipeline.unpickles_in_fresh_process(add_noise))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What starting workers costs
#
# **Prediction:** `spawn` re-imports torch in every worker at every loader start (seconds); `forkserver`
# imports it once into a small server (`worker_context` preloads torch and the dataset module) and then forks
# each worker from it (milliseconds); `persistent_workers=True` keeps workers alive between epochs.

# %%
forkserver_once = cu.pipeline.start_forkserver()
spawned = cu.pipeline.run_loop(
    DataLoader(data, batch_size=BATCH, num_workers=1, multiprocessing_context=multiprocessing.get_context("spawn")),
    train_step["torch"], label="torch, 1 worker (spawn)")
print(f"forkserver start (once per kernel): {cu.timing.format_time(forkserver_once)}")
print(f"first batch with spawn: {cu.timing.format_time(spawned.startups[0])}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### More workers
#
# **Prediction:** each worker makes one batch in about the data time per batch, so N workers deliver one
# every (data time / N), until the wait disappears, but only while each worker has a core of its own.
# Here one core computes (see the set-up cell), so we expect the gain to stop after `CORES - 1` workers.
# (PyTorch itself warns below when `num_workers` exceeds the cores it can use.)

# %%
free_cores = max(1, CORES - (1 if cu.env.accelerator() == "cpu" else 0))  # on a CPU-only machine one core computes
loader_kwargs = dict(batch_size=BATCH, multiprocessing_context=ctx, pin_memory=torch.cuda.is_available())
torch_runs = {}
for workers in sorted({*cu.pipeline.worker_counts(CORES), free_cores}):
    kwargs = loader_kwargs if workers else dict(batch_size=BATCH)
    loader = DataLoader(data, num_workers=workers, **kwargs)
    label = f"torch, {workers} worker" + ("" if workers == 1 else "s")
    torch_runs[workers] = cu.pipeline.run_loop(loader, train_step["torch"], label=label)
    del loader  # a non-persistent loader's workers end with its iterator; this drops the last reference
deep = cu.pipeline.run_loop(DataLoader(data, num_workers=CORES, prefetch_factor=8, **loader_kwargs),
                            train_step["torch"], label=f"torch, {CORES} workers, prefetch_factor=8")
per_epoch = {}
for persistent in (False, True):
    loader = DataLoader(data, num_workers=1, persistent_workers=persistent, **loader_kwargs)
    per_epoch[persistent] = cu.pipeline.run_loop(loader, train_step["torch"], epochs=2,
                                                 label=f"torch, 1 worker, persistent_workers={persistent}")
    if persistent:  # its worker is still alive: measure what it costs in private memory (USS)
        worker_mib = max(cu.pipeline.worker_memory().values(), default=0) / 2**20
    del loader
for t in [*torch_runs.values(), deep, *per_epoch.values()]:
    print(t.summary())
print(f"private memory of one idle persistent worker: {worker_mib:.0f} MiB")

# %%
cu.pipeline.timeline_plot([*torch_runs.values(), deep, spawned], title="PyTorch DataLoader: workers and prefetch")

# %%
if torch.cuda.is_available():  # page-locked batches let .to("cuda", non_blocking=True) overlap the copy
    pinned = {pin: cu.pipeline.run_loop(DataLoader(data, num_workers=free_cores, batch_size=BATCH, pin_memory=pin,
                                                   multiprocessing_context=ctx),
                                        train_step["torch"], label=f"torch, pin_memory={pin}") for pin in (False, True)}
    display(cu.pipeline.timeline_plot(list(pinned.values()), title="pin_memory on the GPU"))
else:
    print("No CUDA GPU here: pin_memory (page-locked host memory for asynchronous copies to the GPU) is "
          "not measured on this runtime.")

# %%
# NBVAL_CHECK_OUTPUT
torch_all = [*torch_runs.values(), deep, spawned, *per_epoch.values()]
reference = torch_base.fingerprints
same_data = all(t.fingerprints[:len(reference)] == reference for t in torch_all)
same_epochs = all(t.fingerprints[len(reference):] == reference for t in per_epoch.values())
assert same_data and same_epochs
print("every DataLoader variant yields the same batches in the same order:", same_data)
print("second epoch identical to the first:", same_epochs)
print("worker processes left after the loaders are gone:", len(cu.pipeline.worker_processes()))

# %%
best_workers = min(torch_runs, key=lambda w: torch_runs[w].step_time)
startup_lines = ", ".join(f"epoch {i + 1}: {s * 1e3:.0f} ms" for i, s in enumerate(per_epoch[False].startups))
persistent_lines = ", ".join(f"epoch {i + 1}: {s * 1e3:.0f} ms" for i, s in enumerate(per_epoch[True].startups))
if best_workers:
    verdict = (f"The fastest worker count here is **{best_workers}** on {CORES} cores: step "
               f"{torch_runs[best_workers].step_time * 1e3:.1f} ms against {torch_runs[0].step_time * 1e3:.1f} ms "
               f"without workers, utilisation {torch_runs[0].utilisation:.0%} → "
               f"{torch_runs[best_workers].utilisation:.0%}. ")
else:
    busiest = max(torch_runs.values(), key=lambda t: t.compute_time)
    verdict = (f"No worker count beat the in-process loader in this run ({torch_runs[0].step_time * 1e3:.1f} ms "
               f"per step on {CORES} cores): the wait shrank, but the workers' CPU time came out of the model's "
               f"core (compute per step {torch_runs[0].compute_time * 1e3:.1f} ms without workers, up to "
               f"{busiest.compute_time * 1e3:.1f} ms with them). Section 6 returns to this. ")
Markdown(
    verdict +
    f"`prefetch_factor=8` gave {deep.step_time * 1e3:.1f} ms per step: a deeper queue absorbs jitter but cannot "
    f"make batches faster than the workers produce them.\n\n"
    f"Start-up: the first batch took {spawned.startups[0]:.2f} s with `spawn` (a fresh interpreter importing "
    f"torch), while the forkserver cost {forkserver_once:.2f} s once for the whole kernel and then "
    f"{torch_runs[1].startups[0] * 1e3:.0f} ms per loader start. Without `persistent_workers` every epoch "
    f"starts its workers again ({startup_lines}); with them the workers stay and each epoch only waits for its "
    f"first batch ({persistent_lines})."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. TensorFlow: `tf.data`
#
# `tf.data` runs the pipeline on its own C++ threads: `map(f, num_parallel_calls=AUTOTUNE)` calls `f` on
# several elements at once, `prefetch(AUTOTUNE)` keeps batches ready while the step runs, and `cache()`
# keeps what came before it in memory after the first epoch. Our decode is NumPy code, called through
# `tf.numpy_function`, so each call needs the **GIL**: parallel calls can only overlap where NumPy releases it.
#
# **Prediction:** `prefetch` overlaps data with compute (the step runs in TensorFlow's C++ and releases the
# GIL); parallel `map` helps less than the core count suggests; `cache()` placed after decode removes the
# decode cost from the second epoch while augmentation still runs every epoch (we measure it alone).

# %%
decode_tf, augment_tf = cu.pipeline.tf_decode(data), cu.pipeline.tf_augment(data)


def tf_pipeline(parallel=False, prefetch=False, cache=False):
    calls = tf.data.AUTOTUNE if parallel else None
    ds = tf.data.Dataset.range(len(data)).map(decode_tf, num_parallel_calls=calls)
    if cache:
        ds = ds.cache()  # decoded images are kept; augmentation below still runs every epoch
    ds = ds.map(augment_tf, num_parallel_calls=calls).batch(BATCH, drop_remainder=True)
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()  # tf.data's default rewrites parallelise map/batch and add prefetch on their own:
    options.experimental_optimization.apply_default_optimizations = False  # measure only what we asked for
    return ds.with_options(options)


tf_runs = {
    "plain": cu.pipeline.run_loop(tf_pipeline(), train_step["tensorflow"], label="tensorflow, plain"),
    "parallel map": cu.pipeline.run_loop(tf_pipeline(parallel=True), train_step["tensorflow"],
                                         label="tensorflow, map(AUTOTUNE)"),
    "parallel map + prefetch": cu.pipeline.run_loop(tf_pipeline(parallel=True, prefetch=True), train_step["tensorflow"],
                                                    label="tensorflow, map + prefetch(AUTOTUNE)"),
}
cached = cu.pipeline.run_loop(tf_pipeline(cache=True), train_step["tensorflow"], epochs=2,
                              label="tensorflow, plain + cache() after decode")
for t in [*tf_runs.values(), cached]:
    print(t.summary())

# %%
cu.pipeline.timeline_plot([*tf_runs.values(), cached], title="tf.data: parallel map, prefetch, cache (2 epochs)")

# %%
# NBVAL_CHECK_OUTPUT
tf_same = all(t.fingerprints == reference for t in tf_runs.values())
cache_same = cached.fingerprints == reference + reference
assert tf_same and cache_same
print("tf.data yields the same batches as the PyTorch DataLoader:", tf_same)
print("cached pipeline, both epochs identical to the uncached one:", cache_same)


# %%
def epoch_wait(t, epoch):
    waits = [w for w, e in zip(t.waits, t.epochs) if e == epoch][1:]
    return sum(waits) / len(waits)


Markdown(
    f"Plain `tf.data`: utilisation {tf_runs['plain'].utilisation:.0%}. Parallel `map` alone: "
    f"{tf_runs['parallel map'].utilisation:.0%} (the NumPy work holds the GIL for part of each call, and one "
    f"core is busy computing). Adding `prefetch`: {tf_runs['parallel map + prefetch'].utilisation:.0%}, step "
    f"{tf_runs['plain'].step_time * 1e3:.1f} → {tf_runs['parallel map + prefetch'].step_time * 1e3:.1f} ms. "
    f"With `cache()` after decode (no parallelism, no prefetch, to see its own effect) the mean wait fell from {epoch_wait(cached, 0) * 1e3:.1f} ms in epoch 1 to "
    f"{epoch_wait(cached, 1) * 1e3:.1f} ms in epoch 2. Put `cache()` after a *random* augmentation instead and "
    "every epoch would replay the first epoch's augmentations: cache what is deterministic and expensive."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. JAX: a prefetching iterator
#
# JAX has no loader of its own. `cu.pipeline.Prefetch(source, size=2)` runs the source (here plain NumPy
# batches) in a background **thread** and calls `jax.device_put` on the next batches, so the copy to the
# accelerator starts before the step asks for it; `size=0` does the same work in the training thread.
# The thread and the step overlap because a compiled JAX computation releases the GIL while it runs.
#
# **Prediction:** with one thread making batches, the step time falls to about max(compute, data time per
# batch), never below.

# %%
source = cu.pipeline.NumpyBatches(data, BATCH)
jax_runs = {
    size: cu.pipeline.run_loop(cu.pipeline.Prefetch(source, size=size), train_step["jax"],
                               label=f"jax, Prefetch(size={size})")
    for size in (0, 2)
}
for t in jax_runs.values():
    print(t.summary())
cu.pipeline.timeline_plot(list(jax_runs.values()), title="JAX: device_put in the loop vs a prefetching thread")

# %%
# NBVAL_CHECK_OUTPUT
jax_same = all(t.fingerprints == reference for t in jax_runs.values())
with iter(cu.pipeline.Prefetch(source, size=2)) as stopped_early:
    next(stopped_early)
assert jax_same and not stopped_early.alive
print("JAX batches identical to the DataLoader's:", jax_same)
print("prefetch thread stopped after an early exit:", not stopped_early.alive)
print("prefetch threads still running:", sum(t.name == "course-prefetch" for t in threading.enumerate()))

# %%
Markdown(
    f"Without prefetching JAX waited {jax_runs[0].wait_time * 1e3:.1f} ms per step (utilisation "
    f"{jax_runs[0].utilisation:.0%}); with a thread two batches ahead it waited {jax_runs[2].wait_time * 1e3:.1f} ms "
    f"(utilisation {jax_runs[2].utilisation:.0%}), step {jax_runs[0].step_time * 1e3:.1f} → "
    f"{jax_runs[2].step_time * 1e3:.1f} ms. Look at the compute: {jax_runs[0].compute_time * 1e3:.1f} ms per step "
    f"without the thread, {jax_runs[2].compute_time * 1e3:.1f} ms with it"
    + (". It grew: the training thread needs the GIL to dispatch each step and the data thread holds it while "
       "it runs Python and small NumPy calls, so the two take turns (Python hands the GIL over every few "
       "milliseconds), besides sharing the cores."
       if jax_runs[2].compute_time > 1.1 * jax_runs[0].compute_time else
       ": about the same or less, so the thread overlapped with the step without slowing it (the GIL is "
       "released while XLA computes).")
    + " One thread is also one core's worth of decoding at best; exercise 2 feeds JAX from worker processes."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Before and after, and when more workers stop helping
#
# Before: the data made in the training loop. After: one `DataLoader` worker per free core for PyTorch,
# parallel `map` + `prefetch` for `tf.data`, the prefetching thread for JAX.
# Then the worker sweep against a simple model: N workers deliver a batch every (data time / N) while each
# has a free core, and a step can never be shorter than its compute.

# %%
before_after = {  # after: each framework's recipe as recommended, measured (not the luckiest variant)
    "torch": (torch_runs[0], torch_runs[free_cores]),
    "tensorflow": (tf_runs["plain"], tf_runs["parallel map + prefetch"]),
    "jax": (jax_runs[0], jax_runs[2]),
}
cu.pipeline.utilisation_plot(before_after, title="Waiting for data, before and after (steady steps)")


# %% slideshow={"slide_type": "subslide"}
def workers_plot(runs, data_time, compute_time, free_cores):
    """Measured step and compute time per worker count against max(compute, data / min(workers, free cores))."""
    fig, (ax,) = cu.plotting.figure(width=6.4, height=3.8)
    counts = sorted(runs)
    model = [data_time + compute_time if n == 0 else max(compute_time, data_time / min(n, free_cores))
             for n in counts]
    color = cu.plotting.color_for("torch")
    ax.plot(counts, [runs[n].step_time * 1e3 for n in counts], "o-", color=color, label="measured step time")
    ax.plot(counts, [runs[n].compute_time * 1e3 for n in counts], "o:", color=color, alpha=0.6,
            label="measured compute per step")
    ax.plot(counts, [m * 1e3 for m in model], "s--", color="#555555",
            label="model: max(compute, data / workers), compute fixed")
    ax.axvline(free_cores, color="#bbbbbb", linestyle=":", label=f"free cores = {free_cores}")
    ax.set_xticks(counts)
    ax.set_xlabel("DataLoader num_workers")
    ax.set_ylabel("ms per steady step")
    ax.set_ylim(0, None)
    ax.set_title(f"Workers against cores ({CORES} cores)")
    fig.legend(loc="outside lower center", ncols=2, fontsize=8)
    return fig


workers_plot(torch_runs, torch_runs[0].wait_time, torch_runs[0].compute_time, free_cores)

# %%
# NBVAL_CHECK_OUTPUT
print("frameworks compared before/after:", ", ".join(sorted(before_after)))
print("every 'after' keeps the data identical:", all(t.fingerprints == reference for _, t in before_after.values()))

# %%
in_flight_mib = max(torch_runs) * 2 * BATCH * data.features * 4 / 2**20
too_many = max(torch_runs)
rows = [(fw, a.utilisation, b.utilisation, a.step_time, b.step_time) for fw, (a, b) in before_after.items()]
table = "\n".join(f"| {fw} | {ua:.0%} | {ub:.0%} | {sa * 1e3:.1f} ms | {sb * 1e3:.1f} ms | {sa / sb:.2f}x |"
                  for fw, ua, ub, sa, sb in rows)
Markdown(
    "| framework | utilisation before | after | step before | after | speed-up |\n|---|---|---|---|---|---|\n"
    f"{table}\n\n"
    f"{free_cores} of {CORES} core(s) were free for workers. With {too_many} workers the step took "
    f"{torch_runs[too_many].step_time * 1e3:.1f} ms"
    + (f", against {torch_runs[best_workers].step_time * 1e3:.1f} ms at the best count ({best_workers})"
       if best_workers != too_many else
       ", the fastest in this run, but by less than the model promises (and runs on a shared machine are noisy)")
    + ". Workers beyond the free cores can only take turns on the same cores, and they take time from the "
    f"model's own core: the measured compute per step was {torch_runs[0].compute_time * 1e3:.1f} ms without "
    f"workers and {torch_runs[too_many].compute_time * 1e3:.1f} ms with {too_many}; the simple model keeps it "
    "fixed. Threads add the GIL "
    "(tf.data's parallel map of NumPy code, JAX's prefetch thread); processes add memory: one worker held "
    f"{worker_mib:.0f} MiB of private memory (measured, USS, beyond what it shares with the forkserver), and "
    f"the batches in flight add {in_flight_mib:.1f} MiB for {too_many} workers here (computed: workers x "
    "`prefetch_factor` x batch bytes). On a GPU machine the model no longer "
    "needs a CPU core, so every core can decode, and the same curve flattens at the core count."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# **1. How many workers does this pipeline need?** From the `num_workers=0` run, predict the smallest worker
# count that removes the wait (a batch must be ready every compute time), then compare with the sweep.
#
# <details><summary>Hint</summary>N workers deliver a batch every (data time per batch / N); set that equal to
# the compute time and round up. The prediction assumes each worker has a core of its own.</details>

# %% jupyter={"source_hidden": true}
needed = math.ceil(torch_runs[0].wait_time / torch_runs[0].compute_time)
measured_best = min(torch_runs, key=lambda w: torch_runs[w].step_time)
print(f"predicted workers needed: {needed} (capped by the {free_cores} free core(s): {min(needed, free_cores)})")
print(f"fastest in the sweep: {measured_best} workers")

# %% [markdown]
# **2. Feed JAX from worker processes.** Threads share one GIL; processes do not. Build a `DataLoader` with one
# worker and `collate_fn=cu.pipeline.numpy_collate` (a module-level function, so the worker can import it),
# wrap it in `cu.pipeline.Prefetch`, and compare JAX's utilisation with the thread prefetcher. Check that the
# batches are still identical.
#
# <details><summary>Hint</summary><code>cu.pipeline.Prefetch(DataLoader(data, num_workers=1, collate_fn=...,
# batch_size=BATCH, multiprocessing_context=ctx), size=2)</code>, then <code>cu.pipeline.run_loop</code>.</details>

# %% jupyter={"source_hidden": true}
from_workers = cu.pipeline.run_loop(
    cu.pipeline.Prefetch(DataLoader(data, batch_size=BATCH, num_workers=1, collate_fn=cu.pipeline.numpy_collate,
                                    multiprocessing_context=ctx), size=2),
    train_step["jax"], label="jax, DataLoader worker + Prefetch")
assert from_workers.fingerprints == reference
print(from_workers.summary())
print(f"thread prefetcher utilisation: {jax_runs[2].utilisation:.0%}; worker process + prefetch: "
      f"{from_workers.utilisation:.0%}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.summary.table("04_input_pipeline", [
    ("data time per sample (decode + augment)", one_sample.median * 1e3, "ms", "NumPy, one core"),
    *[(f"{fw} utilisation before", a.utilisation * 100, "%", "data in the loop; seed: 40-60% is typical")
      for fw, (a, _) in before_after.items()],
    *[(f"{fw} utilisation after", b.utilisation * 100, "%", b.label) for fw, (_, b) in before_after.items()],
    *[(f"{fw} step-time speed-up", a.step_time / b.step_time, "x", "steady steps")
      for fw, (a, b) in before_after.items()],
    ("best DataLoader num_workers", best_workers, "", f"on {CORES} cores, {free_cores} free for data"),
    ("worker start-up, spawn", spawned.startups[0], "s", "first batch, fresh interpreter"),
    ("forkserver start, once per kernel", forkserver_once, "s", "imports torch once"),
    ("worker start-up, forkserver", torch_runs[1].startups[0] * 1e3, "ms", "per loader start"),
    ("private memory per DataLoader worker", worker_mib, "MiB", "USS of an idle persistent worker"),
])

# %% [markdown]
# **What to remember**
# - Measure the wait: a loop that times *waiting for the batch* apart from the (synchronised) step tells
#   you at once whether the model or the input pipeline is the bottleneck; no compiler fixes the latter.
# - Overlap, then parallelise: prefetching hides data time up to the compute time; more workers shorten
#   data time only while each has a free core (processes escape the GIL, threads do not).
# - In a notebook, start workers with `forkserver` or `spawn` from module-level code, pay the start-up once
#   (`persistent_workers`), and prove that the faster pipeline yields the same data.
#
# **Next:** [05 · data parallelism](05_data_parallel.ipynb): when one device is kept busy, does a second one pay?

# %%
print(cu.summary.last_verified())
