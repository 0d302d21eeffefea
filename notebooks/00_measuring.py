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
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/main/notebooks/00_measuring.ipynb)
#
# **The question.** How do I time deep-learning code so that the number means something?
#
# **You will be able to** time PyTorch, JAX and TensorFlow code correctly (synchronised, warmed up, compile
# time apart, median with spread), measure your machine's three limits (per-op overhead, memory bandwidth,
# matmul FLOP/s), and turn a step time into hours and money.
#
# **Time:** about 40 minutes in a workshop; the notebook runs in under 5 minutes on a 2-core laptop.
# **Accelerators:** every section runs on CPU; on a GPU or TPU runtime the same cells measure the device
# (the async-dispatch section then shows CUDA as well).
#
# Every number below is measured in this run, on this machine. Where an article's claim is quoted, it is
# checked against that measurement.

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@main"], check=True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Which machine produced these numbers?
# A timing without its hardware and versions is an anecdote. The report below travels with every result
# in this course: core count and SIMD flags decide CPU speed (AVX-512 and AMX units, or not), framework
# versions decide which compiler you got.

# %%
import course_utils as cu

cu.env.setup_notebook()

# %% slideshow={"slide_type": "skip"}
import jax
import jax.numpy as jnp
import numpy as np
import tensorflow as tf
import torch
from IPython.display import Markdown

from course_utils.timing import benchmark, format_time

ON_CUDA = torch.cuda.is_available()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The async-dispatch trap
# JAX (on every backend), TensorFlow and PyTorch on a GPU return from a call *before* the result is
# computed: the work is queued and Python moves on. A clock read right after the call measures the
# queueing, not the work.
#
# **Prediction.** For a large matrix product, the naive JAX timing will be far shorter than the real
# one; TensorFlow and PyTorch on a CPU compute eagerly, so there the two agree.

# %%
n = cu.env.pick(ci=768, cpu=1536, gpu=8192, tpu=8192)
x_jax = jax.random.normal(jax.random.key(0), (n, n))
x_tf = tf.random.normal((n, n), seed=0)
x_torch = torch.randn(n, n, device="cuda" if ON_CUDA else "cpu")
matmul_jax = jax.jit(lambda a: a @ a)

candidates = {"jax": (matmul_jax, x_jax), "tensorflow": (tf.linalg.matmul, x_tf), "torch": (torch.mm, x_torch)}
naive, honest = {}, {}
for name, (fn, x) in candidates.items():
    args = (x,) if name == "jax" else (x, x)
    naive[name] = cu.timing.dispatch_only(fn, *args, label=f"{name} naive")
    honest[name] = benchmark(fn, *args, label=f"{name} synchronised")

cu.plotting.time_bars({**{m.label: m for m in naive.values()}, **{m.label: m for m in honest.values()}},
                      log=True, title=f"{n}x{n} matmul: what the clock says")

# %%
# NBVAL_CHECK_OUTPUT
jax_fooled = naive["jax"].median < honest["jax"].median / 3
print("JAX returned long before its result was ready:", jax_fooled)
assert jax_fooled

# %%
ratios = {k: honest[k].median / naive[k].median for k in candidates}
Markdown(
    f"The naive JAX clock read {format_time(naive['jax'].median)}; the synchronised one "
    f"{format_time(honest['jax'].median)}, **{ratios['jax']:.0f}x longer**. "
    f"TensorFlow: {ratios['tensorflow']:.1f}x, PyTorch on {x_torch.device.type}: {ratios['torch']:.1f}x "
    "(a ratio near 1 means the call was synchronous here). **The rule:** before reading the clock, wait "
    "for the result: `jax.block_until_ready`, `torch.cuda.synchronize()`, or a host copy in TensorFlow. "
    "`cu.timing.benchmark` does it for you (`cu.timing.sync` knows all three)."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. First call versus steady state
# A compiled function pays once: tracing, graph optimisation, code generation. Averaging that first call
# into the steady state makes a compiled function look slow in a short benchmark and fast in a long one.
#
# **Prediction.** `torch.compile` (Inductor writes and compiles C++ here) costs seconds on its first call;
# `jax.jit` and `tf.function` cost a fraction of a second; afterwards each compiled version beats its eager
# one on this memory-bound chain of elementwise ops (`cu.models.gelu_chain`, bias + GELU + residual).

# %%
size = cu.env.pick(ci=2**20, cpu=2**23, gpu=2**26, tpu=2**26)
rng = np.random.default_rng(0)
x_np, bias_np = rng.standard_normal(size, dtype=np.float32), np.float32(0.1)
inputs = {
    "torch": (torch.from_numpy(x_np).to(x_torch.device), torch.tensor(bias_np, device=x_torch.device)),
    "jax": (jnp.asarray(x_np), jnp.asarray(bias_np)),
    "tensorflow": (tf.constant(x_np), tf.constant(bias_np)),
}
eager = {fw: cu.models.chain_for(fw) for fw in inputs}
compiled = {
    "torch": torch.compile(eager["torch"]),
    "jax": jax.jit(eager["jax"]),
    "tensorflow": tf.function(eager["tensorflow"], jit_compile=True),
}
runs = {}
for fw, args in inputs.items():
    runs[f"{fw} eager"] = benchmark(eager[fw], *args, label=f"{fw} eager")
    runs[f"{fw} compiled"] = benchmark(compiled[fw], *args, label=f"{fw} compiled")
cu.plotting.time_bars(runs, log=True, show_first_call=True, title=f"gelu_chain on {size:,} floats")

# %%
# NBVAL_CHECK_OUTPUT
reference = cu.models.chain_for("numpy")(x_np, bias_np)
for fw, args in inputs.items():
    out = np.asarray(compiled[fw](*args).cpu() if fw == "torch" else compiled[fw](*args))
    error = float(np.max(np.abs(out - reference)))
    print(f"{fw:<10} compiled == eager (max abs error < 1e-5): {error < 1e-5}")
    assert error < 1e-5

# %%
rows = [
    f"| {fw} | {format_time(runs[f'{fw} compiled'].first_call)} | {format_time(runs[f'{fw} eager'].median)} | "
    f"{format_time(runs[f'{fw} compiled'].median)} | "
    f"{runs[f'{fw} eager'].median / runs[f'{fw} compiled'].median:.1f}x |"
    for fw in inputs
]
Markdown(
    "| framework | first compiled call | eager, per call | compiled, per call | steady-state speed-up |\n"
    "|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
    "The first call is reported apart, never averaged in. Notebook 01 turns these two numbers into a "
    "break-even call count."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. The three regimes: overhead, bandwidth, compute
# Every operation costs at least a fixed **overhead** (Python, dispatch, kernel launch), then either the
# time to move its bytes (**bandwidth**-bound) or the time to do its arithmetic (**compute**-bound).
#
# **Prediction.** Timing `x + 1` over sizes from a few elements to millions gives a flat line (overhead:
# the size does not matter) that bends into a slope-one line (bandwidth: twice the bytes, twice the time).
# Where it bends tells you how big a tensor must be before the work outweighs the framework.

# %%
sweep_sizes = [2**k for k in range(2, cu.env.pick(ci=23, cpu=25, gpu=27, tpu=27), 3)]
sweep = {"torch eager": [], "jax jit": []}
add_one_jax = jax.jit(lambda a: a + 1)
for s in sweep_sizes:
    xt, xj = torch.ones(s, device=x_torch.device), jnp.ones(s)
    sweep["torch eager"].append(benchmark(torch.add, xt, 1, min_time=0.05))
    sweep["jax jit"].append(benchmark(add_one_jax, xj, min_time=0.05))
cu.plotting.sweep_plot(sweep_sizes, sweep, title="x + 1: the overhead floor, then the bandwidth slope")

# %% [markdown] slideshow={"slide_type": "subslide"}
# Now the two ceilings, measured with each framework: bandwidth with large copies (best of copy, scale
# and triad over arrays far larger than the caches, outputs preallocated), peak with a large fp32 matmul.

# %%
machines = {fw: cu.roofline.measure_machine(fw) for fw in ("torch", "jax", "tensorflow")}
Markdown(
    "| framework | bandwidth (best probe) | matmul fp32 | ridge point |\n|---|---|---|---|\n"
    + "\n".join(
        f"| {fw} | {m.bandwidth / 1e9:.1f} GB/s | {m.peak_flops / 1e9:.0f} GFLOP/s | "
        f"{m.ridge_intensity:.0f} FLOP/byte |"
        for fw, m in machines.items()
    )
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Each framework reaches its own bandwidth: JAX and TensorFlow elementwise kernels may use fewer threads
# than PyTorch's on a CPU, so the roof drawn below is that of the framework that reached the most.
#
# The roofline puts every kernel on one picture. `cu.fusion.trace_traffic` counts the chain's work and
# bytes from its shapes: eagerly, each op reads and writes whole arrays; fused, the chain reads its input
# once and writes once. A tiny op sits far below both roofs: overhead.

# %%
machine = max(machines.values(), key=lambda m: m.bandwidth)
traffic = cu.fusion.trace_traffic(eager["torch"], *inputs["torch"])
flops_chain, bytes_eager, bytes_fused = traffic.flops, traffic.unfused_bytes, traffic.fused_bytes
tiny = benchmark(torch.add, torch.ones(4), 1, min_time=0.05)
points = [
    cu.roofline.Point("torch eager chain", flops_chain, bytes_eager, runs["torch eager"].median),
    cu.roofline.Point("torch compiled chain", flops_chain, bytes_fused, runs["torch compiled"].median),
    cu.roofline.Point("jax jit chain", flops_chain, bytes_fused, runs["jax compiled"].median),
    cu.roofline.Point("torch add, 4 elements", 4, 2 * 4 * 4, tiny.median),
    cu.roofline.Point(f"torch matmul {n}", 2 * n**3, 3 * 4 * n * n, honest["torch"].median),
]
cu.plotting.roofline_plot(machine, points)

# %%
# NBVAL_CHECK_OUTPUT
share = {p.label: p.achieved_flops / machine.attainable(p.intensity) for p in points}
print(f"bytes moved by the eager chain / the fused chain: {bytes_eager / bytes_fused:.0f}x")
print("the 4-element add reaches under 1% of its roof (overhead-bound):", share["torch add, 4 elements"] < 0.01)

# %%
above = [label for label, fraction in share.items() if fraction > 1.0]
Markdown(
    f"The {n}x{n} matmul reaches {share[f'torch matmul {n}']:.0%} of what the roofline allows; the fused "
    f"chain {share['torch compiled chain']:.0%}, the eager chain {share['torch eager chain']:.0%}, and the "
    f"four-element add {share['torch add, 4 elements']:.4%}: it takes {format_time(tiny.median)} to do "
    "4 additions, all of it overhead. "
    + (f"Above the roof: {', '.join(above)}. The roof is main-memory bandwidth; an array small enough to stay "
       "in the CPU caches is read faster than that (try the laptop size, where arrays leave the caches). "
       if above else "")
    + "Kernels far below their roof are where compilers help: they remove overhead (fewer calls) and memory "
    "traffic (fusion). Notebook 02 measures exactly that."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. From step time to hours and money
# One of the seed articles opens with a team that waits **3 days** per training run while a competitor
# iterates in 3 hours, and claims that switching to a compiled framework "typically saves ~30% of
# compute": 30k a month on a 100k/month GPU bill. What would this machine's measured speed-up be worth?
#
# *Example only*: the chain above is one memory-bound kernel, the best case for a compiler; a real model
# mixes it with matmuls that compilers barely speed up. Notebook 06 measures a whole model.

# %%
best_fw = max(inputs, key=lambda fw: runs[f"{fw} eager"].median / runs[f"{fw} compiled"].median)
speedup = runs[f"{best_fw} eager"].median / runs[f"{best_fw} compiled"].median
run_hours, monthly_bill = 3 * 24, 100_000
hours_after = run_hours / speedup
saving = monthly_bill * (1 - 1 / speedup)
Markdown(
    f"Measured best speed-up on the chain: **{speedup:.1f}x** ({best_fw}). *If* a whole training step sped "
    f"up like this, the 3-day run would take **{hours_after:.1f} hours** and a 100k/month bill would shrink "
    f"by **{saving / 1000:.0f}k** a month, against the seed's claimed 30k (a 1.43x speed-up). The gap is the "
    "point of this course: the speed-up of a kernel is an upper bound for the speed-up of a model."
)

# %% [markdown]
# The same seed says raising utilisation from 40% to 80% "halves" the hardware cost, with the example
# 10 GPUs x 10 hours becoming 5 GPUs x 5 hours. Check the arithmetic:

# %%
# NBVAL_CHECK_OUTPUT
gpu_hours_before, gpu_hours_after = 10 * 10, 5 * 5
print(f"GPU-hours before {gpu_hours_before}, after {gpu_hours_after}: "
      f"the example divides cost by {gpu_hours_before / gpu_hours_after:.0f}, not 2")
print("doubling utilisation halves GPU-hours:", 0.4 / 0.8 == 0.5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
# **1.** Measure the fp32 matmul throughput of `torch.mm` for n = 256 and compare it with the measured
# peak: how far below the compute roof is a small matmul, and why?
# <details><summary>Hint</summary>FLOPs = 2n³; time it with <code>benchmark</code>; divide by
# <code>machine.peak_flops</code>. Small matrices spend a larger share of time in overhead and in
# memory traffic.</details>

# %% jupyter={"source_hidden": true}
a = torch.randn(256, 256)
small = benchmark(torch.mm, a, a)
print(f"n=256: {2 * 256**3 / small.median / 1e9:.0f} GFLOP/s, "
      f"{2 * 256**3 / small.median / machine.peak_flops:.0%} of the measured peak")

# %% [markdown]
# **2.** Time JAX's `matmul_jax(x_jax)` honestly *without* `block_until_ready`, using only NumPy.
# <details><summary>Hint</summary>Copying the result to the host must wait for it:
# <code>np.asarray(...)</code>. What extra cost do you now include?</details>

# %% jupyter={"source_hidden": true}
host_copy = benchmark(lambda: np.asarray(matmul_jax(x_jax)), sync=False, label="jax + host copy")
print(host_copy.summary())
print(f"block_until_ready: {format_time(honest['jax'].median)}; with the host copy: "
      f"{format_time(host_copy.median)} (both wait for the result; the second also pays for the copy)")

# %% [markdown]
# **3.** How many calls of the chain does `torch.compile` need before its first-call cost is paid back?
# <details><summary>Hint</summary>Break-even n solves n·t_eager = first_call + (n-1)·t_compiled.
# </details>

# %% jupyter={"source_hidden": true}
e, c = runs["torch eager"], runs["torch compiled"]
break_even = (c.first_call - c.median) / (e.median - c.median)
print(f"torch.compile pays back after about {break_even:,.0f} calls of the chain")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.summary.table("00_measuring", [
    ("JAX naive / synchronised timing", naive["jax"].median / honest["jax"].median, "ratio", "1.0 = honest"),
    ("torch.compile first call", runs["torch compiled"].first_call, "s", "compile, reported apart"),
    ("jax.jit first call", runs["jax compiled"].first_call, "s", ""),
    ("tf.function(jit_compile) first call", runs["tensorflow compiled"].first_call, "s", ""),
    *[(f"{fw} chain speed-up, compiled vs eager", runs[f"{fw} eager"].median / runs[f"{fw} compiled"].median,
       "x", "seed claims ~1.43x (30% less compute)") for fw in inputs],
    ("per-op overhead, torch add on 4 elements", tiny.median * 1e6, "µs", ""),
    *[(f"memory bandwidth ({fw})", m.bandwidth / 1e9, "GB/s", "best probe") for fw, m in machines.items()],
    *[(f"matmul fp32 peak ({fw})", m.peak_flops / 1e9, "GFLOP/s", next(iter(m.flops_probes)))
      for fw, m in machines.items()],
])

# %% [markdown]
# **What to remember**
# - Synchronise before reading the clock; report the first call apart; give the median with its spread.
# - Every kernel lives in one of three regimes: overhead, bandwidth, compute. The roofline tells which,
#   and how much a compiler could possibly gain.
# - A kernel's speed-up bounds a model's; cost claims need the model's own measurement (notebook 06).
#
# **Next:** [01 · Dynamic vs static graphs](01_dynamic_vs_static.ipynb): what a compiler sees that eager
# execution cannot, and what it costs.

# %%
print(cu.summary.last_verified())
