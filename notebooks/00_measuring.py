# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 5
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
# # 00 · Measuring without fooling yourself
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/00_measuring.ipynb)
#
# **The question.** How do I time deep-learning code so that the number means something?
#
# **You will be able to** time PyTorch, JAX and TensorFlow code correctly (synchronised, first call apart,
# median with its spread, every speed-up with an interval and a named baseline), read your machine's limits
# (per-call overhead, memory bandwidth, matmul FLOP/s), and turn a kernel's speed-up into a step's.
#
# **Time:** about 40 minutes in a workshop; run time budgeted at 3 minutes at ci size on 2 cores.
# **Accelerators:** every section runs on CPU; on a GPU or TPU the same cells measure the device. JAX and
# TensorFlow parts are skipped, with one sentence, where those frameworks are missing; PyTorch is required.
# Every number below is measured in this run, on this machine.

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@v0.2.0"], check=True)

# %% [markdown] course={"lead": true, "minutes": 2} slideshow={"slide_type": "slide"}
# ## 1. Which machine produced these numbers?
# A timing without its hardware and versions is an anecdote. The report below travels with every result
# in this course: core count and SIMD flags decide CPU speed, framework versions decide which compiler you got.

# %%
import course_utils as cu

cu.notebook.setup()

# %%
import time

import numpy as np
import torch

here = [fw for fw in ("torch", "jax", "tensorflow") if cu.notebook.needs(fw)]  # one sentence per missing one
if "jax" in here:
    import jax
    import jax.numpy as jnp
if "tensorflow" in here:
    tf = cu.env.import_tensorflow()  # import tensorflow as tf, its start-up log lines silenced
device = "cuda" if torch.cuda.is_available() else "cpu"

# %% [markdown] course={"lead": false, "minutes": 5} slideshow={"slide_type": "slide"}
# ## 2. The async-dispatch trap
# JAX (on every backend), and PyTorch and TensorFlow on a GPU, return from a call *before* its result exists:
# the work is queued and Python moves on. A clock read when the call returns measures the queueing, not the
# work. Below, each framework's matmul is timed twice in one call: when the call returns, and when the result
# is ready.
#
# **Prediction.** JAX's call returns in under a third of the time its result takes to be ready; PyTorch and
# TensorFlow on a CPU compute before returning, so their two readings agree within 10%.

# %%
n = cu.env.pick(ci=768, cpu=1536, gpu=8192, tpu=8192)
a_np = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
a = torch.from_numpy(a_np).to(device)


def torch_matmul():
    start = time.perf_counter()
    torch.mm(a, a)
    returned = time.perf_counter()
    if device == "cuda":
        torch.cuda.synchronize()  # a GPU call only queues the kernel: wait for it
    return returned - start, time.perf_counter() - start


clocks = {"torch": torch_matmul}
products = {"torch": torch.mm(a, a).cpu().numpy()}

# %%
if "jax" in here:
    b = jnp.asarray(a_np)
    jax_mm = jax.jit(lambda m: m @ m)
    products["jax"] = np.asarray(jax_mm(b).block_until_ready())  # the first call compiles: keep it out

    def jax_matmul():
        start = time.perf_counter()
        y = jax_mm(b)  # returns as soon as the work is queued
        returned = time.perf_counter()
        y.block_until_ready()  # returns when the result exists
        return returned - start, time.perf_counter() - start

    clocks["jax"] = jax_matmul

if "tensorflow" in here:
    c = tf.constant(a_np)
    products["tensorflow"] = tf.linalg.matmul(c, c).numpy()

    def tf_matmul():
        start = time.perf_counter()
        tf.linalg.matmul(c, c)
        returned = time.perf_counter()
        tf.test.experimental.sync_devices()  # waits for every queued op
        return returned - start, time.perf_counter() - start

    clocks["tensorflow"] = tf_matmul

# %%
# NBVAL_CHECK_OUTPUT
scale = np.abs(products["torch"]).max()
for fw, product in products.items():  # the same product in every framework (relative to its largest entry)
    print(f"{fw:<10} matmul equals torch's within 1% of its largest entry: "
          f"{bool(np.abs(product - products['torch']).max() < 0.01 * scale)}")

# %%
trap = cu.measuring.clock_pairs(clocks)  # every function called in alternating rounds: {fw: (returned, ready)}
waits = {fw: cu.intervals.speedup(ready, returned) for fw, (returned, ready) in trap.items()}  # ready / returned
cu.plotting.time_bars({m.label: m for pair in trap.values() for m in pair}, log=True,
                      title=f"{n}x{n} matmul: what the clock says")

# %%
early = [fw for fw in trap if fw == "jax" or device == "cuda"]  # calls that return before the result is ready
as_predicted = {fw: waits[fw].above(3) if fw in early else waits[fw].below(1.1) for fw in trap}
numbers = "time until ready over time until return: " + "; ".join(f"{fw} {waits[fw]}" for fw in trap)
if early:
    v_trap = cu.display.verdict(all(as_predicted.values()), numbers,
                                "not as predicted: " + ", ".join(fw for fw, ok in as_predicted.items() if not ok))
else:
    v_trap = cu.display.not_tested("no framework here returns before its result is ready (no JAX, and the others "
                                   "run on a CPU)", numbers)
v_trap

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.dispatch(v_trap, trap, waits, early)

# %% [markdown] course={"lead": false, "minutes": 6} slideshow={"slide_type": "slide"}
# ## 3. First call versus steady state
# A compiled function pays once, on its first call: tracing, optimising, generating code. Averaged into the
# steady state, that call makes a compiled function look slow in a short benchmark and fast in a long one.
# The workload: `cu.models.gelu_chain`, eleven elementwise ops (bias, tanh-GELU, residual), eager and compiled
# in each framework, and the same chain with its `tanh` replaced by the identity (only multiplies and adds
# remain). All of them are timed in alternating rounds, so any two pair into an interval on their ratio.
#
# **Prediction.** In each framework the first compiled call costs at least 3x a steady-state call, and
# afterwards the compiled chain beats its own eager one.

# %%
size = cu.env.pick(ci=2**20, cpu=2**23, gpu=2**26, tpu=2**26)
x_np, bias_np, inputs = cu.measuring.chain_inputs(here, size)  # the same floats in every framework


def polynomial(x, bias):  # the chain with tanh replaced by the identity
    return cu.models.gelu_chain(x, bias, lambda v: v)


chains = {fw: cu.models.chain_for(fw) for fw in here}  # x + GELU_tanh(x + bias), with each framework's tanh
compiled = {"torch": torch.compile(chains["torch"])}
compiled_poly = {"torch": torch.compile(polynomial)}
if "jax" in here:
    compiled["jax"], compiled_poly["jax"] = jax.jit(chains["jax"]), jax.jit(polynomial)
if "tensorflow" in here:
    compiled["tensorflow"] = tf.function(chains["tensorflow"], jit_compile=True)
    compiled_poly["tensorflow"] = tf.function(polynomial, jit_compile=True)

# %%
cu.measuring.warm_allocator()  # a long-running process keeps freed blocks for reuse: time that state
cache_before = cu.compiled.inductor_cache_counts()
runs = cu.measuring.time_chains(inputs, {"eager": chains, "compiled": compiled, "eager, no tanh":
                                         {fw: polynomial for fw in here}, "compiled, no tanh": compiled_poly})
torch_cache = cu.measuring.cache_state(cache_before, cu.compiled.inductor_cache_counts())
cu.plotting.time_bars({f"{fw} {v}": runs.time(v, fw) for v in ("eager", "compiled") for fw in here}, log=True,
                      show_first_call=True, title=f"gelu_chain on {size:,} floats")

# %%
# NBVAL_CHECK_OUTPUT
for fw, args in inputs.items():
    for name, fn, eager in (("chain", compiled[fw], chains[fw]), ("no-tanh chain", compiled_poly[fw], polynomial)):
        error = float(np.max(np.abs(cu.interop.to_numpy(fn(*args)) - cu.interop.to_numpy(eager(*args)))))
        print(f"{fw:<10} compiled {name} == eager (max abs error < 1e-5): {error < 1e-5}")
        assert error < 1e-5

# %%
first = {fw: runs.first_call_ratio(fw) for fw in here}  # the first compiled call over a steady one
own = {fw: runs.own(fw) for fw in here}  # compiled over its own eager, with a 95% interval
as_predicted = {fw: first[fw] >= 3 and own[fw].faster for fw in here}
v_first = cu.display.verdict(
    all(as_predicted.values()), "first compiled call / steady call: " + ", ".join(f"{fw} {first[fw]:,.0f}x" for fw in here)
    + "; compiled over own eager: " + "; ".join(f"{fw} {own[fw]}" for fw in here),
    "not as predicted in " + ", ".join(fw for fw, ok in as_predicted.items() if not ok))
v_first

# %%
runs

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.first_call(v_first, runs, torch_cache)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.eager_rows(runs)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.tanh_share(runs)

# %% [markdown] course={"lead": false, "minutes": 14} slideshow={"slide_type": "slide"}
# ## 4. The machine's limits: overhead, bandwidth, compute
# Every operation costs at least a fixed **overhead** (Python, dispatch, a kernel launch), then either the time
# to move its bytes (**bandwidth**-bound) or the time to do its arithmetic (**compute**-bound). A kernel's
# **arithmetic intensity** is its FLOPs per byte moved to and from memory. The machine has two ceilings: its
# memory bandwidth (bytes/s) and its matmul speed (FLOP/s). Their ratio is the **ridge point**, in FLOP/byte:
# a kernel whose intensity lies below it cannot finish faster than its bytes allow (memory-bound), one above it
# than its FLOPs allow (compute-bound). The plot of both ceilings against intensity is the **roofline**.
#
# The ceilings are measured once per run, by the first notebook that asks, and every notebook reads the same
# figures: bandwidth probes writing into memory they own, an fp32 matmul, in each framework (its own roof is
# kept beside the best), the page-fault cost of a fresh output, and one compiled call's fixed cost.

# %%
figures = cu.machine.figures()  # measured now, or read from this run's build/machine/
probe_size = cu.probes.probe_size()
figures

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.machine_figures(figures, probe_size)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Overhead first, then bandwidth
# Timing `x + 1` from a few elements to millions shows the first two regimes: a floor where the size does not
# matter (the call's overhead), then a rise with the bytes. The **bend** is read off the curve: the size at which
# a call takes twice its floor.
#
# **Prediction.** Every variant bends inside the sweep and climbs with a log-log slope of at least 0.7 at the top
# (computed: twice the bytes then take at least 2^0.7 = 1.6x the time).

# %%
sweep_sizes = cu.measuring.sweep_sizes(cu.env.pick(ci=23, cpu=26, gpu=28, tpu=28))  # 4 elements to 2^23
sweep = cu.measuring.overhead_sweep(here, sweep_sizes)  # eager and compiled, each point's page faults counted
bends = cu.measuring.bends(sweep_sizes, sweep)
cu.measuring.plots.overhead_sweep_plot(sweep_sizes, sweep, bends, call_cost=figures.call_cost)

# %%
as_predicted = {k: b.within and b.slope >= 0.7 for k, b in bends.items()}  # bent inside, slope 0.7 or more at the top
v_sweep = cu.display.verdict(
    all(as_predicted.values()), "log slope at the top: " + ", ".join(f"{k} {b.slope:.2f}" for k, b in bends.items()),
    "not as predicted: " + ", ".join(k for k, ok in as_predicted.items() if not ok))
v_sweep

# %%
cu.measuring.bends_table(bends)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.regimes(v_sweep, bends, figures, sweep_sizes)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Every kernel on the roofline
# `cu.fusion.trace_traffic` counts the chain's FLOPs and bytes from its shapes: eagerly each op reads and writes
# whole arrays; fused, the chain reads its input once and writes its output once. A tiny add and section 2's
# matmul join them.
#
# **Prediction.** A 4,096-element add takes under 1.5x a 4-element add (a thousand times the bytes, all
# overhead); section 2's torch matmul reaches over half of torch's own matmul probe (the same library).

# %%
adds = cu.timing.interleaved({"4 elements": lambda: torch.add(torch.ones(4), 1),
                              "4,096 elements": lambda: torch.add(torch.ones(4096), 1)}, rounds=6)
traffic = cu.fusion.trace_traffic(chains["torch"], *inputs["torch"])
matmul_rate = 2 * n**3 / trap["torch"][1].median  # FLOP/s of section 2's torch matmul, clock at ready
points = [
    cu.roofline.Point("torch eager chain", traffic.flops, traffic.unfused_bytes, runs.time("eager", "torch").median),
    *[cu.roofline.Point(f"{fw} compiled chain", traffic.flops, traffic.fused_bytes, runs.time("compiled", fw).median)
      for fw in here],
    cu.roofline.Point("torch add, 4 elements", 4, 2 * 4 * 4, adds["4 elements"].median),
    cu.roofline.Point(f"torch matmul {n}", 2 * n**3, 3 * 4 * n * n, trap["torch"][1].median),
]
cu.plotting.roofline_plot(figures.best, points)

# %%
# NBVAL_CHECK_OUTPUT
print(f"bytes moved by the eager chain / the fused chain: {traffic.unfused_bytes / traffic.fused_bytes:.0f}x")
print(f"the chain's arithmetic intensity, fused: {traffic.flops / traffic.fused_bytes:.2f} FLOP/byte")

# %%
add_cost = cu.intervals.speedup(adds["4,096 elements"], adds["4 elements"])  # how much longer 4,096 took
own_share = matmul_rate / figures.roofs["torch"].peak_flops  # like for like: torch's own matmul probe
as_predicted = {"the 4,096-element add": add_cost.below(1.5), "the matmul": own_share > 0.5}
v_roofline = cu.display.verdict(
    all(as_predicted.values()), f"4,096-element add over 4-element add {add_cost}; {n}x{n} torch matmul "
    f"{cu.display.percent(own_share)} of torch's probe", "not as predicted: "
    + " and ".join(k for k, ok in as_predicted.items() if not ok))
v_roofline

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.roofline_points(v_roofline, points, figures, add_cost, matmul_rate,
                                   cache_bytes=probe_size.last_level_cache)

# %% [markdown] course={"lead": true, "minutes": 3} slideshow={"slide_type": "slide"}
# ## 5. From a kernel's speed-up to a step's, and to money
# One of the seed articles opens with a team that waits **3 days** per training run while a competitor
# iterates in 3 hours, and claims that switching to a compiled framework "typically saves ~30% of compute":
# 30k a month on a 100k/month GPU bill. What would this machine's measured speed-up be worth?
#
# A step is not one kernel. If parts taking shares $w_i$ of the eager step speed up by $s_i$, the step speeds
# up by $1 / \sum_i w_i / s_i$: the time-weighted harmonic mean (Amdahl's law). The table is **computed** from
# the chain's best-vs-best speed-ups, with and without its `tanh`, the rest of the step assumed unchanged.

# %%
kernels = {"gelu chain": runs.best_vs_best().ratio, "chain without tanh": runs.best_vs_best(tanh=False).ratio}
cu.measuring.amdahl_table(kernels)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.money(runs, run_hours=3 * 24, monthly_bill=100_000, saving=0.3)

# %% [markdown]
# The same seed claims that raising utilisation from 40% to 80% "halves" the hardware cost, with the example
# 10 GPUs x 10 hours becoming 5 GPUs x 5 hours. The claim's arithmetic, computed (nothing here is measured):

# %%
# NBVAL_CHECK_OUTPUT
gpu_hours_before, gpu_hours_after = 10 * 10, 5 * 5  # the seed's example
util_before, util_after = 0.4, 0.8  # the seed's utilisation claim
print(f"the example: {gpu_hours_before} GPU-hours become {gpu_hours_after}, "
      f"a {gpu_hours_before / gpu_hours_after:.0f}x cut")
print(f"the claim: the same work at {util_after:.0%} instead of {util_before:.0%} utilisation needs "
      f"{util_before / util_after:.2f}x the GPU-hours, a {util_after / util_before:.0f}x cut")
print(f"the example illustrates the claim: {gpu_hours_before / gpu_hours_after == util_after / util_before}")

# %% [markdown] course={"lead": false, "minutes": 4} slideshow={"slide_type": "slide"}
# ## Exercises
# **1. Predict, then measure.** Before timing it, predict from this machine's roofline how long `torch.mm`
# takes for two 512 x 512 fp32 matrices: `answer` = your prediction in seconds. The check compares it with the
# roofline's bound; the solution then measures the real time beside it.
# <details><summary>Hint</summary>An n x n matmul does 2n³ FLOPs and moves at least 3 x 4 x n² bytes;
# <code>figures.best.roofline_time(flops, bytes)</code> takes the longer of the two times. A roofline time is a
# lower bound: how far above it does the measurement land, and why?</details>

# %%
answer = None  # your prediction, in seconds

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = figures.best.roofline_time(2 * 512**3, 3 * 4 * 512**2)
measured_512 = cu.measuring.exercises.measured_matmul_seconds(512)
print(f"predicted {cu.display.format_time(answer)}, measured {cu.display.format_time(measured_512)} (fastest call): "
      f"{measured_512 / answer:.1f}x the roofline's bound")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("00.1", answer, machine=figures.best)

# %% [markdown]
# **2.** Time JAX's matmul of section 2 honestly *without* `block_until_ready`, using only NumPy: `answer` =
# seconds per call.
# <details><summary>Hint</summary>Copying the result to the host must wait for it:
# <code>np.asarray(...)</code>, timed with <code>cu.timing.benchmark(..., sync=False)</code>. What extra cost do
# you now include?</details>

# %%
answer = None  # seconds per call

# %% jupyter={"source_hidden": true} tags=["solution"]
if "jax" in here:
    host_copy = cu.timing.benchmark(lambda: np.asarray(jax_mm(b)), sync=False, label="jax + host copy")
    answer = host_copy.median
    print(f"with the host copy: {cu.display.format_time(answer)}; section 2's clock at ready: "
          f"{cu.display.format_time(trap['jax'][1].median)}, at return: {cu.display.format_time(trap['jax'][0].median)}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("00.2", answer, fastest_ready=min(trap["jax"][1].times) if "jax" in here else 1.0,
                   typical_ready=trap["jax"][1].median if "jax" in here else 1.0)

# %% [markdown]
# **3.** A training step spends 30% of its eager time in the chain of section 3 and the rest in matmuls
# that compiling leaves as they are. With the chain's measured best-vs-best speed-up
# (`runs.best_vs_best().ratio`), what is the step's speed-up? `answer` = the speed-up (a number, e.g. 1.2).
# <details><summary>Hint</summary>Add up the step's new time part by part, then divide.</details>

# %%
answer = None  # the step's speed-up

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = 1 / (0.3 / runs.best_vs_best().ratio + 0.7 / 1.0)
print(f"kernel {runs.best_vs_best().ratio:.2f}x -> step {answer:.2f}x")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("00.3", answer, share=0.3, kernel_speedup=runs.best_vs_best().ratio)

# %% [markdown] course={"lead": true, "minutes": 3} slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.notebook.summary_table("00_measuring", cu.measuring.summary_rows(trap, runs, figures, adds, torch_cache))

# %% [markdown]
# **What to remember**
# - Synchronise before reading the clock; report the first call apart (and say whether caches were warm);
#   give the median with its spread; decide faster or slower with an interval; name the baseline of every
#   speed-up.
# - Every kernel lives in one of three regimes: overhead, bandwidth, compute. The roofline tells which, and
#   the machine's own ceilings, measured once per run, tell how far it could go.
# - A kernel's speed-up reaches a step only through Amdahl's law: cost claims need the model's own
#   measurement (notebook 07).
#
# **Next:** [01 · Dynamic vs static graphs](01_dynamic_vs_static.ipynb): what a compiler sees that eager
# execution cannot, and what it costs.

# %% [markdown] course={"lead": false, "minutes": 6, "optional": true} slideshow={"slide_type": "slide"}
# ## Going further
# Optional reading: three questions this notebook's numbers raise, each measured.
#
# ### Why do the eager rows differ?
# Every framework runs the same eleven ops on the same array. Two suspects differ between them and are measured
# apart, slowest eager runtime against fastest: the one transcendental (`tanh` alone, in alternating rounds) and
# the fresh memory each op's output gets (page faults per call, costed with the machine's page-fault figure);
# where PyTorch is the slow one, its threads too (its chain on one thread against its default count).

# %%
gap = cu.measuring.eager_gap(inputs, runs, chains, figures)  # None when only one framework is installed

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.eager_gap(gap)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Is the memory roof main memory's speed?
# The probes are sized from the last-level cache, capped at ci size. The sweep below times a copy into a
# preallocated array for working sets from 16 KiB to past the probes', and on to working sets of four times the
# last-level cache (notebook 02's rule for main memory) where the memory and the size allow.
#
# **Prediction.** The memory roof lies within 1.3x of the main-memory plateau (the median of at least two
# points at four times the last-level cache or more).

# %%
probe_set = 2 * probe_size.array_bytes  # a copy probe's source and destination
hierarchy = cu.measuring.sweep_hierarchy(cu.measuring.default_working_sets(probe_set))
cu.measuring.plots.hierarchy_plot(hierarchy, roof=figures.bandwidth if device == "cpu" else None)

# %%
dram = hierarchy.dram_points()  # working sets of at least 4x the last-level cache
retimed = (cu.measuring.retime_dram(hierarchy, probe_set, figures.roofs["torch"].bandwidth_probes["copy"])
           if device == "cpu" and len(dram) >= 2 else None)  # the probe and the plateau timed in the same rounds
if retimed:
    roof_vs = figures.bandwidth / retimed.plateau
    v_memory = cu.display.verdict(1 / 1.3 <= roof_vs <= 1.3, f"memory roof ({figures.bandwidth_probe}) "
                                  f"{roof_vs:.2f}x the plateau of {len(dram)} main-memory points",
                                  "the roof and the plateau differ by more than 1.3x: see below")
elif device != "cpu":
    v_memory = cu.display.not_tested("the roofs are the accelerator's, and this sweep measures the CPU's memory")
else:
    cap = cu.measuring.size_cap()  # at ci size, two probe arrays
    v_memory = cu.display.not_tested(
        f"only {len(dram)} working set(s) of 4x the last-level cache or more fit under the sweep's limit (a quarter "
        f"of the free memory{f', and the ci cap of {cu.display.format_bytes(cap)}' if cap else ''}); a plateau needs two")
v_memory

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.hierarchy(v_memory, hierarchy, retimed, figures, probe_size, floor=bends["torch eager"].floor)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How close is the matmul to the chip, and who runs it?
# The theoretical peak is **computed** from the CPU's flags and clock (each factor says where it comes from): a
# formula, not a measurement. The frameworks' matmuls differ because they call different libraries, found from
# each one's build configuration or from the code XLA compiled.

# %%
peak = cu.measuring.theoretical_peak()
libraries = cu.measuring.matmul_libraries([*here, "numpy"], n=cu.roofline.default_matmul_n())
cu.measuring.libraries_table(libraries, {fw: m.peak_flops for fw, m in figures.roofs.items()})

# %%
peak

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.measuring.story.matmuls(figures, peak, libraries, cpu=cu.env.cpu_model())

# %%
print(cu.notebook.last_verified())
