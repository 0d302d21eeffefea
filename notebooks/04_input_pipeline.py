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
# # 04 · Is my accelerator waiting for my CPU?
#
# A training step needs a batch. If reading, decoding and augmenting that batch takes longer than the step
# computes, the accelerator sits idle, and no compiler can help. After this notebook you will be able to
#
# - record, for every step of a training loop, the time spent **waiting for data** and the time spent
#   **computing**, draw it as a timeline and turn it into **utilisation**, which in this notebook always means
#   the accelerator's *busy time share*: compute / (wait + compute);
# - find the same stall in a **profiler trace** alone;
# - remove the wait in each framework: PyTorch `DataLoader` workers, a `tf.data` chain with parallel `map` and
#   `prefetch`, and for JAX a prefetching thread or **Grain**, one of the loaders used with JAX, with worker processes;
# - decide "faster", "slower" or "within the noise" with an interval, and say when more workers stop helping.
#
# **Minutes:** about 5 on a laptop, 45 in a workshop. **Accelerators:** every section runs on a CPU; on a GPU
# the models run on the device and `pin_memory` is switched on; no section needs a TPU. Without TensorFlow or
# JAX, their sections are skipped with one sentence each.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/04_input_pipeline.ipynb)

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

# On a CPU-only machine the "accelerator" is the CPU itself. We give the model one core (our stand-in
# accelerator) and leave the others to the input pipeline, as a GPU would. This must run before JAX starts.
compute_threads = cu.pipeline.limit_compute_threads(1)
cu.notebook.setup()

# %% tags=["device"]
sizes = cu.env.sizes(
    image=dict(ci=64, cpu=64),  # image side in pixels
    batch=dict(ci=32, cpu=32, gpu=128),  # images per batch
    steps=dict(ci=12, cpu=24, gpu=48),  # steps per epoch
    hidden=dict(ci=512, cpu=512, gpu=4096),  # the MLP's width: how long a step computes
    rounds=dict(smoke=3, ci=4, cpu=5, gpu=6),  # loaders compared run one epoch each per round, in turns
)
sizes

# %% slideshow={"slide_type": "skip"} tags=["device"]
import math
import multiprocessing
import os
import threading

import numpy as np
import torch
from IPython.display import display
from torch.utils.data import DataLoader, DistributedSampler

FRAMEWORKS = cu.notebook.present()  # the frameworks this runtime has (PyTorch is required)
HAS_TF, HAS_JAX, HAS_GRAIN = "tensorflow" in FRAMEWORKS, "jax" in FRAMEWORKS, cu.pipeline.grain_available()
CORES = os.cpu_count() or 1
FREE = cu.pipeline.data_cores(CORES, ranks=1)  # one core stays with each training process (section 4 says why)
SIZE, BATCH, STEPS, HIDDEN, ROUNDS = sizes.image, sizes.batch, sizes.steps, sizes.hidden, sizes.rounds
data = cu.pipeline.SyntheticImages(STEPS * BATCH, size=SIZE, work=4, seed=0)
print(data, f"| {BATCH} images per batch, {STEPS} steps per epoch, {CORES} cores ({FREE} for data), "
      f"frameworks: {', '.join(FRAMEWORKS)}, Grain: {HAS_GRAIN}, compute threads {compute_threads}")

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 1. A dataset that costs CPU time
#
# One seed article warns that *"sometimes the bottleneck is not the model but reading the images from disk"*
# and tells product managers to ask *"is data loading multi-process?"*. To measure that without downloads,
# `cu.pipeline.SyntheticImages` makes every sample from its index and a seed: a small stored picture is
# **decoded** (upsampled and smoothed with NumPy, the stand-in for a JPEG codec) and **augmented** (random crop,
# flip, brightness and contrast, normalisation). The three are timed in alternating rounds, so that their ratio
# gets an interval.
#
# **Prediction:** a batch costs `BATCH` times one sample (within 25%), all of it on the CPU, before the model
# sees a single number.

# %%
cost = cu.timing.interleaved({"one sample": lambda: data[0], "decode only": lambda: data.decode(0),
                              "one batch": lambda: data.batch(range(BATCH))}, rounds=ROUNDS, min_time=0.4)
for m in cost.values():
    print(m.summary())

# %% slideshow={"slide_type": "subslide"}
cu.pipeline.samples_plot(data)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x3, y3 = data[3]
again = cu.pipeline.SyntheticImages(len(data), size=SIZE, work=4, seed=0)[3]
assert np.array_equal(x3, again[0]) and y3 == again[1]
print("sample dtype:", x3.dtype, "| channels:", x3.shape[0], "| label dtype:", y3.dtype)
print("same sample from a new dataset object with the same seed:", np.array_equal(x3, again[0]))

# %%
per_batch = cu.intervals.speedup(cost["one batch"], cost["one sample"])  # one batch's time in samples' time
v_batch = cu.pipeline.findings.BATCH_COST.score(
    cu.findings.within("one batch in one sample's time", per_batch, 0.75 * BATCH, 1.25 * BATCH),
    sample=cu.pipeline.ms(cost["one sample"].median), decode=cu.pipeline.ms(cost["decode only"].median),
    whole=cu.pipeline.ms(cost["one batch"].median), batch=BATCH)
v_batch

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_batch.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 2. An instrumented training loop
#
# `cu.pipeline.run_loop(loader, step)` runs one SGD step of the course's MLP per batch (the train step per
# framework from `cu.models`) and reads the clock three times per step: before asking for the batch, when it
# arrives, and after the step's result is **synchronised** (`cu.timing.sync`: without it JAX, TensorFlow on a
# GPU and CUDA would return before computing, and the compute would be booked as waiting). The first step of
# each epoch includes the loader's start-up, so utilisation is computed over the steady steps.
#
# **Prediction:** with the data made in the training process itself (`num_workers=0`), nothing overlaps, so
# utilisation ≈ compute / (compute + the batch time of section 1), within 10 points.

# %%
widths = (data.features, HIDDEN, data.classes)  # the MLP's layers
steps, first_losses = cu.pipeline.warm_steps(widths, data.batch(range(BATCH)))  # compiles before the clock runs
torch_base = cu.pipeline.run_loop(DataLoader(data, batch_size=BATCH), steps["torch"], label="torch, num_workers=0")
torch_base

# %%
cu.pipeline.timeline_plot([torch_base], title="PyTorch, data made in the training process")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
assert all(w > 0 for w in torch_base.waits) and all(c > 0 for c in torch_base.computes)
print("every step waited and computed:", all(w > 0 for w in torch_base.waits) and all(c > 0 for c in torch_base.computes))
print("utilisation is a fraction in (0, 1):", 0 < torch_base.utilisation < 1)
print("warm-up losses finite:", all(math.isfinite(v) for v in first_losses.values()))

# %%
predicted = torch_base.compute_time / (torch_base.compute_time + cost["one batch"].median)  # computed
v_util = cu.pipeline.findings.BUSY_SHARE.score(
    cu.findings.equal("busy share", torch_base.utilisation, predicted, tolerance=0.10, unit="%", source="measured"),
    wait=cu.pipeline.ms(torch_base.wait_time), compute=cu.pipeline.ms(torch_base.compute_time),
    busy=cu.display.percent(torch_base.utilisation), batch=cu.pipeline.ms(cost["one batch"].median),
    predicted=cu.display.percent(predicted))
v_util

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_util.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 3. Finding the stall in a profiler trace
#
# In a real job nobody hands you `run_loop`'s numbers. A profiler trace does: `cu.pipeline.capture_loop`
# records a few training steps with `torch.profiler` (each step marked `train step`), saves the trace under
# `build/traces/` and reads it back with `cu.profile`. The gaps between two marked steps on the training
# thread are the time it had nothing to compute: the data stall, found from the trace alone. A second trace, with
# one `DataLoader` worker, shows what the fix looks like there (section 4 decides with an interval whether it pays).
#
# **Prediction:** the trace's mean gap matches the wait that `run_loop` measured, within 50% (the profiler adds
# its own overhead).

# %%
ctx = cu.pipeline.worker_context()  # forkserver where available: section 4 explains why not fork
forkserver_once = cu.pipeline.start_forkserver()  # its one-off start, paid here (section 4 reports it)
TRACED = min(STEPS, 8)
before_trace = cu.pipeline.capture_loop(DataLoader(data, batch_size=BATCH), steps["torch"], steps=TRACED,
                                        name="04_stall_before")
after_trace = cu.pipeline.capture_loop(
    DataLoader(data, batch_size=BATCH, num_workers=1, multiprocessing_context=ctx), steps["torch"], steps=TRACED,
    name="04_stall_after")
stalls = [cu.pipeline.data_stalls(before_trace, label="num_workers=0"),
          cu.pipeline.data_stalls(after_trace, label="1 worker")]
cu.pipeline.stalls_table(stalls)

# %%
cu.pipeline.trace_plot(before_trace, stalls[0], steps=3)

# %%
# NBVAL_CHECK_OUTPUT
print("marked steps found in each trace:", [len(s.steps) for s in stalls])
print("gaps between steps in each trace:", [len(s.gaps) for s in stalls])
print("trace files saved:", all(t.path is not None and t.path.is_file() for t in (before_trace, after_trace)))

# %%
gap_before = float(np.mean(stalls[0].gaps))
v_trace = cu.pipeline.findings.TRACE_GAP.score(
    cu.findings.equal("trace gap / run_loop wait", gap_before / torch_base.wait_time, 1.0, tolerance=0.5, unit="x",
                      source="measured"),
    gap=cu.pipeline.ms(gap_before), longest=cu.pipeline.ms(max(stalls[0].gaps)),
    busy=cu.display.percent(stalls[0].busy_share),
    wait=cu.pipeline.ms(torch_base.wait_time), gap_after=cu.pipeline.ms(float(np.mean(stalls[1].gaps))),
    busy_after=cu.display.percent(stalls[1].busy_share))
v_trace

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_trace.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 4. PyTorch: `DataLoader` workers
#
# With `num_workers=N` the `DataLoader` starts N worker processes that build batches ahead
# (`prefetch_factor` batches each) while the training process computes. Processes, not threads: each has
# its own Python interpreter, so the GIL does not serialise them.
#
# **The trap in a notebook.** On Linux, Python up to 3.13 starts workers with `fork` by default. `fork` copies
# the kernel's memory but only the *one thread* that called it: the threads of TensorFlow, JAX and OpenMP are
# gone in the child, yet every lock they held is copied *held*, and nobody is left to release it. The child
# deadlocks the first time it takes such a lock. `spawn` and `forkserver` start from a clean process, which must
# **import** the dataset: a class defined in the notebook cannot be found there. So the dataset lives in a
# module, and the context comes from `cu.pipeline.worker_context()`.

# %%
def add_noise(batch):  # defined in the notebook: lives in __main__, which a worker cannot import
    return batch


threads_now = threading.active_count()
print("threads running in this kernel:", threads_now, "| start method for workers:", ctx.get_start_method())

# %%
# NBVAL_CHECK_OUTPUT
print("kernel has more than one thread (fork would be unsafe):", threads_now > 1)
print("workers avoid fork:", ctx.get_start_method() != "fork")
print("module-level dataset, unpickled in a fresh process:", cu.pipeline.unpickles_in_fresh_process(data))
print("notebook-defined function, unpickled in a fresh process:", cu.pipeline.unpickles_in_fresh_process(add_noise))
print("a lambda, pickled at all:", cu.pipeline.unpickles_in_fresh_process(lambda batch: batch))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What starting workers costs
#
# **Prediction:** `spawn` re-imports torch in every worker at every loader start (seconds); `forkserver`
# imports it once into a small server and then forks each worker from it: the first batch arrives at least 5x
# sooner.

# %%
spawned = cu.pipeline.run_loop(
    DataLoader(data, batch_size=BATCH, num_workers=1, multiprocessing_context=multiprocessing.get_context("spawn")),
    steps["torch"], label="torch, 1 worker (spawn)")
forked = cu.pipeline.run_loop(DataLoader(data, batch_size=BATCH, num_workers=1, multiprocessing_context=ctx),
                              steps["torch"], label="torch, 1 worker (forkserver)")
cu.pipeline.timelines_table([spawned, forked], title="First batch with spawn and with forkserver", spread=True)

# %%
v_start = cu.pipeline.findings.START_METHODS.score(
    cu.findings.above("spawn's first batch / forkserver's", spawned.startups[0] / forked.startups[0], 5),
    spawn=cu.display.format_time(spawned.startups[0]), fork=cu.pipeline.ms(forked.startups[0]),
    server=cu.display.format_time(forkserver_once))
v_start

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_start.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### More workers, a deeper queue, persistent workers
#
# N workers deliver a batch every (data time per batch / N), so the wait disappears once that is shorter than
# the compute, but only while each worker has a core. One core always stays with the training process: here it
# computes the model; on a GPU machine it runs the Python loop and the kernel launches. So with one training
# process `FREE = CORES - 1` cores are left for data (with k ranks per node, `data_cores(CORES, ranks=k)` gives
# each rank (cores - k) / k). All loaders below run one epoch each per round, in turns, `ROUNDS` rounds: every
# comparison gets an interval over those paired rounds.
#
# **Exercise 04.1 (predict before you run the sweep).** From the `num_workers=0` run of section 2 and `FREE`,
# predict the smallest worker count that removes the wait. The check accepts what the simple model gives for
# this run's numbers, or the smallest count that halved the wait in the sweep.
#
# <details><summary>Hint</summary>N workers deliver a batch every (data time / N); set that equal to the
# compute time, round up, and cap it at the cores free for data.</details>

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = min(max(1, math.ceil(torch_base.wait_time / torch_base.compute_time)), FREE)
print(f"predicted: {answer} worker(s)")

# %% [markdown]
# **Prediction:** no worker count above `FREE` changes the steady step by a factor of 1.2 or more against the
# best count within `FREE`: past the free cores a worker waits for a core, not for work. "No change" needs the
# whole interval inside 1/1.2x to 1.2x; an interval reaching past that margin is not decided.
#
# **Prediction:** `prefetch_factor=8` changes the steady step by less than a factor of 1.2 against the default
# 2 (the same margin): a deeper queue absorbs jitter, but cannot make batches faster than the workers do.

# %%
loader_kwargs = dict(batch_size=BATCH, multiprocessing_context=ctx, pin_memory=torch.cuda.is_available())
counts = cu.pipeline.worker_counts(CORES)  # 0, 1, half the cores, FREE, and one more than FREE
with cu.pipeline.oversubscribing():  # more workers than free cores, on purpose: silence PyTorch's warning of it
    loaders = {"torch, num_workers=0": DataLoader(data, batch_size=BATCH)}
    loaders |= {f"torch, num_workers={n}": DataLoader(data, num_workers=n, **loader_kwargs) for n in counts if n > 0}
    loaders["torch, prefetch_factor=8"] = DataLoader(data, num_workers=FREE, prefetch_factor=8, **loader_kwargs)
    loaders["torch, persistent_workers"] = DataLoader(data, num_workers=FREE, persistent_workers=True, **loader_kwargs)
    sweep = cu.pipeline.run_loops({name: (loader, steps["torch"]) for name, loader in loaders.items()}, rounds=ROUNDS)
worker_mib = max(cu.pipeline.worker_memory().values(), default=0) / 2**20  # the persistent worker is still alive
del loaders  # the persistent loader's workers end with it
by_count = {n: sweep[f"torch, num_workers={n}"] for n in counts}
cu.pipeline.timelines_table(sweep, title=f"DataLoader variants on {CORES} cores ({FREE} free), {ROUNDS} rounds",
                            spread=True)

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("04.1", answer, wait=torch_base.wait_time, compute=torch_base.compute_time, free=FREE,
                   waits={n: t.wait_time for n, t in by_count.items()})

# %%
cu.pipeline.workers_plot(by_count, free_cores=FREE, title=f"Workers against cores ({CORES} cores)")

# %%
gains = {n: cu.intervals.speedup(by_count[0].part(), by_count[n].part()) for n in counts if n > 0}
best = max((n for n in counts if 0 < n <= FREE), key=lambda n: gains[n].ratio)  # best count within the free cores
beyond = {n: cu.intervals.speedup(by_count[best].part(), by_count[n].part()) for n in counts if n > FREE}
v_workers = cu.pipeline.findings.WORKERS.score(
    *[cu.findings.same(f"{n} workers against {best}", s, 1.2) for n, s in beyond.items()],
    free=FREE, cores=CORES, best=best)
v_workers

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_workers.prose()

# %% [markdown]
# Every worker shares this machine's cores with the model, so a worker's gain in wait may be paid partly in
# compute. The table puts each count's steady step and the model's own compute per step against
# `num_workers=0`. Where the compute ran longer, which shared resource (core time, caches, memory bandwidth)
# slowed it is not measured apart in this notebook.

# %%
compute_gains = {n: cu.intervals.speedup(by_count[0].part("compute"), by_count[n].part("compute"))
                 for n in counts if n > 0}
cu.display.table(["workers", "steady step against num_workers=0", "model's compute against num_workers=0"],
                 [(n, gains[n], compute_gains[n]) for n in gains], title="Each worker count against the loop's own",
                 note="Above 1x: shorter than with num_workers=0; an interval that contains 1x is within the noise.")

# %%
depth = cu.intervals.speedup(by_count[FREE].part(), sweep["torch, prefetch_factor=8"].part())
v_depth = cu.pipeline.findings.QUEUE_DEPTH.score(cu.findings.same("prefetch_factor=8 against 2", depth, 1.2),
                                                 workers=FREE, in_flight=FREE * 8, steps=STEPS)
v_depth

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_depth.prose()

# %% [markdown]
# `persistent_workers=True` keeps the workers between epochs.
#
# **Prediction:** with persistent workers the later rounds' first batches arrive sooner than with the same loader
# starting its workers again (the whole interval above 1x).

# %%
restart = cu.intervals.speedup(by_count[FREE].startup_part(), sweep["torch, persistent_workers"].startup_part())
v_persistent = cu.pipeline.findings.PERSISTENT.score(
    cu.findings.faster("later rounds' first batch, persistent against restarted workers", restart),
    plain=cu.pipeline.later_startups(by_count[FREE]),
    kept=cu.pipeline.later_startups(sweep["torch, persistent_workers"]),
    worker_mem=cu.display.format_bytes(worker_mib * 2**20), most=max(counts),
    in_flight=cu.display.format_bytes(max(counts) * 2 * BATCH * data.sample_bytes))
v_persistent

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_persistent.prose()

# %%
if torch.cuda.is_available():  # page-locked batches let .to("cuda", non_blocking=True) overlap the copy
    pinned = cu.pipeline.run_loops({f"torch, pin_memory={pin}": (
        DataLoader(data, num_workers=FREE, batch_size=BATCH, pin_memory=pin, multiprocessing_context=ctx),
        steps["torch"]) for pin in (False, True)}, rounds=ROUNDS)
    display(cu.pipeline.timelines_table(pinned, title="pin_memory on the GPU"))
    display(cu.intervals.speedup(*(run.part() for run in pinned.values())))

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
reference = torch_base.fingerprints
same_data = all(t.fingerprints == reference * (len(t.fingerprints) // len(reference))
                for t in (*sweep.values(), spawned, forked))
assert same_data
print("every DataLoader variant yields the same batches in the same order, every round:", same_data)
print("worker processes left after the loaders are gone:", len(cu.pipeline.worker_processes()))

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 5. TensorFlow: the `tf.data` chain
#
# `tf.data` runs a pipeline in C++ on its own threads: `map(f, num_parallel_calls=AUTOTUNE)` calls `f` on
# several batches at once and `prefetch(AUTOTUNE)` keeps batches ready while the step runs. That works when `f`
# is written in **TF ops** (here a whole batch per call: batch, then map). Left alone, tf.data parallelises a
# map and adds a prefetch by itself (its default rewrites), so the "before" pipeline switches them off.
#
# **Prediction:** parallel `map` + `prefetch` overlap the data with the step (TF's C++ threads hold no GIL), so
# the steady wait falls to less than half (the whole interval above 2x).

# %%
if HAS_TF:
    import tensorflow as tf

    records = tf.data.Dataset.from_tensor_slices(data.records())  # stored pictures, labels, augmentation choices
    decode_augment = cu.pipeline.tf_decode_augment(data)  # decode + augment in TF ops, one batch per call
    no_rewrites = tf.data.Options()
    no_rewrites.experimental_optimization.apply_default_optimizations = False  # no parallel map or prefetch added
    tf_before = records.batch(BATCH, drop_remainder=True).map(decode_augment).with_options(no_rewrites)
    tf_after = (records.batch(BATCH, drop_remainder=True)
                .map(decode_augment, num_parallel_calls=tf.data.AUTOTUNE)
                .prefetch(tf.data.AUTOTUNE)
                .with_options(no_rewrites))
    tf_runs = cu.pipeline.run_loops({"tensorflow, map in the loop": (tf_before, steps["tensorflow"]),
                                     "tensorflow, parallel map + prefetch": (tf_after, steps["tensorflow"])},
                                    rounds=ROUNDS)
    display(cu.pipeline.timelines_table(tf_runs, title="tf.data feeding the Keras model", spread=True))
    display(cu.pipeline.timeline_plot(tf_runs, title="tf.data: parallel map + prefetch (round 2)", epoch=1))
else:
    tf_runs = slow_path = {}
    v_tf = cu.pipeline.findings.TF_PREFETCH.not_tested("TensorFlow is not installed in this runtime: section 5 is "
                                                       "skipped")
    v_slow = cu.pipeline.findings.SLOW_PATH.not_tested("TensorFlow is not installed in this runtime: tf.data's slow "
                                                       "path (Going further) is skipped")
    display(v_tf)

# %%
# NBVAL_CHECK_OUTPUT
if HAS_TF:
    batches_np = list(cu.pipeline.NumpyBatches(data, BATCH))[:3]
    batches_tf = list(tf_after.take(3))
    print("TF-ops labels identical to the DataLoader's:",
          all(np.array_equal(t[1].numpy(), n[1]) for t, n in zip(batches_tf, batches_np)))
    print("TF-ops images equal up to float rounding (< 1e-5):",
          max(cu.pipeline.max_difference(t, n) for t, n in zip(batches_tf, batches_np)) < 1e-5)

# %%
if HAS_TF:
    tf_wait = cu.intervals.speedup(*(run.part("wait") for run in tf_runs.values()))
    v_tf = cu.pipeline.findings.TF_PREFETCH.score(
        cu.findings.above("steady wait, map in the loop / parallel map + prefetch", tf_wait, 2))
    display(v_tf)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_tf.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 6. JAX: a prefetching thread, and Grain
#
# JAX has no loader in its core. The smallest fix is a thread: `cu.pipeline.Prefetch(source, size=2)` makes the
# next batches and calls `jax.device_put` on them in a background thread while the step runs (a compiled JAX
# computation releases the GIL); `cu.pipeline.InLoop(source)` does the same work in the training thread.
# **Grain** is one data loader used with JAX (tf.data and PyTorch's `DataLoader` feed JAX too, their batches
# converted to arrays): a dataset of random-access records, transformed, batched and read by worker
# *processes* (`mp_prefetch`), with an iterator whose position can be checkpointed.
#
# **Prediction:** with the thread, the step falls to about max(compute, data) of the loop alone (within 20%),
# never below it.
#
# **Prediction:** Grain's worker process makes the JAX step faster than making the batches in the loop.

# %%
if HAS_JAX:
    source = cu.pipeline.NumpyBatches(data, BATCH)
    jax_loops = {"jax, in the loop": (cu.pipeline.InLoop(source), steps["jax"]),
                 "jax, Prefetch thread": (cu.pipeline.Prefetch(source, size=2), steps["jax"])}
else:
    jax_runs = {}
    v_jax = cu.pipeline.findings.JAX_FLOOR.not_tested("JAX is not installed in this runtime: section 6 and exercise "
                                                      "04.2 are skipped")
    v_grain = cu.pipeline.findings.GRAIN.not_tested("JAX is not installed in this runtime: Grain's run is skipped")
    display(v_jax, v_grain)

# %%
if HAS_GRAIN:
    import grain.python as grain
    from absl import flags

    flags.FLAGS.mark_as_parsed()  # grain 0.2.18 reads an absl flag that only absl.app parses (google/grain#1355)
    grain_ds = (grain.MapDataset.source(data)  # random access: len(data) and data[i], decoded and augmented
                .batch(BATCH, drop_remainder=True)
                .repeat()  # epochs without end: one iterator, its workers started once
                .to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=BATCH))
                .mp_prefetch(grain.MultiprocessingOptions(num_workers=FREE, per_worker_buffer_size=2)))
    grain_batches = iter(grain_ds)  # starts FREE worker process(es)
    grain_label = f"jax, Grain, num_workers={FREE}"
    jax_loops[grain_label] = (cu.pipeline.EpochsOf(grain_batches, STEPS), steps["jax"])
elif HAS_JAX:
    v_grain = cu.pipeline.findings.GRAIN.not_tested("Grain is not installed in this runtime (pip install grain): its "
                                                    "run is skipped")
    display(v_grain)

# %%
if HAS_JAX:
    jax_runs = cu.pipeline.run_loops(jax_loops, rounds=ROUNDS)
    display(cu.pipeline.timelines_table(jax_runs, title="JAX: batches made in the loop, by a thread, by Grain",
                                        spread=True))
    display(cu.pipeline.timeline_plot(jax_runs, title="JAX: where each step's time goes (round 2)", epoch=1))
if HAS_GRAIN:
    grain_batches.close()  # stops Grain's worker processes

# %%
# NBVAL_CHECK_OUTPUT
if HAS_JAX:
    with iter(cu.pipeline.Prefetch(source, size=2)) as early:
        next(early)  # the loop has taken one batch; meanwhile the thread keeps transferring the next ones
        print("the thread ran ahead of the loop (3 batches transferred while 1 was consumed):", early.wait_ahead(3))
    print("JAX batches identical to the DataLoader's, every round:",
          all(t.fingerprints == reference * ROUNDS for t in jax_runs.values()))
    print("prefetch threads still running:", cu.pipeline.prefetch_threads())
    print("worker processes left:", len(cu.pipeline.worker_processes()))

# %%
if HAS_JAX:
    alone, ahead = jax_runs["jax, in the loop"], jax_runs["jax, Prefetch thread"]
    beat_floor = cu.intervals.speedup(cu.pipeline.floor(alone), ahead.part())  # above 1: the step beat its floor
    v_jax = cu.pipeline.findings.JAX_FLOOR.score(
        cu.findings.within("floor / step with the thread", beat_floor, 1 / 1.2, 1))
    display(v_jax)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_jax.prose()

# %%
if HAS_GRAIN:
    grain_run = jax_runs[grain_label]
    grain_gain = cu.intervals.speedup(alone.part(), grain_run.part())
    v_grain = cu.pipeline.findings.GRAIN.score(cu.findings.faster("Grain's step against the loop alone", grain_gain))
    display(v_grain)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_grain.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 7. Before and after, framework by framework
#
# Each framework against **its own** baseline, the data made in the training loop, measured in the same rounds
# as its "after": `FREE` `DataLoader` workers for PyTorch, parallel `map` + `prefetch` for TensorFlow, the
# prefetching thread for JAX. The data work differs across frameworks (TensorFlow's runs in TF ops), so compare
# each row's before with its after, not the rows with each other.

# %%
before_after = {"torch": (by_count[0], by_count[FREE])}
if HAS_TF:
    before_after["tensorflow"] = tuple(tf_runs.values())
if HAS_JAX:
    before_after["jax"] = (alone, ahead)
cu.pipeline.utilisation_plot(before_after, title="Waiting for data, before and after (steady steps)")

# %%
# NBVAL_CHECK_OUTPUT
print("frameworks compared before/after:", ", ".join(sorted(before_after)))
print("every pair ran in the same rounds:", all(len(set(a.epochs)) == len(set(b.epochs)) == ROUNDS
                                                 for a, b in before_after.values()))

# %%
cu.pipeline.before_after_table(before_after)

# %% [markdown]
# The busy share rewards a step that computes longer: judge a pipeline fix by its step time, and read the busy
# share next to the compute.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The seed's utilisation claim
#
# The seed article says eager training typically keeps the hardware **40-60%** busy and compilers lift that to
# 80%+. Our "before" busy share is set by a choice we made: how long the model computes per batch against how
# long a batch takes to make. The same loader, feeding a model twice as wide:

# %%
wide, _ = cu.pipeline.warm_steps((data.features, 2 * HIDDEN, data.classes), data.batch(range(BATCH)),
                                 frameworks=["torch"])
wide_base = cu.pipeline.run_loop(DataLoader(data, batch_size=BATCH), wide["torch"],
                                 label=f"torch, num_workers=0, width {2 * HIDDEN}")
cu.pipeline.timelines_table([torch_base, wide_base], title="The same loader feeding two model widths")

# %%
v_seed = cu.pipeline.findings.SEED.not_tested(
    "the seed's 40-60% is the utilisation of real jobs' accelerators, while this notebook's busy share follows from "
    "the model width it chose (HIDDEN)", hidden=HIDDEN, wide_hidden=2 * HIDDEN,
    busy=cu.display.percent(torch_base.utilisation),
    wide_busy=cu.display.percent(wide_base.utilisation), compute=cu.pipeline.ms(torch_base.compute_time),
    wide_compute=cu.pipeline.ms(wide_base.compute_time))
v_seed

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_seed.prose()

# %% [markdown]
# ### Cores for workers
#
# Threads add the GIL (JAX's prefetch thread); processes add memory (section 4 measured an idle worker's). On a
# GPU machine the model no longer needs a CPU core to compute, but each training process still needs one
# (Python, kernel launches, the pin-memory thread). With one training process per node the rule of thumb is
# *at most cores - 1 workers*; with k ranks per node (notebook 05) it is *at most (cores - k) / k workers per
# rank*. Section 4's sweep tests the one-process rule on the machine that runs this notebook, whether or not it
# has a GPU.

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## Exercises
#
# Exercise 04.1 was the worker-count prediction in section 4.
#
# **Exercise 04.2 (decide with an interval).** Threads share one GIL; processes do not. Section 6 timed JAX fed by
# a thread (`Prefetch`) and by Grain's worker process in the same rounds. Which gave the shorter steady step *in
# this run*: `"threads"`, `"processes"`, or `"tie"` when the interval of the speed-up contains 1?
#
# <details><summary>Hint</summary><code>cu.intervals.speedup(a.part(), b.part())</code> on the two runs; its
# <code>.outcome</code> is "faster", "slower" or "within the noise".</details>

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
if HAS_GRAIN:
    by_process = cu.intervals.speedup(ahead.part(), grain_run.part())
    answer = {"faster": "processes", "slower": "threads"}.get(by_process.outcome, "tie")
    print(f"{answer}: Grain's process ran the step {by_process} the thread's speed ({by_process.outcome}). A process "
          "escapes the GIL but pays a copy of every batch between processes and a core of its own.")

# %%
# NBVAL_CHECK_OUTPUT
ex2 = dict(thread_rounds=ahead.part().rounds, process_rounds=grain_run.part().rounds) if HAS_GRAIN else {}
cu.exercises.check("04.2", answer, **ex2)

# %% [markdown]
# **Exercise 04.3 (write the measure).** Write `utilisation(waits, computes)` for one epoch: the busy share of
# the steady steps, as `Timeline.utilisation` computes it. The check runs it on random epochs.
#
# <details><summary>Hint</summary>Leave out the first step (the loader's start-up), then divide the total
# compute by the total of wait + compute.</details>

# %%
answer = None  # your answer here


# %% jupyter={"source_hidden": true} tags=["solution"]
def utilisation(waits, computes):
    steady_waits, steady_computes = np.asarray(waits)[1:], np.asarray(computes)[1:]
    return steady_computes.sum() / (steady_waits.sum() + steady_computes.sum())


answer = utilisation
print(f"on the num_workers=0 run: {utilisation(torch_base.waits, torch_base.computes):.3f} "
      f"(Timeline: {torch_base.utilisation:.3f})")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("04.3", answer)

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.notebook.summary_table("04_input_pipeline", [
    ("data time per sample (decode + augment)", cost["one sample"].median * 1e3, "ms", "NumPy, one core, median"),
    ("data stall per step, from the trace", gap_before * 1e3, "ms", "num_workers=0, gaps between marked steps"),
    *[(f"{fw} busy share before", a.utilisation * 100, "%", "data in the loop") for fw, (a, _) in before_after.items()],
    *[(f"{fw} busy share after", b.utilisation * 100, "%", b.label) for fw, (_, b) in before_after.items()],
    *[(f"{fw} step-time speed-up", s.ratio, "x", f"own baseline; {s.estimate}, {s.interval}: {s.outcome}")
      for fw, s in ((fw, cu.intervals.speedup(a.part(), b.part())) for fw, (a, b) in before_after.items())],
    ("torch busy share, width 2x", wide_base.utilisation * 100, "%", "same loader: the 'before' depends on the model"),
    ("worker start-up, spawn", spawned.startups[0], "s", "first batch, fresh interpreter"),
    ("worker start-up, forkserver", forked.startups[0] * 1e3, "ms", "first batch, after the server started"),
    ("private memory per DataLoader worker", worker_mib, "MiB", "USS of an idle persistent worker"),
])

# %% [markdown]
# **What to remember**
# - Measure the wait: time *waiting for the batch* apart from the (synchronised) step, or read the gaps between
#   steps in a profiler trace; no compiler fixes a data stall.
# - Overlap, then parallelise: prefetching hides data time up to the compute time; workers share the cores with
#   the model. Call a change "faster" only when an interval over paired rounds says so.
# - In your own code: `DataLoader` workers from module-level code with `forkserver` or `spawn`, kept by
#   `persistent_workers`; tf.data in TF ops with parallel `map` and `prefetch`; Grain's worker processes for JAX.
#   Then prove the faster pipeline yields the same data.
#
# **Next:** [05 · data parallelism](05_data_parallel.ipynb): when one device is kept busy, does a second one pay?

# %%
print(cu.notebook.last_verified())

# %% [markdown] course={"lead": false, "optional": true} slideshow={"slide_type": "slide"}
# ## Going further
#
# ### tf.data's slow path: `tf.numpy_function`
#
# Our NumPy decode could run inside tf.data through `tf.numpy_function`, once per sample. Every such call leaves
# the C++ runtime, takes the GIL, and converts tensors to arrays and back. Three ways to make the same batches
# (the first half of the epoch), data only (no model), in alternating rounds: the NumPy code called directly in
# the loop, the same code through `numpy_function`, and the TF ops of section 5.
#
# **Prediction:** the `numpy_function` pipeline is slower than the same NumPy code called directly, and the
# TF-ops pipeline is faster than it.

# %%
if HAS_TF:
    half = cu.pipeline.SyntheticImages(len(data) // 2, size=SIZE, work=4, seed=0)  # the same first samples as data
    in_tf_ops = (tf.data.Dataset.from_tensor_slices(half.records()).batch(BATCH, drop_remainder=True)
                 .map(cu.pipeline.tf_decode_augment(half)).with_options(no_rewrites))  # section 5's "before"
    slow_path = cu.pipeline.run_loops({
        "NumPy, called directly": (cu.pipeline.NumpyBatches(half, BATCH), lambda batch: None),
        "tf.data, numpy_function per sample": (cu.pipeline.numpy_function_pipeline(half, BATCH), lambda batch: None),
        "tf.data, TF ops per batch": (in_tf_ops, lambda batch: None)},
        rounds=ROUNDS)
    display(cu.pipeline.timelines_table(slow_path, title="Data only: wait = time per batch", spread=True))

# %%
# NBVAL_CHECK_OUTPUT
if HAS_TF:
    print("numpy_function pipeline bit-identical to the DataLoader, every round:",
          slow_path["tf.data, numpy_function per sample"].fingerprints == reference[:STEPS // 2] * ROUNDS)

# %%
if HAS_TF:
    direct, crossing, in_ops = (run.part("wait") for run in slow_path.values())
    slower, faster = cu.intervals.speedup(direct, crossing), cu.intervals.speedup(direct, in_ops)
    v_slow = cu.pipeline.findings.SLOW_PATH.score(
        cu.findings.slower("numpy_function against NumPy called directly", slower),
        cu.findings.faster("TF ops against NumPy called directly", faster))
display(v_slow)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_slow.prose()

# %% [markdown]
# ### When loaders meet data parallelism
#
# With several training processes (notebook 05), each rank must read a *different* part of the data:
# `DistributedSampler(dataset, num_replicas, rank)` gives each rank its own shard, and `sampler.set_epoch(epoch)`
# at the start of every epoch changes the shuffle; forget it and every epoch repeats the first one's order.

# %%
# NBVAL_CHECK_OUTPUT
shards = [DistributedSampler(data, num_replicas=2, rank=r, shuffle=True, seed=0) for r in (0, 1)]
epoch0 = [list(s) for s in shards]
shards[0].set_epoch(1)
print("the two ranks' shards are disjoint and cover the data:",
      not set(epoch0[0]) & set(epoch0[1]) and len(set(epoch0[0]) | set(epoch0[1])) == len(data))
print("same order again without set_epoch:", list(shards[1]) == epoch0[1])
print("new order after set_epoch(1):", list(shards[0]) != epoch0[0])
