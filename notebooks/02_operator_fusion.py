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
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/main/notebooks/02_operator_fusion.ipynb)
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
# - spot the CPU allocation trap, fusion that does not matter (a matmul), and operators that break fusion.
#
# **Time**: under 3 minutes to run on a 2-core CPU in ci size, under 6 at laptop size; 45 minutes in a workshop.
# **Accelerators**: every section runs on CPU, GPU and TPU runtimes (PyTorch uses CUDA when present; on a TPU
# runtime PyTorch stays on the CPU). The allocation trap is a CPU lesson: GPUs reuse memory through a caching
# allocator, which the section says when it runs there.

# %%
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@main"], check=True)

# %%
import course_utils as cu

cu.env.setup_notebook()

# %% slideshow={"slide_type": "skip"}
import jax
import jax.numpy as jnp
import numpy as np
import tensorflow as tf  # already imported, quietly, by setup_notebook's report
import torch
from IPython.display import Markdown, display

# %% slideshow={"slide_type": "skip"}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ROWS = cu.env.pick(ci=8192, cpu=16384, gpu=262144, tpu=65536)  # x is ROWS x 1024 float32: 32 MB in ci size
COLS = 1024
rng = np.random.default_rng(0)
x_np = rng.standard_normal((ROWS, COLS), dtype=np.float32)
bias_np = rng.standard_normal(COLS, dtype=np.float32)
x_t, b_t = torch.from_numpy(x_np).to(DEVICE), torch.from_numpy(bias_np).to(DEVICE)
x_j, b_j = jnp.asarray(x_np), jnp.asarray(bias_np)
x_tf, b_tf = tf.constant(x_np), tf.constant(bias_np)
chain_t, chain_j, chain_tf = (cu.models.chain_for(fw) for fw in ("torch", "jax", "tensorflow"))
print(f"x: {ROWS} x {COLS} float32 = {x_np.nbytes / 2**20:.0f} MiB on torch device {DEVICE}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The roofline of this machine
#
# A kernel that does `F` floating-point operations and moves `B` bytes between memory and the chip cannot
# finish faster than `max(F / peak FLOP/s, B / bandwidth)`. Its **arithmetic intensity** `F / B` decides
# which term wins: below the *ridge point* (peak FLOP/s / bandwidth) the kernel waits on memory.
# The two ceilings are measured now, on this machine (copy, scale and triad for bandwidth; a large fp32
# matmul for compute).
#
# **Prediction**: a CPU core does tens of FLOPs in the time one float arrives from memory, a GPU hundreds,
# so the ridge point sits well above 1 FLOP/byte, and an elementwise op (about 1 FLOP per 8 bytes) is
# far to the left of it: memory-bound.

# %%
# On a TPU runtime PyTorch runs on the host CPU: there the roof is the TPU's, measured with JAX.
machine = cu.roofline.measure_machine("jax" if cu.env.accelerator() == "tpu" else "torch")
display(machine)

# %%
cu.plotting.roofline_plot(machine, title=f"This machine's roofline (measured with {machine.framework}, this run)")

# %%
# NBVAL_CHECK_OUTPUT
print("ridge point above 1 FLOP/byte:", machine.ridge_intensity > 1)

# %%
Markdown(
    f"The memory roof is **{machine.bandwidth / 1e9:.0f} GB/s** (best of {len(machine.bandwidth_probes)} probes) "
    f"and the compute roof **{machine.peak_flops / 1e9:.0f} GFLOP/s**, so the ridge point is "
    f"**{machine.ridge_intensity:.1f} FLOP/byte**: a kernel must do about {machine.ridge_intensity:.0f} "
    "operations per byte it moves before arithmetic, not memory, limits it."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. An elementwise chain: bytes predicted, then time measured
#
# The course's recurring chain is `x + GELU_tanh(x + bias)`. Run eagerly, each operator is its own
# kernel: it reads its inputs from memory and writes its result back. Fused, one kernel reads `x` and
# `bias` once and writes the result once; the intermediates live in registers.
# `cu.fusion.trace_traffic` runs the function on shape-only tensors and records every op with its bytes.
#
# **Prediction**: count the ops and the bytes first. If the chain is memory-bound, the fused kernel should
# be faster by the ratio of bytes moved.

# %%
traffic = cu.fusion.trace_traffic(chain_t, x_t, b_t)
display(traffic)

# %%
# NBVAL_CHECK_OUTPUT
print(f"eager ops launched: {traffic.n_ops}")
print(f"bytes unfused / fused: {traffic.ratio:.1f}")
print(f"arithmetic intensity unfused {traffic.flops / traffic.unfused_bytes:.2f}, "
      f"fused {traffic.flops / traffic.fused_bytes:.2f} FLOP/byte")

# %%
Markdown(
    f"Eagerly the chain launches **{traffic.n_ops} kernels** and moves **{traffic.unfused_bytes / 1e6:.0f} MB**; "
    f"fused it moves **{traffic.fused_bytes / 1e6:.0f} MB**, {traffic.ratio:.1f}x less. With the measured "
    f"{machine.bandwidth / 1e9:.0f} GB/s that predicts "
    f"**{cu.timing.format_time(traffic.predicted_seconds(machine, fused=False))}** unfused and "
    f"**{cu.timing.format_time(traffic.predicted_seconds(machine, fused=True))}** fused. "
    "Now the measurement, in all three frameworks (the first call of each compiled variant is its compile time)."
)

# %% slideshow={"slide_type": "subslide"}
compiled_t = torch.compile(chain_t)
jit_j = jax.jit(chain_j)
jit_tf = tf.function(chain_tf, jit_compile=True)
slow = dict(min_repeats=3)  # the eager runs take tenths of a second each
with cu.fusion.capture_inductor_code() as chain_code:
    runs = {
        "torch eager": cu.timing.benchmark(chain_t, x_t, b_t, label="torch eager", **slow),
        "torch.compile": cu.timing.benchmark(compiled_t, x_t, b_t, label="torch.compile"),
    }
runs["jax op-by-op"] = cu.timing.benchmark(chain_j, x_j, b_j, label="jax op-by-op", **slow)
runs["jax.jit"] = cu.timing.benchmark(jit_j, x_j, b_j, label="jax.jit")
runs["tf eager"] = cu.timing.benchmark(chain_tf, x_tf, b_tf, label="tf eager", **slow)
runs["tf jit_compile"] = cu.timing.benchmark(jit_tf, x_tf, b_tf, label="tf jit_compile")
table = cu.fusion.compare_to_prediction(
    traffic, machine,
    unfused={k: runs[k] for k in ("torch eager", "jax op-by-op", "tf eager")},
    fused={k: runs[k] for k in ("torch.compile", "jax.jit", "tf jit_compile")},
)
display(table)

# %%
cu.fusion.prediction_plot(table, title="Elementwise chain: predicted from bytes vs measured")

# %% [markdown]
# Every fused variant must compute what eager PyTorch computes. Different `tanh` implementations differ in
# the last bits, so the check is a tolerance, not equality.

# %%
# NBVAL_CHECK_OUTPUT
reference = chain_t(x_t, b_t).cpu().numpy()
fused_outputs = {
    "torch.compile": compiled_t(x_t, b_t).cpu().numpy(),
    "jax op-by-op": np.asarray(chain_j(x_j, b_j)),
    "jax.jit": np.asarray(jit_j(x_j, b_j)),
    "tf eager": chain_tf(x_tf, b_tf).numpy(),
    "tf jit_compile": jit_tf(x_tf, b_tf).numpy(),
}
for name, value in fused_outputs.items():
    error = float(np.max(np.abs(value - reference)))
    assert error < 1e-4, (name, error)
    print(f"{name}: max abs diff vs torch eager < 1e-4: {error < 1e-4}")


# %%
def _speedup(fast: str, slow: str) -> str:
    return f"{runs[slow].median / runs[fast].median:.1f}x"


Markdown(
    f"Fusion pays in every framework: torch.compile is **{_speedup('torch.compile', 'torch eager')}** faster than "
    f"eager PyTorch, jax.jit **{_speedup('jax.jit', 'jax op-by-op')}** faster than op-by-op JAX, and "
    f"XLA in TensorFlow **{_speedup('tf jit_compile', 'tf eager')}** faster than eager TF; the bytes predicted at "
    f"most {traffic.ratio:.1f}x. The fused kernels reach "
    + ", ".join(f"{r.name} {100 * r.fraction_of_bandwidth:.0f}%" for r in table.rows if r.fused)
    + " of the measured bandwidth, the eager runs "
    + ", ".join(f"{r.name} {100 * r.fraction_of_bandwidth:.0f}%" for r in table.rows if not r.fused)
    + ". The seed claims that compiled frameworks lift hardware utilisation from 40-60% to 80%+; for a "
    "memory-bound chain, utilisation is the last column, and here "
    + (f"{sum(r.fraction_of_bandwidth >= 0.8 for r in table.rows if r.fused)} of the 3 fused variants reach 80%. "
       if any(r.fraction_of_bandwidth >= 0.8 for r in table.rows if r.fused) else "no fused variant reaches 80%. ")
    + "Sections 3 and 5 find what stands between each kernel and its roof."
    + (f" A variant above 100% ({', '.join(r.name for r in table.rows if r.fraction_of_bandwidth > 1)}) beat the "
       "roof: either the machine was busier while the roof was measured, or the data stayed in a cache (this "
       f"CPU's last-level cache holds {cu.units.format_bytes(max(cu.fusion.cache_sizes().values(), default=0))}, "
       f"the input {cu.units.format_bytes(x_t.nbytes)}): bandwidth is not a single number."
       if any(r.fraction_of_bandwidth > 1 for r in table.rows) else "")
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The allocation trap on a CPU
#
# Each call above returns a **new** output tensor. On a CPU, a large fresh buffer comes straight from the
# operating system (glibc serves allocations of 32 MiB and more with `mmap`), and each 4 KiB page costs a page
# fault and a zero-fill the first time it is written. The kernel pays for that, not the allocator.
# Remedies: write into a **preallocated** output (`out=` in PyTorch, an `out.copy_(...)` that Inductor fuses
# into the kernel), or **donate** an input buffer to XLA (`jax.jit(..., donate_argnums=...)`). A trap inside the
# remedy: `jit` drops arguments the function never reads, and a dropped buffer is silently *not* donated, unless
# you pass `keep_unused=True`; check with `old_buffer.is_deleted()`. TensorFlow functions cannot write into a
# caller's buffer.
#
# **Prediction**: a single `torch.add` into a preallocated `out=` should take about the roofline time of
# its bytes; with a fresh output it should take noticeably longer, and so should the fused chain.

# %%
buffer_t = torch.empty_like(x_t)


def chain_into(x, bias, out):
    return out.copy_(chain_t(x, bias))


compiled_into = torch.compile(chain_into)
# keep_unused=True: jit drops arguments the function never reads, and a dropped buffer cannot be donated.
donating_j = jax.jit(lambda x, bias, buffer: chain_j(x, bias), donate_argnums=2, keep_unused=True)
_donated = {"buffer": jnp.zeros_like(x_j)}


def jax_donated():
    _donated["buffer"] = donating_j(x_j, b_j, _donated["buffer"])
    return _donated["buffer"]


with cu.fusion.capture_inductor_code() as into_code:
    alloc_runs = {
        "torch add, fresh output": cu.timing.benchmark(torch.add, x_t, b_t, label="torch add, fresh output"),
        "torch add, out= buffer": cu.timing.benchmark(lambda: torch.add(x_t, b_t, out=buffer_t),
                                                      label="torch add, out= buffer"),
        "torch.compile, fresh output": runs["torch.compile"],
        "torch.compile, out= buffer": cu.timing.benchmark(compiled_into, x_t, b_t, buffer_t,
                                                          label="torch.compile, out= buffer"),
        "jax.jit, fresh output": runs["jax.jit"],
        "jax.jit, donated buffer": cu.timing.benchmark(jax_donated, label="jax.jit, donated buffer"),
    }
cu.plotting.time_bars(alloc_runs, title="Fresh output vs reused buffer (median, quartiles)")

# %%
# NBVAL_CHECK_OUTPUT
into_result = compiled_into(x_t, b_t, buffer_t)
assert into_result.data_ptr() == buffer_t.data_ptr() and torch.allclose(into_result, chain_t(x_t, b_t), atol=1e-4)
_previous_buffer = _donated["buffer"]
assert np.allclose(np.asarray(jax_donated()), reference, atol=1e-4)
print("out= result written into the caller's buffer and equal to eager:", True)
print("donated jax result equal to eager:", True, "| donated buffer consumed by XLA:", _previous_buffer.is_deleted())
fresh_code, into_module = chain_code[0], into_code[0]
print(f"kernels: fresh {len(fresh_code.kernels)}, out= {len(into_module.kernels)}")
print("allocates its output: fresh", "empty_strided" in fresh_code.call_body(),
      "| out=", "empty_strided" in into_module.call_body())

# %%
_add_fresh, _add_out = alloc_runs["torch add, fresh output"].median, alloc_runs["torch add, out= buffer"].median
_add_bytes = 2 * x_t.nbytes + b_t.nbytes
_page_note = (
    "On this GPU the caching allocator hands back the same block on every call, so there is no page-fault "
    "cost to remove: the two variants should take about the same time."
    if DEVICE == "cuda"
    else f"The difference, {cu.timing.format_time(_add_fresh - _add_out)} for {x_t.nbytes / 2**20:.0f} MiB, is the "
    "price of fresh pages: page faults and zero-filling, paid inside the kernel."
)
Markdown(
    f"`torch.add` moves {_add_bytes / 1e6:.0f} MB; the roofline says {cu.timing.format_time(_add_bytes / machine.bandwidth)}. "
    f"Into a preallocated buffer it took **{cu.timing.format_time(_add_out)}**, into a fresh one "
    f"**{cu.timing.format_time(_add_fresh)}** ({_add_fresh / _add_out:.1f}x). {_page_note} "
    f"For the fused chain: torch.compile {cu.timing.format_time(runs['torch.compile'].median)} fresh vs "
    f"{cu.timing.format_time(alloc_runs['torch.compile, out= buffer'].median)} into `out`; jax.jit "
    f"{cu.timing.format_time(runs['jax.jit'].median)} fresh vs "
    f"{cu.timing.format_time(alloc_runs['jax.jit, donated buffer'].median)} with a donated buffer. "
    "Inductor fused the `copy_` into its one kernel, which now writes straight into the caller's buffer (no "
    "`empty_strided` in its launch code). Where the gain is small, the kernel is limited by something other "
    "than memory: section 5 finds what."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Look inside: the kernels the compilers wrote
#
# **Prediction**: one generated kernel for the whole chain in PyTorch (a C++ loop on CPU, a Triton kernel on
# GPU), and one `fusion` instruction in XLA's optimized HLO for JAX and for TensorFlow.

# %%
print(f"Inductor ({fresh_code.language}) launch sequence:\n{fresh_code.call_body()}\n")
print(f"the arithmetic of {fresh_code.kernels[0]}:\n{fresh_code.excerpt(max_lines=12)}")

# %%
hlo_j = cu.fusion.hlo_summary(cu.fusion.jax_hlo(jit_j, x_j, b_j))
hlo_tf = cu.fusion.hlo_summary(cu.fusion.tf_hlo(jit_tf, x_tf, b_tf))
print("JAX optimized HLO, ENTRY computation:\n" + hlo_j.excerpt() + "\n")
print("TensorFlow optimized HLO, ENTRY computation:\n" + hlo_tf.excerpt())

# %%
# NBVAL_CHECK_OUTPUT
print("torch.compile: generated kernels =", len(fresh_code.kernels))
print("jax.jit: fusion instructions =", hlo_j.n_fusions)
print("tf jit_compile: fusion instructions =", hlo_tf.n_fusions)

# %%
Markdown(
    f"The {traffic.n_ops} eager kernels became **{len(fresh_code.kernels)}** generated kernel in PyTorch "
    f"(`{fresh_code.kernels[0]}`: the name lists the fused op types) and **{hlo_j.n_fusions}** / "
    f"**{hlo_tf.n_fusions}** `fusion` instructions ({', '.join(k for _, k in hlo_j.fusions)}: a loop fusion) in "
    "JAX's and TensorFlow's HLO. To see the full code yourself: `TORCH_LOGS=output_code` for Inductor, "
    "`jax.jit(f).lower(x).compile().as_text()` for JAX, and "
    "`f.experimental_get_compiler_ir(x)(stage='optimized_hlo')` for TensorFlow."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Every variant on the roofline
#
# Each measured run becomes a point: its FLOPs (one per element per op; `tanh` counted as one) over the
# bytes it must move gives the intensity, its measured time the height. The eager runs sit at the
# unfused intensity, the fused ones at the fused intensity.
#
# **Prediction**: eager points well under the memory roof; fused points close to it, unless something
# else limits them. One suspect is `tanh`, a transcendental that costs tens of instructions per element. To
# test that, the same chain is compiled once more with `tanh` replaced by the identity: same bytes, far
# less arithmetic.

# %%
def chain_without_tanh_t(x, bias):
    return cu.models.gelu_chain(x, bias, lambda v: v)


def chain_without_tanh_j(x, bias):
    return cu.models.gelu_chain(x, bias, lambda v: v)


no_tanh_t, no_tanh_j = torch.compile(chain_without_tanh_t), jax.jit(chain_without_tanh_j)
no_tanh_runs = {
    "torch.compile, no tanh": cu.timing.benchmark(no_tanh_t, x_t, b_t, label="torch.compile, no tanh"),
    "jax.jit, no tanh": cu.timing.benchmark(no_tanh_j, x_j, b_j, label="jax.jit, no tanh"),
}
extra = cu.fusion.compare_to_prediction(
    traffic, machine,
    fused={"torch.compile, out=": alloc_runs["torch.compile, out= buffer"],
           "jax.jit, donated": alloc_runs["jax.jit, donated buffer"], **no_tanh_runs},
)
cu.plotting.roofline_plot(machine, table.points() + extra.points(), title="The chain's variants on the roofline")

# %%
# NBVAL_CHECK_OUTPUT
np.testing.assert_allclose(no_tanh_t(x_t, b_t).cpu().numpy(), chain_without_tanh_t(x_t, b_t).cpu().numpy(),
                           rtol=1e-5, atol=1e-4)
np.testing.assert_allclose(np.asarray(no_tanh_j(x_j, b_j)), chain_without_tanh_t(x_t, b_t).cpu().numpy(),
                           rtol=1e-5, atol=1e-4)
print("fused points at higher intensity than unfused:", all(
    f.point().intensity > u.point().intensity for f in table.rows if f.fused for u in table.rows if not u.fused))
print("no-tanh variants equal to eager:", True)

# %%
_t_tanh = alloc_runs["torch.compile, out= buffer"].median
_t_plain = no_tanh_runs["torch.compile, no tanh"].median
_fresh_points = ", ".join(f"{r.name} {100 * r.fraction_of_bandwidth:.0f}%" for r in extra.rows)
_tanh_share = _t_tanh / _t_plain
Markdown(
    f"Fractions of the memory roof for the reused-buffer and no-tanh variants: {_fresh_points}. "
    f"Taking `tanh` out makes torch.compile's kernel **{_tanh_share:.1f}x** faster "
    f"({cu.timing.format_time(_t_tanh)} → {cu.timing.format_time(_t_plain)}, both into `out`): "
    + ("a large share of the fused kernel's time is the transcendental's arithmetic, not memory traffic "
       "(on CPUs, Inductor's vectorised `tanh` costs tens of instructions per element; exercise 3 tries a cheaper "
       "formula). " if _tanh_share > 1.3 else "on this machine the transcendental is not the main limit. ")
    + f"The rest of the gap has the other usual suspects: {torch.get_num_threads()} threads (and any other "
    "program running on the same cores), a fresh output buffer (section 3), or a tensor so small that launch "
    "overhead dominates (section 7)."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. A compute-bound case: matmul, then matmul + bias + activation
#
# A square matmul of size `n` does `2n³` FLOPs on `3n²` numbers: its intensity grows with `n` and passes the
# ridge point, so it is compute-bound. Every compiler hands it to a library kernel (oneDNN, MKL, cuBLAS,
# XNNPACK/YNNPACK); fusion cannot make that faster. What fusion can do is the **epilogue**: bias + GELU +
# residual on the `n x n` output, one pass instead of eleven.
#
# **Prediction**: `mm` alone ≈ `2n³ / peak`; eager `mm` + epilogue adds the epilogue's unfused bytes; the
# compiled version adds only one read and one write of the output.

# %%
N = cu.env.pick(ci=1024, cpu=2048, gpu=8192, tpu=4096)
a_np, w_np = rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32) / N**0.5
c_np = rng.standard_normal(N, dtype=np.float32)
a_t, w_t, c_t = (torch.from_numpy(v).to(DEVICE) for v in (a_np, w_np, c_np))
a_j, w_j, c_j = (jnp.asarray(v) for v in (a_np, w_np, c_np))


def mm_epilogue_t(a, w, bias):
    return chain_t(a @ w, bias)


def mm_epilogue_j(a, w, bias):
    return chain_j(a @ w, bias)


compiled_mm = torch.compile(mm_epilogue_t)
jit_mm, jit_mm_epilogue = jax.jit(jnp.matmul), jax.jit(mm_epilogue_j)
with cu.fusion.capture_inductor_code() as mm_code:
    mm_runs = {
        "torch mm": cu.timing.benchmark(torch.mm, a_t, w_t, label="torch mm"),
        "torch mm + eager epilogue": cu.timing.benchmark(mm_epilogue_t, a_t, w_t, c_t, label="torch mm + eager epilogue"),
        "torch.compile mm + epilogue": cu.timing.benchmark(compiled_mm, a_t, w_t, c_t, label="torch.compile mm + epilogue"),
    }
mm_runs["jax.jit mm"] = cu.timing.benchmark(jit_mm, a_j, w_j, label="jax.jit mm")
mm_runs["jax.jit mm + epilogue"] = cu.timing.benchmark(jit_mm_epilogue, a_j, w_j, c_j, label="jax.jit mm + epilogue")
cu.plotting.time_bars(mm_runs, title=f"Matmul n={N} with and without its epilogue")

# %%
# NBVAL_CHECK_OUTPUT
mm_reference = mm_epilogue_t(a_t, w_t, c_t).cpu().numpy()
for name, value in {"torch.compile": compiled_mm(a_t, w_t, c_t).cpu().numpy(),
                    "jax.jit": np.asarray(jit_mm_epilogue(a_j, w_j, c_j))}.items():
    error = float(np.max(np.abs(value - mm_reference) / (1 + np.abs(mm_reference))))
    assert error < 1e-3, (name, error)
    print(f"{name} mm + epilogue matches eager (relative error < 1e-3): True")
hlo_mm = cu.fusion.hlo_summary(cu.fusion.jax_hlo(jit_mm_epilogue, a_j, w_j, c_j))
print("torch.compile: library matmul calls =", len(mm_code[0].extern_calls), "| generated kernels =",
      len(mm_code[0].kernels))
print("jax.jit: loop fusions =", sum(kind == "kLoop" for _, kind in hlo_mm.fusions))

# %%
epilogue = cu.fusion.trace_traffic(chain_t, ((N, N), "float32"), ((N,), "float32"))
_mm = mm_runs["torch mm"].median
_eager_extra = mm_runs["torch mm + eager epilogue"].median - _mm
_fused_extra = mm_runs["torch.compile mm + epilogue"].median - _mm
mm_points = [cu.roofline.Point("torch mm", 2 * N**3, 3 * 4 * N * N, _mm),
             cu.roofline.Point("torch mm + eager epilogue", 2 * N**3 + epilogue.flops,
                               3 * 4 * N * N + epilogue.unfused_bytes, mm_runs["torch mm + eager epilogue"].median),
             cu.roofline.Point("torch.compile mm + epilogue", 2 * N**3 + epilogue.flops,
                               3 * 4 * N * N + 2 * 4 * N * N, mm_runs["torch.compile mm + epilogue"].median)]
Markdown(
    f"The matmul alone: **{cu.timing.format_time(_mm)}**, {2 * N**3 / _mm / 1e9:.0f} GFLOP/s against a roof of "
    f"{machine.peak_flops / 1e9:.0f}"
    + (" (above the roof: the machine was busier when the roof was measured; timings on a shared machine move)"
       if 2 * N**3 / _mm > machine.peak_flops else "")
    + f"; its intensity, {mm_points[0].intensity:.0f} FLOP/byte, is past the ridge "
    f"({machine.ridge_intensity:.1f}). Compilers keep calling the library for it: Inductor's launch code has "
    f"`{', '.join(mm_code[0].extern_calls)}` plus {len(mm_code[0].kernels)} generated kernel, XLA a "
    f"`{hlo_mm.fusions[0][0]}` plus a loop fusion. The epilogue: eager it added "
    f"**{cu.timing.format_time(_eager_extra)}** ({100 * _eager_extra / _mm:.0f}% of the matmul; its "
    f"{epilogue.n_ops} ops move {epilogue.unfused_bytes / 1e6:.0f} MB), fused "
    f"**{cu.timing.format_time(_fused_extra)}** ({100 * _fused_extra / _mm:.0f}%; one read and one write, "
    f"{8 * N * N / 1e6:.0f} MB, predicted {cu.timing.format_time(8 * N * N / machine.bandwidth)}). "
    + ("Fusing the epilogue saved the round trips. "
       if _fused_extra < _eager_extra else
       f"Here fusion did not pay: the {cu.units.format_bytes(4 * N * N)} output fits in this CPU's cache, so the "
       "eager round trips are cheap, while the fused kernel pays the arithmetic limit of section 5. ")
    + "Either way the matmul itself is untouched: fusion is a lever for memory-bound work only."
)

# %%
cu.plotting.roofline_plot(machine, mm_points + [table["torch.compile"].point(), table["torch eager"].point()],
                          title="Memory-bound chain vs compute-bound matmul")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Speed-up against size: overhead, caches, bandwidth
#
# The bytes ratio is the ceiling for large tensors. For tiny tensors every eager op costs its dispatch
# overhead (microseconds) whatever its size, so fusing 11 launches into 1 can gain *more* than the bytes
# ratio. In between, intermediates that fit in a cache never go to memory, so eager is cheaper than the
# byte count says.
#
# **Prediction**: speed-up high at the smallest sizes (overhead), lower while the tensors fit in cache,
# approaching the bytes ratio (or the compute limit found above) for the largest.

# %%
SWEEP_ROWS = cu.env.pick(ci=[4, 64, 1024], cpu=[1, 4, 16, 64, 256, 1024, 4096], gpu=[16, 256, 4096, 65536],
                         tpu=[16, 256, 4096])
sweep = {"torch": [], "jax": [], "tensorflow": []}
quick = dict(min_time=0.05, min_repeats=3)
for rows in SWEEP_ROWS:
    xs_t, xs_j, xs_tf = x_t[:rows], x_j[:rows], x_tf[:rows]
    pairs = {"torch": ((chain_t, compiled_t), (xs_t, b_t)), "jax": ((chain_j, jit_j), (xs_j, b_j)),
             "tensorflow": ((chain_tf, jit_tf), (xs_tf, b_tf))}
    for fw, ((eager_fn, fused_fn), args) in pairs.items():
        eager, fused = cu.timing.benchmark(eager_fn, *args, **quick), cu.timing.benchmark(fused_fn, *args, **quick)
        sweep[fw].append(eager.median / fused.median)
    np.testing.assert_allclose(compiled_t(xs_t, b_t).cpu().numpy(), chain_t(xs_t, b_t).cpu().numpy(), atol=1e-4)
    np.testing.assert_allclose(np.asarray(jit_j(xs_j, b_j)), chain_t(xs_t, b_t).cpu().numpy(), atol=1e-4)
for fw, eager_name, fused_name in (("torch", "torch eager", "torch.compile"), ("jax", "jax op-by-op", "jax.jit"),
                                   ("tensorflow", "tf eager", "tf jit_compile")):
    sweep[fw].append(runs[eager_name].median / runs[fused_name].median)  # the full size, measured in section 2
sizes = [rows * COLS * 4 for rows in [*SWEEP_ROWS, ROWS]]
cu.fusion.speedup_vs_size_plot(sizes, {f"{fw} fused / eager": v for fw, v in sweep.items()}, predicted=traffic.ratio)

# %%
# NBVAL_CHECK_OUTPUT
print("fused == eager at every size: True")

# %%
_caches = cu.fusion.cache_sizes()
_smallest = {fw: values[0] for fw, values in sweep.items()}
_beat = [fw for fw, v in _smallest.items() if v > traffic.ratio]
_lost = [fw for fw, v in _smallest.items() if v < 1]
Markdown(
    "Speed-up of fused over op-by-op, smallest to largest tensor: "
    + "; ".join(f"{fw} " + " → ".join(f"{v:.2g}x" for v in values) for fw, values in sweep.items())
    + f". At {cu.units.format_bytes(sizes[0])} the eager chain is mostly dispatch overhead ({traffic.n_ops} "
    "launches of microseconds each) and the fused one a single launch: "
    + (f"{' and '.join(_beat)} beat the {traffic.ratio:.1f}x bytes ratio there. " if _beat
       else f"no framework beat the {traffic.ratio:.1f}x bytes ratio there. ")
    + (f"{' and '.join(_lost)} ran slower fused at that size: a compiled call has fixed costs of its own (guard "
       "checks, waking worker threads), and a busy machine makes them worse. " if _lost else "")
    + (f"This CPU's caches ({', '.join(f'{k} {cu.units.format_bytes(v)}' for k, v in _caches.items())}) hold "
       "the mid-sized tensors, so eager intermediates need not go to memory there; " if _caches else "")
    + "the largest size is the bandwidth (or compute) regime of sections 2 and 5. On a GPU or TPU the bandwidth "
    "is far higher while each launch keeps a fixed cost, so the overhead regime reaches larger tensors."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. What breaks fusion, and how to register a custom op
#
# The seed's checklist asks: *"are our custom operators supported by the compiler?"* Here is such an
# operator: a legacy `tanh` that looks values up in a table with NumPy (`np.interp`). Each compiler meets
# it differently: Dynamo cannot trace `np.interp`, so it **breaks the graph**; JAX needs it wrapped in
# `jax.pure_callback`; TensorFlow in `tf.numpy_function`, which XLA cannot compile at all.
# The fix in PyTorch: register it as a custom op (`torch.library.custom_op`) with a *fake* implementation
# that tells the compiler the output's shape and dtype. The op stays opaque, but the graph stays whole.
#
# **Prediction**: the graph break costs several separately compiled graphs and eager glue between them; the
# registered op gives one graph with two fused kernels (before and after the op) around one opaque call.

# %%
GRID = np.linspace(-10.0, 10.0, 4001, dtype=np.float32)
TABLE = np.tanh(GRID)


def table_tanh_np(a):
    """The legacy operator: tanh by linear interpolation in a table (error ~1e-6)."""
    return np.interp(a, GRID, TABLE).astype(np.float32)


def legacy_tanh(t):
    return torch.from_numpy(table_tanh_np(t.detach().cpu().numpy())).to(t.device)


def chain_legacy(x, bias):
    return cu.models.gelu_chain(x, bias, legacy_tanh)


@torch.library.custom_op("course02::table_tanh", mutates_args=())
def table_tanh(t: torch.Tensor) -> torch.Tensor:
    return legacy_tanh(t)


@table_tanh.register_fake
def _(t):
    return torch.empty_like(t)


def chain_registered(x, bias):
    return cu.models.gelu_chain(x, bias, table_tanh)


# The check anyone can run on their own function: how many graphs, how many breaks, and why.
legacy_check = cu.fusion.torch_graph_breaks(chain_legacy, x_t[:64], b_t)
registered_check = cu.fusion.torch_graph_breaks(chain_registered, x_t[:64], b_t)
print("legacy op:", legacy_check, "\n  first reason:", legacy_check.reasons[0] if legacy_check.reasons else "-")
print("registered op:", registered_check)

# %% slideshow={"slide_type": "subslide"}
LEGACY_ROWS = cu.env.pick(ci=1024, cpu=2048, gpu=16384, tpu=2048)  # np.interp is slow: a smaller slice
xl_t, xl_j, xl_tf = x_t[:LEGACY_ROWS], x_j[:LEGACY_ROWS], x_tf[:LEGACY_ROWS]
compiled_legacy, compiled_registered = torch.compile(chain_legacy), torch.compile(chain_registered)


def chain_callback_j(x, bias):
    def host_tanh(v):
        return jax.pure_callback(table_tanh_np, jax.ShapeDtypeStruct(v.shape, v.dtype), v)

    return cu.models.gelu_chain(x, bias, host_tanh)


def chain_numpy_tf(x, bias):
    return cu.models.gelu_chain(x, bias, lambda v: tf.numpy_function(table_tanh_np, [v], tf.float32))


jit_callback_j = jax.jit(chain_callback_j)
graph_numpy_tf = tf.function(chain_numpy_tf)
with cu.fusion.capture_inductor_code() as legacy_code:
    legacy_runs = {
        "torch eager, legacy op": cu.timing.benchmark(chain_legacy, xl_t, b_t, label="torch eager, legacy op", **slow),
        "torch.compile, graph breaks": cu.timing.benchmark(compiled_legacy, xl_t, b_t, label="torch.compile, graph breaks", **slow),
    }
with cu.fusion.capture_inductor_code() as registered_code:
    legacy_runs["torch.compile, custom op"] = cu.timing.benchmark(compiled_registered, xl_t, b_t,
                                                                  label="torch.compile, custom op", **slow)
legacy_runs["jax.jit + pure_callback"] = cu.timing.benchmark(jit_callback_j, xl_j, b_j, label="jax.jit + pure_callback", **slow)
legacy_runs["tf.function + numpy_function"] = cu.timing.benchmark(graph_numpy_tf, xl_tf, b_tf,
                                                                  label="tf.function + numpy_function", **slow)
cu.plotting.speedup_bars(cu.timing.compare(legacy_runs), title="A NumPy operator inside the chain")

# %%
# NBVAL_CHECK_OUTPUT
legacy_reference = chain_legacy(xl_t, b_t).cpu().numpy()
for name, value in {"graph breaks": compiled_legacy(xl_t, b_t).cpu().numpy(),
                    "custom op": compiled_registered(xl_t, b_t).cpu().numpy(),
                    "pure_callback": np.asarray(jit_callback_j(xl_j, b_j)),
                    "numpy_function": graph_numpy_tf(xl_tf, b_tf).numpy()}.items():
    assert np.allclose(value, legacy_reference, atol=1e-4), name
    print(f"{name}: equal to eager: True")
assert np.allclose(legacy_reference, reference[:LEGACY_ROWS], atol=1e-4)
print("table tanh within 1e-4 of the real chain: True")
print(f"torch, legacy op: graphs {legacy_check.graphs}, breaks {legacy_check.breaks}, "
      f"Inductor modules {len(legacy_code)}, generated kernels {sum(len(c.kernels) for c in legacy_code)}")
reg = registered_code[0]
print(f"torch, custom op: graphs {registered_check.graphs}, breaks {registered_check.breaks}, "
      f"generated kernels {len(reg.kernels)}, opaque calls {reg.fallback_ops}")
hlo_cb = cu.fusion.hlo_summary(cu.fusion.jax_hlo(jit_callback_j, xl_j, b_j))
print(f"jax + pure_callback: fusions {hlo_cb.n_fusions}, host callbacks {len(hlo_cb.custom_calls)}")
print("tf jit_compile with numpy_function:",
      cu.fusion.compile_error(tf.function(chain_numpy_tf, jit_compile=True), x_tf[:8], b_tf))

# %%
_lr = legacy_runs
Markdown(
    f"Dynamo split the chain into **{legacy_check.graphs} graphs** at {legacy_check.breaks} breaks "
    f"(first reason: *{legacy_check.reasons[0] if legacy_check.reasons else 'none'}*); the compiled result took "
    f"{cu.timing.format_time(_lr['torch.compile, graph breaks'].median)} against "
    f"{cu.timing.format_time(_lr['torch eager, legacy op'].median)} eager. Registered as a custom op it compiles "
    f"to **one graph** with {len(reg.kernels)} fused kernels around `{', '.join(reg.fallback_ops)}`: "
    f"{cu.timing.format_time(_lr['torch.compile, custom op'].median)}. JAX's HLO shows the same shape: "
    f"{hlo_cb.n_fusions} fusions around one host callback "
    f"({cu.timing.format_time(_lr['jax.jit + pure_callback'].median)}). TensorFlow's XLA refuses the "
    "`numpy_function`, so the function must run as a plain graph "
    f"({cu.timing.format_time(_lr['tf.function + numpy_function'].median)}). The NumPy operator itself is slow "
    "and stays slow, "
    + ("and the registration saved the glue around it. "
       if _lr["torch.compile, custom op"].median < _lr["torch.compile, graph breaks"].median
       else "and here it dominates the time, so the registration did not make the call faster; what it buys is "
       "one graph with nothing re-traced, which pays once the code around the op grows. ")
    + "To answer the seed's question for your own model, run `cu.fusion.torch_graph_breaks(your_fn, *inputs)` "
    "and count."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# **1. Fuse a softmax.** Write `softmax(x) = exp(x - max(x)) / sum(exp(x - max(x)))` over the last axis with
# basic PyTorch ops. Predict the unfused and fused bytes with `cu.fusion.trace_traffic`, then compile it,
# count Inductor's kernels and compare with eager on a 256 x 1024 tensor. Does a reduction fuse into one
# kernel?
#
# <details><summary>Hint</summary>
#
# `x.amax(dim=-1, keepdim=True)` and `.sum(dim=-1, keepdim=True)` are the reductions. Capture the generated
# code with `with cu.fusion.capture_inductor_code() as code:` around the first call; `code[0].kernels` lists
# the kernels. Compare with `torch.softmax(x, -1)` to check correctness.
# </details>

# %% jupyter={"source_hidden": true}
def softmax_manual(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = torch.exp(shifted)
    return e / e.sum(dim=-1, keepdim=True)


small = x_t[:256]
softmax_traffic = cu.fusion.trace_traffic(softmax_manual, small)
compiled_softmax = torch.compile(softmax_manual)
with cu.fusion.capture_inductor_code() as softmax_code:
    softmax_cmp = cu.timing.compare({"eager": softmax_manual, "torch.compile": compiled_softmax}, small, min_time=0.05)
assert torch.allclose(compiled_softmax(small), torch.softmax(small, -1), atol=1e-6)
print(f"eager ops {softmax_traffic.n_ops}, bytes ratio {softmax_traffic.ratio:.1f}x, "
      f"Inductor kernels {len(softmax_code[0].kernels)}: {softmax_code[0].kernels}")
display(softmax_cmp)

# %% [markdown]
# **2. Find your allocation threshold.** Repeat section 3's `torch.add` with a fresh output and with `out=` for
# a 4 MiB tensor (1024 x 1024). Predict first: glibc serves allocations below its `mmap` threshold (at most
# 32 MiB) from memory it keeps, so pages are already mapped. Is the fresh output still slower?
#
# <details><summary>Hint</summary>
#
# `cu.timing.compare({"fresh": lambda: torch.add(a, b), "out=": lambda: torch.add(a, b, out=buf)})` with
# `a = x_t[:1024]` and `buf = torch.empty_like(a)`.
# </details>

# %% jupyter={"source_hidden": true}
a_small = x_t[:1024]
buf_small = torch.empty_like(a_small)
small_cmp = cu.timing.compare({"fresh output": lambda: torch.add(a_small, b_t),
                               "out= buffer": lambda: torch.add(a_small, b_t, out=buf_small)}, min_time=0.05)
print(f"{a_small.nbytes / 2**20:.0f} MiB: fresh output is {small_cmp.speedup('out= buffer'):.2f}x the time of out= "
      f"(at {x_t.nbytes / 2**20:.0f} MiB it was {_add_fresh / _add_out:.2f}x)")
display(small_cmp)

# %% [markdown]
# **3. A cheaper `tanh` for Inductor on CPU.** Section 5 found the transcendental expensive. Inductor can
# compute `tanh(v)` as `2 / (1 + exp(-2v)) - 1` instead (`torch._inductor.config.cpp.use_decompose_tanh`).
# Predict: faster or not, and how accurate? Compile `chain_into` under that setting, measure it into the
# same buffer, check it against eager, and put it in the prediction table. (On a GPU the setting does nothing:
# Triton has its own `tanh`.)
#
# <details><summary>Hint</summary>
#
# The setting is read when Inductor generates code, i.e. at the first call:
# `with torch._inductor.config.patch({"cpp.use_decompose_tanh": True}): m = cu.timing.benchmark(torch.compile(chain_into), x_t, b_t, buffer_t)`.
# Then `cu.fusion.compare_to_prediction(traffic, machine, fused={...})`.
# </details>

# %% jupyter={"source_hidden": true}
import torch._inductor.config as inductor_config


def chain_into_decomposed(x, bias, out):  # a new function: torch.compile caches per function
    return out.copy_(chain_t(x, bias))


decomposed_into = torch.compile(chain_into_decomposed)
with inductor_config.patch({"cpp.use_decompose_tanh": True}):
    decomposed = cu.timing.benchmark(decomposed_into, x_t, b_t, buffer_t, label="torch.compile, exp-based tanh")
error = (decomposed_into(x_t, b_t, buffer_t) - chain_t(x_t, b_t)).abs().max().item()
assert error < 1e-4
print(f"exp-based tanh: {alloc_runs['torch.compile, out= buffer'].median / decomposed.median:.1f}x the speed of "
      f"the default kernel (both into out=), max abs error {error:.1e}")
cu.fusion.compare_to_prediction(traffic, machine, fused={
    "torch.compile, out=": alloc_runs["torch.compile, out= buffer"], "exp-based tanh, out=": decomposed})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.summary.table("02_operator_fusion", [
    ("memory bandwidth (best probe)", machine.bandwidth / 1e9, "GB/s", f"measured with {machine.framework}"),
    ("matmul peak", machine.peak_flops / 1e9, "GFLOP/s", f"fp32, {machine.framework}"),
    ("eager ops in the chain", traffic.n_ops, "kernels", "counted by trace_traffic"),
    ("bytes unfused / fused", traffic.ratio, "x", "the memory-bound ceiling of the speed-up"),
    ("torch.compile speed-up", runs["torch eager"].median / runs["torch.compile"].median, "x", "chain, fresh output"),
    ("jax.jit speed-up", runs["jax op-by-op"].median / runs["jax.jit"].median, "x", "over op-by-op"),
    ("tf jit_compile speed-up", runs["tf eager"].median / runs["tf jit_compile"].median, "x", "over eager TF"),
    ("torch.compile, % of bandwidth", 100 * table["torch.compile"].fraction_of_bandwidth, "%", "seed: 80%+ utilisation"),
    ("jax.jit, % of bandwidth", 100 * table["jax.jit"].fraction_of_bandwidth, "%", "seed: 80%+ utilisation"),
    ("tf jit_compile, % of bandwidth", 100 * table["tf jit_compile"].fraction_of_bandwidth, "%", "seed: 80%+ utilisation"),
    ("fresh vs reused output (torch add)", _add_fresh / _add_out, "x", "the allocation trap"),
    ("matmul epilogue, eager", 1e3 * _eager_extra, "ms", f"n={N}"),
    ("matmul epilogue, fused", 1e3 * _fused_extra, "ms", f"n={N}"),
    ("graphs with a NumPy op inside", legacy_check.graphs, "graphs", "1 once registered as a custom op"),
])

# %% [markdown]
# **What to remember**
# - Predict before you measure: count the bytes an op chain moves unfused and fused; with the measured
#   bandwidth that is the time to expect, and their ratio is the most fusion can give a memory-bound chain.
# - When a fused kernel is far from its roof, find the other limit: transcendental throughput, threads, a
#   fresh output's page faults on a CPU (preallocate or donate), or launch overhead at small sizes.
# - Fusion does nothing for the matmul itself; it removes the epilogue's round trips. Opaque Python/NumPy
#   calls break fusion: register them as custom ops (with a fake implementation) and count graph breaks.
#
# **Next**: `03_mixed_precision` halves the bytes per element instead: the same roofline, a different lever.

# %%
print(cu.summary.last_verified())
