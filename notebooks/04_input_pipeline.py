# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 5
#       workshop: 45
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
# - find the same stall in a **profiler trace** alone, and measure how much of it the fix removes;
# - remove the wait in each framework: PyTorch `DataLoader` workers, `tf.data` written in TF ops with a
#   vectorised `map` + `prefetch`, and a prefetching iterator for JAX;
# - say, from measurements, when more workers stop helping (cores, the GIL, memory).
#
# **Minutes:** about 5 on a laptop, 45 in a workshop. **Accelerators:** every section runs on a CPU; on a GPU
# the models run on the device and `pin_memory` is switched on; no section needs a TPU. Without TensorFlow or
# JAX, their sections are skipped with one sentence.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/04_input_pipeline.ipynb)
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

# On a CPU-only machine the "accelerator" is the CPU itself. We give the model one core (our stand-in
# accelerator) and leave the others to the input pipeline, as a GPU would. This must run before JAX starts.
compute_threads = cu.pipeline.limit_compute_threads(1)
cu.notebook.setup()

# %% slideshow={"slide_type": "skip"}
import math
import multiprocessing
import os
import threading

import numpy as np
import torch
from IPython.display import Markdown, display
from torch.utils.data import DataLoader, DistributedSampler

FRAMEWORKS = cu.notebook.present()  # the frameworks this runtime has (PyTorch is required)
CORES = os.cpu_count() or 1
FREE = cu.pipeline.data_cores(CORES)  # one core stays with the training process (section 3 says why)
SIZE = cu.env.pick(ci=64, cpu=64)  # image side in pixels
BATCH = cu.env.pick(ci=32, cpu=32, gpu=128)
STEPS = cu.env.pick(ci=16, cpu=48, gpu=48)  # steps per epoch
HIDDEN = cu.env.pick(ci=512, cpu=512, gpu=4096)  # the MLP's width sets how long a step computes
data = cu.pipeline.SyntheticImages(STEPS * BATCH, size=SIZE, work=4, seed=0)


def load():
    """The machine's load right now, for any verdict that the load may explain (shown, not assumed)."""
    return f"load average {os.getloadavg()[0]:.1f} on {CORES} cores"


print(data, f"| {BATCH} images per batch, {STEPS} steps per epoch, {CORES} cores ({FREE} for data), "
      f"frameworks: {', '.join(FRAMEWORKS)}, compute threads {compute_threads}")

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
# ## 1. A dataset that costs CPU time
#
# One seed article warns that *"sometimes the bottleneck is not the model but reading the images from disk"*
# and tells product managers to ask *"is data loading multi-process? (so the GPU does not wait for the
# CPU)"*. To measure that without downloads, `cu.pipeline.SyntheticImages` makes every sample from its
# index and a seed: a small stored picture is **decoded** (upsampled and smoothed with NumPy, the stand-in
# for a JPEG codec) and **augmented** (random crop, flip, brightness and contrast, normalisation).
#
# **Prediction:** a batch costs `BATCH` times the cost of one sample (within 25%), all of it on the CPU,
# before the model sees a single number.

# %%
one_sample = cu.timing.benchmark(data.__getitem__, 0, label="decode + augment one sample")
decode_only = cu.timing.benchmark(data.decode, 0, label="decode only")
one_batch = cu.timing.benchmark(data.batch, range(BATCH), label=f"one batch of {BATCH}")
batch_cost = one_sample.median * BATCH
for m in (one_sample, decode_only, one_batch):
    print(m.summary())
print(f"computed: {BATCH} x one sample = {cu.display.format_time(batch_cost)}")


# %% slideshow={"slide_type": "subslide"}
def show_samples(dataset, count=8):
    """The first ``count`` augmented samples, as the model receives them (normalised, shown rescaled)."""
    fig, axes = cu.plotting.figure(count, width=1.2 * count, height=1.6)
    for i, ax in enumerate(axes):
        x, y = dataset[i]
        ax.imshow(np.clip(x.transpose(1, 2, 0) * 0.25 + 0.5, 0, 1))
        ax.set_title(f"class {y}", fontsize=9)
        ax.axis("off")
    fig.suptitle("Synthetic samples after decode + augment (seeded: the same on every run)")
    return fig


show_samples(data)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x3, y3 = data[3]
again = cu.pipeline.SyntheticImages(len(data), size=SIZE, work=4, seed=0)[3]
assert np.array_equal(x3, again[0]) and y3 == again[1]
print("sample dtype:", x3.dtype, "| channels:", x3.shape[0], "| label dtype:", y3.dtype)
print("same sample from a new dataset object with the same seed:", np.array_equal(x3, again[0]))

# %%
batch_ratio = one_batch.median / batch_cost
cu.display.verdict(abs(batch_ratio - 1) <= 0.25,
                   f"one batch took {cu.display.format_time(one_batch.median)}, {batch_ratio:.2f}x the computed "
                   f"{BATCH} x one sample ({cu.display.format_time(batch_cost)})",
                   "stacking the samples and the per-sample Python overhead are not free, or the machine's load "
                   f"changed between the two measurements ({load()}; spreads above)")

# %%
Markdown(
    f"Decode + augment of one sample measured {cu.display.format_time(one_sample.median)} of CPU time, decoding "
    f"alone {cu.display.format_time(decode_only.median)} (medians; spreads above); a batch of {BATCH} measured "
    f"{cu.display.format_time(one_batch.median)} ({batch_ratio:.2f}x the sum of its samples"
    + (": the cost is simply per sample, nothing is shared between samples" if abs(batch_ratio - 1) <= 0.25 else
       ": the sum of samples is not the whole story here, the stacking copy and the load on the machine count")
    + "). Whether that matters depends on how long the step computes: the next section measures both, step by step."
)

# %% [markdown] course={"lead": true, "minutes": 4} slideshow={"slide_type": "slide"}
# ## 2. An instrumented training loop
#
# `cu.pipeline.run_loop(batches, step)` runs one SGD step of the course's MLP per batch (the one train step
# per framework from `cu.models`) and reads the clock three times per step: before asking for the batch, when
# it arrives, and after the step's result is **synchronised** (`cu.timing.sync`: without it JAX, TensorFlow on
# a GPU and CUDA would return before computing, and the compute would be booked as waiting). The first step
# of each epoch includes the loader's start-up, so utilisation is computed over the steady steps and the
# start-up is reported apart.
#
# **Prediction:** with the data made in the training process itself (`num_workers=0`), the step cannot
# overlap anything, so utilisation ≈ compute / (compute + data time per batch), within 10 points.

# %%
sizes = (data.features, HIDDEN, data.classes)
steps, first_losses = cu.pipeline.warm_steps(sizes, data.batch(range(BATCH)))  # compiles before the clock runs
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
predicted_util = torch_base.compute_time / (torch_base.compute_time + one_batch.median)  # measured batch time
util_verdict = cu.display.verdict(
    abs(torch_base.utilisation - predicted_util) <= 0.10,
    f"measured {torch_base.utilisation:.0%}, computed from the batch's data time {predicted_util:.0%}",
    f"the loop waited {torch_base.wait_time * 1e3:.1f} ms per step, not the {one_batch.median * 1e3:.1f} ms that "
    "the batch benchmark predicts: the DataLoader's collate (NumPy to torch) and the load on the machine differ "
    f"between the two measurements ({load()})")
util_verdict

# %%
Markdown(
    f"Each step waited {torch_base.wait_time * 1e3:.1f} ms for its batch and computed for "
    f"{torch_base.compute_time * 1e3:.1f} ms (means): the accelerator was busy **{torch_base.utilisation:.0%}** of "
    "the time. The prediction " + ("held within its 10 points: nothing overlaps, so wait and compute add up. "
                                   if util_verdict.held else "failed: the busy share moved more than 10 points. ")
    + cu.pipeline.explain.wait_vs_batch(torch_base, one_batch)
    + " Grey in the timeline is time the accelerator had nothing to do."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The "before" number is ours to choose
#
# The seed article says eager training typically keeps the hardware **40-60%** busy and compilers lift that
# to 80%+. Which utilisation is that? Here it is the busy time share of the accelerator, the quantity measured
# above. But our "before" is set by a choice we made: how long the model computes per batch relative to how
# long a batch takes to make. A demonstration, not a test: the same loader feeding a model four times wider.
# (Section 7 counts how many of this notebook's "before" loops land inside the seed's range.)

# %%
wide, _ = cu.pipeline.warm_steps((data.features, 4 * HIDDEN, data.classes), data.batch(range(BATCH)),
                                 frameworks=["torch"])
wide_base = cu.pipeline.run_loop(DataLoader(data, batch_size=BATCH), wide["torch"],
                                 label=f"torch, num_workers=0, width {4 * HIDDEN}")
cu.pipeline.timelines_table([torch_base, wide_base], title="The same loader feeding two model widths", spread=True)

# %%
Markdown(
    f"With width {HIDDEN} the loop was busy {torch_base.utilisation:.0%} of the time, with width {4 * HIDDEN} "
    f"{wide_base.utilisation:.0%}: the same loader, the same framework, compute per step "
    f"{torch_base.compute_time * 1e3:.1f} → {wide_base.compute_time * 1e3:.1f} ms. Whether a number lands inside "
    "the seed's 40-60% says more about the ratio of model to data work than about eager execution: we picked "
    "that ratio. What transfers to your job is the method: measure the wait and the compute of *your* step, then "
    f"remove the wait. The rest of this notebook keeps width {HIDDEN}, "
    + cu.pipeline.explain.compute_vs_wait(torch_base) + "."
)

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
# ## 3. Finding the stall in a profiler trace
#
# In a real job nobody hands you `run_loop`'s numbers. A profiler trace does: `cu.pipeline.capture_loop`
# records a few training steps with `torch.profiler` (each step marked `train step`), saves the trace under
# `build/traces/` and reads it back with `cu.profile`. The gaps between two marked steps on the training
# thread are the time it had nothing to compute: the data stall, found from the trace alone.
#
# **Prediction:** the trace's mean gap between steps matches the wait that `run_loop` measured (within 50%:
# the profiler itself adds overhead), and one `DataLoader` worker shrinks the gap to less than half.

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
loop_events = before_trace.select(rf"^{cu.pipeline.STEP_MARK}$|DataLoader")  # the steps and the loader's calls
start = sorted(e.start for e in loop_events.events if e.name == cu.pipeline.STEP_MARK)
cu.plotting.trace_timeline(loop_events, threads=[stalls[0].thread], start=start[1], end=start[min(4, len(start) - 1)],
                           title="The training thread in the trace (num_workers=0): between steps, the loader runs")

# %%
# NBVAL_CHECK_OUTPUT
print("marked steps found in each trace:", [len(s.steps) for s in stalls])
print("gaps between steps in each trace:", [len(s.gaps) for s in stalls])
print("trace files saved:", all(t.path is not None and t.path.is_file() for t in (before_trace, after_trace)))

# %%
gap_before, gap_after = (float(np.mean(s.gaps)) for s in stalls)
readings_agree = abs(gap_before / torch_base.wait_time - 1) <= 0.5
halved = gap_after < 0.5 * gap_before
trace_verdict = cu.display.verdict(
    readings_agree and halved,
    f"trace gap {gap_before * 1e3:.1f} ms vs run_loop wait {torch_base.wait_time * 1e3:.1f} ms; with 1 worker "
    f"{gap_after * 1e3:.1f} ms",
    "; ".join([f"the trace's gap was {gap_before / torch_base.wait_time:.2f}x run_loop's wait"] * (not readings_agree)
              + [f"one worker left {gap_after / gap_before:.0%} of the gap"] * (not halved))
    + f"; why is not established by this run (candidates: the profiler's own overhead, the load: {load()})")
trace_verdict

# %%
Markdown(
    f"From the trace alone: the training thread sat idle {gap_before * 1e3:.1f} ms between steps on average "
    f"(longest {max(stalls[0].gaps) * 1e3:.1f} ms) and was busy {stalls[0].busy_share:.0%} of the time; "
    f"`run_loop` had measured a wait of {torch_base.wait_time * 1e3:.1f} ms. With one worker the gaps fell to "
    f"{gap_after * 1e3:.1f} ms (busy {stalls[1].busy_share:.0%}): **{gap_after / gap_before:.0%}** of the stall is "
    + ("left, reduced but not gone. " if gap_after > 0.05 * gap_before else "left: practically gone. ")
    + (cu.pipeline.explain.trace_worker(one_batch, *stalls, load()) if gap_after > 0.05 * gap_before else "")
    + ("The trace's gap and `run_loop`'s wait agree within the predicted 50%, so the trace is enough to find a data "
       "stall in a job you did not instrument. " if readings_agree else
       "The trace's gap and `run_loop`'s wait differ by more than the predicted 50%: profiling adds overhead to "
       "each traced op (a candidate cause, not measured apart here), so compare gaps within one trace, not across "
       "tools. ")
    + "Online, drop the saved `.json` on https://ui.perfetto.dev to browse it."
)

# %% [markdown] course={"lead": false, "minutes": 12} slideshow={"slide_type": "slide"}
# ## 4. PyTorch: `DataLoader` workers
#
# With `num_workers=N` the `DataLoader` starts N worker processes that build batches ahead
# (`prefetch_factor` batches each) while the training process computes. Processes, not threads: each has
# its own Python interpreter, so the GIL does not serialise them.
#
# **The trap in a notebook.** On Linux, Python up to 3.13 starts workers with `fork` by default. `fork` copies
# the whole memory of the kernel but only the *one thread* that called it: the threads that TensorFlow, JAX and
# OpenMP keep running do not exist in the child, yet every lock they held at that instant is copied in its
# *held* state, and no thread is left to release it. The child deadlocks the first time it takes such a lock
# (in `malloc`, a thread pool, the import lock). `spawn` and `forkserver` start from a clean, single-threaded
# process, which must **import** the dataset: a class or function defined in the notebook cannot be found
# there. So the dataset lives in a module (`course_utils/pipeline/`) and the context comes from
# `cu.pipeline.worker_context()`.

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
# imports it once into a small server (`worker_context` preloads torch and the dataset module) and then forks
# each worker from it (milliseconds): the first batch arrives at least 5x sooner.

# %%
spawned = cu.pipeline.run_loop(
    DataLoader(data, batch_size=BATCH, num_workers=1, multiprocessing_context=multiprocessing.get_context("spawn")),
    steps["torch"], label="torch, 1 worker (spawn)")
forked = cu.pipeline.run_loop(DataLoader(data, batch_size=BATCH, num_workers=1, multiprocessing_context=ctx),
                              steps["torch"], label="torch, 1 worker (forkserver)")
spawned_again = cu.pipeline.run_loop(  # the same spawn loop once more: does its steady compute follow the method?
    DataLoader(data, batch_size=BATCH, num_workers=1, multiprocessing_context=multiprocessing.get_context("spawn")),
    steps["torch"], label="torch, 1 worker (spawn, again)")
print(f"forkserver start (once per kernel, in section 3): {cu.display.format_time(forkserver_once)}")
cu.pipeline.timelines_table([spawned, forked, spawned_again], title="First batch with spawn and with forkserver",
                            spread=True)

# %%
cu.display.verdict(spawned.startups[0] > 5 * forked.startups[0],
                   f"first batch {spawned.startups[0]:.2f} s with spawn, {forked.startups[0] * 1e3:.0f} ms with "
                   f"forkserver ({spawned.startups[0] / forked.startups[0]:.0f}x)",
                   "the forkserver start this time included work that spawn also pays (the dataset's first "
                   "batch), so the ratio is smaller than the import alone would give")

# %%
Markdown(cu.pipeline.explain.spawn_compute(spawned, forked, spawned_again, load()))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### More workers
#
# N workers deliver a batch every (data time per batch / N), so the wait disappears once that is shorter than
# the compute, but only while each worker has a core of its own. One core always stays with the training
# process: on this CPU-only machine it computes the model; on a GPU machine it runs the Python loop, the kernel
# launches and the pin-memory thread, and starving it starves the GPU. So `FREE = CORES - 1` cores are left for
# data, and we expect the gain to stop there. (PyTorch warns when `num_workers` exceeds its suggested maximum;
# the sweep goes past the cores on purpose, so `cu.pipeline.oversubscribing()` silences that one warning there.)
#
# **Exercise 04.1 (predict before you run the sweep).** From the `num_workers=0` run above (its wait and
# compute per step) and `FREE`, predict the smallest worker count that removes the wait. The check accepts what
# the simple model gives for this run's numbers, or what the sweep then shows (the smallest count that halved
# the wait).
#
# <details><summary>Hint</summary>N workers deliver a batch every (data time / N); set that equal to the
# compute time, round up, and cap it at the cores free for data.</details>

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = min(max(1, math.ceil(torch_base.wait_time / torch_base.compute_time)), FREE)
print(f"predicted: {answer} worker(s)")

# %% [markdown]
# **Prediction:** no count above `FREE` workers gives a faster steady step *beyond the noise* (their quartile
# ranges of step time apart) than the best count within `FREE`. Counts whose quartile ranges overlap are a tie.
# The 0-worker row is section 2's run (`torch_base`): one measurement of the baseline, not two.

# %%
loader_kwargs = dict(batch_size=BATCH, multiprocessing_context=ctx, pin_memory=torch.cuda.is_available())
torch_runs = {0: torch_base}  # the in-process loader, measured once in section 2
for workers in sorted({*cu.pipeline.worker_counts(CORES), FREE} - {0}):
    with cu.pipeline.oversubscribing():  # more workers than cores, on purpose: silence PyTorch's warning of it
        loader = DataLoader(data, num_workers=workers, **loader_kwargs)
        torch_runs[workers] = cu.pipeline.run_loop(loader, steps["torch"],
                                                   label=f"torch, {workers} worker" + ("" if workers == 1 else "s"))
    del loader  # a non-persistent loader's workers end with its iterator; this drops the last reference
cu.pipeline.timelines_table(list(torch_runs.values()), title=f"DataLoader workers on {CORES} cores ({FREE} free)",
                            spread=True)

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("04.1", answer, wait=torch_base.wait_time, compute=torch_base.compute_time, free=FREE,
                   waits={n: t.wait_time for n, t in torch_runs.items()})

# %%
cu.pipeline.timeline_plot([*torch_runs.values(), spawned], title="PyTorch DataLoader: workers (and spawn)")

# %%
def quartiles(run, part="compute"):
    q = run.part(part)
    return f"{q.p25 * 1e3:.1f}-{q.p75 * 1e3:.1f} ms"


step_median = {w: t.part().median for w, t in torch_runs.items()}
best_workers = min(step_median, key=step_median.get)  # the fastest median step
within_free = min((w for w in torch_runs if w <= FREE), key=step_median.get)
tied = [w for w in torch_runs if not cu.pipeline.apart(torch_runs[w], torch_runs[best_workers])]  # incl. the best
beyond = [w for w in torch_runs if w > FREE and step_median[w] < step_median[within_free]
          and cu.pipeline.apart(torch_runs[w], torch_runs[within_free])]
workers_verdict = cu.display.verdict(
    not beyond,
    f"fastest median at {best_workers} worker(s), {step_median[best_workers] * 1e3:.1f} ms (quartiles "
    f"{quartiles(torch_runs[best_workers], 'step')}); best with at most {FREE}: {within_free} worker(s), "
    f"{step_median[within_free] * 1e3:.1f} ms ({quartiles(torch_runs[within_free], 'step')}); counts tied with the "
    f"fastest (quartiles overlap): {tied}",
    f"{beyond} worker(s), more than the {FREE} free core(s), were faster beyond the quartiles; why is not "
    "established by this run (the data is synthetic and in memory: no disk or network wait for extra workers to "
    "hide)")
workers_verdict

# %%
most = max(torch_runs)
compute_runs = [0, 1, most] if most > 1 else [0, 1]


def compute_change(w):
    """How the compute with ``w`` workers compares with the in-process loader's, judged by the quartiles."""
    if not cu.pipeline.apart(torch_runs[0], torch_runs[w], "compute"):
        return "within the noise of it"
    return f"{'above' if cu.pipeline.compare.grew(torch_runs[0], torch_runs[w]) else 'below'} it, beyond the quartiles"


Markdown(
    f"Without workers the median step took {cu.pipeline.compare.median(torch_runs[0])}, busy "
    f"{torch_runs[0].utilisation:.0%}; the fastest median came with **{best_workers}** worker(s), "
    f"{cu.pipeline.compare.median(torch_runs[best_workers])}, busy {torch_runs[best_workers].utilisation:.0%}"
    + (f", but its quartiles overlap those of {[w for w in tied if w != best_workers]}: a **tie** within this "
       "run's noise, not a ranking. " if len(tied) > 1 else ", clear of every other count's quartiles. ")
    + "Look at the compute column, the model's own time per step (medians): "
    + "; ".join(f"{w} worker(s) {cu.pipeline.compare.median(torch_runs[w], 'compute')}" for w in compute_runs)
    + ". Every worker, not only those beyond the free cores, shares this machine's "
    f"{CORES} cores with the model: `FREE` is a budget we set, the OS schedules each process where it likes. With "
    f"1 worker the compute was {compute_change(1)}"
    + (f", with {most} {compute_change(most)}" if most > 1 else "")
    + (". Which shared resource (core time, caches, memory bandwidth) slowed the step is not established by this "
       "run; what it shows is that a worker's gain in wait is paid partly in compute"
       if any(compute_change(w).startswith("above") for w in compute_runs[1:]) else
       ": here the workers cost the model no compute that this run's noise could show")
    + (". No worker count beat the in-process loader beyond the noise." if 0 in tied else ".")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A deeper queue, persistent workers, and what a worker costs
#
# `prefetch_factor` is how many batches each worker keeps ready. **Prediction:** raising it from 2 to 8 does
# not make the steady step faster (its quartile range does not fall below depth 2's): a deeper queue absorbs
# jitter, but it cannot make batches faster than the workers do. The two `persistent_workers` runs do the same
# work in their steady steps (the setting only matters between epochs), so they show how far two identical
# loops differ in this run: the noise to compare with.

# %%
deep = {pf: cu.pipeline.run_loop(DataLoader(data, num_workers=FREE, prefetch_factor=pf, **loader_kwargs),
                                  steps["torch"], label=f"torch, {FREE} worker(s), prefetch_factor={pf}")
        for pf in (2, 8)}
per_epoch = {}
for persistent in (False, True):
    loader = DataLoader(data, num_workers=1, persistent_workers=persistent, **loader_kwargs)
    per_epoch[persistent] = cu.pipeline.run_loop(loader, steps["torch"], epochs=2,
                                                 label=f"torch, 1 worker, persistent_workers={persistent}")
    if persistent:  # its worker is still alive: measure what it costs in private memory (USS)
        worker_mib = max(cu.pipeline.worker_memory().values(), default=0) / 2**20
    del loader
cu.pipeline.timelines_table([*deep.values(), *per_epoch.values()], title="Queue depth and persistent workers",
                            spread=True)

# %%
faster_deep = deep[8].part().p75 < deep[2].part().p25
cu.display.verdict(not faster_deep,
                   f"prefetch_factor=2: median {deep[2].part().median * 1e3:.1f} ms (quartiles "
                   f"{quartiles(deep[2], 'step')}), prefetch_factor=8: {deep[8].part().median * 1e3:.1f} ms "
                   f"({quartiles(deep[8], 'step')}) per steady step",
                   "why is not established by this run (candidates: the deeper queue running further ahead, and "
                   f"the load on this shared machine, {load()}); the next cell compares the noise between two "
                   "identical loops")

# %%
in_flight = FREE * 8
workers_said = f"{FREE} worker" + ("s" if FREE > 1 else "")
depth_apart, twins_apart = (cu.pipeline.apart(a, b, "compute") for a, b in ((deep[2], deep[8]), per_epoch.values()))
Markdown(
    f"With `prefetch_factor=8`, {workers_said} may hold {in_flight} batches, "
    + (f"which is the whole epoch of {STEPS} steps. " if in_flight >= STEPS else f"of the {STEPS} per epoch. ")
    + f"Compute per step (medians): {deep[2].part('compute').median * 1e3:.1f} ms at depth 2 (quartiles "
    f"{quartiles(deep[2])}), {deep[8].part('compute').median * 1e3:.1f} ms at depth 8 ({quartiles(deep[8])}); the two "
    f"identical persistent_workers loops: {per_epoch[False].part('compute').median * 1e3:.1f} ms "
    f"({quartiles(per_epoch[False])}) and {per_epoch[True].part('compute').median * 1e3:.1f} ms "
    f"({quartiles(per_epoch[True])})"
    + (". Depth 2 and 8 differ beyond their quartiles, but so do the two identical loops: a difference of that "
       "size is this busy machine's noise, not the queue" if depth_apart and twins_apart else
       ". Depth 2 and 8 differ beyond their quartiles while the identical loops do not; why is not established "
       f"by this run (at depth 8 the {workers_said} may run further ahead, competing longer for the cores with the "
       "model: a candidate, not measured apart)" if depth_apart else
       ". Their quartiles overlap: the queue depth made no difference to the compute, within the noise")
    + f". The wait for data per steady step: {deep[2].part('wait').median * 1e3:.2f} ms at depth 2 (quartiles "
    f"{quartiles(deep[2], 'wait')}), {deep[8].part('wait').median * 1e3:.2f} ms at depth 8 ({quartiles(deep[8], 'wait')})"
    + (", apart beyond their quartiles: " + ("the deeper queue waited longer, so more batches in flight did not keep "
       "the model fed better here" if deep[8].part('wait').median > deep[2].part('wait').median else
       "the deeper queue waited less") if cu.pipeline.apart(deep[2], deep[8], "wait") else ", within the noise")
    + ". A deeper queue is worth its memory only where batch times vary (network storage, variable-size "
    "images).\n\nWithout `persistent_workers` every epoch starts its workers again (start-ups "
    + ", ".join(f"{s * 1e3:.0f} ms" for s in per_epoch[False].startups)
    + "); with them the workers stay and each epoch only waits for its first batch ("
    + ", ".join(f"{s * 1e3:.0f} ms" for s in per_epoch[True].startups)
    + f"). An idle persistent worker held {worker_mib:.0f} MiB of private memory (measured, USS).\n\n"
    + cu.pipeline.compare.twins(torch_runs[FREE], deep[2])
)

# %%
if torch.cuda.is_available():  # page-locked batches let .to("cuda", non_blocking=True) overlap the copy
    pinned = {pin: cu.pipeline.run_loop(DataLoader(data, num_workers=FREE, batch_size=BATCH, pin_memory=pin,
                                                   multiprocessing_context=ctx),
                                        steps["torch"], label=f"torch, pin_memory={pin}") for pin in (False, True)}
    display(cu.pipeline.timelines_table(list(pinned.values()), title="pin_memory on the GPU"))
else:
    print("No CUDA GPU here: pin_memory (page-locked host memory for asynchronous copies to the GPU) is "
          "not measured on this runtime.")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
torch_all = [*torch_runs.values(), *deep.values(), spawned, forked, spawned_again, *per_epoch.values()]
reference = torch_base.fingerprints
same_data = all(t.fingerprints[:len(reference)] == reference for t in torch_all)
same_epochs = all(t.fingerprints[len(reference):] == reference for t in per_epoch.values())
assert same_data and same_epochs
print("every DataLoader variant yields the same batches in the same order:", same_data)
print("second epoch identical to the first:", same_epochs)
print("worker processes left after the loaders are gone:", len(cu.pipeline.worker_processes()))

# %% [markdown] slideshow={"slide_type": "subslide"}
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

# %% [markdown] course={"lead": false, "minutes": 7} slideshow={"slide_type": "slide"}
# ## 5. TensorFlow: `tf.data`
#
# `tf.data` runs the pipeline in C++ on its own threads: `map(f, num_parallel_calls=AUTOTUNE)` calls `f` on
# several elements at once and `prefetch(AUTOTUNE)` keeps batches ready while the step runs. That only works
# when `f` is written in **TF ops**. Our NumPy decode could be called through `tf.numpy_function`, once per
# sample, but every such call leaves the C++ runtime, takes the **GIL**, and converts tensors to arrays and
# back: it is tf.data's slow path. So we measure four ways to make the same batches, data only (no model):
# the NumPy code called directly in the loop (our reference), the same code through per-sample
# `numpy_function`, per-sample TF ops, and TF ops **vectorised** (batch first, then one `map` call per batch,
# so each op works on a whole batch, `BATCH` images, at once). A fifth pipeline makes the same `numpy_function`
# calls with functions that do no NumPy work (they hand back a stored image): the crossing, measured alone.
#
# **Prediction:** the `numpy_function` pipeline takes longer per batch than the same NumPy code called
# directly, and the vectorised TF-ops pipeline is the fastest of the four.

# %%
if cu.notebook.needs("tensorflow"):
    tf_data_only = {"NumPy directly": cu.pipeline.run_loop(cu.pipeline.NumpyBatches(data, BATCH), lambda b: None,
                                                           label="NumPy in the loop (reference)")}
    tf_data_only |= {name: cu.pipeline.run_loop(cu.pipeline.tf_pipeline(data, BATCH, **kw), lambda b: None,
                                                label=f"tf.data, {name}")
                     for name, kw in (("numpy_function per sample", dict(ops="numpy")),
                                      ("TF ops per sample", {}), ("TF ops vectorised", dict(vectorized=True)))}
    crossing = cu.pipeline.run_loop(cu.pipeline.tf_pipeline(data, BATCH, ops="crossing"), lambda b: None,
                                    label="tf.data, the same numpy_function calls doing no work")
    display(cu.pipeline.timelines_table([*tf_data_only.values(), crossing], title="tf.data alone: wait = time per batch",
                                        spread=True))

# %%
# NBVAL_CHECK_OUTPUT
if cu.notebook.needs("tensorflow"):
    batches_np = list(cu.pipeline.NumpyBatches(data, BATCH))[:3]
    batches_tf = list(cu.pipeline.tf_pipeline(data, BATCH, vectorized=True).take(3))
    print("numpy_function pipeline bit-identical to the DataLoader:",
          tf_data_only["numpy_function per sample"].fingerprints == reference)
    print("TF-ops labels identical:", all(np.array_equal(t[1].numpy(), n[1]) for t, n in zip(batches_tf, batches_np)))
    print("TF-ops images equal up to float rounding (< 1e-5):",
          max(cu.pipeline.max_difference(t, n) for t, n in zip(batches_tf, batches_np)) < 1e-5)

# %%
if cu.notebook.needs("tensorflow"):
    per_batch = {k: run.part("wait") for k, run in tf_data_only.items()}  # data only: the wait is the batch time
    direct, nf, per, vec = (m.median for m in per_batch.values())
    nf_verdict = cu.display.verdict(*cu.pipeline.explain.tf_ranking(
        per_batch, slow="numpy_function per sample", reference="NumPy directly", fastest="TF ops vectorised"))
    display(nf_verdict)

# %%
if cu.notebook.needs("tensorflow"):
    batch_mib = BATCH * 3 * (SIZE + 2) ** 2 * 4 / 2**20  # one padded float32 intermediate of the batch
    tf_fastest = dict(vectorized=True) if vec <= per else {}  # the faster TF-ops pipeline feeds the model next
    nf_apart, vec_apart = (cu.timing.apart(per_batch[a], per_batch[b]) for a, b in (
        ("numpy_function per sample", "NumPy directly"), ("TF ops vectorised", "TF ops per sample")))
    cross, calls = crossing.part("wait").median, 2 * BATCH  # two numpy_function calls per sample
    display(Markdown(
        f"Through `tf.numpy_function` a batch took {nf * 1e3:.1f} ms against {direct * 1e3:.1f} ms for the same NumPy "
        f"code called directly ({nf / direct:.2f}x, medians; "
        + ("quartiles apart" if nf_apart else "within the noise: the quartiles overlap")
        + f"). The same {calls} calls per batch doing no NumPy work took "
        f"{cross * 1e3:.1f} ms ({cross / calls * 1e6:.0f} µs a call): the crossing itself, leaving TF's C++ runtime "
        "for Python under the GIL and converting tensors to arrays and back, plus tf.data's own per-sample work. "
        + ((f"It accounts for {cross / (nf - direct):.0%} of the {(nf - direct) * 1e3:.1f} ms difference"
            + (". " if cross >= 0.75 * (nf - direct) else
               f"; if the costs simply add, the NumPy work took {(nf - cross) * 1e3:.1f} ms per batch inside tf.data "
               f"against {direct * 1e3:.1f} ms in the loop, and why it ran slower there is not established by this "
               "run. ")) if nf > direct and nf_apart else
           "So `numpy_function` was not slower than the direct call beyond this run's noise, but every crossing "
           "still holds the GIL, so parallel `map` calls cannot overlap it. ")
        + "That is our usage, not tf.data. "
        + f"Written in TF ops the work took {per * 1e3:.1f} ms per batch sample by sample and {vec * 1e3:.1f} ms "
        "vectorised (medians)"
        + (": batching before `map` pays because each op now processes the whole batch in one call."
           if vec <= per and vec_apart else
           ": within the noise of each other (quartiles overlap), so batching before `map` neither paid nor cost "
           "anything this run can show." if not vec_apart else
           ": vectorising did not pay here. Inside tf.data a per-sample call stays in C++ and costs little, so "
           "batching saved little, while each op of the stencil now streams a whole batch's intermediate "
           f"({batch_mib:.1f} MiB, computed) that no longer fits in cache where one image's "
           f"({batch_mib / BATCH * 1024:.0f} KiB) does: a candidate reason, not measured here.")
        + " Either way TF ops hold no GIL, so they can run beside the model: the next cell measures that with the "
        + ("vectorised" if vec <= per else "per-sample") + " pipeline, the lower median in this run."))


# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The TF-ops pipeline beside the model
#
# Before: the faster TF-ops pipeline of the table above, nothing overlapped. After: the same with
# `map(num_parallel_calls=AUTOTUNE)` and `prefetch(AUTOTUNE)`. `cache()` placed after decode keeps the decoded
# images after the first epoch while augmentation still runs every epoch. It needs decode and augmentation in
# two maps, so it exists only per sample here: it is measured data only, over 2 epochs, against the per-sample
# TF-ops pipeline of the table above (same pipeline, no cache).
#
# **Prediction:** `prefetch` overlaps the data with the step (TensorFlow's C++ releases the GIL), so the
# steady wait falls to less than half; `cache()` lowers the second epoch's wait below the first's, beyond the
# noise.

# %%
if cu.notebook.needs("tensorflow"):
    tf_runs = {
        "before": cu.pipeline.run_loop(cu.pipeline.tf_pipeline(data, BATCH, **tf_fastest), steps["tensorflow"],
                                       label=f"tensorflow, TF ops {'vectorised' if tf_fastest else 'per sample'}"),
        "after": cu.pipeline.run_loop(cu.pipeline.tf_pipeline(data, BATCH, **tf_fastest, parallel=True, prefetch=True),
                                      steps["tensorflow"], label="tensorflow, + parallel map + prefetch"),
    }
    cached = cu.pipeline.run_loop(cu.pipeline.tf_pipeline(data, BATCH, cache=True), lambda b: None, epochs=2,
                                  label="tf.data, TF ops per sample + cache() after decode (data only)")
    display(cu.pipeline.timelines_table([*tf_runs.values()], title="tf.data feeding the Keras model", spread=True))
    display(cu.pipeline.timeline_plot([*tf_runs.values(), cached], title="tf.data: prefetch, and cache over 2 epochs"))

# %%
if cu.notebook.needs("tensorflow"):
    cache_epochs = [cached.epoch_part(e) for e in (0, 1)]  # the wait per batch of each epoch, first step left out
    no_cache = tf_data_only["TF ops per sample"].part("wait")
    display(cu.display.table(
        ["per-sample TF ops, data only", "wait per batch, median", "quartiles"],
        [(label, cu.display.format_time(m.median), f"{cu.display.format_time(m.p25)} to {cu.display.format_time(m.p75)}")
         for label, m in (("no cache (the table above)", no_cache), ("cache(), epoch 1: fills it", cache_epochs[0]),
                          ("cache(), epoch 2: reads it", cache_epochs[1]))],
        title="cache() after decode, against the same pipeline without it"))
    tf_verdict = cu.display.verdict(
        tf_runs["after"].wait_time < 0.5 * tf_runs["before"].wait_time
        and cache_epochs[1].median < cache_epochs[0].median and cu.timing.apart(*cache_epochs),
        f"wait {tf_runs['before'].wait_time * 1e3:.1f} → {tf_runs['after'].wait_time * 1e3:.1f} ms with prefetch; "
        f"cache: epoch 1 {cache_epochs[0].median * 1e3:.1f} ms, epoch 2 {cache_epochs[1].median * 1e3:.1f} ms per batch (medians)",
        "with one core computing and one left for tf.data's threads, the overlap saved less here"
        if tf_runs["after"].wait_time >= 0.5 * tf_runs["before"].wait_time else
        "the two epochs' quartile ranges overlap: the cache saved nothing this run's noise can show")
    display(tf_verdict)

# %%
if cu.notebook.needs("tensorflow"):
    grew = cu.pipeline.compare.grew(tf_runs["before"], tf_runs["after"], "compute")
    display(Markdown(
        f"Prefetch took the steady wait from {tf_runs['before'].wait_time * 1e3:.1f} to "
        f"{tf_runs['after'].wait_time * 1e3:.1f} ms and the busy share from {tf_runs['before'].utilisation:.0%} to "
        f"{tf_runs['after'].utilisation:.0%} (means); compute per step, "
        + cu.pipeline.compare.change(tf_runs["before"], tf_runs["after"], "compute")
        + ("; tf.data's threads now run beside the model on the same cores, a candidate cause not measured apart "
           "here." if grew else ".")
        + f" Data only and per sample, the cache's first epoch waited {cache_epochs[0].median * 1e3:.1f} ms per batch "
        f"against {no_cache.median * 1e3:.1f} ms for the same pipeline without cache: "
        + ("decoding and storing cost what decoding alone does, within the noise" if not cu.timing.apart(
            cache_epochs[0], no_cache) else
           f"filling the cache added {(cache_epochs[0].median - no_cache.median) * 1e3:.1f} ms per batch, beyond the "
           "quartiles; what that is made of is not established by this run" if cache_epochs[0].median > no_cache.median
           else "less, beyond the quartiles; why is not established by this run")
        + f". The second epoch read the decoded images back and waited {cache_epochs[1].median * 1e3:.1f} ms, only the "
        "augmentation. Put `cache()` after a *random* augmentation instead and every epoch would replay the first "
        "epoch's augmentations: cache what is deterministic and expensive."))

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
# ## 6. JAX: a prefetching iterator
#
# JAX has no loader of its own. `cu.pipeline.Prefetch(source, size=2)` runs the source (here plain NumPy
# batches) in a background **thread** and calls `jax.device_put` on the next batches, so the copy to the
# accelerator starts before the step asks for it; `cu.pipeline.InLoop(source)` does the same work in the
# training thread. The thread and the step overlap because a compiled JAX computation releases the GIL.
#
# **Prediction:** with one thread making batches, the step time falls to about max(compute, data time per
# batch) (within 20%), never below.

# %%
if cu.notebook.needs("jax"):
    source = cu.pipeline.NumpyBatches(data, BATCH)
    jax_runs = {"in loop": cu.pipeline.run_loop(cu.pipeline.InLoop(source), steps["jax"], label="jax, in the loop"),
                "prefetch": cu.pipeline.run_loop(cu.pipeline.Prefetch(source, size=2), steps["jax"],
                                                 label="jax, Prefetch(size=2)")}
    display(cu.pipeline.timelines_table(list(jax_runs.values()), title="JAX: device_put in the loop vs a thread",
                                        spread=True))
    display(cu.pipeline.timeline_plot(list(jax_runs.values()), title="JAX: a prefetching thread"))

# %%
# NBVAL_CHECK_OUTPUT
if cu.notebook.needs("jax"):
    with iter(cu.pipeline.Prefetch(source, size=2)) as ahead:
        next(ahead)  # the loop has taken one batch; meanwhile the thread keeps transferring the next ones
        print("the thread ran ahead of the loop (3 batches transferred while 1 was consumed):", ahead.wait_ahead(3))
    print("JAX batches identical to the DataLoader's:", all(t.fingerprints == reference for t in jax_runs.values()))
    print("prefetch thread stopped after an early exit:", not ahead.alive)
    print("prefetch threads still running:", cu.pipeline.prefetch_threads())

# %%
if cu.notebook.needs("jax"):
    bound = max(jax_runs["in loop"].compute_time, jax_runs["in loop"].wait_time)
    jax_verdict = cu.display.verdict(
        jax_runs["prefetch"].step_time <= 1.2 * bound,
        f"step {jax_runs['in loop'].step_time * 1e3:.1f} → {jax_runs['prefetch'].step_time * 1e3:.1f} ms; "
        f"max(compute, data) = {bound * 1e3:.1f} ms (means)",
        cu.pipeline.explain.jax_why(jax_runs["in loop"], jax_runs["prefetch"], bound))
    display(jax_verdict)
    display(Markdown(cu.pipeline.explain.jax_prefetch(jax_runs["in loop"], jax_runs["prefetch"],
                                                      held=jax_verdict.held, bound=bound, cores=CORES)))

# %% [markdown] course={"lead": true, "minutes": 2} slideshow={"slide_type": "slide"}
# ## 7. Before and after, framework by framework
#
# Each framework against **its own** baseline, the data made in the training loop. After: `FREE` `DataLoader`
# workers for PyTorch, the TF-ops pipeline with parallel `map` + `prefetch` for TensorFlow, the prefetching
# thread for JAX. The data work is not identical across frameworks (TensorFlow's runs in TF ops, the others in
# NumPy), so compare each row's before with its after, not the rows with each other.
#
# **Prediction** (the seed's claim that eager training typically keeps the hardware 40-60% busy, scored as a
# count): at least half of this notebook's "before" loops (data made in the loop: each framework's baseline,
# and section 2's four-times-wider model) are busy 40-60% of the time.

# %%
before_after = {"torch": (torch_runs[0], torch_runs[FREE])}
if "tensorflow" in FRAMEWORKS:
    before_after["tensorflow"] = (tf_runs["before"], tf_runs["after"])
if "jax" in FRAMEWORKS:
    before_after["jax"] = (jax_runs["in loop"], jax_runs["prefetch"])
cu.pipeline.utilisation_plot(before_after, title="Waiting for data, before and after (steady steps)")

# %% slideshow={"slide_type": "subslide"}
cu.pipeline.workers_plot(torch_runs, free_cores=FREE, title=f"Workers against cores ({CORES} cores)")

# %%
# NBVAL_CHECK_OUTPUT
print("frameworks compared before/after:", ", ".join(sorted(before_after)))
print("every NumPy-made 'after' keeps the data identical:",
      all(b.fingerprints == reference for fw, (_, b) in before_after.items() if fw != "tensorflow"))

# %%
cu.pipeline.compare.before_after_table(before_after)

# %%
twin_of = {"torch": deep[2]}  # the same loader as torch's "after", measured again in section 4's queue-depth table
Markdown(
    "\n\n".join(cu.pipeline.compare.before_after_text(fw, a, b, twin=twin_of.get(fw))
                for fw, (a, b) in before_after.items())
    + "\n\n" + cu.pipeline.compare.busy_share_moral(before_after)
)

# %%
befores = {f"{fw} (width {HIDDEN})": a.utilisation for fw, (a, _) in before_after.items()}
befores[f"torch (width {4 * HIDDEN})"] = wide_base.utilisation
inside = [name for name, u in befores.items() if 0.4 <= u <= 0.6]
seed_verdict = cu.display.verdict(
    2 * len(inside) >= len(befores),
    f"{len(inside)} of {len(befores)} 'before' loops inside 40-60%: "
    + ", ".join(f"{name} {cu.pipeline.explain.share(u)}" for name, u in befores.items()),
    "our loops' busy shares are set by the ratio of model to data work that this notebook picked, not by eager "
    "execution")
seed_verdict

# %%
Markdown(cu.pipeline.explain.seed_text(befores, seed_verdict.held, torch_base.utilisation, wide_base.utilisation))

# %%
in_flight_mib = max(torch_runs) * 2 * BATCH * data.sample_bytes / 2**20
Markdown(
    f"{FREE} of {CORES} core(s) were free for workers. Threads add the GIL (JAX's prefetch thread); processes "
    f"add memory: one idle worker held {worker_mib:.0f} MiB of private memory (measured), and with "
    f"{max(torch_runs)} workers the batches in flight add {in_flight_mib:.1f} MiB (computed: workers x "
    "`prefetch_factor` x batch bytes). In this run's sweep "
    + (f"{[w for w in tied if w != best_workers]} worker(s) tied with the fastest median ({best_workers}) within "
       "their quartiles." if len(tied) > 1 else f"{best_workers} worker(s) was fastest beyond the noise.")
    + " On a GPU machine the model no longer needs a CPU core to compute, but the training process still needs "
    "one (Python, kernel launches, the pin-memory thread), so the rule of thumb becomes *at most cores - 1 workers*: a rule, "
    + ("which this run's sweep above measured on this GPU machine." if torch.cuda.is_available() else
       "not measured here, since this machine has no GPU.")
)

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
# ## Exercises
#
# Exercise 04.1 was the worker-count prediction in section 4.
#
# **Exercise 04.2 (predict, then run).** Threads share one GIL; processes do not. Feed JAX from one
# `DataLoader` worker process (`collate_fn=cu.pipeline.numpy_collate`, a module-level function the worker can
# import) wrapped in `cu.pipeline.Prefetch`. Before running the next cell, predict which gave JAX the shorter
# steady step *in this run*: `"threads"` (section 6's prefetch thread), `"processes"`, or `"tie"` when the two
# runs' quartile ranges of step time overlap (a difference within the noise). Then answer from the measurement:
# the check compares the quartiles of this run's steps.
#
# <details><summary>Hint</summary><code>run.part("step")</code> gives a run's steady step times with
# <code>p25</code> and <code>p75</code>; <code>cu.pipeline.apart(a, b)</code> says whether two runs' quartile
# ranges are apart.</details>

# %%
answer = None  # your answer here

# %%
ex2 = {}  # the measurement the check compares with (empty without JAX)
if cu.notebook.needs("jax"):
    from_workers = cu.pipeline.run_loop(
        cu.pipeline.Prefetch(DataLoader(data, batch_size=BATCH, num_workers=1, collate_fn=cu.pipeline.numpy_collate,
                                        multiprocessing_context=ctx), size=2),
        steps["jax"], label="jax, DataLoader worker + Prefetch")
    assert from_workers.fingerprints == reference
    ex2 = dict(thread_steps=jax_runs["prefetch"].part("step").times, process_steps=from_workers.part("step").times)
    display(cu.pipeline.timelines_table([jax_runs["prefetch"], from_workers], title="JAX fed by a thread or a process",
                                        spread=True))

# %% jupyter={"source_hidden": true} tags=["solution"]
if ex2:
    thread_run, process_run = jax_runs["prefetch"], from_workers
    answer = ("tie" if not cu.pipeline.apart(thread_run, process_run) else
              "threads" if thread_run.part().median < process_run.part().median else "processes")
    alone = jax_runs["in loop"]  # the step with nothing beside it

    def beside(run):
        apart = cu.pipeline.apart(alone, run, "compute")
        side = "within the noise of" if not apart else "above" if cu.pipeline.compare.grew(alone, run) else "below"
        return f"{quartiles(run)} ({side} the loop's own)"

    print(f"{answer}: steady step with the thread {quartiles(thread_run, 'step')}, with the process "
          f"{quartiles(process_run, 'step')} (quartiles). Compute per step: alone {quartiles(alone)}, beside the "
          f"thread {beside(thread_run)}, beside the process {beside(process_run)}.")
    if cu.pipeline.compare.grew(alone, process_run):
        print("The process shares no GIL with the step, yet the step computed longer beside it: something other "
              f"than the GIL slowed it (sharing the {CORES} cores is the candidate, not measured apart)"
              + (", so section 6's growth beside the thread needs no GIL to explain it." if
                 cu.pipeline.compare.grew(alone, thread_run) else "."))
    print("A process escapes the GIL but pays a copy of every batch through shared memory and a core of its own.")

# %%
# NBVAL_CHECK_OUTPUT
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

# %% [markdown] course={"lead": true, "minutes": 2} slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.notebook.summary_table("04_input_pipeline", [
    ("data time per sample (decode + augment)", one_sample.median * 1e3, "ms", "NumPy, one core"),
    ("torch busy share, width 4x", wide_base.utilisation * 100, "%", "same loader: the 'before' depends on the model"),
    *[(f"{fw} busy share before", a.utilisation * 100, "%", "data in the loop; seed claims 40-60% is typical")
      for fw, (a, _) in before_after.items()],
    ("'before' loops inside the seed's 40-60%", len(inside), "", f"of {len(befores)}, scored in section 7"),
    *[(f"{fw} busy share after", b.utilisation * 100, "%", b.label) for fw, (_, b) in before_after.items()],
    *[(f"{fw} step-time speed-up", cu.pipeline.compare.speedup(a, b), "x", "own baseline, median steady step"
       + ("" if cu.pipeline.apart(a, b) else "; within the noise (quartiles overlap)"))
      for fw, (a, b) in before_after.items()],
    ("data stall per step, from the trace", gap_before * 1e3, "ms", "num_workers=0, gaps between marked steps"),
    ("fastest DataLoader num_workers (median step)", best_workers, "",
     f"tie with {[w for w in tied if w != best_workers]} (quartiles overlap)" if len(tied) > 1 else
     f"beyond the noise of every other count; {CORES} cores, {FREE} free"),
    ("worker start-up, spawn", spawned.startups[0], "s", "first batch, fresh interpreter"),
    ("worker start-up, forkserver", forked.startups[0] * 1e3, "ms", "first batch, after the server started"),
    ("private memory per DataLoader worker", worker_mib, "MiB", "USS of an idle persistent worker"),
])

# %% [markdown]
# **What to remember**
# - Measure the wait: a loop that times *waiting for the batch* apart from the (synchronised) step, or the
#   gaps between steps in a profiler trace, tells you at once whether the model or the input pipeline is the
#   bottleneck; no compiler fixes the latter.
# - Overlap, then parallelise: prefetching hides data time up to the compute time; workers share the cores
#   with the model, so more of them pay only while cores are free (one stays with the training process), and
#   a sweep whose quartiles overlap is a tie, not a ranking.
# - Write tf.data pipelines in TF ops and batch before `map`; start PyTorch workers with `forkserver` or `spawn`
#   from module-level code, pay the start-up once (`persistent_workers`), and prove the faster pipeline yields
#   the same data.
#
# **Next:** [05 · data parallelism](05_data_parallel.ipynb): when one device is kept busy, does a second one pay?

# %%
print(cu.notebook.last_verified())
