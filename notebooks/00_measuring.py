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
# **You will be able to** time PyTorch, JAX and TensorFlow code correctly (synchronised, warmed up, compile
# time apart, median with spread), measure your machine's limits (per-op overhead, the memory hierarchy,
# memory bandwidth, matmul FLOP/s beside the computed peak), and turn a kernel's speed-up into a step's.
#
# **Time:** about 40 minutes in a workshop; the notebook runs in under 5 minutes on a 2-core laptop.
# **Accelerators:** every section runs on CPU; on a GPU or TPU runtime the same cells measure the device
# (the async-dispatch section then shows CUDA as well). JAX and TensorFlow parts are skipped, with one
# sentence, where those frameworks are not installed; PyTorch is required.
#
# Every number below is measured in this run, on this machine. Where an article's claim is quoted, it is
# checked against that measurement.
#
# On a Colab TPU runtime there is no TensorFlow: its parts say so in one sentence and are skipped.

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@v0.2.0"], check=True)

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 2, "lead": true}
# ## 1. Which machine produced these numbers?
# A timing without its hardware and versions is an anecdote. The report below travels with every result
# in this course: core count and SIMD flags decide CPU speed (AVX-512 and AMX units, or not), framework
# versions decide which compiler you got.

# %%
import course_utils as cu

cu.notebook.setup()

# %% slideshow={"slide_type": "skip"}
import numpy as np
import torch
from IPython.display import Markdown

from course_utils.display import format_bytes, format_flops, format_rate, format_time, percent, ratio, verdict

m0 = cu.measuring  # notebook 00's helpers
ON_CUDA = torch.cuda.is_available()

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 3, "lead": false}
# ## 2. The async-dispatch trap
# JAX (on every backend), TensorFlow and PyTorch on a GPU return from a call *before* the result is
# computed: the work is queued and Python moves on. A clock read right after the call measures the
# queueing, not the work.
#
# **Prediction.** For a large matrix product, where the call returns early (JAX everywhere; PyTorch and
# TensorFlow on a GPU) the naive clock reads less than a third of the synchronised time; where the call
# computes before it returns (PyTorch and TensorFlow eager on a CPU) the two agree within 1.5x.

# %%
here = m0.present_frameworks()
n = cu.env.pick(ci=768, cpu=1536, gpu=8192, tpu=8192)
naive, honest = m0.dispatch_trap(here, n)
cu.plotting.time_bars({**{m.label: m for m in naive.values()}, **{m.label: m for m in honest.values()}},
                      log=True, title=f"{n}x{n} matmul: what the clock says")

# %%
# NBVAL_CHECK_OUTPUT
returns_early = {fw: fw == "jax" or ON_CUDA for fw in here}
fooled = {fw: honest[fw].median / naive[fw].median for fw in here}
for fw in here:
    kind = "returns before the result is ready" if returns_early[fw] else "computes before it returns"
    print(f"{fw:<10} {kind}: naive clock under a third of the real time: {fooled[fw] > 3}")

# %%
off = [fw for fw in here if not (fooled[fw] > 3 if returns_early[fw] else fooled[fw] < 1.5)]
ratios_text = ", ".join(f"{fw} {fooled[fw]:.1f}x" for fw in here)
verdict(not off, f"synchronised / naive time: {ratios_text}",
        f"{', '.join(off)} did not behave as expected (over 3x for a call that returns early, under 1.5x otherwise)")

# %%
Markdown(
    f"The synchronised clock reads {ratios_text} the naive one "
    "(a ratio near 1 means the call was synchronous here). "
    + (f"JAX's naive clock read {format_time(naive['jax'].median)} for work that takes "
       f"{format_time(honest['jax'].median)}. " if "jax" in here else "")
    + "**The rule:** wait for the result before reading the clock: `jax.block_until_ready`, "
    "`torch.cuda.synchronize()`, and in TensorFlow `tf.test.experimental.sync_devices()` (on a CPU, TF eager "
    "has already computed when it returns). A host copy (`np.asarray(y)`, `y.numpy()`) also waits, but adds "
    f"a copy of the result: {format_bytes(4 * n * n)} here, which exercise 2 times. `cu.timing.benchmark` "
    "waits for you (`cu.timing.sync` knows all three)."
)

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 5, "lead": false}
# ## 3. First call versus steady state
# A compiled function pays once: tracing, graph optimisation, code generation. Averaging that first call
# into the steady state makes a compiled function look slow in a short benchmark and fast in a long one.
#
# **Prediction.** In each framework the first compiled call costs at least 3x a steady-state call, and
# afterwards each compiled version beats its own eager one on this memory-bound-looking chain of
# elementwise ops (`cu.models.gelu_chain`: bias + tanh-GELU + residual).

# %%
here = m0.present_frameworks()
size = cu.env.pick(ci=2**20, cpu=2**23, gpu=2**26, tpu=2**26)
x_np, bias_np, inputs = m0.chain_inputs(here, size)
cache_before = m0.inductor_cache_counts()
eager, compiled, compiled_fns = m0.chain_runs(inputs)
inductor_cache = m0.cache_state(cache_before, m0.inductor_cache_counts())
chain = m0.ChainSpeedups(eager, compiled)
runs = {m0.variant_name(fw, c): (compiled if c else eager)[fw] for fw in here for c in (False, True)}
cu.plotting.time_bars(runs, log=True, show_first_call=True, title=f"gelu_chain on {size:,} floats")

# %%
# NBVAL_CHECK_OUTPUT
reference = cu.models.chain_for("numpy")(x_np, bias_np)
for fw, args in inputs.items():
    error = float(np.max(np.abs(cu.interop.to_numpy(compiled_fns[fw](*args)) - reference)))
    print(f"{fw:<10} compiled == eager (max abs error < 1e-5): {error < 1e-5}")
    assert error < 1e-5

# %%
first_ratio = {fw: compiled[fw].first_call / compiled[fw].median for fw in here}
cheap_first = [fw for fw in here if first_ratio[fw] < 3]
not_faster = [fw for fw in here if chain.own(fw) <= 1]
verdict(not cheap_first and not not_faster,
        "first compiled call / steady call: " + ", ".join(f"{fw} {first_ratio[fw]:,.0f}x" for fw in here)
        + "; compiled over own eager: " + ", ".join(f"{fw} {ratio(chain.own(fw))}" for fw in here),
        (f"first call under 3x a steady one: {', '.join(cheap_first)}. " if cheap_first else "")
        + (f"compiled no faster than its own eager: {', '.join(not_faster)}" if not_faster else ""))

# %%
chain

# %%
cache_words = {"warm": "a **warm** Inductor cache: every graph was found in the cache an earlier run left on "
                       "disk, so no C++ was generated or compiled now (a cold cache costs several times more)",
               "cold": "a **cold** Inductor cache: the C++ was generated and compiled in this call (a warm "
                       "cache, left by an earlier run, costs several times less)",
               "unknown": "an Inductor cache state this run could not tell"}
Markdown(
    f"The first call is reported apart, never averaged in. torch.compile's first call took "
    f"{format_time(compiled['torch'].first_call)} with {cache_words[inductor_cache]}; notebook 01 "
    "measures cold against warm. Each speed-up names its baseline: "
    f"per framework, compiled against its own eager; across frameworks, the best compiled variant "
    f"({m0.variant_name(chain.best_compiled, True)}) against the best eager one "
    f"({m0.variant_name(chain.best_eager, False)}): **{ratio(chain.best_vs_best)}**. That last number is what "
    "compiling buys a team free to choose; a slow eager baseline (JAX op-by-op) inflates the per-framework one."
)

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 16, "lead": false}
# ## 4. The three regimes: overhead, bandwidth, compute
# Every operation costs at least a fixed **overhead** (Python, dispatch, kernel launch), then either the
# time to move its bytes (**bandwidth**-bound) or the time to do its arithmetic (**compute**-bound).
#
# **Prediction.** Timing `x + 1` over sizes from a few elements to millions, every variant is flat at small
# sizes (overhead: the size does not matter) and bends inside the sweep into a line of slope one or steeper
# on log-log axes (at least 0.7 at the top: twice the bytes, at least twice the time; steeper where the
# arrays outgrow a cache and each byte costs more). Eager variants are compared with eager ones, compiled
# with compiled.

# %%
here = m0.present_frameworks()
sweep_sizes = [2**k for k in range(2, cu.env.pick(ci=24, cpu=27, gpu=28, tpu=28), 3)]
sweep = m0.overhead_sweep(here, sweep_sizes)
bends = m0.bends(sweep_sizes, sweep)
m0.plots.overhead_sweep_plot(sweep_sizes, sweep, bends)

# %%
m0.bends_table(bends)

# %%
off = [k for k, b in bends.items() if not (b.slope >= 0.7 and sweep_sizes[0] < b.size < sweep_sizes[-1])]
verdict(not off, "log slopes at the top: " + ", ".join(f"{k} {b.slope:.2f}" for k, b in bends.items()),
        f"{', '.join(off)}: slope under 0.7 at the top (the largest sizes still gain from more threads or a "
        "cache), or bend outside the sweep")

# %%
eager_floors = {k: b for k, b in bends.items() if "eager" in k or "op-by-op" in k}
compiled_floors = {k: b for k, b in bends.items() if k not in eager_floors}
Markdown(
    "Eager against eager, the per-call floor is "
    + ", ".join(f"{k} {format_time(b.floor)}" for k, b in eager_floors.items())
    + "; compiled against compiled, " + ", ".join(f"{k} {format_time(b.floor)}" for k, b in compiled_floors.items())
    + ". The bend (where the data's time equals the floor) lies at "
    + ", ".join(f"{k} {b.size:,.0f} elements ({format_bytes(4 * b.size)})" for k, b in bends.items())
    + ". Below the bend a tensor is too small for its size to matter: only fewer calls (fusion, compiling "
    "the whole step) help there. " + m0.steep_top_text(sweep_sizes, bends)
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The ceilings: memory bandwidth and matmul FLOP/s
# Bandwidth is measured with large arrays (copy, scale and triad, outputs preallocated or donated, the best
# probe taken), sized from the last-level cache so that they stream from main memory; the matmul roof with a
# large fp32 matrix product. One more probe writes a triad into a **fresh** output each call, as code written
# without care does: it pays allocation and page faults, so it is shown but is not a bandwidth. (TensorFlow
# tensors cannot be written into, but an XLA-compiled function that assigns to a `tf.Variable` updates it in
# place: that is TensorFlow's in-place probe.)

# %%
probe_size = cu.probes.probe_size()
machines = {fw: cu.roofline.measure_machine(fw) for fw in here}
Markdown(m0.probe_size_text(probe_size))

# %%
m0.roofs_table(machines)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Is main memory really the roof? The sweep below times a copy for working sets from 16 KiB to the probes'
# size; each cache level the OS reports is marked. (It sweeps the CPU's memory; on a GPU runtime the roofs
# above are the GPU's.)

# %%
hierarchy = m0.sweep_hierarchy(m0.default_working_sets(2 * probe_size.array_bytes))
best_bandwidth = max(m.bandwidth for m in machines.values())
m0.plots.hierarchy_plot(hierarchy, roof=best_bandwidth if machines["torch"].device == "cpu" else None)

# %%
plateaus = hierarchy.plateaus()
dram_from = hierarchy.dram_from()
probe_set = 2 * probe_size.array_bytes
llc = max(hierarchy.caches.values(), default=0)
Markdown(
    "Median copy bandwidth per level: " + ", ".join(f"{k} {format_rate(v)}" for k, v in plateaus.items())
    + f". The sweep reaches its last plateau ({format_rate(hierarchy.largest)}) from a working set of "
    f"{format_bytes(dram_from)}"
    + (f", below the {format_bytes(llc)} last-level cache the OS reports: on a shared or virtual machine "
       "only part of that cache is ours. " if llc and dram_from < llc else ". ")
    + (f"The probes' working set ({format_bytes(probe_set)}) lies on that plateau, so the roof is main memory."
       if probe_set >= dram_from else
       f"The probes' working set ({format_bytes(probe_set)}) lies below it: part of it may be served from "
       "cache, and the roof may be drawn too high.")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# How close is the measured matmul to what the chip could do? The theoretical peak is **computed** from the
# CPU's flags and clock (each factor says where it comes from); it is a formula, not a measurement.

# %%
peak = m0.theoretical_peak()
peak

# %%
best_fw = max(machines, key=lambda fw: machines[fw].peak_flops)
best_matmul = machines[best_fw].peak_flops
Markdown(
    f"The best measured matmul ({best_fw}, {format_flops(best_matmul)}) is "
    + (f"{percent(best_matmul / peak.flops)} of the computed peak ({format_flops(peak.flops)}). "
       if peak.flops else "not comparable with a computed peak: this OS does not report the clock. ")
    + ("Above 100%: the cores ran faster than the clock used in the formula (turbo, which a virtual machine's "
       "/proc/cpuinfo does not show), or they have more FMA units than assumed."
       if peak.flops and best_matmul > peak.flops else
       "A well-tuned library usually reaches 70-90% of the peak on a large matmul; much less points at the "
       "library, the thread count, or a clock lowered under heavy vector load.")
    + m0.load_note()
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The frameworks measured the same matmul on the same cores. Where their numbers differ, they do not run
# the same code: below, the library each one calls, found from its build configuration or from the code
# XLA compiled (NumPy's, for comparison, is not measured here).

# %%
libraries = m0.matmul_libraries([*here, "numpy"], n=cu.roofline.default_matmul_n())
m0.libraries_table(libraries, {fw: m.peak_flops for fw, m in machines.items()})

# %%
matmuls = {fw: m.peak_flops for fw, m in machines.items()}
gap = max(matmuls.values()) / min(matmuls.values())
names = {lib.framework: lib.library for lib in libraries}
amd_mkl = "AMD" in cu.env.cpu_model() and "MKL" in names.get("torch", "")
Markdown(
    f"Fastest over slowest fp32 matmul here: **{ratio(gap)}** ("
    + ", ".join(f"{fw} {format_flops(v)} with {names[fw]}" for fw, v in matmuls.items()) + "). "
    + ("A gap this large is the libraries, not the frameworks' Python: each calls a different kernel."
       if gap > 1.3 else "Within 1.3x: whatever the library, they end near the same limit on this machine.")
    + (" MKL is Intel's library and is known to choose slower code paths on AMD CPUs." if amd_mkl else "")
    + m0.load_note()
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The roofline puts every kernel on one picture. `cu.fusion.trace_traffic` counts the chain's work and bytes
# from its shapes: eagerly, each op reads and writes whole arrays; fused, the chain reads its input once and
# writes once.
#
# **Prediction.** A 4-element add reaches under 1% of its roof (all overhead), and the n x n matmul of
# section 2 over half of its roof (compute-bound).

# %%
machine = m0.best_roof(machines)  # the best bandwidth and the best matmul any framework reached
traffic = cu.fusion.trace_traffic(cu.models.chain_for("torch"), *inputs["torch"])
tiny = cu.timing.benchmark(torch.add, torch.ones(4), 1, min_time=0.05)
points = [
    cu.roofline.Point("torch eager chain", traffic.flops, traffic.unfused_bytes, eager["torch"].median),
    cu.roofline.Point("torch compiled chain", traffic.flops, traffic.fused_bytes, compiled["torch"].median),
    *([cu.roofline.Point("jax jit chain", traffic.flops, traffic.fused_bytes, compiled["jax"].median)]
      if "jax" in here else []),
    cu.roofline.Point("torch add, 4 elements", 4, 2 * 4 * 4, tiny.median),
    cu.roofline.Point(f"torch matmul {n}", 2 * n**3, 3 * 4 * n * n, honest["torch"].median),
]
cu.plotting.roofline_plot(machine, points)

# %%
# NBVAL_CHECK_OUTPUT
share = {p.label: cu.roofline.share_of_roof(p, machine) for p in points}
print(f"bytes moved by the eager chain / the fused chain: {traffic.unfused_bytes / traffic.fused_bytes:.0f}x")
print("the 4-element add reaches under 1% of its roof (overhead-bound):", share["torch add, 4 elements"] < 0.01)

# %%
verdict(share["torch add, 4 elements"] < 0.01 and share[f"torch matmul {n}"] > 0.5,
        f"4-element add {percent(share['torch add, 4 elements'], 3)} of its roof, "
        f"{n}x{n} matmul {percent(share[f'torch matmul {n}'])}",
        "the matmul stayed under half of the compute roof that the larger matmul probe measured")

# %%
Markdown(
    f"The {n}x{n} matmul reaches {percent(share[f'torch matmul {n}'])} of the compute roof"
    + (": compute-bound, as a matmul this size should be." if share[f"torch matmul {n}"] > 0.5 else
       f": under half of what the n = {cu.roofline.default_matmul_n()} probe reached. A smaller product keeps "
       "the cores busy for a shorter time per call, so the library's blocking and threading costs weigh more."
       + m0.load_note())
    + f" The 4-element add reaches {percent(share['torch add, 4 elements'], 3)}: {format_time(tiny.median)} "
    "for 4 additions, all of it overhead."
)

# %% [markdown]
# The fused chain sits left of the ridge, where the roofline calls a kernel memory-bound. Is it? Time a
# copy of its bytes, and its one transcendental (tanh) over the same bytes, both into preallocated outputs:

# %%
costs = m0.elementwise_costs(size)
tanh_over_copy = costs["tanh"].median / costs["copy"].median
Markdown(
    f"The compiled chain reaches {percent(share['torch compiled chain'])} of its memory roof. tanh alone takes "
    f"{format_time(costs['tanh'].median)}, {ratio(tanh_over_copy)} a copy of the same bytes "
    f"({format_time(costs['copy'].median)}). "
    + ("So the chain is **not** memory-bound here: its tanh, evaluated with many vector instructions per "
       "element, sets the pace, a compute limit of the vector units far below the matmul roof. Notebook 02 "
       "measures the chain with and without tanh."
       if tanh_over_copy > 2 else
       "tanh costs about what moving its bytes costs, so the shortfall is elsewhere: the compiled chain "
       "allocates a fresh output each call (page faults; notebook 02 measures that trap).")
    + m0.above_roof_text(points, machine)
)

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 3, "lead": true}
# ## 5. From a kernel's speed-up to a step's, and to money
# One of the seed articles opens with a team that waits **3 days** per training run while a competitor
# iterates in 3 hours, and claims that switching to a compiled framework "typically saves ~30% of
# compute": 30k a month on a 100k/month GPU bill. What would this machine's measured speed-up be worth?
#
# A step is not one kernel. If parts taking shares $w_i$ of the eager step speed up by $s_i$, the step speeds
# up by $1 / \sum_i w_i / s_i$: the time-weighted harmonic mean (Amdahl's law). The table is **computed**
# from the chain's measured best-vs-best speed-up, the rest of the step assumed unchanged (matmuls, which
# compilers hand to the same libraries).

# %%
kernel = chain.best_vs_best
m0.amdahl_table(kernel)

# %%
needed = m0.share_needed(1 / 0.7, kernel) if kernel > 1 / 0.7 else float("inf")
run_hours, monthly_bill = 3 * 24, 100_000
Markdown(
    f"Measured on the chain: best compiled over best eager **{ratio(kernel)}** "
    f"({m0.variant_name(chain.best_compiled, True)} against {m0.variant_name(chain.best_eager, False)}); per "
    "framework: " + ", ".join(f"{m0.variant_name(fw, True)} over {m0.variant_name(fw, False)} "
                              f"{ratio(chain.own(fw))}" for fw in here) + ". "
    + (f"For the seed's 30% saving (a 1.43x step), this kernel would have to take at least "
       f"{percent(needed)} of the eager step. " if needed <= 1 else
       "No share of this kernel can give the seed's 1.43x step: the kernel itself is slower than that. ")
    + f"Only if the whole step were this kernel would the 3-day run take {run_hours / kernel:.1f} hours and a "
    f"100k/month bill shrink by {monthly_bill * (1 - 1 / kernel) / 1000:.0f}k. Notebook 07 measures a whole model."
)

# %% [markdown]
# The same seed says raising utilisation from 40% to 80% "halves" the hardware cost, with the example
# 10 GPUs x 10 hours becoming 5 GPUs x 5 hours. Check the arithmetic:

# %%
# NBVAL_CHECK_OUTPUT
gpu_hours_before, gpu_hours_after = 10 * 10, 5 * 5  # the seed's example, computed (nothing here is measured)
util_before, util_after = 0.4, 0.8  # the seed's utilisation claim
print(f"the example: {gpu_hours_before} GPU-hours become {gpu_hours_after}, "
      f"a {gpu_hours_before / gpu_hours_after:.0f}x cut")
print(f"the claim: the same work at {util_after:.0%} instead of {util_before:.0%} utilisation needs "
      f"{util_before / util_after:.2f}x the GPU-hours, a {util_after / util_before:.0f}x cut")

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 4, "lead": false}
# ## Exercises
# **1. Predict, then measure.** Before timing it, predict from this machine's roofline how long `torch.mm`
# takes for two 512 x 512 fp32 matrices: `answer` = your prediction in seconds. The check then measures it
# and accepts a prediction within 0.5x-4x of the measurement, or the roofline time of this run (the roofline
# is a lower bound: where the measurement disagrees, the solution says by how much).
# <details><summary>Hint</summary>An n x n matmul does 2n³ FLOPs and moves at least 3 x 4 x n² bytes;
# <code>machine.roofline_time(flops, bytes)</code> takes the longer of the two times.</details>

# %%
answer = None  # your prediction, in seconds

# %% tags=["solution"] jupyter={"source_hidden": true}
answer = machine.roofline_time(2 * 512**3, 3 * 4 * 512**2)
measured_512 = m0.exercises.measured_matmul_seconds(512)
print(f"predicted {format_time(answer)}, measured {format_time(measured_512)}: "
      f"{measured_512 / answer:.2f}x the roofline time, {percent(answer / measured_512)} of the roof")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("00.1", answer, machine=machine)

# %% [markdown]
# **2.** Time JAX's matmul of section 2 honestly *without* `block_until_ready`, using only NumPy: `answer` =
# seconds per call.
# <details><summary>Hint</summary>Copying the result to the host must wait for it:
# <code>np.asarray(...)</code>, timed with <code>benchmark(..., sync=False)</code>. What extra cost do you
# now include?</details>

# %%
answer = None  # seconds per call

# %% tags=["solution"] jupyter={"source_hidden": true}
if cu.notebook.needs("jax"):
    jax_fn, jax_args = m0.matmul_workload("jax", n)
    host_copy = cu.timing.benchmark(lambda: np.asarray(jax_fn(*jax_args)), sync=False, label="jax + host copy")
    answer = host_copy.median
    print(f"block_until_ready: {format_time(honest['jax'].median)}; with the host copy: {format_time(answer)}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("00.2", answer, synchronised=honest["jax"].median if "jax" in here else 1.0,
                   naive=naive["jax"].median if "jax" in here else 1.0)

# %% [markdown]
# **3.** A training step spends 30% of its eager time in the chain of section 3 and the rest in matmuls
# that compiling leaves as they are. With the chain's measured best-vs-best speed-up (`chain.best_vs_best`),
# what is the step's speed-up? `answer` = the speed-up (a number, e.g. 1.2).
# <details><summary>Hint</summary>Add up the step's new time part by part, then divide.</details>

# %%
answer = None  # the step's speed-up

# %% tags=["solution"] jupyter={"source_hidden": true}
answer = 1 / (0.3 / chain.best_vs_best + 0.7 / 1.0)
print(f"kernel {ratio(chain.best_vs_best)} -> step {ratio(answer)}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("00.3", answer, share=0.3, kernel_speedup=chain.best_vs_best)

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 3, "lead": true}
# ## Summary

# %%
cu.notebook.summary_table("00_measuring", [
    *[(f"{fw}: synchronised / naive matmul time", fooled[fw], "x", "1.0 = the call was synchronous")
      for fw in here],
    *[(f"{m0.variant_name(fw, True)} first call ({inductor_cache} Inductor cache)" if fw == "torch" else
       f"{m0.variant_name(fw, True)} first call", compiled[fw].first_call, "s", "reported apart") for fw in here],
    *[(f"chain: {m0.variant_name(fw, True)} over {m0.variant_name(fw, False)}", chain.own(fw), "x",
       "baseline: own eager") for fw in here],
    ("chain: best compiled over best eager", chain.best_vs_best, "x", "seed claims ~1.43x (30% less compute)"),
    ("step speed-up if the chain is 30% of it", m0.amdahl([0.3, 0.7], [chain.best_vs_best, 1.0]), "x",
     "computed (Amdahl)"),
    ("per-op overhead, torch add on 4 elements", tiny.median * 1e6, "µs", ""),
    *[(f"memory bandwidth ({fw})", m.bandwidth / 1e9, "GB/s", "best in-place probe") for fw, m in machines.items()],
    *[(f"triad into a fresh output ({fw})", m.fresh_output_probes["triad, fresh output"] / 1e9, "GB/s",
       "allocation + page faults: not a bandwidth") for fw, m in machines.items()],
    *[(f"matmul fp32 ({fw})", m.peak_flops / 1e9, "GFLOP/s", names[fw]) for fw, m in machines.items()],
    ("theoretical fp32 peak", (peak.flops or float("nan")) / 1e9, "GFLOP/s", "computed, not measured"),
])

# %% [markdown]
# **What to remember**
# - Synchronise before reading the clock; report the first call apart (and say whether caches were warm);
#   give the median with its spread; name the baseline of every speed-up.
# - Every kernel lives in one of three regimes: overhead, bandwidth, compute. The roofline tells which,
#   and the machine's own ceilings (measured, beside the computed peak) tell how far it could go.
# - A kernel's speed-up reaches a step only through Amdahl's law: cost claims need the model's own
#   measurement (notebook 07).
#
# **Next:** [01 · Dynamic vs static graphs](01_dynamic_vs_static.ipynb): what a compiler sees that eager
# execution cannot, and what it costs.

# %%
print(cu.notebook.last_verified())
