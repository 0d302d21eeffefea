# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 6
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
# # 02 · Operator fusion: why is a fused kernel faster, and by how much should it be?
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/02_operator_fusion.ipynb)
#
# The seed articles say that a compiler "merges many small operations into one large kernel and so reduces
# memory reads and writes", and that compiled frameworks lift hardware utilisation "from 40-60% to 80%+".
# This notebook turns that into arithmetic you can do before running anything, then checks it on your machine.
#
# **You will be able to**
# - read off your machine's roofline and say whether a kernel is memory- or compute-bound;
# - predict the speed-up of fusing an elementwise chain from the bytes it moves, and check it in
#   PyTorch (`torch.compile`), JAX (`jax.jit`) and TensorFlow (`tf.function(jit_compile=True)`);
# - read the compiler's output (Inductor's C++/Triton, XLA's optimized HLO) and count the kernels;
# - find what keeps a fused kernel off its roof (fresh output pages, a transcendental) and put it on the roof;
# - tell three kinds of "utilisation" apart, and spot operators that break fusion.
#
# **Time budget** (from the notebook's metadata, not measured here): 3 minutes at ci size on a 2-core CPU, which CI
# enforces; 6 at laptop size; 45 minutes in a workshop.
# **Accelerators**: every section runs on CPU, GPU and TPU runtimes (PyTorch uses CUDA when present; on a TPU
# runtime PyTorch stays on the CPU). The allocation trap and the vector roof are CPU lessons; each section says
# what differs on a GPU. A runtime without JAX or TensorFlow skips that framework's parts with one sentence.
#
# On a Colab TPU runtime there is no TensorFlow: its parts say so in one sentence and are skipped.

# %%
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@v0.2.0"], check=True)

# %%
import course_utils as cu

cu.notebook.setup()

# %% slideshow={"slide_type": "skip"}
import os

import numpy as np
import torch
from IPython.display import Markdown, display

from course_utils.display import format_bytes, format_rate, format_time, percent, verdict

FW = cu.notebook.present()  # the frameworks installed here; PyTorch is required, JAX and TensorFlow optional
if "jax" in FW:
    import jax
if "tensorflow" in FW:
    tf = cu.env.import_tensorflow()
for missing in {"jax", "tensorflow"} - set(FW):
    cu.notebook.needs(missing)  # one sentence each; their cells below are skipped

# %% slideshow={"slide_type": "skip"}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ROWS = cu.env.pick(ci=8192, cpu=16384, gpu=262144, tpu=65536)  # x is ROWS x 1024 float32: 32 MiB in ci size
COLS = 1024
rng = np.random.default_rng(0)
x_np = rng.standard_normal((ROWS, COLS), dtype=np.float32)
bias_np = rng.standard_normal(COLS, dtype=np.float32)
data = {fw: cu.interop.to_framework(fw, x_np, bias_np, device=DEVICE) for fw in FW}  # {framework: (x, bias)}
x_t, b_t = data["torch"]
chain_t = cu.fusion.chain("torch")
print(f"x: {ROWS} x {COLS} float32 = {format_bytes(x_np.nbytes)}; frameworks: {', '.join(FW)}; torch on {DEVICE}")

# %% [markdown] course={"lead": false, "minutes": 2} slideshow={"slide_type": "slide"}
# ## 1. The roofline of this machine
#
# A kernel that does `F` floating-point operations and moves `B` bytes between memory and the chip cannot
# finish faster than `max(F / peak FLOP/s, B / bandwidth)`. Its **arithmetic intensity** `F / B` decides
# which term wins: below the *ridge point* (peak FLOP/s / bandwidth) the kernel waits on memory.
# The two ceilings are measured now, on this machine (streaming probes for bandwidth, named in the table below:
# which ones depends on the framework; a large fp32 matmul for compute).
#
# **Prediction**: a CPU core does tens of FLOPs in the time one float arrives from memory, a GPU hundreds,
# so the ridge point sits well above 1 FLOP/byte, and an elementwise add (1 FLOP per 12 bytes: two floats
# in, one out) is far to the left of it: memory-bound.

# %%
# On a TPU runtime PyTorch runs on the host CPU: there the roof is the TPU's, measured with JAX.
machine = cu.roofline.measure_machine("jax" if cu.env.accelerator() == "tpu" and "jax" in FW else "torch")
display(machine)
cu.plotting.roofline_plot(machine, title=f"This machine's roofline (measured with {machine.framework}, this run)")

# %%
# NBVAL_CHECK_OUTPUT
print("ridge point above 1 FLOP/byte:", machine.ridge_intensity > 1)
print("an elementwise add (1/12 FLOP/byte) left of the ridge:", 1 / 12 < machine.ridge_intensity)

# %%
ridge_verdict = verdict(machine.ridge_intensity > 1,
                        f"ridge point {machine.ridge_intensity:.1f} FLOP/byte (measured), an add at 0.083",
                        "this machine's matmul roof is low against its bandwidth")
ridge_verdict

# %%
Markdown(
    f"The memory roof is **{format_rate(machine.bandwidth)}** (the best of its {' and '.join(machine.bandwidth_probes)} probes; "
    f"bandwidth in decimal GB/s, bytes in binary units) and the compute roof **{machine.peak_flops / 1e9:.0f} "
    f"GFLOP/s** (fp32 matmul), so the ridge point is **{machine.ridge_intensity:.1f} FLOP/byte**: "
    + (f"a kernel must do about {machine.ridge_intensity:.0f} operations per byte it moves before arithmetic, "
       "not memory, limits it, and every elementwise op is memory-bound by this measure."
       if ridge_verdict.held else
       "even a low-intensity kernel can be compute-bound here, so measure before assuming.")
    + " Section 5 adds a third ceiling that matters for elementwise code: the vector units' own throughput."
)

# %% [markdown] course={"lead": true, "minutes": 5} slideshow={"slide_type": "slide"}
# ## 2. An elementwise chain: bytes predicted, then time measured
#
# The course's recurring chain is `x + GELU_tanh(x + bias)`. Run eagerly, each operator is its own
# kernel: it reads its inputs from memory and writes its result back. Fused, one kernel reads `x` and
# `bias` once and writes the result once; the intermediates live in registers.
# `cu.fusion.trace_traffic` runs the function on shape-only tensors and records every op with its bytes.

# %%
traffic = cu.fusion.trace_traffic(chain_t, x_t, b_t)
display(traffic)

# %% [markdown]
# A hand count deserves a cross-check. PyTorch's `FlopCounterMode` and XLA's `cost_analysis()` both count
# FLOPs; XLA also counts the bytes its fused module reads and writes, and counts `tanh` apart, as a
# "transcendental".

# %%
# NBVAL_CHECK_OUTPUT
counted_torch = cu.fusion.torch_counted_flops(chain_t, x_t, b_t)
print(f"hand count: {traffic.n_ops} eager ops, {traffic.flops:,} FLOPs (tanh as 1), fused bytes {traffic.fused_bytes:,}")
print(f"FlopCounterMode: {counted_torch:,} FLOPs (it counts matmul-like ops only)")
if "jax" in FW:
    cost = cu.compiled.jax_cost(cu.fusion.chain("jax"), *data["jax"])
    print(f"XLA cost_analysis: {cost['flops']:,.0f} FLOPs + {cost['transcendentals']:,.0f} transcendentals, "
          f"{cost['bytes accessed']:,.0f} bytes")
    print("XLA's FLOPs + transcendentals == hand count:", cost["flops"] + cost["transcendentals"] == traffic.flops)
    print("XLA's bytes == hand-counted fused bytes:", cost["bytes accessed"] == traffic.fused_bytes)

# %% [markdown]
# **Prediction**: fusion makes the chain faster in every framework, and by *at most* the ratio of bytes moved
# (the table's last line), since both runs would then stream their bytes at the same memory bandwidth.

# %% slideshow={"slide_type": "subslide"}
compiled_fns = {fw: cu.interop.compile_default(fw, cu.fusion.chain(fw)) for fw in FW}
slow = dict(min_repeats=3)  # the eager runs take tenths of a second each
runs = {}
with cu.compiled.capture_inductor_code() as chain_code:
    for fw in FW:
        runs[cu.fusion.EAGER[fw]] = cu.timing.benchmark(cu.fusion.chain(fw), *data[fw], label=cu.fusion.EAGER[fw], **slow)
        runs[cu.fusion.FUSED[fw]] = cu.timing.benchmark(compiled_fns[fw], *data[fw], label=cu.fusion.FUSED[fw])
table = cu.fusion.compare_to_prediction(traffic, machine, unfused={cu.fusion.EAGER[fw]: runs[cu.fusion.EAGER[fw]] for fw in FW},
                                        fused={cu.fusion.FUSED[fw]: runs[cu.fusion.FUSED[fw]] for fw in FW})
display(table)
cu.fusion.prediction_plot(table, title="Elementwise chain: computed from bytes vs measured")

# %% [markdown]
# Every variant must compute what eager PyTorch computes. Different `tanh` implementations differ in
# the last bits, so the check is a tolerance, not equality.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
reference = chain_t(x_t, b_t).cpu().numpy()
outputs = {cu.fusion.FUSED[fw]: cu.interop.to_numpy(compiled_fns[fw](*data[fw])) for fw in FW}
outputs.update({cu.fusion.EAGER[fw]: cu.interop.to_numpy(cu.fusion.chain(fw)(*data[fw])) for fw in FW if fw != "torch"})
for name in sorted(outputs):
    error = float(np.max(np.abs(outputs[name] - reference)))
    assert error < 1e-4, (name, error)
    print(f"{name}: max abs diff vs torch eager < 1e-4: {error < 1e-4}")

# %%
speedups = {fw: runs[cu.fusion.EAGER[fw]].median / runs[cu.fusion.FUSED[fw]].median for fw in FW}
chain_verdict = verdict(
    all(1 < s <= traffic.ratio for s in speedups.values()),
    ", ".join(f"{cu.fusion.FUSED[fw]} {s:.1f}x over {cu.fusion.EAGER[fw]}" for fw, s in speedups.items())
    + f"; bytes ratio {traffic.ratio:.1f}x (computed)",
    "fusion did not pay everywhere" if min(speedups.values()) <= 1 else "a speed-up beat the bytes ratio",
)
chain_verdict

# %%
_fused_pct = ", ".join(f"{r.name} {percent(r.fraction_of_bandwidth)}" for r in table.rows if r.fused)
_eager_pct = ", ".join(f"{r.name} {percent(r.fraction_of_bandwidth)}" for r in table.rows if not r.fused)
_over = [fw for fw, s in speedups.items() if s > traffic.ratio]
Markdown(
    f"Fraction of the memory roof reached (bytes moved / time / {format_rate(machine.bandwidth)}): fused "
    f"{_fused_pct}; eager {_eager_pct}. "
    + (f"Fusion paid in every framework and stayed under the {traffic.ratio:.1f}x bytes ratio, because the fused "
       "kernels are further from their roof than the eager ones: the ratio of bytes is a ceiling only when both "
       "variants stream at the same bandwidth. "
       if chain_verdict.held else
       (f"{' and '.join(cu.fusion.FUSED[fw] for fw in _over)} beat the {traffic.ratio:.1f}x bytes ratio: the eager "
        "run paid more than its bytes (it reached a smaller share of the roof than the fused one), so the bytes "
        "ratio was not a ceiling here. It is one only when both variants stream at the same bandwidth. "
        if _over else "Some fused variant was not faster than eager: see the fractions above. "))
    + "Section 3 measures what eager pays besides bytes, section 5 what stops the fused kernels."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Three things called "utilisation"
#
# The seed's "hardware utilisation from 40-60% to 80%+" (显卡利用率, *GPU utilisation*) is, in everyday use, the
# number `nvidia-smi` prints: the share of time in which at least one kernel was running on the GPU, its
# **busy time**. It says nothing about how much of the chip each kernel uses: a GPU running one tiny kernel
# without pause shows 100%. Two other numbers measure how well the busy time is used:
# - **fraction of memory bandwidth**: bytes moved / time / measured bandwidth. The right measure for a
#   memory-bound kernel; this notebook's "% of bandwidth" and "% of roof" columns are this kind.
# - **MFU** (model FLOPs utilisation): the model's FLOPs per second / the chip's peak FLOP/s. The right measure
#   for compute-bound training. Published figures for well-tuned large-model training, as their papers report
#   them: PaLM 540B 46.2% (Chowdhery et al., 2022), Megatron-LM 1T-parameter GPT with selective recomputation
#   56% (Korthikanti et al., 2022), Llama 3 405B 38-43% (Llama team, 2024). These published figures (quoted,
#   not measured here) run from 38% to 56%, well short of 80%.
#
# So the seed's "80%+" reads as busy time. A CPU has no `nvidia-smi`, but a profiler trace gives the same
# quantity: the share of the calls' time in which a generated kernel was running (section 5 scores the seed's
# number that way, from section 4's traces, beside % of bandwidth). Where this notebook prints a percentage it
# says which one it is; section 6 gives a single matmul's share of the best matmul rate measured, an MFU-like
# ratio for one kernel.

# %% [markdown] course={"lead": false, "minutes": 4} slideshow={"slide_type": "slide"}
# ## 3. The allocation trap on a CPU
#
# Each call above returns a **new** output tensor. On a CPU, a large fresh buffer comes straight from the
# operating system (glibc serves allocations of 32 MiB and more with `mmap`), and each 4 KiB page costs a page
# fault and a zero-fill the first time it is written. The kernel pays for that, not the allocator.
# Remedies: write into a **preallocated** output (`out=` in PyTorch, an `out.copy_(...)` that Inductor fuses
# into the kernel), or **donate** an input buffer to XLA (`jax.jit(..., donate_argnums=...)`). A trap inside the
# remedy: `jit` drops arguments the function never reads, and a dropped buffer is silently *not* donated, unless
# you pass `keep_unused=True` (`cu.fusion.into_buffer` does). TensorFlow functions cannot write into a
# caller's buffer.
#
# **Prediction**: a single `torch.add` into a preallocated `out=` takes about the roofline time of its bytes (at
# most 1.5x it, and not under it by more than 1.2x: a roof is the fastest the machine streams); with a fresh output
# it takes at least 1.5x longer.

# %%
buffer_t = torch.empty_like(x_t)
alloc_runs = {
    "torch add, fresh output": cu.timing.benchmark(torch.add, x_t, b_t, label="torch add, fresh output"),
    "torch add, out= buffer": cu.timing.benchmark(lambda: torch.add(x_t, b_t, out=buffer_t), label="torch add, out= buffer"),
}
cu.plotting.time_bars(alloc_runs, title="torch.add: fresh output vs reused buffer (median, quartiles)")

# %%
_add_fresh, _add_out = alloc_runs["torch add, fresh output"].median, alloc_runs["torch add, out= buffer"].median
_add_bytes = 2 * x_t.nbytes + b_t.nbytes
_add_roof = _add_bytes / machine.bandwidth
_add_set = cu.fusion.working_set_text(_add_bytes, cu.env.last_level_cache_bytes())  # x, bias and the output
alloc_verdict = verdict(
    _add_roof / cu.fusion.explain.OVER_ROOF <= _add_out <= 1.5 * _add_roof and _add_fresh >= 1.5 * _add_out,
    f"out= {format_time(_add_out)}, {_add_out / _add_roof:.2f}x the roofline {format_time(_add_roof)} (computed); "
    f"fresh {format_time(_add_fresh)}, {_add_fresh / _add_out:.1f}x the out= time",
    "; ".join(why for bad, why in (
        (_add_fresh < 1.5 * _add_out, "fresh buffers cost little on this device"
         + (" (a caching allocator)" if DEVICE == "cuda" else "")),
        (_add_out > 1.5 * _add_roof, "out= itself ran far from the roof (a busy machine, or the roof probe ran at a "
                                     "better moment)"),
        (_add_out < _add_roof / cu.fusion.explain.OVER_ROOF,
         f"out= beat the roofline by {_add_roof / _add_out:.2f}x: the roof under-read at that moment, or the working "
         f"set was partly cached ({_add_set})")) if bad),
)
alloc_verdict

# %% [markdown]
# Where does eager's extra time go? Each eager op of the chain also writes a fresh output. The operating system
# counts the page faults a process takes (`getrusage`): here they are, per call, for the chain in each form.

# %%
# NBVAL_CHECK_OUTPUT
_pages = x_t.nbytes // 4096
faults = {"torch eager": cu.memory.page_faults(chain_t, x_t, b_t),
          "torch.compile": cu.memory.page_faults(compiled_fns["torch"], x_t, b_t),
          "torch.compile, out=": cu.memory.page_faults(cu.fusion.into_buffer("torch", chain_t, x_t), x_t, b_t)}
print(f"one output = {_pages} pages of 4 KiB; eager torch writes {traffic.n_ops} outputs")
for name, count in faults.items():
    print(f"{name}: {count / _pages:.0f} outputs' worth of page faults per call")

# %%
for fw in set(FW) - {"torch"}:  # other allocators, other habits: printed, not checked
    faults[cu.fusion.EAGER[fw]] = cu.memory.page_faults(cu.fusion.chain(fw), *data[fw])
    faults[cu.fusion.FUSED[fw]] = cu.memory.page_faults(compiled_fns[fw], *data[fw])
print("; ".join(f"{name}: {count / _pages:.1f} outputs' worth" for name, count in faults.items() if "torch" not in name))

# %%
Markdown(
    f"`torch.add` moves {format_bytes(_add_bytes)}; the roofline says {format_time(_add_roof)}. Into a preallocated "
    f"buffer it took **{format_time(_add_out)}**, into a fresh one **{format_time(_add_fresh)}** "
    f"({_add_fresh / _add_out:.1f}x). "
    + (f"The `out=` call beat the roofline by {_add_roof / _add_out:.2f}x"
       + (f", within the {cu.fusion.explain.OVER_ROOF}x this notebook allows a roof measured once at another moment; "
          if _add_out >= _add_roof / cu.fusion.explain.OVER_ROOF else
          ": the roof under-read at that moment, or the cache served part of the bytes; ")
       + f"its working set is {_add_set}. " if DEVICE == "cpu" and _add_out < _add_roof else "")
    + ("On this GPU the caching allocator hands back the same block on every call, so there is no page-fault "
       "cost to remove. " if DEVICE == "cuda" else
       f"The difference, {format_time(max(_add_fresh - _add_out, 0))} for {format_bytes(x_t.nbytes)}, is the price of "
       "fresh pages: page faults and zero-filling, paid inside the kernel. ")
    + f"Eager PyTorch pays it for every op: {faults['torch eager'] / _pages:.1f} outputs' worth of page faults per "
    f"call of the chain, against {faults['torch.compile'] / _pages:.1f} for torch.compile (one fresh output) and "
    f"{faults['torch.compile, out='] / _pages:.1f} into `out=`. So eager's time is not its bytes / bandwidth, and "
    "the bytes ratio under-predicts what fusion saves wherever eager pays per-op page faults."
)

# %%
_other = [Markdown(f"JAX op-by-op took {faults['jax op-by-op'] / _pages:.1f} outputs' worth of faults per call "
                   f"(jax.jit {faults['jax.jit'] / _pages:.1f}).")] if "jax" in FW else []
if "tensorflow" in FW:
    _half = {fw: cu.memory.page_faults(cu.fusion.chain(fw), data[fw][0][: ROWS // 2], data[fw][1]) / (_pages / 2)
             for fw in ("torch", "tensorflow")}  # the same eager chain on half the rows
    _tf_full, _tf_share, _torch_share = (faults["tf eager"] / _pages, table["tf eager"].fraction_of_bandwidth,
                                         table["torch eager"].fraction_of_bandwidth)
    _fresh_full = _tf_full >= traffic.n_ops / 2  # most of its outputs came from untouched pages
    _reuse_half = all(v < _tf_full / 2 and v < faults["torch eager"] / _pages / 2 for v in _half.values())
    _other.append(Markdown(
        f"TensorFlow's eager chain took **{_tf_full:.1f}** outputs' worth of faults per call for its {traffic.n_ops} "
        "outputs: " + ("as in torch eager, nearly every output landed on untouched pages: at this size nothing kept a "
                       "freed block for the next op. " if _fresh_full else
                       "under one output's worth, so practically every op wrote into pages that had been touched "
                       "before. " if _tf_full < 0.5 else
                       f"about {traffic.n_ops - _tf_full:.0f} of its {traffic.n_ops} outputs' worth of pages had been "
                       "touched before. ")
        + f"On half the rows ({format_bytes(x_t.nbytes // 2)} per output) the same chain took "
        f"{_half['tensorflow']:.1f} outputs' worth in TensorFlow and {_half['torch']:.1f} in torch"
        + (": there both reuse most pages, at the full size neither does. The size decides, in both frameworks "
           "alike, which fits section 3's rule (glibc hands out 32 MiB and more with `mmap`, fresh pages every time); "
           "which layer of TensorFlow's allocator passes the request on is not established by this run. "
           if _fresh_full and _reuse_half else
           ": this run shows no size at which fresh pages stop. " if _fresh_full else ". ")
        + f"tf eager reached {percent(_tf_share)} of the roof, torch eager {percent(_torch_share)}, on the same bytes"
        + (" and the same page faults." if _fresh_full and faults["torch eager"] / _pages >= traffic.n_ops / 2 else ".")))
display(*_other)

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
# ## 4. Look inside: the kernels the compilers wrote
#
# **Prediction**: one generated kernel for the whole chain in PyTorch (a C++ loop on CPU, a Triton kernel on
# GPU), and one `fusion` instruction in XLA's optimized HLO for JAX and for TensorFlow.

# %%
fresh_code = chain_code[0]
print(f"Inductor ({fresh_code.language}) launch sequence:\n{fresh_code.call_body()}\n")
print(f"the arithmetic of {fresh_code.kernels[0]}:\n{fresh_code.excerpt(max_lines=12)}")

# %%
hlo = {}
if "jax" in FW:
    hlo["jax.jit"] = cu.compiled.hlo_summary(cu.compiled.jax_hlo(compiled_fns["jax"], *data["jax"]))
if "tensorflow" in FW:
    hlo["tf jit_compile"] = cu.compiled.hlo_summary(cu.compiled.tf_hlo(compiled_fns["tensorflow"], *data["tensorflow"]))
for name, summary in hlo.items():
    print(f"{name}: optimized HLO, ENTRY computation:\n{summary.excerpt()}\n")

# %%
# NBVAL_CHECK_OUTPUT
kernel_counts = {"torch.compile": len(fresh_code.kernels), **{name: s.n_fusions for name, s in hlo.items()}}
for name, count in kernel_counts.items():
    print(f"{name}: fused kernels = {count}")

# %%
kernels_verdict = verdict(all(c == 1 for c in kernel_counts.values()),
                          ", ".join(f"{k} {v}" for k, v in kernel_counts.items()) + f" (from {traffic.n_ops} eager ops)",
                          "a compiler split the chain into several kernels")
kernels_verdict

# %%
Markdown(
    f"The {traffic.n_ops} eager kernels became "
    + ", ".join(f"**{v}** in {k}" for k, v in kernel_counts.items())
    + (f" (Inductor's `{fresh_code.kernels[0]}`: the name lists the fused op types; XLA's `kLoop`: a loop fusion). "
       if kernels_verdict.held else ": more than one somewhere; the launch code and HLO above show where it split. ")
    + "To see the full code yourself: `TORCH_LOGS=output_code` for Inductor, "
    "`jax.jit(f).lower(x).compile().as_text()` for JAX, and "
    "`f.experimental_get_compiler_ir(x)(stage='optimized_hlo')` for TensorFlow."
)

# %% [markdown]
# A profiler sees the same from the other side. `cu.profile.capture` records three calls of each compiled chain
# and saves the trace (open it at https://ui.perfetto.dev when online); `cu.fusion.trace_kernels` lists the
# generated kernels that ran. Inductor's C++ kernels appear in a trace when compiled with
# `cpp.enable_kernel_profile`; XLA's CPU runtime marks every kernel it runs (and may split one over its threads,
# so names are compared, not events per call).

# %%
# NBVAL_CHECK_OUTPUT
import torch._inductor.config as inductor_config


def chain_profiled(x, bias):  # a new function: Dynamo caches compiled code per function
    return cu.models.gelu_chain(x, bias, torch.tanh)


with inductor_config.patch({"cpp.enable_kernel_profile": True}):  # read when Inductor generates the code
    profiled_t = torch.compile(chain_profiled)
    profiled_t(x_t, b_t)
with cu.env.silenced_stderr():  # the profilers log their start and stop from C++
    traced = {"torch.compile": ("torch", cu.profile.capture("torch", profiled_t, x_t, b_t, name="02_chain"),
                                fresh_code.kernels)}
    for fw in sorted(set(FW) - {"torch"}):
        name = cu.fusion.FUSED[fw]
        traced[name] = (fw, cu.profile.capture(fw, compiled_fns[fw], *data[fw], name="02_chain"),
                        [n for n, _ in hlo[name].fusions])
for name, (fw, trace, expected) in traced.items():
    seen = cu.fusion.trace_kernels(trace, fw)
    print(f"{name}: kernels in the trace {sorted(seen)} == kernels in the compiler's output {sorted(expected)}: "
          f"{sorted(seen) == sorted(expected)}")
print("torch.compile kernel events per call:", traced["torch.compile"][1].count(r"cpp_fused|triton_") / 3)

# %% [markdown] course={"lead": false, "minutes": 7} slideshow={"slide_type": "slide"}
# ## 5. What keeps the fused kernel off its roof: the output pages, and `tanh`
#
# Section 2's fused kernels moved many times fewer bytes than eager but did not run that much faster. Two suspects, each
# tested like for like, everything else equal:
# - the **fresh output** (section 3): the same kernel with a fresh output and written into a reused buffer;
# - the **transcendental**: the same chain with `tanh` replaced by the identity, which leaves a pure
#   polynomial (multiplies and adds; same bytes).
#
# Elementwise code has a roof of its own. A matmul reuses each number many times and keeps the vector units
# busy with fused multiply-adds; an elementwise kernel issues loads, stores and whatever its formula needs, and a
# `tanh` costs tens of vector instructions per element. That **vector roof** belongs to the implementation as much
# as to the chip: Inductor's C++ calls SLEEF's `tanh` (accurate to about 1 ulp), XLA inlines its own rational
# approximation. So it is measured for each framework, on tensors that stay in cache (memory cannot limit them),
# with independent work per element, as a fused kernel has: multiply-adds per second and `tanh`s per second. Each
# rate is the slope between two in-cache sizes: a compiled call also has a fixed cost (dispatch, guards, waking
# threads; the intercept), which on a small tensor can be as long as the work and must not be charged to the
# vector units. This section's chain runs on a tensor as large as section 1's bandwidth probes (at least 4x the
# last-level cache; capped at each course size), so that a copy of it streams from main memory like theirs.
#
# **Prediction**: in each framework the fused chain with `tanh` takes at least 0.8x its own roof time and at most
# 1.25x its parts added up (nothing overlapping). Written into a reused buffer, its roof is the larger of its
# arithmetic (at that framework's in-cache rates) and its bytes (at the memory roof). TensorFlow has no reused
# buffer, so its roof also holds the measured time of the same chain without `tanh` into a fresh output; the
# prediction for TensorFlow is that this fresh output, not its arithmetic, is what limits it: that it costs more than
# its bytes, beyond its noise. All variants are timed in alternating rounds (`cu.timing.interleaved`), so that a
# machine changing speed widens every spread alike instead of moving one median against another.

# %%
vectors = {fw: cu.fusion.measure_vector_roof(fw) for fw in FW}  # each framework's own code, in cache
vector_one = cu.fusion.measure_vector_roof("torch", threads=1) if DEVICE == "cpu" else None  # torch on one thread
_llc = cu.env.last_level_cache_bytes()
_target = max(machine.array_bytes or 0, 4 * (_llc or 0))  # the size of section 1's probe arrays
ROOF_ROWS = ROWS if DEVICE != "cpu" else min(max(ROWS, -(-_target // (4 * COLS))),
                                             cu.env.pick(ci=32768, cpu=65536, gpu=ROWS, tpu=ROWS))
roof_x_np = rng.standard_normal((ROOF_ROWS, COLS), dtype=np.float32)
roof_data = {fw: cu.interop.to_framework(fw, roof_x_np, bias_np, device=DEVICE) for fw in FW}
roof_traffic = cu.fusion.trace_traffic(chain_t, *roof_data["torch"])
elements = roof_x_np.size
per_element = (roof_traffic.flops - elements) / elements  # the chain's 10 multiplies and adds; its tanh apart
memory_time = roof_traffic.fused_bytes / machine.bandwidth
chain_calls = cu.fusion.variant_calls(roof_data)  # each variant as a zero-argument call (the first one compiles)
chain_runs = cu.timing.interleaved(chain_calls, rounds=cu.env.pick(ci=3, cpu=4), min_time=0.2)  # alternating rounds
# where no reused buffer exists, the chain without tanh into a fresh output is a floor the chain with tanh cannot beat
_fresh_floor = {fw: chain_runs[f"{cu.fusion.FUSED[fw]}, no tanh"] for fw in FW if fw not in cu.fusion.INTO}
_limit_args = dict(elements=elements, flops=per_element, tanh=1, memory_seconds=memory_time, fresh_output=_fresh_floor)
limits = cu.fusion.chain_roofs(vectors, **_limit_args)  # {framework: its parts, the largest, all added up}
arith = {fw: limit.parts["arithmetic"] for fw, limit in limits.items()}
print(f"x: {format_bytes(roof_x_np.nbytes)} (last-level cache {format_bytes(_llc or 0)}); matmul roof "
      f"{machine.peak_flops / 1e9:.0f} GFLOP/s")
cu.fusion.vector_roof_table(vectors, **_limit_args)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
roof_reference = chain_t(*roof_data["torch"]).cpu().numpy()
_poly_ref = cu.fusion.chain("torch", tanh=False)(*roof_data["torch"]).cpu().numpy()
for fw in FW:
    for tanh, expected in ((True, roof_reference), (False, _poly_ref)):
        variant = cu.fusion.chain(fw, tanh=tanh)
        fn = cu.fusion.into_buffer(fw, variant, roof_data[fw][0]) or cu.interop.compile_default(fw, variant)
        got = cu.interop.to_numpy(fn(*roof_data[fw]))
        print(f"{fw}, {'with' if tanh else 'without'} tanh, reused buffer where the framework has one, equal to "
              f"eager torch (rtol 1e-5, atol 1e-4): {np.allclose(got, expected, rtol=1e-5, atol=1e-4)}")
del roof_reference, _poly_ref

# %%
WITH_TANH = {fw: cu.fusion.INTO.get(fw, cu.fusion.FUSED[fw]) for fw in FW}  # reused buffer where there is one
_t = {name: m.median for name, m in chain_runs.items()}
roof_time = {fw: limits[fw].seconds for fw in FW}
to_roof = {fw: _t[WITH_TANH[fw]] / roof_time[fw] for fw in FW}
no_overlap = {fw: limits[fw].serial / roof_time[fw] for fw in FW}
_below = [fw for fw in FW if to_roof[fw] < 0.8]
_above = [fw for fw in FW if to_roof[fw] > 1.25 * no_overlap[fw]]
_not_fresh = [fw for fw in _fresh_floor if limits[fw].limit != "fresh output"]  # predicted: fresh output limits
_how = {"arithmetic": "computed", "bytes": "computed", "fresh output": "measured"}
tanh_verdict = verdict(
    not _below and not _above and not _not_fresh,
    "; ".join(f"{WITH_TANH[fw]}: {format_time(_t[WITH_TANH[fw]])}, {to_roof[fw]:.2f}x its roof "
              f"{format_time(roof_time[fw])} ({limits[fw].limit}, {_how[limits[fw].limit]})" for fw in FW),
    "".join(f"{fw} ran faster than its own roof: " + (
        "its measured floor, the same chain without tanh, ran slower than the chain itself: the two timings, "
        f"taken at different moments, disagree (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        "the quartiles are in the table below). " if limits[fw].limit == "fresh output" else
        "its in-cache rate was under-measured" + (f" (on one thread torch's tanh ran at "
                                                  f"{vector_one.tanh_per_second / 1e9:.2f} G/s)"
                                                  if vector_one is not None and fw == "torch" else "") + ". ")
        for fw in _below)
    + "".join(f"{fw} took longer than its parts added up: something besides them limits it. " for fw in _above)
    + "".join(f"in {fw} the arithmetic at its in-cache rates outweighed the fresh output. "
              if limits[fw].limit == "arithmetic" else
              f"in {fw} the fresh output did not exceed its bytes' time beyond the noise (the chain without tanh: "
              f"quartiles {cu.timing.quartiles(_fresh_floor[fw], format_time)} against {format_time(memory_time)} "
              f"computed for its bytes; {faults[cu.fusion.FUSED[fw]] / _pages:.1f} outputs' worth of page faults per "
              "call in section 3): it added nothing measurable to them. " for fw in _not_fresh),
)
tanh_verdict

# %%
_tanh_cost = {fw: _t[WITH_TANH[fw]] / _t[f"{WITH_TANH[fw]}, no tanh"] for fw in FW}
_bound = {fw: limits[fw].limit for fw in FW}
_text = ("In cache, " + "; ".join(f"{fw} does {v.tanh_per_second / 1e9:.2f} G tanh/s (largest error {v.tanh_error:.0e}) "
                                  f"and {v.flops_per_second / 1e9:.1f} GFLOP/s of multiply-adds" for fw, v in vectors.items())
         + ", each the slope between two in-cache sizes; the intercept, a compiled call's fixed cost, is "
         + ", ".join(f"{format_time(v.call_seconds) if v.call_seconds else 'too small to resolve'} ({fw})"
                     for fw, v in vectors.items())
         + f", which the rates leave out (one call of this section's chain takes at least {format_time(min(_t.values()))}). "
         + "At those rates the chain's arithmetic takes " + ", ".join(f"{format_time(arith[fw])} ({fw})" for fw in FW)
         + f", its bytes {format_time(memory_time)} at the memory roof (both computed)"
         + "".join(f"; {fw}'s chain without tanh, into the fresh output it cannot avoid, took {format_time(v.median)} "
                   "(measured)" for fw, v in _fresh_floor.items())
         + ": the limit is " + ", ".join(f"{_bound[fw]} in {fw}" for fw in FW) + ". "
         + ("**With a transcendental, an elementwise chain can be compute-bound on a CPU**, and there fusion's byte "
            "savings stop paying. " if "arithmetic" in _bound.values() else "No framework's arithmetic outweighs "
            "its bytes or its fresh output here, so the chain is not compute-bound even with its tanh. ")
         + "Removing tanh (same output handling) made the chain "
         + ", ".join((f"{c:.1f}x faster" if c >= 1 else f"{1 / c:.1f}x slower") + f" in {fw}"
                     + ("" if cu.timing.apart(chain_runs[WITH_TANH[fw]], chain_runs[f"{WITH_TANH[fw]}, no tanh"])
                        else " (within the noise)") for fw, c in _tanh_cost.items()) + ". "
         + "".join(cu.fusion.overlap_text(WITH_TANH[fw], chain_runs[WITH_TANH[fw]], limits[fw]) for fw in FW))
if {"torch", "jax"} <= set(FW):
    _measured, _computed = _t[WITH_TANH["torch"]] / _t[WITH_TANH["jax"]], roof_time["torch"] / roof_time["jax"]
    _text += (f"The same chain on the same bytes took **{_measured:.1f}x** as long in torch as in jax; their roofs "
              f"predict {_computed:.1f}x (computed), torch's tanh running at {percent(vectors['torch'].tanh_per_second / vectors['jax'].tanh_per_second)} "
              f"of XLA's, whose approximation is off by up to {vectors['jax'].tanh_error:.0e} against SLEEF's "
              f"{vectors['torch'].tanh_error:.0e}: "
              + ("the two tanh implementations account for the gap. " if 1 / 1.5 <= _measured / _computed <= 1.5 else
                 "the tanh rates account for part of the gap, the rest is outside this model (see the threads below). "))
if vector_one is not None:
    _threads, _gain = torch.get_num_threads(), vectors["torch"].tanh_per_second / vector_one.tanh_per_second
    _text += (f"With its {_threads} threads torch's in-cache tanh rate was **{_gain:.2f}x** its rate on one thread"
              + (f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores): an OpenMP parallel loop waits "
                 "for its slowest thread, so a thread descheduled by another process stalls every call, and torch's "
                 "numbers here measure the shared machine as much as the code."
                 if _gain < 0.7 * _threads else
                 f", more than {_threads} threads can give: the one-thread probe itself ran at a bad moment (load "
                 f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores), so torch's rates here are not steady."
                 if _gain > 1.3 * _threads else ", about what its threads promise."))
Markdown(_text + (" On a GPU the same arithmetic is cheap next to its bandwidth (special-function units compute "
                  "tanh), which is why fusion's byte arithmetic predicts GPU speed-ups better than CPU ones."
                  if DEVICE == "cuda" else " Exercise 3 tries a cheaper `tanh` formula and measures what it costs."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### On the roof: a polynomial chain into a reused buffer
#
# Without the transcendental and without fresh pages, nothing but bytes is left. The yardstick is measured in
# the same run: a **copy** of `x` into a reused buffer, compiled by the same compiler, moves the same bytes (read
# `x`, write as much) with no arithmetic at all.
#
# **Prediction**: the polynomial chain fused into a reused buffer (PyTorch `out=`, JAX donation) runs within
# 1.2x of its own framework's copy (either way); eager PyTorch, for contrast, many times slower. TensorFlow has no
# reused buffer to offer.

# %%
poly_traffic = cu.fusion.trace_traffic(cu.fusion.chain("torch", tanh=False), *roof_data["torch"])  # 10 ops: no tanh
_eager = {k for k in chain_runs if "eager" in k or "op-by-op" in k}
_by_traffic = {True: roof_traffic, False: poly_traffic}  # copies are charged the chain's fused bytes (bias: +4 KiB)
roof_table = cu.fusion.PredictionTable(sum((cu.fusion.compare_to_prediction(
    _by_traffic[tanh], machine, unfused={k: chain_runs[k] for k in _eager if ("no tanh" not in k) == tanh},
    fused={k: chain_runs[k] for k in chain_runs.keys() - _eager if ("no tanh" not in k) == tanh}).rows
    for tanh in (True, False)), ()))
display(roof_table)
cu.fusion.roof_bars({r.name: r.fraction_of_bandwidth for r in roof_table.rows},
                    title="Chain variants: % of the memory roof (bytes / time / bandwidth)")

# %%
_copy = {fw: _t[f"{fw} copy, same bytes"] for fw in FW if f"{fw} copy, same bytes" in _t}
on_roof = {fw: _t[f"{cu.fusion.INTO[fw]}, no tanh"] / _copy[fw] for fw in _copy}
roof_verdict = verdict(
    all(1 / 1.2 <= r <= 1.2 for r in on_roof.values()),
    ", ".join(f"{cu.fusion.INTO[fw]}, no tanh: {r:.2f}x the {fw} copy" for fw, r in on_roof.items())
    + f"; torch eager, no tanh: {_t['torch eager, no tanh'] / _copy['torch']:.0f}x",
    "the fused polynomial still paid more than its bytes" if max(on_roof.values()) > 1.2
    else "a copy ran slower than the polynomial: the yardstick itself was off in this run",
)
roof_verdict

# %%
# busy time, as the seed meant it: the share of section 4's three profiled calls in which a generated kernel ran
busy = {name: cu.fusion.kernel_busy_share(trace, fw) for name, (fw, trace, _) in traced.items()}
_busy_pct = {name: f"{100 * share:.1f}%" for name, share in busy.items()}  # one decimal: 79.9% is not 80%
_idle = [name for name, share in busy.items() if round(100 * share, 1) < 80]
claim = verdict(
    not _idle,
    "seed: compiled frameworks reach 80%+ utilisation, read as busy time; the default compiled chain kept a kernel "
    "running for " + ", ".join(f"{name} {_busy_pct[name]}" for name in busy)
    + " of its back-to-back calls (section 4's traces)",
    f"in {' and '.join(_idle)} more than a fifth of the calls' time passed between kernels; what filled those gaps "
    f"(dispatch, allocation, or waiting for a core: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores) "
    "is not established by this run",
)
claim

# %%
_copy_share = {fw: roof_table[f"{fw} copy, same bytes"].fraction_of_bandwidth for fw in _copy}
_over_roof = [r.name for r in roof_table.rows if "copy" not in r.name and r.fraction_of_bandwidth > cu.fusion.explain.OVER_ROOF]
_text = ("The polynomial chain fused into a reused buffer ran at " + ", ".join(f"{r:.2f}x the copy ({fw})" for fw, r in on_roof.items())
         + (": **on the roof**, as far as a copy of the same bytes shows the roof in this run. " if roof_verdict.held else
            ": not within 1.2x of its copy in this run; the IQRs in the table show how much the machine moved. ")
         + f"Eager PyTorch runs the same polynomial {_t['torch eager, no tanh'] / _copy['torch']:.0f}x slower than the copy "
         "(ten fresh outputs, each with its page faults, and ten passes over memory). "
         + (f"Every variant moves {cu.fusion.working_set_text(2 * roof_x_np.nbytes, _llc)}. " if DEVICE == "cpu" else "")
         + cu.fusion.copies_text({fw: chain_runs[f"{fw} copy, same bytes"] for fw in _copy}, _copy_share, machine.framework)
         + (f"{' and '.join(_over_roof)} also beat the memory roof by more than {cu.fusion.explain.OVER_ROOF}x: the roof "
            "under-read at that moment, or part of the working set was served from cache; which is not established by "
            "this run. " if _over_roof else "")
         + "".join(cu.fusion.fresh_sum_text(cu.fusion.FUSED[fw], fresh=_t[cu.fusion.FUSED[fw]], into=_t[cu.fusion.INTO[fw]],
                                            fresh_plain=_t[f"{cu.fusion.FUSED[fw]}, no tanh"],
                                            into_plain=_t[f"{cu.fusion.INTO[fw]}, no tanh"]) for fw in _copy))
if "tensorflow" in FW:
    _tf_poly_fn = cu.interop.compile_default("tensorflow", cu.fusion.chain("tensorflow", tanh=False))
    _tf_poly, _tf_faults = chain_runs["tf jit_compile, no tanh"], cu.memory.page_faults(_tf_poly_fn, *roof_data["tensorflow"])
    _tf_call = cu.timing.benchmark(_tf_poly_fn, roof_data["tensorflow"][0][:4], roof_data["tensorflow"][1]).median  # 4 rows
    _fastest = min(_copy, key=_copy.get)  # the fastest copy of the same bytes, timed in the same rounds
    _tf_gap = _tf_poly.median - _copy[_fastest]
    _text += (f"TensorFlow has no `out=` and no buffer donation: each call returns a fresh tensor. Its XLA-fused "
              f"polynomial took {format_time(_tf_poly.median)}, {_tf_poly.median / _copy[_fastest]:.2f}x the {_fastest} "
              f"copy, with {_tf_faults / (roof_x_np.nbytes // 4096):.1f} outputs' worth of page faults per call; a call on "
              f"4 rows, its fixed cost, takes {format_time(_tf_call)}. "
              + ("The two overlap within their quartiles: this run does not tell them apart. "
                 if not cu.timing.apart(_tf_poly, chain_runs[f"{_fastest} copy, same bytes"]) else
                 "It ran faster than the copy beyond the noise, though it moves the same bytes with more work: one of "
                 "the two timings is off, and this run does not establish which. " if _tf_gap < 0 else
                 "The gap to the copy is within 1.5x of that fixed cost. " if _tf_gap <= 1.5 * _tf_call else
                 "Unlike the copies it pays a fresh output's page faults; section 3 measured what they cost (torch.add "
                 f"took {_add_fresh / _add_out:.1f}x as long into a fresh output). " if _tf_faults > (roof_x_np.nbytes // 4096) / 2
                 else f"Neither the fixed cost nor page faults account for the {format_time(_tf_gap)} gap; this run does "
                 "not tell what does. "))
_bw = ", ".join(f"{cu.fusion.FUSED[fw]} {percent(table[cu.fusion.FUSED[fw]].fraction_of_bandwidth)}" for fw in FW)
Markdown(_text + (f"The seed's 80%+ holds as busy time ({', '.join(_busy_pct.values())}), and that is all "
                  f"it says: the same default kernels moved their bytes at {_bw} of the memory roof (section 2). A kernel "
                  "long next to the work between calls keeps busy time near 100% whether it runs on its roof or far "
                  "below it, so busy time cannot tell them apart; the fractions of a roof above can. "
                  if claim.held else
                  f"Busy time stayed under the seed's 80%+ in {' and '.join(f'{n} ({_busy_pct[n]})' for n in _idle)}: "
                  "there more than a fifth of the back-to-back calls' time passed between kernels (the verdict says what "
                  "this run cannot tell about those gaps)"
                  + "".join(f"; {n} kept a kernel running {_busy_pct[n]} of the time" for n in busy if n not in _idle)
                  + ". Even a busy time near 100% would not say how well "
                  f"a kernel uses the chip: the same default kernels moved their bytes at {_bw} of the memory roof. "))

# %%
cu.fusion.roofline_with_vector_roof(
    machine, vectors, [r.point() for r in roof_table.rows if "copy" not in r.name and "no tanh" not in r.name],
    flops=per_element, tanh=1, title="The chain with tanh on the roofline, under each framework's vector roof")

# %% [markdown] course={"lead": false, "minutes": 6} slideshow={"slide_type": "slide"}
# ## 6. A compute-bound case: matmul, then matmul + bias + activation
#
# A square matmul of size `n` does `2n³` FLOPs on `3n²` numbers: its intensity, `n/6` FLOP/byte in fp32, grows
# with `n` and crosses the ridge point. A sweep over `n` shows the crossing.
#
# A roof is the best the machine did, so the matmul roof here is the best matmul rate measured in this run: section
# 1's probe or the sweep's fastest point, whichever is higher. A point far above section 1's probe would mean that
# probe ran at a bad moment, and the ridge point computed from it was off.
#
# **Prediction**: small matmuls sit under the roof's sloped (memory and overhead) part, large ones level off near
# the matmul roof: the largest reaches at least half of the best rate measured, and no size beats section 1's probe
# by more than 25%.

# %%
MM_SIZES = cu.env.pick(ci=[16, 48, 128, 384, 1024], cpu=[16, 32, 64, 128, 256, 512, 1024, 2048],
                       gpu=[64, 256, 1024, 4096, 8192], tpu=[64, 256, 1024, 4096])
mm_sweep = []
for n in MM_SIZES:
    a, w, out = torch.randn(n, n, device=DEVICE), torch.randn(n, n, device=DEVICE), torch.empty(n, n, device=DEVICE)
    m = cu.timing.benchmark(torch.mm, a, w, out=out, min_time=0.05, min_repeats=3)
    mm_sweep.append(cu.roofline.Point(f"mm n={n}", 2 * n**3, 3 * 4 * n * n, m.median))
mm_machine = cu.fusion.best_matmul_roof(machine, mm_sweep)  # the compute roof: the best matmul measured so far
cu.plotting.roofline_plot(mm_machine, mm_sweep, title="torch.mm into out=: intensity n/6 crosses the ridge")

# %%
# NBVAL_CHECK_OUTPUT
n_check = MM_SIZES[-1]
print(f"FlopCounterMode on mm n={n_check}: {cu.fusion.torch_counted_flops(torch.mm, a, w):,} FLOPs; "
      f"hand count 2n^3 = {2 * n_check**3:,}")
print("intensity crosses the ridge within the sweep:",
      mm_sweep[0].intensity < machine.ridge_intensity < mm_sweep[-1].intensity)

# %%
_mfu = [p.achieved_flops / mm_machine.peak_flops for p in mm_sweep]
_over_probe = max(p.achieved_flops for p in mm_sweep) / machine.peak_flops  # the sweep's best over section 1's probe
sweep_verdict = verdict(
    _mfu[-1] >= 0.5 and _over_probe <= 1.25 and mm_sweep[0].achieved_flops <= mm_machine.attainable(mm_sweep[0].intensity),
    ", ".join(f"n={n}: {percent(f)}" for n, f in zip(MM_SIZES, _mfu))
    + f" of the best matmul rate ({mm_machine.peak_flops / 1e9:.0f} GFLOP/s); the sweep's best is {_over_probe:.2f}x "
    f"section 1's probe ({machine.peak_flops / 1e9:.0f} GFLOP/s)",
    "; ".join(why for bad, why in (
        (_mfu[-1] < 0.5, "the largest matmul stayed below half the best rate, which a smaller one set"),
        (_over_probe > 1.25, "the sweep beat section 1's probe by more than 25%: that probe was depressed, and "
                             "section 1's ridge point with it"),
        (mm_sweep[0].achieved_flops > mm_machine.attainable(mm_sweep[0].intensity),
         "the smallest matmul beat the sloped roof (it ran from cache)")) if bad),
)
sweep_verdict

# %%
_best = max(mm_sweep, key=lambda p: p.achieved_flops)
_l2 = cu.env.cache_sizes().get("L2")
Markdown(
    f"Share of the best matmul rate of this run ({mm_machine.peak_flops / 1e9:.0f} GFLOP/s, {_best.label}"
    + (f"; section 1's probe measured {machine.peak_flops / 1e9:.0f}" if _over_probe > 1 else ", section 1's probe")
    + "), an MFU-like ratio for one kernel: " + ", ".join(f"n={n} {percent(f)}" for n, f in zip(MM_SIZES, _mfu))
    + f". The ridge point, {mm_machine.ridge_intensity:.1f} FLOP/byte with this roof, is n ≈ "
    f"{6 * mm_machine.ridge_intensity:.0f}. "
    + cu.fusion.matmul_shares_text(mm_sweep, mm_machine)
    + ("No amount of fusion can make the matmul itself faster. " if sweep_verdict.held else "")
    + (f"The sweep ran {_over_probe:.2f}x faster than section 1's probe on the same kind of matmul: a roof measured "
       "once can be depressed by whatever else the machine was doing at that moment, so the roof is the best rate "
       "seen, and section 1's ridge point was too low by that factor. " if _over_probe > 1.25 else "")
    + (f"The largest matmul reached only {percent(_mfu[-1])} of the best rate, which {_best.label} set"
       + (f": its operands ({format_bytes(_best.bytes)}) fit in the {format_bytes(_l2)} L2 cache, the largest's "
          f"({format_bytes(mm_sweep[-1].bytes)}) do not. " if _l2 and _best.bytes <= _l2 < mm_sweep[-1].bytes else ". ")
       if _mfu[-1] < 0.5 else "")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The epilogue
#
# Every compiler hands the matmul to a library kernel (oneDNN, MKL, cuBLAS, XNNPACK/YNNPACK). What fusion can do
# is the **epilogue**: bias + GELU + residual on the `n x n` output, one pass instead of eleven. On a CPU the
# epilogue stays a separate fused loop after the library call. On a GPU it can go *into* the matmul:
# `torch.compile(mode="max-autotune")` benchmarks Triton GEMM templates against cuBLAS and, when a template wins,
# Inductor fuses the pointwise epilogue into that template kernel; XLA on GPU rewrites dot + bias + activation into
# one cuBLASLt call with a fused epilogue, or emits a Triton GEMM fusion with the elementwise ops inside.
#
# **Prediction**: eager `mm` + epilogue adds the epilogue's unfused bytes to the matmul's time; the compiled
# version adds only one read and one write of the output, so the fused epilogue costs less time than the eager one,
# beyond the noise (their quartile ranges apart). The variants are timed in alternating rounds, so that a machine
# changing speed widens every spread alike instead of moving one median against another.

# %%
N = cu.env.pick(ci=1024, cpu=2048, gpu=8192, tpu=4096)
mm_np = [rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32) / N**0.5,
         rng.standard_normal(N, dtype=np.float32)]
mm_data = {fw: cu.interop.to_framework(fw, *mm_np, device=DEVICE) for fw in FW if fw in ("torch", "jax")}


def mm_epilogue(chain):
    return lambda a, w, bias: chain(a @ w, bias)


mm_out = torch.empty(N, N, device=DEVICE)
mm_variants = {"torch mm, out=": (lambda a, w: torch.mm(a, w, out=mm_out), mm_data["torch"][:2])}  # as in the sweep
mm_fused_fns = {}
for fw, args in mm_data.items():
    mm_fused_fns[fw] = cu.interop.compile_default(fw, mm_epilogue(cu.fusion.chain(fw)))
    mm_variants |= {f"{fw} mm": (cu.interop.compile_default(fw, lambda a, w: a @ w), args[:2]),
                    f"{fw} mm + eager epilogue": (mm_epilogue(cu.fusion.chain(fw)), args),
                    f"{fw} mm + fused epilogue": (mm_fused_fns[fw], args)}
with cu.compiled.capture_inductor_code() as mm_code:  # the first round compiles
    mm_rounds = cu.env.pick(ci=4, cpu=5)
    mm_runs = cu.timing.interleaved({k: (lambda f=f, a=a: f(*a)) for k, (f, a) in mm_variants.items()},
                                    rounds=mm_rounds, min_time=0.05 * mm_rounds)
cu.plotting.time_bars(mm_runs, title=f"Matmul n={N} with and without its epilogue (alternating rounds)")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
mm_reference = mm_epilogue(chain_t)(*mm_data["torch"]).cpu().numpy()
for fw, fused in mm_fused_fns.items():
    value = cu.interop.to_numpy(fused(*mm_data[fw]))
    error = float(np.max(np.abs(value - mm_reference) / (1 + np.abs(mm_reference))))
    assert error < 1e-3, (fw, error)
    print(f"{fw} compiled mm + epilogue matches eager torch (relative error < 1e-3): True")
mm_module = [c for c in mm_code if c.extern_calls][-1]
print("torch.compile: library matmul calls =", len(mm_module.extern_calls), "| generated kernels =", len(mm_module.kernels))
if "jax" in FW:
    hlo_mm = cu.compiled.hlo_summary(cu.compiled.jax_hlo(mm_fused_fns["jax"], *mm_data["jax"]))
    print("jax.jit: loop fusions =", sum(kind == "kLoop" for _, kind in hlo_mm.fusions))

# %%
def _signed(seconds):  # an extra time with its sign: a negative one is smaller than the noise
    return ("+" if seconds >= 0 else "-") + format_time(abs(seconds))


_mm_run = {fw: {k: mm_runs[f"{fw} mm{k}"] for k in ("", " + eager epilogue", " + fused epilogue")} for fw in mm_data}
_extra = {fw: (r[" + eager epilogue"].median - r[""].median, r[" + fused epilogue"].median - r[""].median)
          for fw, r in _mm_run.items()}
_told = {fw: cu.timing.apart(r[" + eager epilogue"], r[" + fused epilogue"]) for fw, r in _mm_run.items()}
_cheaper = {fw: _told[fw] and f < e for fw, (e, f) in _extra.items()}
epilogue_verdict = verdict(
    all(_cheaper.values()),
    "; ".join(f"{fw}: eager epilogue {_signed(e)}, fused {_signed(f)} over the matmul alone (quartiles of the two "
              f"epilogue runs {'apart' if _told[fw] else 'overlapping'})" for fw, (e, f) in _extra.items()),
    "; ".join([f"this run cannot tell in {fw}: the eager and fused epilogue runs overlap within their quartiles"
               for fw in mm_data if not _told[fw]]
              + [f"in {fw} the fused epilogue cost more than the eager one" for fw in mm_data
                 if _told[fw] and not _cheaper[fw]]),
)
epilogue_verdict

# %%
epilogue = cu.fusion.trace_traffic(chain_t, ((N, N), "float32"), ((N,), "float32"))
_mm = mm_runs["torch mm"].median
_swept = {p.label: p for p in mm_sweep}.get(f"mm n={N}")  # the same size in section 6's sweep, if it has it
_noise = {fw: [k.strip(" +") for k in (" + eager epilogue", " + fused epilogue")
               if not cu.timing.apart(r[""], r[k])] for fw, r in _mm_run.items()}  # extras within the mm's spread
_same_call = not cu.timing.apart(mm_runs["torch mm"], mm_runs["torch mm, out="])
_rate = 2 * N**3 / _mm
_off_sweep = _swept is not None and not 0.8 <= _rate / _swept.achieved_flops <= 1.25
Markdown(
    f"The matmul alone (compiled, fresh output): **{format_time(_mm)}**, {_rate / 1e9:.0f} GFLOP/s; "
    f"`torch.mm(out=)` in the same rounds {2 * N**3 / mm_runs['torch mm, out='].median / 1e9:.0f} GFLOP/s"
    + (f"; section 6's sweep ran `torch.mm(out=)` at this size at {_swept.achieved_flops / 1e9:.0f} GFLOP/s" if _swept
       else "") + ". "
    + ("" if not _off_sweep else
       "The two calls timed side by side overlap within their quartiles, so the call is not what separates this "
       "matmul from the sweep's: the machine ran them at other moments, and what slowed which is not established "
       "by this run. " if _same_call else
       "The two calls timed side by side differ beyond their quartiles: here the compiled call with its fresh output "
       "cost more than `out=`; how much of the gap to the sweep that explains is not established by this run. ")
    + f"Inductor's launch code calls `{', '.join(mm_module.extern_calls)}` plus {len(mm_module.kernels)} generated "
    "kernel for the epilogue" + (f", XLA a `{hlo_mm.fusions[0][0]}` plus a loop fusion" if "jax" in FW else "")
    + f". The epilogue's {epilogue.n_ops} eager ops move {format_bytes(epilogue.unfused_bytes)}; fused, one read and "
    f"one write move {format_bytes(8 * N * N)} (roofline {format_time(8 * N * N / machine.bandwidth)}, computed). "
    + "Added to the matmul's time: " + "; ".join(
        f"{fw} eager {_signed(e)}, fused {_signed(f)} (the matmul's own IQR: {format_time(_mm_run[fw][''].iqr)})"
        for fw, (e, f) in _extra.items()) + ". "
    + ("The fused epilogue cost less than the eager one in every framework, beyond the noise. " if epilogue_verdict.held
       else "")
    + "".join(f"In {fw} the {' and the '.join(k)} run{'s' if len(k) > 1 else ''} did not separate from the matmul "
              "alone (quartiles overlapping): that extra time is within the matmul's own spread, too small to measure "
              "here" + (" (a negative extra is noise, not a saving). " if min(_extra[fw]) < 0 else ". ")
              for fw, k in _noise.items() if k)
    + ("" if epilogue_verdict.held else
       f"In {' and '.join(fw for fw in mm_data if not _told[fw])} this run cannot tell the two epilogues apart. "
       if not all(_told.values()) else
       f"Here fusion did not always pay: the {format_bytes(4 * N * N)} output fits in this CPU's last-level cache "
       f"({format_bytes(cu.env.last_level_cache_bytes())}), so eager round trips are cheap, while the fused kernel "
       "still does all the arithmetic: at section 5's in-cache rates it needs "
       + ", ".join(f"{format_time(vectors[fw].chain_seconds(N * N, flops=per_element, tanh=1))} ({fw})" for fw in _extra)
       + " (computed). ")
    + "Either way the matmul itself is untouched: fusion is a lever for memory-bound work."
)

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
# ## 7. Speed-up against size: overhead, caches, bandwidth
#
# For tiny tensors every eager op costs its dispatch overhead (microseconds) whatever its size, so fusing 11
# launches into 1 can gain *more* than the bytes ratio. In between, intermediates that fit in a cache never go to
# memory, so eager is cheaper than the byte count says.
#
# Each size gets its own, static compile. Reusing section 2's `torch.compile` object would not be like for like:
# at its second shape Dynamo's *automatic dynamic* recompiles it as one shape-generic graph, which then serves
# every later size (the cell after the plot counts both ways).
#
# **Prediction**: fusion gains at least as much at the smallest size (overhead) as at the largest, in every
# framework.

# %%
SWEEP_ROWS = cu.env.pick(ci=[4, 64, 1024], cpu=[1, 4, 16, 64, 256, 1024, 4096], gpu=[16, 256, 4096, 65536],
                         tpu=[16, 256, 4096])
size_runs = cu.fusion.size_sweep(data, SWEEP_ROWS, reference)  # eager and fused; each size compiled fresh, static
sweep = {fw: [*v, speedups[fw]] for fw, v in size_runs.speedups.items()}  # the full size: section 2's (its first shape)
sizes = [rows * COLS * 4 for rows in [*SWEEP_ROWS, ROWS]]
cu.fusion.speedup_vs_size_plot(sizes, {f"{fw} fused / eager": v for fw, v in sweep.items()}, predicted=traffic.ratio)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
for fw, equal in size_runs.equal.items():
    print(f"{fw}: fused == eager torch (atol 1e-4) at every size of the sweep: {equal}; "
          f"one graph compiled per size: {size_runs.compiles[fw] == len(SWEEP_ROWS)}")
_shapes = [(x_t, b_t)] + [(x_t[:rows], b_t) for rows in SWEEP_ROWS]
print(f"reusing one torch.compile object over these {len(_shapes)} shapes compiles "
      f"{cu.graphs.count_compiles('torch', chain_t, _shapes)} graphs (the second one shape-generic); "
      f"with dynamic=False {cu.graphs.count_compiles('torch', chain_t, _shapes, dynamic=False)}")

# %%
_lost = [fw for fw, v in sweep.items() if v[0] < v[-1]]
_small = {fw: (size_runs.eager[fw][0].median, size_runs.fused[fw][0].median) for fw in FW}  # eager, fused
size_verdict = verdict(not _lost,
                       "; ".join(f"{fw} {v[0]:.2g}x at {format_bytes(sizes[0])} vs {v[-1]:.2g}x at {format_bytes(sizes[-1])}"
                                 for fw, v in sweep.items()),
                       "; ".join(f"at {format_bytes(sizes[0])} {fw}'s fused call took {format_time(_small[fw][1])}, as "
                                 f"long as {_small[fw][1] / (_small[fw][0] / traffic.n_ops):.1f} of its eager ops "
                                 f"({format_time(_small[fw][0])} for {traffic.n_ops})" for fw in _lost))
size_verdict

# %%
_caches = cu.env.cache_sizes()
_llc = cu.env.last_level_cache_bytes()
_fixed = {fw: {"section 5's intercept, in cache": vectors[fw].call_seconds,
               f"this sweep's fused call at {format_bytes(sizes[0])}": _small[fw][1]} for fw in _lost}
if "tensorflow" in _lost:  # the same 4-row call up to its tanh, timed in section 5
    _fixed["tensorflow"]["section 5's polynomial on 4 rows"] = _tf_call
Markdown(
    "Speed-up of fused over op-by-op, smallest to largest tensor: "
    + "; ".join(f"{fw} " + " → ".join(f"{v:.2g}x" for v in values) for fw, values in sweep.items())
    + f". At {format_bytes(sizes[0])} the eager chain took " + ", ".join(
        f"{format_time(e)} ({fw}, {format_time(e / traffic.n_ops)} per op)" for fw, (e, _) in _small.items())
    + f" where its bytes need {format_time(traffic.unfused_bytes * sizes[0] / x_t.nbytes / machine.bandwidth)} at the "
    "memory roof (computed): dispatch, not bytes. The fused chain is one call. "
    + ("Fusion gained at least as much there as at the largest size in every framework. " if size_verdict.held else
       "".join(cu.fusion.small_call_text(fw, fused=size_runs.fused[fw][0], eager=size_runs.eager[fw][0],
                                         n_ops=traffic.n_ops, gains=(sweep[fw][0], sweep[fw][-1]),
                                         eager_fresh_outputs=faults[cu.fusion.EAGER[fw]] / _pages, fixed_costs=_fixed[fw])
               for fw in _lost)
       + "What a compiled call's fixed cost is made of (guard checks, the generated wrapper, waking worker threads) "
       "is not established by this run; notebook 01 times compiled calls on its own workload, and a gap between its "
       "numbers and these is not established by either run. ")
    + (f"This CPU reports caches of {', '.join(f'{k} {format_bytes(v)}' for k, v in _caches.items())} (marked on "
       "the plot; a level beyond the sweep as an arrow). " if _caches else "This machine reports no cache sizes. ")
    + f"The largest size, section 2's `x`, moves {cu.fusion.working_set_text(2 * x_t.nbytes, _llc)}"
    + ("; section 5's chain, at "
       f"{format_bytes(roof_x_np.nbytes)} per array, is this notebook's memory-bandwidth case. "
       if DEVICE == "cpu" and 2 * x_t.nbytes < 4 * _llc <= 2 * roof_x_np.nbytes else ". ")
    + (" On a GPU the bandwidth is far higher while each launch keeps a fixed cost, so the overhead regime reaches "
       "larger tensors." if DEVICE == "cuda" else "")
)

# %% [markdown] course={"lead": true, "minutes": 5} slideshow={"slide_type": "slide"}
# ## 8. What breaks fusion, and how to register a custom op
#
# The seed's checklist asks: *"are our custom operators supported by the compiler?"* Here is such an
# operator: a legacy `tanh` that looks values up in a table with NumPy (`np.interp`,
# `cu.fusion.table_tanh_np`). Each compiler meets it differently: Dynamo cannot trace `np.interp`, so it
# **breaks the graph**; JAX needs it wrapped in `jax.pure_callback`; TensorFlow in `tf.numpy_function`, which XLA
# cannot compile at all. The fix in PyTorch: register it as a custom op (`torch.library.custom_op`) with a *fake*
# implementation that tells the compiler the output's shape and dtype. The op stays opaque, but the graph stays whole.
#
# **Prediction**: the graph break costs several separately compiled graphs; the registered op gives one graph
# with two fused kernels (before and after the op) around one opaque call.

# %%
def chain_legacy(x, bias):
    return cu.models.gelu_chain(x, bias, cu.fusion.legacy_tanh_torch)


@torch.library.custom_op("course02::table_tanh", mutates_args=())
def table_tanh(t: torch.Tensor) -> torch.Tensor:
    return cu.fusion.legacy_tanh_torch(t)


@table_tanh.register_fake
def _(t):
    return torch.empty_like(t)


def chain_registered(x, bias):
    return cu.models.gelu_chain(x, bias, table_tanh)


# The check anyone can run on their own function: how many graphs, how many breaks, and why.
legacy_check = cu.graphs.torch_graph_breaks(chain_legacy, x_t[:64], b_t)
registered_check = cu.graphs.torch_graph_breaks(chain_registered, x_t[:64], b_t)
print("legacy op:", legacy_check)
print("registered op:", registered_check)
for name, check in (("legacy op", legacy_check), ("registered op", registered_check)):  # explain may give fewer lines
    print(f"{name}: Dynamo counted {check.break_count} break(s) and gave {len(check.reasons)} reason line(s), "
          "every one of them in the table above")

# %% slideshow={"slide_type": "subslide"}
LEGACY_ROWS = cu.env.pick(ci=1024, cpu=2048, gpu=16384, tpu=2048)  # np.interp is slow: a smaller slice
legacy_data = {fw: (data[fw][0][:LEGACY_ROWS], data[fw][1]) for fw in FW}
compiled_legacy, compiled_registered = torch.compile(chain_legacy), torch.compile(chain_registered)
legacy_fns = {"torch eager, legacy op": ("torch", chain_legacy), "torch.compile, graph breaks": ("torch", compiled_legacy),
              "torch.compile, custom op": ("torch", compiled_registered)}
if "jax" in FW:
    legacy_fns["jax.jit + pure_callback"] = ("jax", jax.jit(cu.fusion.chain_with_callback_jax))
if "tensorflow" in FW:
    legacy_fns["tf.function + numpy_function"] = ("tensorflow", tf.function(cu.fusion.chain_with_numpy_function_tf))
legacy_runs, legacy_code = {}, {}
for name, (fw, fn) in legacy_fns.items():
    with cu.compiled.capture_inductor_code() as legacy_code[name]:
        legacy_runs[name] = cu.timing.benchmark(fn, *legacy_data[fw], label=name, **slow)
cu.plotting.time_bars(legacy_runs, title="A NumPy operator inside the chain (median, quartiles)")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
legacy_reference = chain_legacy(*legacy_data["torch"]).cpu().numpy()
for name, (fw, fn) in legacy_fns.items():
    assert np.allclose(cu.interop.to_numpy(fn(*legacy_data[fw])), legacy_reference, atol=1e-4), name
    print(f"{name}: equal to eager: True")
print("table tanh within 1e-4 of the real chain:", bool(np.allclose(legacy_reference, reference[:LEGACY_ROWS], atol=1e-4)))
reg = legacy_code["torch.compile, custom op"][0]
print(f"torch, legacy op: graphs {legacy_check.graph_count}, breaks {legacy_check.break_count}")
print(f"torch, custom op: graphs {registered_check.graph_count}, breaks {registered_check.break_count}, "
      f"generated kernels {len(reg.kernels)}, opaque calls {reg.fallback_ops}")
if "jax" in FW:
    hlo_cb = cu.compiled.hlo_summary(cu.compiled.jax_hlo(legacy_fns["jax.jit + pure_callback"][1], *legacy_data["jax"]))
    print(f"jax + pure_callback: fusions {hlo_cb.n_fusions}, host callbacks {len(hlo_cb.custom_calls)}")
if "tensorflow" in FW:
    print("tf jit_compile with numpy_function:", cu.fusion.compile_error(
        tf.function(cu.fusion.chain_with_numpy_function_tf, jit_compile=True), *legacy_data["tensorflow"]))

# %%
custom_verdict = verdict(
    legacy_check.graph_count > 1 and registered_check.graph_count == 1 and len(reg.kernels) == 2,
    f"legacy op: {legacy_check.graph_count} graphs; registered: {registered_check.graph_count} graph, "
    f"{len(reg.kernels)} generated kernels around {', '.join(reg.fallback_ops) or 'no opaque call'}",
    "the graph count or the kernels around the op differ from the prediction",
)
custom_verdict

# %%
_broken, _registered = legacy_runs["torch.compile, graph breaks"], legacy_runs["torch.compile, custom op"]
_outside_noise = cu.timing.apart(_registered, _broken) and _registered.median < _broken.median
Markdown(
    f"Dynamo split the chain into **{legacy_check.graph_count} graphs** at {legacy_check.break_count} breaks "
    f"({len(legacy_check.reasons)} reason line(s) from `torch._dynamo.explain`, the first: "
    f"*{legacy_check.reasons[0] if legacy_check.reasons else 'none'}*): "
    f"{format_time(_broken.median)} against {format_time(legacy_runs['torch eager, legacy op'].median)} eager. "
    f"Registered as a custom op it compiles to **{registered_check.graph_count} graph** with {len(reg.kernels)} "
    f"fused kernels around `{', '.join(reg.fallback_ops)}`: {format_time(_registered.median)}. "
    + ("The registered version is faster outside the noise (its upper quartile is below the broken one's lower "
       "quartile): registration saved the glue between graphs. " if _outside_noise else
       "The two times overlap within their quartiles: the NumPy operator itself dominates, so registration did not "
       "make the call measurably faster; what it buys is one graph with nothing re-traced, which pays once the code "
       "around the op grows. ")
    + ("JAX's HLO shows the same shape: " + f"{hlo_cb.n_fusions} fusions around one host callback. " if "jax" in FW else "")
    + ("TensorFlow's XLA refuses the `numpy_function`, so that function must run as a plain graph. "
       if "tensorflow" in FW else "")
    + "To answer the seed's question for your own model, run `cu.graphs.torch_graph_breaks(your_fn, *inputs)` and count."
)

# %% [markdown] course={"lead": false, "minutes": 4} slideshow={"slide_type": "slide"}
# ## Exercises
#
# Each exercise has a cell for your answer (`answer = None` until you fill it in), a hidden solution, and a
# check that scores your answer against this run.
#
# **1. Fuse a softmax.** Write `softmax(x) = exp(x - max(x)) / sum(exp(x - max(x)))` over the last axis with
# basic PyTorch ops, as a function. Then count its bytes with `cu.fusion.trace_traffic`, compile it, and count
# Inductor's kernels: does a reduction fuse into one kernel?
#
# <details><summary>Hint</summary>
#
# `x.amax(dim=-1, keepdim=True)` and `.sum(dim=-1, keepdim=True)` are the reductions. Capture the generated
# code with `with cu.compiled.capture_inductor_code() as code:` around the first call; `code[0].kernels` lists
# the kernels.
# </details>

# %%
answer = None  # your answer here: a function softmax(x)

# %% jupyter={"source_hidden": true} tags=["solution"]
def softmax_manual(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = torch.exp(shifted)
    return e / e.sum(dim=-1, keepdim=True)


small = x_t[:256]
softmax_traffic = cu.fusion.trace_traffic(softmax_manual, small)
with cu.compiled.capture_inductor_code() as softmax_code:
    torch.compile(softmax_manual)(small)
print(f"eager ops {softmax_traffic.n_ops}, bytes ratio {softmax_traffic.ratio:.1f}x (computed), "
      f"Inductor kernels {len(softmax_code[0].kernels)}: {softmax_code[0].kernels}")
answer = softmax_manual

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("02.1", answer)

# %% [markdown]
# **2. Predict, then measure: page faults of the eager polynomial.** Section 3 counted page faults per call:
# every fresh output of 32 MiB or more comes from `mmap`, and each of its 4 KiB pages faults once when first
# written. **Before running the next cells**, predict how many page faults one call of the *eager* polynomial
# chain (`cu.fusion.chain("torch", tanh=False)`, the chain without `tanh`) takes on `x`, and put the number in
# `answer`. The check scores it against the count measured below (within 25%).

# %%
answer = None  # your prediction here: page faults per call of the eager polynomial chain on x

# %% jupyter={"source_hidden": true} tags=["solution"]
# Each eager op writes one fresh output as large as x; each page of it faults once.
answer = poly_traffic.n_ops * (x_t.nbytes // 4096)
print(f"{poly_traffic.n_ops} ops x {x_t.nbytes // 4096} pages = {answer} page faults predicted")

# %%
poly_faults = cu.memory.page_faults(cu.fusion.chain("torch", tanh=False), x_t, b_t)
print(f"eager polynomial chain on {format_bytes(x_t.nbytes)}: {poly_faults:.0f} page faults per call measured")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("02.2", answer, measured=poly_faults, pages=x_t.nbytes // 4096)

# %% [markdown]
# **3. A cheaper `tanh`, and why it is not the default.** Inductor can compute `tanh(v)` on a CPU as
# `2 / (1 + exp(-2v)) - 1` (`torch._inductor.config.cpp.use_decompose_tanh`). It is off by default for accuracy:
# this exercise measures how much accuracy. Compile the chain
# into a reused buffer under that setting and time it against section 5's kernel. Then measure what it costs:
# the largest *relative* error of that formula against `torch.tanh` for small inputs, `|v| <= 1e-3`, in float32.
# Put that error in `answer`. (On a GPU the setting does nothing: Triton has its own `tanh`.)
#
# <details><summary>Hint</summary>
#
# The setting is read when Inductor generates code, i.e. at the first call:
# `with torch._inductor.config.patch({"cpp.use_decompose_tanh": True}): fast = cu.fusion.into_buffer("torch", chain_t, xr); fast(xr, br)`
# with `xr, br = roof_data["torch"]`, the tensors section 5 timed.
# For the error: near 0, `exp(-2v)` is close to 1 and `2 / (1 + ...) - 1` subtracts two nearly equal numbers.
# </details>

# %%
answer = None  # your answer here: the max relative error of the exp-based tanh for |v| <= 1e-3

# %% jupyter={"source_hidden": true} tags=["solution"]
xr, br = roof_data["torch"]
_section5 = ("torch.compile, out=", "torch.compile, out=, no tanh", "torch copy, same bytes")
for k in _section5:  # section 8's torch._dynamo.explain reset Dynamo: these recompile now, under the default setting
    chain_calls[k]()
with inductor_config.patch({"cpp.use_decompose_tanh": True}):  # read when Inductor generates the code: first call
    decomposed_into = cu.fusion.into_buffer("torch", cu.fusion.chain("torch"), xr)
    decomposed_into(xr, br)
    small_v = torch.linspace(-1e-3, 1e-3, 20001)
    small_v = small_v[small_v != 0]
    tanh_fast = torch.compile(lambda v: torch.tanh(v))(small_v)
# timed outside the setting, in alternating rounds beside section 5's kernels on the same bytes
with cu.compiled.capture_inductor_code() as compiled_while_timing:
    fast_runs = cu.timing.interleaved({"exp-based tanh, out=": lambda: decomposed_into(xr, br),
                                       **{k: chain_calls[k] for k in _section5}}, rounds=cu.env.pick(ci=3, cpu=4),
                                      min_time=0.2)
print("graphs compiled while timing (0: each kernel is the one compiled above):", len(compiled_while_timing))
chain_error = (decomposed_into(xr, br) - chain_t(xr, br)).abs().max().item()
answer = ((tanh_fast.double() - torch.tanh(small_v.double())).abs() / torch.tanh(small_v.double()).abs()).max().item()
print(cu.fusion.fast_tanh_report(fast_runs, fast="exp-based tanh, out=", default="torch.compile, out=",
                                 plain="torch.compile, out=, no tanh", copy="torch copy, same bytes", earlier=chain_runs))
print(f"chain max abs error {chain_error:.1e}; tanh max relative error near 0: {answer:.1e}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("02.3", answer)

# %% [markdown] course={"lead": true, "minutes": 2} slideshow={"slide_type": "slide"}
# ## Summary

# %%
summary_rows = [
    ("memory bandwidth (best probe)", machine.bandwidth / 1e9, "GB/s", f"measured with {machine.framework}"),
    ("matmul probe (section 1)", machine.peak_flops / 1e9, "GFLOP/s", f"fp32, {machine.framework}"),
    ("best matmul rate of the run", mm_machine.peak_flops / 1e9, "GFLOP/s", "the compute roof of section 6"),
    *[(f"{fw} tanh rate in cache", v.tanh_per_second / 1e9, "G/s", "compiled, measured (the vector roof)")
      for fw, v in vectors.items()],
    ("eager ops in the chain", traffic.n_ops, "kernels", "counted by trace_traffic"),
    ("bytes unfused / fused", traffic.ratio, "x", "computed; a ceiling only at equal bandwidth"),
    *[(f"{cu.fusion.FUSED[fw]} speed-up", speedups[fw], "x", f"over {cu.fusion.EAGER[fw]}, fresh outputs") for fw in FW],
    *[(f"{cu.fusion.FUSED[fw]}, % of bandwidth", 100 * table[cu.fusion.FUSED[fw]].fraction_of_bandwidth, "%",
       "fraction of memory bandwidth (not busy time)") for fw in FW],
    *[(f"{name}, busy time", 100 * share, "%", "share of the calls with a kernel running; seed: 80%+")
      for name, share in busy.items()],
    *[(f"{fw} compiled call, fixed cost", 1e6 * v.call_seconds, "µs", "intercept of two in-cache sizes (0: unresolved)")
      for fw, v in vectors.items()],
    *[(f"{WITH_TANH[fw]}, time / own roof", to_roof[fw], "x", f"roof: its limit among {', '.join(limits[fw].parts)}; "
       f"here {_bound[fw]}") for fw in FW],
    *[(f"{cu.fusion.INTO[fw]} polynomial / copy", r, "x", "1.0 = on the roof") for fw, r in on_roof.items()],
    ("fresh vs reused output (torch add)", _add_fresh / _add_out, "x", "the allocation trap"),
    ("largest matmul, % of the best rate", 100 * _mfu[-1], "%", f"n={MM_SIZES[-1]}, MFU-like"),
    ("graphs with a NumPy op inside", legacy_check.graph_count, "graphs", "Dynamo, unregistered"),
    ("graphs once registered as a custom op", registered_check.graph_count, "graphs", "Dynamo, measured"),
]
cu.notebook.summary_table("02_operator_fusion", summary_rows)

# %% [markdown]
# **What to remember**
# - Predict before you measure: count the bytes an op chain moves unfused and fused; with the measured
#   bandwidth that is the time to expect. Their ratio is the most fusion can give only when both runs reach
#   the same bandwidth; eager on a CPU also pays page faults for every fresh output.
# - A fused kernel off its roof has another limit: fresh output pages (preallocate with `out=`, donate buffers),
#   a transcendental on the vector units (compute-bound even without a matmul; each framework's own `tanh` sets
#   that roof), or launch overhead at small sizes.
#   Remove them and a fused polynomial runs at the speed of a copy.
# - Fusion does nothing for the matmul itself; it removes the epilogue's round trips. Opaque Python/NumPy calls
#   break fusion: register them as custom ops (with a fake implementation) and count graph breaks.
#
# **Next**: `03_mixed_precision` changes the number format. bf16 halves the bytes per element, so a memory-bound
# kernel *should* take half the time: notebook 03 puts a bf16 copy and a bf16 triad on this roofline (twice the
# intensity, the same memory roof) and measures whether it does on this hardware, with or without bf16 units.

# %%
print(cu.notebook.last_verified())
