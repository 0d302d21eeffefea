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
# # 00 · Measuring without fooling yourself
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/00_measuring.ipynb)
#
# **The question.** How do I time deep-learning code so that the number means something?
#
# **You will be able to** time PyTorch, JAX and TensorFlow code correctly (synchronised, first call apart,
# median with its spread, every speed-up with an interval and a named baseline), read your machine's limits
# (per-call overhead, memory bandwidth, matmul FLOP/s), and turn a kernel's speed-up into a step's.
#
# **Time:** the guide's agendas give this session's minutes, computed from the material; run time budgeted at 3 minutes at ci size on 2 cores.
# **Accelerators:** every section runs on CPU; on a GPU or TPU the same cells measure the device. JAX and
# TensorFlow parts are skipped, with one sentence, where those frameworks are missing; PyTorch is required.
# Every number below is measured in this run, on this machine.

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

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 1. Which machine produced these numbers?
# A timing without its hardware and versions is an anecdote. The report below travels with every result
# in this course: core count and SIMD flags decide CPU speed, framework versions decide which compiler you got.

# %% tags=["device"]
import course_utils as cu

cu.notebook.setup()

# %% tags=["device"]
sizes = cu.env.sizes(
    matmul=dict(ci=768, cpu=1536, gpu=8192, tpu=8192),  # n of section 2's n x n matmul
    chain=dict(ci=2**20, cpu=2**22, gpu=2**26, tpu=2**26),  # floats in section 3's gelu chain (notebook 01 reads it)
    sweep_top=dict(ci=23, cpu=25, gpu=27, tpu=27),  # the overhead sweep's largest size, as a power of two
    sweep_cap=dict(ci=2 * cu.roofline.CI_CAP, cpu=2**36),  # bytes: the hierarchy sweep's largest working set
    library_n=dict(ci=1024, cpu=2048, gpu=8192, tpu=8192),  # n of the matmul each library runs (the roofs' probe)
    processes=dict(smoke=2, ci=3, cpu=3),  # fresh processes that time the headline speed-up again
)
sizes

# %% tags=["device"]
import time

import numpy as np
import torch

here = [fw for fw in ("torch", "jax", "tensorflow") if cu.notebook.needs(fw)]  # one sentence per missing one
if "jax" in here:
    import jax
    import jax.numpy as jnp
if "tensorflow" in here:
    tf = cu.env.import_tensorflow()  # import tensorflow as tf, its start-up log lines silenced
plan = cu.devices.current()  # the device plan: on a TPU runtime torch runs on the host CPU
device, threads = plan.torch_device, plan.torch_threads
torch.set_num_threads(threads)
print(f"torch runs on {device} with {threads} threads (the device plan, cu.devices)")

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 2. The async-dispatch trap
# JAX (on every backend), and PyTorch and TensorFlow on a GPU, return from a call *before* its result exists:
# the work is queued and Python moves on. A clock read when the call returns measures the queueing, not the
# work. Below, each framework's matmul is timed twice in one call: when the call returns, and when the result
# is ready.
#
# **Prediction.** JAX's call returns in under a third of the time its result takes to be ready; PyTorch and
# TensorFlow on a CPU compute before returning, so their two readings agree within 10%.

# %% tags=["device"]
n = sizes.matmul
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
checks = [cu.findings.above(f"{fw}: time until ready over until return", waits[fw], 3) if fw in early
          else cu.findings.same(f"{fw}: time until ready over until return", waits[fw], 1.1) for fw in trap]
if early:
    v_trap = cu.measuring.findings.DISPATCH.score(*checks)
else:
    v_trap = cu.measuring.findings.DISPATCH.not_tested(
        "no framework here returns before its result is ready (no JAX, and the others run on a CPU)")
v_trap

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_trap.prose()

# %% [markdown]
# **The rule:** wait for the result before reading the clock: `y.block_until_ready()` in JAX,
# `torch.cuda.synchronize()` on a GPU, `tf.test.experimental.sync_devices()` in TensorFlow. Copying the result to
# the host (`np.asarray(y)`) waits too, and adds the copy. From here on `cu.timing.benchmark` and
# `cu.timing.interleaved` wait for every result they time.

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 3. First call versus steady state
# A compiled function pays once, on its first call: tracing, optimising, generating code. Averaged into the
# steady state, that call makes a compiled function look slow in a short benchmark and fast in a long one.
# The workload: `cu.models.gelu_chain`, eleven elementwise ops (bias, tanh-GELU, residual), eager and compiled
# in each framework, and the same chain with its `tanh` replaced by the identity (only multiplies and adds
# remain). All of them are timed in alternating rounds, so any two pair into an interval on their ratio.
#
# Such an interval is "in this process": it covers one process's noise from moment to moment, not what changes from
# one process to the next (where its memory lands, the allocator's state, the code's layout), which can move a
# result too (Kalibera & Jones 2013; Mytkowicz et al. 2009).
#
# **Prediction.** In each framework the first compiled call costs at least 3x a steady-state call, and
# afterwards the compiled chain beats its own eager one.

# %%
size = sizes.chain
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
v_first = cu.measuring.findings.FIRST_CALL.score(
    *[cu.findings.above(f"{fw}: first compiled call over a steady call", first[fw], 3) for fw in here],
    *[cu.findings.faster(f"{cu.measuring.variant_name(fw, True)} over {cu.measuring.variant_name(fw, False)}", own[fw])
      for fw in here], cache=torch_cache)
v_first

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_first.prose()

# %%
runs

# %% [markdown]
# Each framework's own speed-up starts from its own eager baseline: where one eager row is slower than another, its
# own ratio is inflated by that slower baseline. To choose between frameworks, compare compiled with compiled, or
# read the best-vs-best row (Going further measures why eager rows differ). The last column times the same chain
# with `tanh` replaced by the identity. Each compiler brings its own `tanh` (XLA's CPU `tanh` is a cheaper rational
# approximation; notebook 02 measures its speed and error), so the tanh-free pair compares compilation alone; where
# a chain runs faster without its `tanh` (an interval wholly above 1x), the `tanh` costs a measurable share of the
# fused loop, which moves the same bytes either way.

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
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
probe_size = cu.roofline.probe_size()
figures

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.display.prose(f"Probe arrays here: {cu.display.format_bytes(probe_size.array_bytes)} each, "
                 f"{probe_size.cache_multiple:.2g}x the {cu.display.format_bytes(probe_size.last_level_cache)} "
                 f"last-level cache the OS reports (capped by: {probe_size.capped_by or 'nothing'}).")

# %% [markdown]
# The ridge point in the table is the best FLOP/s roof over the best bandwidth roof: on this machine a kernel doing
# fewer FLOPs per byte than that is memory-bound, one doing more is compute-bound. On a CPU the probe arrays are
# sized at four times the last-level cache the OS reports or more, unless the free memory or the run's size caps
# them (the line above says which). Whether that puts them in main memory is measured, not assumed: Going further
# sweeps the sizes and finds where main memory starts from the sweep's own cliffs; a reported size can be wrong (a
# virtual machine may report its host's cache).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Overhead first, then bandwidth
# Timing `x + 1` from a few elements to millions shows the first two regimes: a floor where the size does not
# matter (the call's overhead), then a rise with the bytes. The **bend** is read off the curve: the size at which
# a call takes twice its floor.
#
# **Prediction.** Every variant bends inside the sweep and climbs with a log-log slope of at least 0.7 at the top
# (computed: twice the bytes then take at least 2^0.7 = 1.6x the time).

# %%
sweep_sizes = cu.measuring.sweep_sizes(sizes.sweep_top)  # 4 elements to 2^sweep_top
sweep = cu.measuring.overhead_sweep(here, sweep_sizes)  # eager and compiled, each point's page faults counted
bends = cu.measuring.bends(sweep_sizes, sweep)
cu.measuring.overhead_sweep_plot(sweep_sizes, sweep, bends, call_cost=figures.call_cost)

# %%
v_sweep = cu.measuring.findings.SWEEP.score(
    *[cu.findings.true(f"{k} bent inside the sweep", b.within) for k, b in bends.items()],
    *[cu.findings.above(f"{k} log slope at the top", b.slope, 0.7, unit="") for k, b in bends.items()])
v_sweep

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_sweep.prose()

# %%
cu.measuring.bends_table(bends)

# %% [markdown]
# The floor is a call's time at the smallest size; the dashed lines mark one compiled call's fixed cost from the
# machine figures. Below the bend a tensor is too small for its size to matter: only fewer calls (fusion, compiling
# the whole step) help there. From the size where the table's last column says page faults begin, each output lands
# on fresh memory, and the slope pays those faults (the machine's page-fault figure) on top of the bytes.

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
v_roofline = cu.measuring.findings.ROOFLINE.score(
    cu.findings.below("4,096-element add over 4-element add", add_cost, 1.5),
    cu.findings.above(f"{n}x{n} torch matmul's share of torch's own matmul probe", own_share, 0.5, unit="%"),
    rate=cu.display.format_flops(matmul_rate), probe=cu.display.format_flops(figures.roofs["torch"].peak_flops),
    roof=figures.flops_probe, roof_rate=cu.display.format_flops(figures.peak_flops))
v_roofline

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_roofline.prose()

# %% [markdown]
# A point above a roof breaks no law: each roof is a probe's speed at its own size and moment, not the machine's
# ceiling, and a point whose bytes per call fit in the last-level cache can be served from it above the memory roof.

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 5. From a kernel's speed-up to a step's, and to money
# One of the seed articles opens with a team that waits **3 days** per training run while a competitor
# iterates in 3 hours, and claims that switching to a compiled framework "typically saves ~30% of compute":
# 30k a month on a 100k/month GPU bill. What would this machine's measured speed-up be worth?
#
# A step is not one kernel. If parts taking shares $w_i$ of the eager step speed up by $s_i$, the step speeds
# up by $1 / \sum_i w_i / s_i$: the time-weighted harmonic mean (Amdahl's law). The table is **computed** from
# the chain's best-vs-best speed-ups, with and without its `tanh`, the rest of the step assumed unchanged.
#
# The best-vs-best speed-up is this notebook's headline, so it is timed again in fresh Python processes, one after
# another (3 at ci and laptop size, 2 at smoke size): each runs section 3's chain and inputs, the fastest eager
# framework's chain against the fastest compiler's, and each process's pair forms one ratio, so the interval is
# "across N fresh processes". A fresh process cannot import a function defined in a notebook, so it runs
# `cu.measuring.chain_medians` from `course_utils/measuring/workloads.py`.

# %%
best = {"eager": runs.best("eager"), "compiled": runs.best("compiled")}  # this process's fastest of each
fresh_chain = cu.fresh.replicate(cu.measuring.chain_medians, n=sizes.processes, kwargs={
    **best, "size": size, "threads": threads})
fresh_best = fresh_chain.speedup("eager", "compiled")
print(f"{cu.measuring.variant_name(best['compiled'], True)} over {cu.measuring.variant_name(best['eager'], False)}, "
      f"across fresh processes: {fresh_best}")
print(f"in this process, for comparison: {runs.best_vs_best()}")
fresh_chain

# %%
kernels = {f"gelu chain (across {fresh_best.n} fresh processes)": fresh_best.ratio,
           "chain without tanh (in this process)": runs.best_vs_best(tanh=False).ratio}
cu.measuring.amdahl_table(kernels)

# %% [markdown]
# The seed's 30% is a claim about whole steps, not measured here. A 30% saving is a 1/0.7 = 1.43x step: a kernel
# sped up $s$ times gives that only when it takes at least $(1 - 1/1.43) / (1 - 1/s)$ of the eager step (above
# 100%: never), and a 3-day run only becomes 3 hours if the whole step speeds up 24x. Notebook 07 measures a whole
# model.

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

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
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
measured_512 = cu.measuring.measured_matmul_seconds(512)
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

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.notebook.summary_table("00_measuring", cu.measuring.summary_rows(trap, runs, figures, adds, torch_cache,
                                                                    fresh_best))

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

# %% [markdown] course={"lead": false, "optional": true} slideshow={"slide_type": "slide"}
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
gap

# %% [markdown]
# The gap's budget is computed: the `tanh` difference, and the extra page faults at the machine's cost per output's
# worth. What the two leave is named unexplained, not guessed; a negative remainder means they add up to more than
# the gap: timed apart from the chain (the `tanh` alone writes its own fresh output), they overlap. Where torch is
# the slow one and one thread runs its chain faster than its default count, handing each op to several threads
# costs more than it gives (a busy machine deschedules one, and every op waits for it).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Is the memory roof main memory's speed?
# The probes are sized from the last-level cache the OS reports, capped at ci size. The sweep below times a copy
# into a preallocated array for working sets from 16 KiB to past the probes', and on to four times the reported
# cache where the memory and the size allow. Where the copy's rate falls by 1.5x or more and stays down, the sweep
# has found a **cliff**: a level of the hierarchy ends there.
#
# Main memory is read off the curve, the working sets
# past the last cliff; only a sweep with no cliff falls back on four times the reported cache (notebook 02's
# rule), and the verdict says which it used. The reported sizes are drawn too, as a second fact: a virtual machine
# may report its host's cache.
#
# **Prediction.** The memory roof is main memory's speed: the probes' working set lies in main memory as the sweep
# finds it, and the roof lies within 1.3x of the plateau there (the median of at least two points).

# %%
probe_set = 2 * probe_size.array_bytes  # a copy probe's source and destination
hierarchy = cu.measuring.sweep_hierarchy(cu.measuring.default_working_sets(probe_set, cap=sizes.sweep_cap))
cu.measuring.hierarchy_plot(hierarchy, roof=figures.bandwidth if device == "cpu" else None)

# %%
dram = hierarchy.dram_points()  # the working sets past the sweep's last cliff (hierarchy.basis says which rule)
retimed = (cu.measuring.retime_dram(hierarchy, probe_set, figures.roofs["torch"].bandwidth_probes["copy"])
           if device == "cpu" and len(dram) >= 2 else None)  # the probe and the plateau timed in the same rounds
llc = hierarchy.last_level_cache  # the OS's report: quoted, never decided on
where = {"basis": hierarchy.basis, "reported": cu.display.format_bytes(llc) if llc else "none"}
if retimed:
    v_memory = cu.measuring.findings.MEMORY.score(
        cu.findings.true(f"the probes' working set ({cu.display.format_bytes(probe_set)}) lies in main memory as "
                         "the sweep found it", probe_set >= hierarchy.main_memory_start),
        cu.findings.within(f"memory roof ({figures.bandwidth_probe}) over the plateau of {len(dram)} main-memory "
                           "points", figures.bandwidth / retimed.plateau, 1 / 1.3, 1.3),
        probe_set=cu.display.format_bytes(probe_set), plateau=cu.display.format_rate(retimed.plateau),
        probe_rate=cu.display.format_rate(retimed.probe_rate), earlier=cu.display.format_rate(retimed.earlier),
        drift=f"{retimed.earlier / retimed.probe_rate:.2f}", **where)
elif device != "cpu":
    v_memory = cu.measuring.findings.MEMORY.not_tested(
        "the roofs are the accelerator's, and this sweep measures the CPU's memory", **where)
else:
    v_memory = cu.measuring.findings.MEMORY.not_tested(
        f"only {len(dram)} working set(s) in main memory fit under the sweep's limit (a quarter of the free "
        f"memory, and the sizes table's cap of {cu.display.format_bytes(sizes.sweep_cap)}); a plateau needs two",
        **where)
v_memory

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_memory.prose()

# %% [markdown]
# The smallest copies are worth setting beside a torch call's floor (section 4): a copy that takes a few floors or
# less measures the call more than its bytes.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How close is the matmul to the chip, and who runs it?
# The theoretical peak is **computed** from the CPU's flags and clock (each factor says where it comes from): a
# formula, not a measurement. The frameworks' matmuls differ because they call different libraries, found from
# each one's build configuration or from the code XLA compiled.

# %%
peak = cu.measuring.theoretical_peak()
libraries = cu.measuring.matmul_libraries([*here, "numpy"], n=sizes.library_n)
cu.measuring.libraries_table(libraries, {fw: m.peak_flops for fw, m in figures.roofs.items()})

# %%
peak

# %% [markdown]
# Between a probe and the computed peak lies what the formula cannot see: the clock under heavy vector load, the
# library's blocking, its threads. On an x86 CPU a probe above the computed peak means the cores ran faster than
# the clock the formula took (a boost clock) or the timing is wrong: no x86 core has more than the 2 FMA units the
# formula assumes. Where two frameworks' probes differ on the same cores, the library each calls (the table above)
# is the first candidate. MKL picks its code path by CPU vendor and may not take its fastest one on a non-Intel CPU
# (`MKL_VERBOSE=1` prints the path it took).

# %%
print(cu.notebook.last_verified())
