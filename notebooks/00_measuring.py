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
# **Time:** about 40 minutes in a workshop. Run time is budgeted at 3 minutes at ci size and 5 at the laptop
# size on 2 cores (the notebook's metadata; CI checks the ci budget).
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

# %% [markdown] course={"lead": true, "minutes": 2} slideshow={"slide_type": "slide"}
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

from course_utils.display import format_bytes, format_flops, format_time, percent, ratio, verdict

m0 = cu.measuring  # notebook 00's helpers
ON_CUDA = torch.cuda.is_available()

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
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
off = [fw for fw in here if not (fooled[fw] > 3 if returns_early[fw] else 1 / 1.5 <= fooled[fw] <= 1.5)]
ratios_text = ", ".join(f"{fw} {fooled[fw]:.1f}x" for fw in here)
def why_off(fw):
    """Why framework ``fw`` missed its expected ratio, from the two timings' quartiles."""
    q = f"naive {cu.timing.quartiles(naive[fw], format_time)}, synchronised {cu.timing.quartiles(honest[fw], format_time)}"
    if returns_early[fw]:
        return f"{fw} returned only after computing here ({q})"
    return (f"{fw} computes before it returns, so both clocks timed the same work, one after the other ({q}); "
            + ("their quartiles do not overlap: the machine's speed changed between the two timings"
               if cu.timing.apart(naive[fw], honest[fw]) else "their quartiles overlap: the run's noise"))


verdict(not off, f"synchronised / naive time: {ratios_text}", "; ".join(why_off(fw) for fw in off))

# %%
host = m0.host_copy_runs(here, n)  # {fw: (np.asarray as the only wait, synchronised, bytes copied?)}, in turns
Markdown(
    f"The synchronised clock reads {ratios_text} the naive one "
    "(a ratio near 1 means the call was synchronous here). "
    + (f"JAX's naive clock read {format_time(naive['jax'].median)} for work that takes "
       f"{format_time(honest['jax'].median)}. " if "jax" in here else "")
    + "**The rule:** wait for the result before reading the clock: `jax.block_until_ready`, "
    "`torch.cuda.synchronize()`, and in TensorFlow `tf.test.experimental.sync_devices()` (on a CPU, TF eager "
    "has already computed when it returns). A host copy (`np.asarray(y)`, `y.numpy()`) also waits: timed in "
    "alternating rounds with the synchronised call, " + m0.host_copy_text(host, 4 * n * n)
    + "`cu.timing.benchmark` waits for you without copying (`cu.timing.sync` knows all three)."
)

# %% [markdown] course={"lead": false, "minutes": 5} slideshow={"slide_type": "slide"}
# ## 3. First call versus steady state
# A compiled function pays once: tracing, graph optimisation, code generation. Averaging that first call
# into the steady state makes a compiled function look slow in a short benchmark and fast in a long one.
#
# **Prediction.** In each framework the first compiled call costs at least 3x a steady-state call, and
# afterwards each compiled version beats its own eager one on this memory-bound-looking chain of
# elementwise ops (`cu.models.gelu_chain`: bias + tanh-GELU + residual).
#
# An eager op's output is fresh memory, and on a CPU what that costs depends on the C allocator's state: a new
# process's glibc hands large freed blocks back to the OS, so the next op's output faults its pages in again,
# while a process that has already freed one large block keeps such blocks for reuse (notebook 01 times the same
# chain in both states). Training runs for hours, so before timing we put the allocator in that steady state
# (`m0.warm_allocator()`: one 31 MiB block allocated and freed), and count each variant's page faults per call.

# %%
here = m0.present_frameworks()
size = cu.env.pick(ci=2**20, cpu=2**23, gpu=2**26, tpu=2**26)
x_np, bias_np, inputs = m0.chain_inputs(here, size)
m0.warm_allocator()
cache_before, phases_before = cu.compiled.inductor_cache_counts(), m0.compile_phase_times()
eager, compiled, compiled_fns = m0.chain_runs(inputs)
inductor_cache = m0.cache_state(cache_before, cu.compiled.inductor_cache_counts())
compile_phases = m0.first_call_text(compiled["torch"].first_call, inductor_cache, phases_before,
                                    m0.compile_phase_times())
chain = m0.ChainSpeedups(eager, compiled, m0.chain_faults(inputs, compiled_fns))
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
Markdown(
    "The first call is reported apart, never averaged in. " + compile_phases
    + "Notebook 01 measures a cold cache against a warm one. Each speed-up names its baseline: "
    f"per framework, compiled against its own eager; across frameworks, the best compiled variant "
    f"({m0.variant_name(chain.best_compiled, True)}) against the best eager one "
    f"({m0.variant_name(chain.best_eager, False)}): **{ratio(chain.best_vs_best)}**. That last number is what "
    "compiling buys a team free to choose. The per-framework ratios depend on their own eager baselines: here the "
    f"slowest eager runtime was {m0.variant_name(max(eager, key=lambda fw: eager[fw].median), False)} "
    f"({format_time(max(m.median for m in eager.values()))}, against "
    f"{format_time(min(m.median for m in eager.values()))} for the fastest), which inflates its own ratio."
)

# %% [markdown]
# The eager rows differ although every framework runs the same eleven ops on the same array. Three suspects,
# each measured apart against the fastest other eager runtime: the one transcendental (`tanh` alone), fresh
# memory for every op's output (page faults per call, from `getrusage`, and what they cost: torch's chain timed
# again with its freed memory handed back to the OS before each call), and the threads each op hands its
# work to (the same chain on one thread). Where torch is slower, the measured parts are added up against the
# gap, and what they leave is named as unexplained.

# %%
gap = m0.eager_gap(inputs, eager, cu.models.chain_for,  # None when PyTorch is the only framework
                   earlier_faults={fw: f[0] for fw, f in chain.faults.items()})
Markdown(gap.text() if gap else "Only PyTorch is installed here: there is no other eager runtime to compare.")

# %% [markdown] course={"lead": false, "minutes": 16} slideshow={"slide_type": "slide"}
# ## 4. The three regimes: overhead, bandwidth, compute
# Every operation costs at least a fixed **overhead** (Python, dispatch, kernel launch), then either the
# time to move its bytes (**bandwidth**-bound) or the time to do its arithmetic (**compute**-bound).
#
# **Prediction.** Timing `x + 1` over sizes from a few elements to millions, every variant is flat at small
# sizes (overhead: the size does not matter) and bends inside the sweep into a line of slope one or steeper
# on log-log axes (at least 0.7 at the top, computed: twice the bytes then take at least 2^0.7 = 1.6x the time;
# steeper where the arrays outgrow a cache and each byte costs more). Eager variants are compared with eager
# ones, compiled with compiled.

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
shallow = "torch eager" in off and sweep_sizes[0] < bends["torch eager"].size < sweep_sizes[-1]
retime = {"torch eager": m0.torch_eager_threads(sweep_sizes[-2:])} if shallow else {}  # 1 and n threads, in turns
verdict(not off, "log slopes at the top: " + ", ".join(f"{k} {b.slope:.2f}" for k, b in bends.items()),
        m0.slope_why(sweep_sizes, sweep, bends, off, retime=retime) if off else "")

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
    "the whole step) help there. " + m0.steep_top_text(sweep_sizes, bends, series=sweep)
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
# Is main memory really the roof? The sweep below times a copy (`copy_`, preallocated, as the probe does) for
# working sets from 16 KiB past the probes' size, and on to at least two working sets of twice the last-level
# cache or more, which only main memory holds; each cache level the OS reports is marked. (It sweeps the CPU's
# memory; on a GPU runtime the roofs above are the GPU's.)
#
# **Prediction.** The roof drawn on every roofline below (the best in-place probe of any framework, measured
# once, at the start) is main memory's speed: within 1.3x of the sweep's main-memory plateau (the median of its
# points at twice the last-level cache or more, at least two of them). To tell the probes' working set from the
# moment they were measured at, torch's copy probe and those points are timed again in alternating rounds, so
# that they see the same moments; the copy probe's figure from the start is shown beside them.

# %%
probe_set = 2 * probe_size.array_bytes  # a copy's source and destination
hierarchy = m0.sweep_hierarchy(m0.default_working_sets(probe_set))
best_bandwidth = max(m.bandwidth for m in machines.values())
m0.plots.hierarchy_plot(hierarchy, roof=best_bandwidth if machines["torch"].device == "cpu" else None)

# %%
dram = hierarchy.dram_points()
on_cpu = machines["torch"].device == "cpu"  # on a GPU the torch probe measured the GPU: use the sweep's own point
retimed = (m0.retime_dram(hierarchy, probe_set, machines["torch"].bandwidth_probes["copy"])
           if on_cpu and len(dram) >= 2 else None)
plateau = retimed.plateau if retimed else hierarchy.dram_plateau()
probe_rate = retimed.probe_rate if retimed else hierarchy.rate_at(probe_set)
roof_probe = max(((f"{fw} {k}", v) for fw, m in machines.items() for k, v in m.bandwidth_probes.items()),
                 key=lambda kv: kv[1])  # the roof drawn on every roofline: the best probe of any framework
m0.roof_verdict(hierarchy, retimed, roof_probe if on_cpu else None, probe_set)  # on a GPU the roofs are the GPU's

# %%
copy_floor = cu.timing.benchmark(torch.ones(4).copy_, torch.ones(4), min_time=0.05)  # a copy_ of almost no bytes
Markdown(m0.levels_text(hierarchy, retimed, probe_rate, copy_floor, probe_set)
         + (m0.drawn_roof_text(roof_probe, plateau) if on_cpu else "")
         + m0.slope_budget(sweep_sizes, bends, sweep, hierarchy))

# %% [markdown] slideshow={"slide_type": "subslide"}
# How close is the measured matmul to what the chip could do? The theoretical peak is **computed** from the
# CPU's flags and clock (each factor says where it comes from); it is a formula, not a measurement.

# %%
peak = m0.theoretical_peak()
peak

# %%
measured_matmuls = {**{f"{fw} probe (n = {cu.roofline.default_matmul_n()})": m.peak_flops for fw, m in machines.items()},
                    f"torch {n}x{n} (section 2)": 2 * n**3 / honest["torch"].median}
Markdown(m0.matmuls_text(measured_matmuls, peak) + m0.load_note())

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
Markdown(
    f"Fastest over slowest fp32 matmul here: **{ratio(gap)}** ("
    + ", ".join(f"{fw} {format_flops(v)} with {names[fw]}" for fw, v in matmuls.items()) + "). "
    + ("A gap this large is the libraries, not the frameworks' Python: each calls a different kernel."
       if gap > 1.3 else "Within 1.3x: whatever the library, they end near the same limit on this machine.")
    + m0.load_note()
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The roofline puts every kernel on one picture. `cu.fusion.trace_traffic` counts the chain's work and bytes
# from its shapes: eagerly, each op reads and writes whole arrays; fused, the chain reads its input once and
# writes once.
#
# **Prediction.** A 4-element add is all overhead: a 4,096-element add takes the same time within 1.5x (a
# thousand times the bytes, no measurable cost), so the point sits far below its roof; the n x n torch matmul
# of section 2 reaches over half of torch's own matmul probe (like for like: the same library on a larger
# product). The compute roof drawn is the best probe of any framework, whose library may be another (the table
# above): that gap is set apart below.

# %%
machine = m0.best_roof(machines)  # the best bandwidth and the best matmul any framework reached
traffic = cu.fusion.trace_traffic(cu.models.chain_for("torch"), *inputs["torch"])
tiny = cu.timing.benchmark(torch.add, torch.ones(4), 1, min_time=0.05)
tiny_4k = cu.timing.benchmark(torch.add, torch.ones(4096), 1, min_time=0.05)  # 1,024x the bytes
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

# %%
size_cost = tiny_4k.median / tiny.median
mm_rate = 2 * n**3 / honest["torch"].median
own_share = mm_rate / machines["torch"].peak_flops  # like for like: torch's own matmul probe, the same library
verdict(size_cost <= 1.5 and own_share > 0.5,
        f"4,096-element add {format_time(tiny_4k.median)} against {format_time(tiny.median)} for 4 elements "
        f"({size_cost:.2f}x), the 4-element add at {percent(share['torch add, 4 elements'], 3)} of its roof; "
        f"{n}x{n} torch matmul {format_flops(mm_rate)}, {percent(own_share)} of torch's own matmul probe "
        f"({format_flops(machines['torch'].peak_flops)}, n = {cu.roofline.default_matmul_n()})",
        "; ".join(why for why, failed in (
            ("the 4,096-element add cost measurably more than the 4-element one: at this size the bytes already show",
             size_cost > 1.5),
            ("the matmul stayed under half of torch's own larger probe (see below)", own_share <= 0.5)) if failed))

# %%
Markdown(
    m0.matmul_point_text(n, mm_rate, machines, names, peak.flops, again=host["torch"][1])
    + f"The 4-element add reaches {percent(share['torch add, 4 elements'], 3)} of its roof: {format_time(tiny.median)} "
    f"for 4 additions, and 1,024 times the elements took {size_cost:.2f}x the time"
    + (": the call's overhead, not its bytes." if size_cost <= 1.5 else
       ": the bytes already cost something at 16 KiB, so the overhead floor ends below that size here.")
)

# %% [markdown]
# The fused chain sits left of the ridge, where the roofline calls a kernel memory-bound. Is it? Notebook 02
# tests it like for like, and so do we, at this notebook's size, on the same tensors, every output into a reused
# buffer: a copy of the chain's bytes, eager `tanh` alone, and the compiled chain with and without its `tanh`
# (`cu.fusion.chain(..., tanh=False)` puts the identity in its place: a pure polynomial, same bytes), with the
# compiled chain into a fresh output beside them, all timed in alternating rounds.
#
# **Prediction** (notebook 02's): taking `tanh` out makes the fused chain at least 1.3x faster: it is
# compute-bound on the vector units, not memory-bound.

# %%
x_t, b_t = inputs["torch"]
fused = {m0.limits.FUSED: cu.fusion.into_buffer("torch", cu.fusion.chain("torch"), x_t),
         m0.limits.POLY: cu.fusion.into_buffer("torch", cu.fusion.chain("torch", tanh=False), x_t)}
costs = m0.chain_limits(x_t, b_t, fused, fresh=compiled_fns["torch"])  # all five in alternating rounds
fresh_faults = m0.outputs_worth(compiled_fns["torch"], x_t, b_t, output_bytes=4 * x_t.numel())
tanh_cost = costs[m0.limits.FUSED].median / costs[m0.limits.POLY].median
verdict(tanh_cost >= 1.3, f"fused chain with tanh {format_time(costs[m0.limits.FUSED].median)}, without "
        f"{format_time(costs[m0.limits.POLY].median)} ({tanh_cost:.2f}x); a copy {format_time(costs['copy'].median)}",
        "at this size the fused chain's tanh fits under the rest of its time (see below)")

# %%
Markdown((m0.cache_roof_text(traffic.fused_bytes, costs[m0.limits.FRESH].median, hierarchy, machine.bandwidth,
                             copy=costs["copy"])
          if on_cpu else f"The compiled chain reaches {percent(share['torch compiled chain'])} of its memory roof. ")
         + m0.chain_limits_text(costs, costs[m0.limits.FRESH], fresh_faults) + m0.above_roof_text(points, machine))

# %% [markdown] course={"lead": true, "minutes": 3} slideshow={"slide_type": "slide"}
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
    + "The seed's 30% is a claim about whole steps, not measured here; computed from this kernel's speed-up: "
    + (f"for a 30% saving (a 1.43x step), this kernel would have to take at least "
       f"{percent(needed)} of the eager step. " if needed <= 1 else
       "no share of this kernel can give a 1.43x step: the kernel itself is slower than that. ")
    + f"Only if the whole step were this kernel would the 3-day run take {run_hours / kernel:.1f} hours and a "
    f"100k/month bill shrink by {monthly_bill * (1 - 1 / kernel) / 1000:.0f}k (computed). Notebook 07 measures a "
    "whole model."
)

# %% [markdown]
# The same seed claims that raising utilisation from 40% to 80% "halves" the hardware cost, with the example
# 10 GPUs x 10 hours becoming 5 GPUs x 5 hours. The claim's arithmetic, computed (nothing here is measured):

# %%
# NBVAL_CHECK_OUTPUT
gpu_hours_before, gpu_hours_after = 10 * 10, 5 * 5  # the seed's example, computed (nothing here is measured)
util_before, util_after = 0.4, 0.8  # the seed's utilisation claim
print(f"the example: {gpu_hours_before} GPU-hours become {gpu_hours_after}, "
      f"a {gpu_hours_before / gpu_hours_after:.0f}x cut")
print(f"the claim: the same work at {util_after:.0%} instead of {util_before:.0%} utilisation needs "
      f"{util_before / util_after:.2f}x the GPU-hours, a {util_after / util_before:.0f}x cut")
example_fits = gpu_hours_before / gpu_hours_after == util_after / util_before
print("the example illustrates the claim: " + ("yes" if example_fits else
      f"no: the example cuts the GPU-hours {gpu_hours_before / gpu_hours_after:.0f}x, the claim "
      f"{util_after / util_before:.0f}x"))

# %% [markdown] course={"lead": false, "minutes": 4} slideshow={"slide_type": "slide"}
# ## Exercises
# **1. Predict, then measure.** Before timing it, predict from this machine's roofline how long `torch.mm`
# takes for two 512 x 512 fp32 matrices: `answer` = your prediction in seconds. The check then measures it (the
# fastest of its timed calls: other processes only ever slow a call) and accepts a measurement from 0.5x to 8x
# your prediction. Other processes come and go, so it first times the
# roof's own torch matmul probe again and scales your prediction by how much faster (or slower) the machine
# runs now than when the roof was measured: both sides of the comparison come from the same moment.
# <details><summary>Hint</summary>An n x n matmul does 2n³ FLOPs and moves at least 3 x 4 x n² bytes;
# <code>machine.roofline_time(flops, bytes)</code> takes the longer of the two times. Why that band: a roofline
# time is a lower bound, so the measurement should not come in far under it (0.5x leaves room for timing
# noise); and up to 8x because a 512 matmul does far less work per call than the roof's larger matmul probe,
# so the library's blocking and thread hand-offs weigh more and it reaches a smaller share of that roof, which
# may also come from a faster framework's library than PyTorch's (the table of libraries above).</details>

# %%
answer = None  # your prediction, in seconds

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = machine.roofline_time(2 * 512**3, 3 * 4 * 512**2)
measured_512, drift_now = m0.exercises.measured_matmul_seconds(512), m0.exercises.drift(machine)
print(f"predicted {format_time(answer)}, measured {format_time(measured_512)} (fastest call): "
      f"{measured_512 / answer:.2f}x the roofline time; torch's matmul probe runs {drift_now:.2f}x as fast now "
      f"as when the roof was measured, so against the roof of this moment: {measured_512 * drift_now / answer:.2f}x")

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

# %% jupyter={"source_hidden": true} tags=["solution"]
if cu.notebook.needs("jax"):
    jax_fn, jax_args = m0.matmul_workload("jax", n)
    host_copy = cu.timing.benchmark(lambda: np.asarray(jax_fn(*jax_args)), sync=False, label="jax + host copy")
    answer = host_copy.median
    earlier_copy, earlier_sync, _ = host["jax"]  # section 2: the same two, timed in alternating rounds
    print(f"with the host copy now: {format_time(answer)} (quartiles {cu.timing.quartiles(host_copy, format_time)}); "
          f"section 2, in turns: host copy {format_time(earlier_copy.median)} "
          f"({cu.timing.quartiles(earlier_copy, format_time)}), block_until_ready {format_time(earlier_sync.median)} "
          f"({cu.timing.quartiles(earlier_sync, format_time)}); now against section 2's host copy: "
          + ("apart, for the same code: they were timed at different moments"
             if cu.timing.apart(host_copy, earlier_copy) else "within the noise"))

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

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = 1 / (0.3 / chain.best_vs_best + 0.7 / 1.0)
print(f"kernel {ratio(chain.best_vs_best)} -> step {ratio(answer)}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("00.3", answer, share=0.3, kernel_speedup=chain.best_vs_best)

# %% [markdown] course={"lead": true, "minutes": 3} slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.notebook.summary_table("00_measuring", [
    *[(f"{fw}: synchronised / naive matmul time", fooled[fw], "x", "1.0 = the call was synchronous")
      for fw in here],
    *[(f"{m0.variant_name(fw, True)} first call ({inductor_cache} Inductor cache)" if fw == "torch" else
       f"{m0.variant_name(fw, True)} first call", compiled[fw].first_call, "s", "reported apart") for fw in here],
    *[(f"chain: {m0.variant_name(fw, True)} over {m0.variant_name(fw, False)}", chain.own(fw), "x",
       "baseline: own eager") for fw in here],
    ("chain: best compiled over best eager", chain.best_vs_best, "x",
     "one kernel; the seed's ~1.43x (30% less compute) is for a whole step: next row"),
    ("step speed-up if the chain is 30% of it", m0.amdahl([0.3, 0.7], [chain.best_vs_best, 1.0]), "x",
     "computed (Amdahl); compare with the seed's claimed 1.43x step"),
    ("per-op overhead, torch add on 4 elements", tiny.median * 1e6, "µs", ""),
    *[(f"best in-place bandwidth probe ({fw})", m.bandwidth / 1e9, "GB/s",
       "measured once, at the start" + (f"; {m.bandwidth / plateau:.2f}x section 4's main-memory plateau"
                                        if plateau and on_cpu else "")) for fw, m in machines.items()],
    *[(f"triad into a fresh output ({fw})", m.fresh_output_probes["triad, fresh output"] / 1e9, "GB/s",
       m0.fresh_output_note(m)) for fw, m in machines.items()],
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
