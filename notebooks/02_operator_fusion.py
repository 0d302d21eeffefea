# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 6
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
# memory reads and writes". This notebook turns that into arithmetic you can do before running anything, then
# checks it on your machine.
#
# **You will be able to**
# - read your machine's roofline and say whether a kernel is memory- or compute-bound;
# - predict what fusing an elementwise chain saves from the bytes it moves, and check it with `torch.compile`,
#   `jax.jit` and `tf.function(jit_compile=True)`;
# - remove the allocation trap with `out=`, `donate_argnums` and a `tf.Variable`;
# - count the kernels a compiler wrote, and register an operator that breaks fusion;
# - fuse attention with FlexAttention and measure the memory it never allocates.
#
# **Time budget** (from the metadata): 3 minutes at ci size on a 2-core CPU, 6 at laptop size, 45 in a workshop.
# **Accelerators**: every section runs on CPU and GPU runtimes (on a TPU runtime PyTorch stays on the CPU). A
# runtime without JAX or TensorFlow skips their parts with one sentence.

# %%
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

# %% tags=["device"]
import course_utils as cu

cu.notebook.setup()

# %% tags=["device"]
sizes = cu.env.sizes(
    rows=dict(ci=8192, cpu=12288, gpu=131072, tpu=65536),  # rows of x (x is rows x 1024 float32), sections 2-5
    matmul_n=dict(ci=1024, cpu=2048, gpu=8192, tpu=4096),  # n of section 6's matmul with its epilogue
    legacy_rows=dict(ci=1024, cpu=1024, gpu=16384, tpu=2048),  # rows through section 7's slow NumPy op
    attention=dict(ci=(1, 4, 1024, 64), cpu=(1, 4, 2048, 64), gpu=(1, 16, 4096, 64),
                   tpu=(1, 4, 1024, 64)),  # section 8's batch, heads, length, head dim
    sweep_rows=dict(ci=[4, 64, 1024], cpu=[4, 64, 1024, 4096], gpu=[16, 256, 4096, 65536],
                    tpu=[16, 256, 4096]),  # Going further: the rows of each size in the speed-up sweep
)
sizes

# %% slideshow={"slide_type": "skip"} tags=["device"]
import contextlib
import functools

import numpy as np
import torch
import torch._inductor.config as inductor_config  # Inductor's settings (Going further, exercise 3)

FW = cu.notebook.present()  # the frameworks installed here: PyTorch is required, JAX and TensorFlow optional
if "jax" in FW:
    import jax
    import jax.numpy as jnp
if "tensorflow" in FW:
    tf = cu.env.import_tensorflow()
for missing in sorted({"jax", "tensorflow"} - set(FW)):
    cu.notebook.needs(missing)  # one sentence each; their parts below are skipped

# %% slideshow={"slide_type": "skip"} tags=["device"]
PLAN = cu.devices.plan(cu.devices.describe())  # where torch runs, the tolerance of a float32 matmul here
DEVICE = PLAN.torch_device
ROWS, COLS = sizes.rows, 1024  # x is ROWS x COLS float32
rng = np.random.default_rng(0)
x_np = rng.standard_normal((ROWS, COLS), dtype=np.float32)
bias_np = rng.standard_normal(COLS, dtype=np.float32)
data = {fw: cu.interop.to_framework(fw, x_np, bias_np, device=DEVICE) for fw in FW}  # {framework: (x, bias)}
x_t, b_t = data["torch"]
print(f"x: {ROWS} x {COLS} float32 = {cu.display.format_bytes(x_np.nbytes)}; frameworks: {', '.join(FW)}; "
      f"torch on {DEVICE}")

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 1. The roofline of this machine
#
# A kernel that does `F` floating-point operations and moves `B` bytes cannot finish faster than
# `max(F / peak FLOP/s, B / bandwidth)`. Its **arithmetic intensity** `F / B` decides which term wins: below the
# **ridge point** (peak FLOP/s over bandwidth) it waits on memory. Both roofs are measured once per run, by the
# first notebook that asks, with every framework's probes: the best of them is the machine's roof. The bandwidth
# probes stream arrays of at least 4x the last-level cache where they can (printed below the roofline): a smaller
# array is partly served from cache, and its memory roof then reads high against main memory alone. On a GPU they
# stream device memory.
#
# **Prediction**: the ridge point sits well above 1 FLOP/byte, so an elementwise add (1 FLOP per 12 bytes) is
# memory-bound.

# %%
machine = cu.machine.figures()  # roofs per framework, page-fault cost, compiled call cost: measured once per run
machine

# %%
cu.plotting.roofline_plot(machine.best, title="This machine's roofline: the best probe of any framework")

# %% slideshow={"slide_type": "skip"}
probe = cu.roofline.probe_size()  # what the bandwidth probes streamed, against the cache this CPU reports
print(f"bandwidth probe arrays: {cu.display.format_bytes(probe.array_bytes)} each; last-level cache "
      f"{cu.display.format_bytes(probe.last_level_cache)}; capped by: {probe.capped_by or 'nothing'}")

# %%
v_ridge = cu.fusion.findings.RIDGE.score(
    cu.findings.above("ridge point in FLOP/byte (an add: 0.083)", machine.ridge_intensity, 1, unit=""),
    ridge=f"{machine.ridge_intensity:.0f}", matmul_n=f"{6 * machine.ridge_intensity:.0f}")
v_ridge

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_ridge.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 2. An elementwise chain: bytes predicted, then time measured
#
# The course's recurring chain is `x + GELU_tanh(x + bias)`. Run eagerly, each operator is its own kernel: it
# reads its inputs from memory and writes its result back. Fused, one kernel reads `x` and `bias` once and writes
# the result once; the intermediates stay in registers. `cu.fusion.trace_traffic` runs the function on
# shape-only tensors and records every op with its bytes.

# %%
chain_t = cu.fusion.chain("torch")  # x + GELU_tanh(x + bias), written with torch operators
traffic = cu.fusion.trace_traffic(chain_t, x_t, b_t)
traffic

# %% [markdown]
# A hand count deserves a cross-check: XLA's `cost_analysis()` counts FLOPs (a `tanh` apart, as a
# "transcendental") and the bytes its fused module reads and writes.

# %%
# NBVAL_CHECK_OUTPUT
print(f"hand count: {traffic.n_ops} eager ops, {traffic.flops:,} FLOPs (tanh as 1), fused bytes {traffic.fused_bytes:,}")
print(f"FlopCounterMode: {cu.fusion.torch_counted_flops(chain_t, x_t, b_t):,} FLOPs (it counts matmul-like ops only)")
if "jax" in FW:
    cost = cu.compiled.jax_cost(cu.fusion.chain("jax"), *data["jax"])
    print("XLA's FLOPs + transcendentals == hand count:", cost["flops"] + cost["transcendentals"] == traffic.flops)
    print("XLA's bytes == hand-counted fused bytes:", cost["bytes accessed"] == traffic.fused_bytes)

# %% [markdown]
# The recipe, in each framework: one call turns the eager function into a fused one.
#
# **Prediction**: fusion makes the chain faster in every framework, beyond the noise, and by at most the bytes
# ratio, since both variants stream their bytes at the same bandwidth.

# %% slideshow={"slide_type": "subslide"}
eager = {"torch": chain_t}
fused = {"torch": torch.compile(chain_t)}
if "jax" in FW:
    eager["jax"] = cu.fusion.chain("jax")
    fused["jax"] = jax.jit(eager["jax"])
if "tensorflow" in FW:
    eager["tensorflow"] = cu.fusion.chain("tensorflow")
    fused["tensorflow"] = tf.function(eager["tensorflow"], jit_compile=True)

# %%
chain_calls = {}
for fw in FW:
    chain_calls[cu.fusion.EAGER[fw]] = functools.partial(eager[fw], *data[fw])
    chain_calls[cu.fusion.FUSED[fw]] = functools.partial(fused[fw], *data[fw])
with cu.compiled.capture_inductor_code() as chain_code:  # the code Inductor writes at the first call (section 4)
    chain_runs = cu.timing.interleaved(chain_calls, rounds=4, min_time=1.0)  # alternating rounds, paired
chain_table = cu.fusion.compare_to_prediction(
    traffic, machine.best, unfused={cu.fusion.EAGER[fw]: chain_runs[cu.fusion.EAGER[fw]] for fw in FW},
    fused={cu.fusion.FUSED[fw]: chain_runs[cu.fusion.FUSED[fw]] for fw in FW})
chain_table

# %%
cu.fusion.prediction_plot(chain_table, title="Elementwise chain: computed from bytes vs measured")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
reference = chain_t(x_t, b_t).cpu().numpy()
for fw in FW:  # different tanh implementations differ in the last bits: a tolerance, not equality
    for name, fn in ((cu.fusion.FUSED[fw], fused[fw]), (cu.fusion.EAGER[fw], eager[fw])):
        error = float(np.max(np.abs(cu.interop.to_numpy(fn(*data[fw])) - reference)))
        assert error < 1e-4, (name, error)
        print(f"{name}: max abs diff vs torch eager < 1e-4: True")

# %%
gains = {fw: cu.intervals.speedup(chain_runs[cu.fusion.EAGER[fw]], chain_runs[cu.fusion.FUSED[fw]]) for fw in FW}
v_chain = cu.fusion.findings.CHAIN.score(  # inside [1x, the bytes ratio (computed)]: its whole interval
    *[cu.findings.within(f"{cu.fusion.FUSED[fw]} over {cu.fusion.EAGER[fw]}", gains[fw], 1, traffic.ratio)
      for fw in FW], ratio=f"{traffic.ratio:.1f}x")
v_chain

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_chain.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Three things called "utilisation"
#
# The seed's "hardware utilisation from 40-60% to 80%+" reads, in everyday use, as what `nvidia-smi` prints: the
# share of time in which some kernel was running, its **busy time**. A GPU running one tiny kernel without pause
# shows 100%. Two other numbers say how well that time is used: the **fraction of memory bandwidth** (bytes moved /
# time / measured bandwidth, the "% of bandwidth" column above) for memory-bound kernels, and **MFU** (model FLOP/s
# over the chip's peak) for compute-bound training, where published large-model runs report 38-56% (PaLM 46.2%,
# Megatron-LM 56%, Llama 3 405B 38-43%; quoted, not measured here). Every percentage in this notebook says which
# one it is.

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 3. The allocation trap on a CPU
#
# Each call above returns a **new** output. On a CPU a large fresh buffer comes straight from the operating
# system (glibc serves 32 MiB and more with `mmap`), and each 4 KiB page costs a page fault and a zero-fill the
# first time it is written: inside the kernel. The machine figures above priced that once per run. The page counts
# below say which calls pay: where the eager chain takes one output's worth of faults per op, its time is not its
# bytes over the bandwidth, and the bytes ratio under-predicts what fusion saves by that much.
#
# **Prediction**: `torch.add` into a fresh output is slower than into a preallocated `out=` buffer, beyond the
# noise, and the time it adds lies between half and twice the page-fault cost the machine figures give for one
# output: fresh pages cost their faults, about what the probe measured.

# %%
buffer_t = torch.empty_like(x_t)  # allocated once, written by every call
add_runs = cu.timing.interleaved({"torch.add, fresh output": lambda: torch.add(x_t, b_t),
                                  "torch.add, out= buffer": lambda: torch.add(x_t, b_t, out=buffer_t)},
                                 rounds=6, min_time=0.3)
cu.plotting.time_bars(add_runs, title="torch.add: a fresh output against a reused buffer (alternating rounds)")

# %%
# NBVAL_CHECK_OUTPUT
pages = x_t.nbytes // 4096  # the 4 KiB pages of one output
faults = {"torch eager chain": cu.memory.page_faults(chain_t, x_t, b_t),
          "torch.compile chain": cu.memory.page_faults(fused["torch"], x_t, b_t),
          "torch.add, out= buffer": cu.memory.page_faults(lambda: torch.add(x_t, b_t, out=buffer_t))}
print(f"one output = {pages} pages; the eager chain writes {traffic.n_ops} outputs")
for name, count in faults.items():
    print(f"{name}: {count / pages:.0f} outputs' worth of page faults per call")

# %%
add_gain = cu.intervals.speedup(add_runs["torch.add, fresh output"], add_runs["torch.add, out= buffer"])
add_extra = add_runs["torch.add, fresh output"].median - add_runs["torch.add, out= buffer"].median
fault_cost = machine.fault_seconds(x_t.nbytes)  # computed from the machine's page-fault probe
price = {"price": f"{cu.display.format_time(fault_cost)} (computed)", "pages": pages}
if DEVICE == "cpu":
    v_alloc = cu.fusion.findings.ALLOCATION.score(
        cu.findings.faster("out= over a fresh output", add_gain),
        cu.findings.within("time a fresh output added (bounds: half and twice the probe's price)", add_extra,
                           0.5 * fault_cost, 2 * fault_cost, unit="s"), **price)
else:
    v_alloc = cu.fusion.findings.ALLOCATION.not_tested(
        "on a GPU the caching allocator hands back the same block: no page faults to time", **price)
v_alloc

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_alloc.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The remedies: a buffer the caller owns
#
# PyTorch: `out=`, or, inside a compiled function, `out.copy_(...)`, which Inductor fuses into the kernel. JAX:
# **donate** a buffer with `donate_argnums`; XLA then writes the result over it. A trap inside that remedy: `jit`
# drops arguments the function never reads, and a dropped buffer is silently *not* donated, unless you pass
# `keep_unused=True`. TensorFlow: assign into a `tf.Variable` inside the compiled function.
#
# **Prediction**: writing into a reused buffer makes the fused chain faster, beyond the noise, in exactly the
# frameworks whose fresh output took page faults, and changes its time by less than 10% elsewhere (its whole
# interval).

# %%
@torch.compile
def chain_into(x, bias, out):  # torch: Inductor fuses the copy_, so its one kernel writes into out
    return out.copy_(chain_t(x, bias))


def donating_call(jitted, *args):  # JAX: each call writes over the buffer the previous call returned
    out = [jnp.zeros_like(args[0])]

    def call():
        out[0] = jitted(*args, out[0])
        return out[0]
    return call


into = {"torch": functools.partial(chain_into, x_t, b_t, buffer_t)}
if "jax" in FW:
    chain_donating = jax.jit(lambda x, bias, out: eager["jax"](x, bias), donate_argnums=2, keep_unused=True)
    into["jax"] = donating_call(chain_donating, *data["jax"])
if "tensorflow" in FW:
    tf_out = tf.Variable(tf.zeros_like(data["tensorflow"][0]))  # TensorFlow: a Variable the caller owns

    @tf.function(jit_compile=True)
    def chain_tf_into(x, bias):
        tf_out.assign(eager["tensorflow"](x, bias))
    into["tensorflow"] = functools.partial(chain_tf_into, *data["tensorflow"])

# %%
# NBVAL_CHECK_OUTPUT
with cu.compiled.capture_inductor_code() as into_code:  # chain_into's first call compiles it (section 4 reads it)
    into_faults = {fw: cu.memory.page_faults(into[fw]) / pages for fw in FW}
fresh_faults = {fw: cu.memory.page_faults(fused[fw], *data[fw]) / pages for fw in FW}
for fw in sorted(set(FW) & {"torch", "jax"}):  # TensorFlow's allocator keeps its own habits: printed below, unchecked
    print(f"{fw}: outputs' worth of page faults per call: fresh output {fresh_faults[fw]:.0f}, "
          f"reused buffer {into_faults[fw]:.0f}")
assert np.allclose(cu.interop.to_numpy(into["torch"]()), reference, atol=1e-4)

# %%
into_calls = {}
for fw in FW:
    into_calls[cu.fusion.FUSED[fw]] = chain_calls[cu.fusion.FUSED[fw]]
    into_calls[cu.fusion.INTO[fw]] = into[fw]
into_runs = cu.timing.interleaved(into_calls, rounds=6, min_time=0.9)
if "tensorflow" in FW:  # TensorFlow's own allocator: its counts, not checked by nbval
    print(f"tensorflow: outputs' worth of page faults per call: fresh output {fresh_faults['tensorflow']:.1f}, "
          f"Variable {into_faults['tensorflow']:.1f}")
cu.plotting.time_bars(into_runs, title="The fused chain: a fresh output against a reused buffer")

# %%
into_gains = {fw: cu.intervals.speedup(into_runs[cu.fusion.FUSED[fw]], into_runs[cu.fusion.INTO[fw]]) for fw in FW}
into_checks = []
for fw in FW:
    name = (f"{cu.fusion.INTO[fw]} over {cu.fusion.FUSED[fw]} ({fresh_faults[fw]:.1f} outputs' worth of page faults "
            "per fresh output)")
    if fresh_faults[fw] >= 0.5:  # the fresh output came on fresh pages: the buffer should pay
        into_checks.append(cu.findings.faster(name, into_gains[fw]))
    else:  # no fresh pages to remove: no difference, within 10%
        into_checks.append(cu.findings.same(name, into_gains[fw], 1.1))
v_into = cu.fusion.findings.BUFFER.score(*into_checks)
v_into

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_into.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 4. Look inside: the kernels the compilers wrote
#
# **Prediction**: one generated kernel for the whole chain in PyTorch (a C++ loop on CPU, a Triton kernel on
# GPU), and one `fusion` instruction in XLA's optimized HLO for JAX and for TensorFlow.

# %%
fresh_code = chain_code[0]
print(f"Inductor ({fresh_code.language}), the launch sequence of torch.compile(chain_t):\n{fresh_code.call_body()}\n")
print(f"the arithmetic of {fresh_code.kernels[0]}:\n{fresh_code.excerpt(max_lines=12)}")

# %%
hlo = {}
if "jax" in FW:
    hlo["jax.jit"] = cu.compiled.hlo_summary(cu.compiled.jax_hlo(fused["jax"], *data["jax"]))
if "tensorflow" in FW:
    hlo["tf jit_compile"] = cu.compiled.hlo_summary(cu.compiled.tf_hlo(fused["tensorflow"], *data["tensorflow"]))
for name, summary in hlo.items():
    print(f"{name}: optimized HLO, ENTRY computation:\n{summary.excerpt()}\n")

# %%
# NBVAL_CHECK_OUTPUT
kernel_counts = {"torch.compile": len(fresh_code.kernels), **{name: s.n_fusions for name, s in hlo.items()}}
for name, count in kernel_counts.items():
    print(f"{name}: fused kernels = {count}")
print(f"torch.compile into out=: kernels = {len(into_code[0].kernels)}, "
      f"allocates an output: {into_code[0].allocates_output}")

# %%
v_kernels = cu.fusion.findings.KERNELS.score(
    *[cu.findings.equal(f"{name}: fused kernels", count, 1) for name, count in kernel_counts.items()],
    n_ops=traffic.n_ops, first_kernel=fresh_code.kernels[0])
v_kernels

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_kernels.prose()

# %% [markdown]
# To see the full code yourself: `TORCH_LOGS=output_code` for Inductor, `jax.jit(f).lower(x).compile().as_text()`
# for JAX, and `f.experimental_get_compiler_ir(x)(stage='optimized_hlo')` for TensorFlow.

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 5. By how much should it be faster? A fused kernel on its roof
#
# A fused kernel that moves its bytes at the memory roof cannot go faster. The yardstick, measured in the same
# rounds: a **copy** of `x` into a reused buffer, compiled by the same compiler, moves the same bytes with no
# arithmetic. Two things can keep the chain above it: fresh output pages (removed above) and the arithmetic itself:
# a `tanh` costs tens of vector instructions per vector of elements. So the chain is timed again with `tanh`
# replaced by the identity, a pure polynomial with the same bytes.
#
# **Prediction**: written into a reused buffer, the polynomial chain runs within 1.25x of the copy in every
# framework (its whole interval), and the chain with its `tanh`, in the same buffer, is slower than the polynomial,
# beyond the noise.

# %%
poly = {fw: cu.fusion.chain(fw, tanh=False) for fw in FW}  # tanh replaced by the identity: multiplies and adds


@torch.compile
def poly_into(x, bias, out):
    return out.copy_(poly["torch"](x, bias))


@torch.compile
def copy_into(x, out):  # the yardstick: read x, write out, no arithmetic
    return out.copy_(x)


roof_calls = {"torch.compile, out=, no tanh": functools.partial(poly_into, x_t, b_t, buffer_t),
              "torch copy, same bytes": functools.partial(copy_into, x_t, buffer_t)}
if "jax" in FW:
    poly_donating = jax.jit(lambda x, bias, out: poly["jax"](x, bias), donate_argnums=2, keep_unused=True)
    copy_donating = jax.jit(lambda x, out: jnp.copy(x), donate_argnums=1, keep_unused=True)
    roof_calls["jax.jit, donated, no tanh"] = donating_call(poly_donating, *data["jax"])
    roof_calls["jax copy, same bytes"] = donating_call(copy_donating, data["jax"][0])
if "tensorflow" in FW:
    @tf.function(jit_compile=True)
    def poly_tf_into(x, bias):
        tf_out.assign(poly["tensorflow"](x, bias))

    @tf.function(jit_compile=True)
    def copy_tf_into(x):
        tf_out.assign(x)
    roof_calls["tf jit_compile, Variable, no tanh"] = functools.partial(poly_tf_into, *data["tensorflow"])
    roof_calls["tensorflow copy, same bytes"] = functools.partial(copy_tf_into, data["tensorflow"][0])

# %%
roof_runs = cu.timing.interleaved({**roof_calls, **{cu.fusion.INTO[fw]: into[fw] for fw in FW}}, rounds=6, min_time=1.0)
poly_traffic = cu.fusion.trace_traffic(poly["torch"], x_t, b_t)  # 10 ops, the same bytes in and out
roof_table = cu.fusion.compare_to_prediction(poly_traffic, machine.best, fused={k: roof_runs[k] for k in roof_calls})
cu.fusion.roof_bars({r.name: r.fraction_of_bandwidth for r in roof_table.rows},
                    title="Into a reused buffer: % of the memory roof (bytes / time / bandwidth)")

# %%
vs_copy = {fw: cu.intervals.speedup(roof_runs[f"{fw} copy, same bytes"], roof_runs[f"{cu.fusion.INTO[fw]}, no tanh"])
           for fw in FW}
tanh_costs = {fw: cu.intervals.speedup(roof_runs[cu.fusion.INTO[fw]], roof_runs[f"{cu.fusion.INTO[fw]}, no tanh"])
              for fw in FW}
v_roof = cu.fusion.findings.ROOF.score(
    *[cu.findings.same(f"{cu.fusion.INTO[fw]}, no tanh, against the {fw} copy", vs_copy[fw], 1.25) for fw in FW],
    *[cu.findings.faster(f"{cu.fusion.INTO[fw]}: no tanh over with tanh", tanh_costs[fw]) for fw in FW])
v_roof

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_roof.prose(cu.fusion.findings.WORKING_SET.format(working=cu.display.format_bytes(2 * x_t.nbytes),
                                                   cache=cu.display.format_bytes(cu.env.last_level_cache_bytes())))

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 6. A compute-bound case: matmul, then matmul + bias + activation
#
# A square matmul of size `n` does `2n³` FLOPs on `3n²` numbers: its intensity, `n/6` FLOP/byte in fp32, grows
# with `n` and crosses the ridge point. The sweep's largest size is the size of the machine's own torch matmul
# probe, so the two compare like with like.
#
# **Prediction**: the largest matmul of the sweep runs within 20% of torch's matmul probe of the same size.

# %%
MM_SIZES = [16, 64, 256, cu.roofline.PROBE_SIZES.matmul_n]  # the last one: the machine figures' matmul probe size
mm_points = []
for n in MM_SIZES:
    a, w, out = torch.randn(n, n, device=DEVICE), torch.randn(n, n, device=DEVICE), torch.empty(n, n, device=DEVICE)
    m = cu.timing.benchmark(torch.mm, a, w, out=out, min_time=0.1, min_repeats=3)
    mm_points.append(cu.roofline.Point(f"mm n={n}", 2 * n**3, 3 * 4 * n * n, m.median))
cu.plotting.roofline_plot(machine.best, mm_points, title="torch.mm into out=: intensity n/6 crosses the ridge")

# %%
# NBVAL_CHECK_OUTPUT
print(f"FlopCounterMode on mm n={n}: {cu.fusion.torch_counted_flops(torch.mm, a, w):,} FLOPs; hand count 2n^3 = "
      f"{2 * n**3:,}")
print("intensity (FLOP/byte, computed):", ", ".join(f"n={n}: {n / 6:.1f}" for n in MM_SIZES))

# %%
torch_probe = machine.roofs["torch"].peak_flops  # torch's own matmul probe, the same size, measured once per run
to_probe = mm_points[-1].achieved_flops / torch_probe
v_sweep = cu.fusion.findings.SWEEP.score(cu.findings.within(
    f"mm n={MM_SIZES[-1]} over torch's own probe of that size ({torch_probe / 1e9:.0f} GFLOP/s, machine figures)",
    to_probe, 0.8, 1.25))
v_sweep

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_sweep.prose()

# %% [markdown]
# The compute roof is the best framework's matmul; torch's own probe (in the machine figures) can sit under it for
# its library's sake. On AMD CPUs a known candidate is MKL's code-path dispatch, which picks its kernels by CPU
# vendor; `MKL_VERBOSE=1` prints the path MKL took.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The epilogue
#
# What fusion can do for a matmul is its **epilogue**: bias + GELU + residual on the `n x n` output, one pass
# instead of eleven. On a CPU, by default, both compilers hand the matmul itself to a library (MKL or oneDNN,
# XNNPACK or YNNPACK) and fuse the epilogue into one loop after it. They can also fuse it *into* the matmul: Inductor's
# `mode="max-autotune"` benchmarks its own GEMM templates (C++ on a CPU, for frozen weights; Triton on a GPU) against
# the library and fuses the epilogue into a template that wins; oneDNN can fuse recognised activations as post-ops;
# XLA on GPU emits cuBLASLt epilogues or Triton GEMM fusions. Going further measures max-autotune here.
#
# **Prediction**: the compiled matmul + epilogue is faster than the matmul with an eager epilogue, beyond the noise,
# in every framework.

# %%
N = sizes.matmul_n
mm_np = [rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32) / N**0.5,
         rng.standard_normal(N, dtype=np.float32)]
mm_data = {fw: cu.interop.to_framework(fw, *mm_np, device=DEVICE) for fw in FW if fw in ("torch", "jax")}


def mm_epilogue(a, w, bias):  # the matmul, then the chain on its output
    return chain_t(a @ w, bias)


mm_eager, mm_fused, mm_alone = {"torch": mm_epilogue}, {"torch": torch.compile(mm_epilogue)}, {"torch": torch.mm}
if "jax" in FW:
    mm_eager["jax"] = lambda a, w, bias: eager["jax"](a @ w, bias)
    mm_fused["jax"] = jax.jit(mm_eager["jax"])
    mm_alone["jax"] = jnp.matmul
mm_calls = {}
for fw, (a_, w_, bias_) in mm_data.items():
    mm_calls[f"{fw} mm"] = functools.partial(mm_alone[fw], a_, w_)
    mm_calls[f"{fw} mm + eager epilogue"] = functools.partial(mm_eager[fw], a_, w_, bias_)
    mm_calls[f"{fw} mm + fused epilogue"] = functools.partial(mm_fused[fw], a_, w_, bias_)
with cu.compiled.capture_inductor_code() as mm_code:  # the first round compiles
    mm_runs = cu.timing.interleaved(mm_calls, rounds=5, min_time=0.3)
cu.plotting.time_bars(mm_runs, title=f"Matmul n={N} with and without its epilogue (alternating rounds)")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
mm_reference = mm_epilogue(*mm_data["torch"]).cpu().numpy()
for fw in mm_data:  # JAX at "highest" precision: by default a TPU multiplies float32 in bf16 passes (error ~0.02)
    with jax.default_matmul_precision("highest") if fw == "jax" else contextlib.nullcontext():
        got = cu.interop.to_numpy(mm_fused[fw](*mm_data[fw]))
    error = float(np.max(np.abs(got - mm_reference) / (1 + np.abs(mm_reference))))
    assert error < 1e-3, (fw, error)
    print(f"{fw} compiled mm + epilogue matches eager torch (relative error < 1e-3, float32 precision): True")
mm_module = [c for c in mm_code if c.extern_calls][-1]
print("torch.compile: library matmul calls =", len(mm_module.extern_calls), "| generated kernels =", len(mm_module.kernels))
if "jax" in FW:
    hlo_mm = cu.compiled.hlo_summary(cu.compiled.jax_hlo(mm_fused["jax"], *mm_data["jax"]))
    print("jax.jit: the dot goes to", hlo_mm.library()[0], "| loop fusions =",
          sum(kind == "kLoop" for _, kind in hlo_mm.fusions))

# %%
epilogue_gains = {fw: cu.intervals.speedup(mm_runs[f"{fw} mm + eager epilogue"], mm_runs[f"{fw} mm + fused epilogue"])
                  for fw in mm_data}
v_epilogue = cu.fusion.findings.EPILOGUE.score(
    *[cu.findings.faster(f"{fw}: fused epilogue over eager epilogue", g) for fw, g in epilogue_gains.items()])
v_epilogue

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_epilogue.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 7. What breaks fusion, and how to register a custom op
#
# The seed's checklist asks: *"are our custom operators supported by the compiler?"* Here is such an operator: a
# legacy `tanh` that looks values up in a table with NumPy (`np.interp`, `cu.fusion.table_tanh_np`). Dynamo cannot
# trace `np.interp`, so it **breaks the graph**; JAX needs it wrapped in `jax.pure_callback`; TensorFlow in
# `tf.numpy_function`, which XLA cannot compile at all. The fix in PyTorch: register it as a custom op
# (`torch.library.custom_op`) with a *fake* implementation that tells the compiler the output's shape and dtype.
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

# %% slideshow={"slide_type": "subslide"}
LEGACY_ROWS = sizes.legacy_rows  # np.interp is slow: a smaller slice
legacy_data = {fw: (data[fw][0][:LEGACY_ROWS], data[fw][1]) for fw in FW}
legacy_fns = {"torch eager, legacy op": ("torch", chain_legacy),
              "torch.compile, graph breaks": ("torch", torch.compile(chain_legacy)),
              "torch.compile, custom op": ("torch", torch.compile(chain_registered))}
if "jax" in FW:
    legacy_fns["jax.jit + pure_callback"] = ("jax", jax.jit(cu.fusion.chain_with_callback_jax))
if "tensorflow" in FW:
    legacy_fns["tf.function + numpy_function"] = ("tensorflow", tf.function(cu.fusion.chain_with_numpy_function_tf))
with cu.compiled.capture_inductor_code() as legacy_code:
    legacy_runs = cu.timing.interleaved({name: functools.partial(fn, *legacy_data[fw])
                                         for name, (fw, fn) in legacy_fns.items()}, rounds=4, min_time=0.6)
cu.plotting.time_bars(legacy_runs, title="A NumPy operator inside the chain (alternating rounds)")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
legacy_reference = chain_legacy(*legacy_data["torch"]).cpu().numpy()
for name, (fw, fn) in legacy_fns.items():
    assert np.allclose(cu.interop.to_numpy(fn(*legacy_data[fw])), legacy_reference, atol=1e-4), name
    print(f"{name}: equal to eager: True")
print("table tanh within 1e-4 of the real chain:", bool(np.allclose(legacy_reference, reference[:LEGACY_ROWS], atol=1e-4)))
registered_code = next(c for c in legacy_code if c.fallback_ops)
print(f"torch, legacy op: graphs {legacy_check.graph_count}, breaks {legacy_check.break_count}")
print(f"torch, custom op: graphs {registered_check.graph_count}, breaks {registered_check.break_count}, "
      f"generated kernels {len(registered_code.kernels)}, opaque calls {registered_code.fallback_ops}")
if "jax" in FW:
    hlo_cb = cu.compiled.hlo_summary(cu.compiled.jax_hlo(legacy_fns["jax.jit + pure_callback"][1], *legacy_data["jax"]))
    print(f"jax + pure_callback: fusions {hlo_cb.n_fusions}, host callbacks {len(hlo_cb.custom_calls)}")
if "tensorflow" in FW:
    print("tf jit_compile with numpy_function:", cu.fusion.compile_error(
        tf.function(cu.fusion.chain_with_numpy_function_tf, jit_compile=True), *legacy_data["tensorflow"]))

# %%
registered_gain = cu.intervals.speedup(legacy_runs["torch.compile, graph breaks"], legacy_runs["torch.compile, custom op"])
v_custom = cu.fusion.findings.CUSTOM_OP.score(
    cu.findings.true(f"the legacy op splits the chain into several graphs ({legacy_check.graph_count} here)",
                     legacy_check.graph_count > 1),
    cu.findings.equal("graphs once registered", registered_check.graph_count, 1),
    cu.findings.equal(f"generated kernels around {', '.join(registered_code.fallback_ops)}",
                      len(registered_code.kernels), 2),
    breaks=legacy_check.break_count, reason=(legacy_check.reasons or ["none given"])[0], gain=str(registered_gain))
v_custom

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_custom.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 8. Fusion beyond elementwise chains: attention
#
# Attention computes a `length x length` score matrix per head, modifies it (a position bias, a causal mask),
# takes a softmax and multiplies by the values. Written out, every step writes that matrix to memory. FlexAttention
# takes the modification as code: a `score_mod` that changes one score, a `block_mask` that says which blocks of
# scores exist at all. Compiled, it becomes one blocked kernel that computes the scores a block at a time, never
# writing the whole matrix, and skips masked blocks.
#
# JAX's `jax.nn.dot_product_attention` stands beside it, and so does the call to reach for first in PyTorch,
# `F.scaled_dot_product_attention`, which takes the bias and the causal mask as one additive float mask and runs a
# fused kernel where it has one. On a CPU, XLA's implementation is not the fused one (`implementation='cudnn'` needs
# an NVIDIA GPU and fp16 or bf16): the temporary buffers XLA planned for it, printed below, say whether it wrote the
# scores to memory. The unfused version is timed eager and compiled, so that FlexAttention is also compared compiled
# against compiled.
#
# **Prediction**: compiled FlexAttention peaks under one score matrix of memory where the unfused version peaks
# above it, and runs faster than the unfused version, eager and compiled, beyond the noise.

# %%
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

BATCH, HEADS, LENGTH, DIM = sizes.attention
q, k, v = (torch.randn(BATCH, HEADS, LENGTH, DIM, device=DEVICE) for _ in range(3))


def relative_bias(score, b, h, q_idx, kv_idx):  # score_mod: each score lowered by 0.05 per position apart
    return score - 0.05 * (q_idx - kv_idx)


def causal(b, h, q_idx, kv_idx):  # mask_mod: a query sees itself and the keys before it
    return q_idx >= kv_idx


block_mask = create_block_mask(causal, B=None, H=None, Q_LEN=LENGTH, KV_LEN=LENGTH, device=DEVICE)
flex = torch.compile(flex_attention)


def attention_flex(q, k, v):
    return flex(q, k, v, score_mod=relative_bias, block_mask=block_mask)


def attention_unfused(q, k, v):  # the same attention written out: it materialises the scores
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    i = torch.arange(q.shape[-2], device=q.device)
    scores = scores - 0.05 * (i[:, None] - i[None, :])
    scores = scores.masked_fill(i[:, None] < i[None, :], float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


position = torch.arange(LENGTH, device=DEVICE)
sdpa_mask = (-0.05 * (position[:, None] - position[None, :])).masked_fill(position[:, None] < position[None, :],
                                                                         float("-inf"))  # the bias and the mask


def attention_sdpa(q, k, v):  # the call to reach for first: one fused call where PyTorch has a kernel for it
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=sdpa_mask)


attention_traffic = cu.fusion.trace_traffic(attention_unfused, q, k, v)  # op by op, as eager runs it
attention_bytes = cu.fusion.attention_bytes(q, k, v, block_mask)  # one score matrix, and the blocked kernel's bytes
attention_bytes

# %%
unfused_compiled = torch.compile(attention_unfused)
unfused_compiled(q, k, v)  # compiled here, so that the capture below holds FlexAttention's module alone
attention_calls = {"unfused attention": functools.partial(attention_unfused, q, k, v),
                   "unfused attention, compiled": functools.partial(unfused_compiled, q, k, v),
                   "FlexAttention, compiled": functools.partial(attention_flex, q, k, v),
                   "F.scaled_dot_product_attention": functools.partial(attention_sdpa, q, k, v)}
if "jax" in FW:
    @jax.jit
    def attention_jax(q, k, v):  # jax.nn wants (batch, length, heads, dim)
        i = jnp.arange(q.shape[1])
        return jax.nn.dot_product_attention(q, k, v, bias=-0.05 * (i[:, None] - i[None, :]), is_causal=True)
    qkv_jax = [jnp.asarray(t.cpu().numpy().transpose(0, 2, 1, 3)) for t in (q, k, v)]
    attention_calls["jax.nn.dot_product_attention, jit"] = functools.partial(attention_jax, *qkv_jax)
with cu.compiled.capture_inductor_code() as flex_code:  # the first round compiles FlexAttention
    attention_runs = cu.timing.interleaved(attention_calls, rounds=4, min_time=0.8)
peaks = {name: cu.memory.torch_peak_bytes(attention_calls[name], DEVICE)
         for name in ("unfused attention", "FlexAttention, compiled")}
if "jax" in FW:  # XLA's buffers as it planned them, against one score matrix
    xla_temp = cu.memory.jax_memory(attention_jax, *qkv_jax)["temp"]
    print(f"jax.nn.dot_product_attention: XLA planned {cu.display.format_bytes(xla_temp)} of temporary buffers, "
          f"{xla_temp / attention_bytes.scores:.1f} score matrices")
cu.plotting.time_bars(attention_runs, title=f"Causal attention with a position bias, length {LENGTH}")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
attention_reference = attention_unfused(q, k, v)
atol = {fw: cu.fusion.matmul_tolerance(PLAN, fw, 1e-5) for fw in FW}  # the device's float32 matmul precision
for name, fn in (("FlexAttention", attention_flex), ("F.scaled_dot_product_attention", attention_sdpa),
                 ("compiled unfused attention", unfused_compiled)):
    print(f"{name} == unfused attention (atol {atol['torch']:g}):",
          torch.allclose(fn(q, k, v), attention_reference, atol=atol["torch"]))
if "jax" in FW:
    with jax.default_matmul_precision("highest"):  # float32 matmuls on a TPU too
        got = np.asarray(attention_jax(*qkv_jax)).transpose(0, 2, 1, 3)
    print(f"jax.nn.dot_product_attention == unfused attention (atol {atol['jax']:g}):",
          bool(np.allclose(got, attention_reference.cpu().numpy(), atol=atol["jax"])))
print(f"FlexAttention's generated module: {len(flex_code[-1].kernels)} kernel, "
      f"library calls {flex_code[-1].extern_calls}")
print(f"unfused attention: {attention_traffic.n_ops} eager ops moving "
      f"{cu.display.format_bytes(attention_traffic.unfused_bytes)} (computed); block pairs the mask leaves to the "
      f"blocked kernel: {attention_bytes.visited} of {attention_bytes.blocks}")

# %%
flex_gain = cu.intervals.speedup(attention_runs["unfused attention"], attention_runs["FlexAttention, compiled"])
flex_vs_compiled = cu.intervals.speedup(attention_runs["unfused attention, compiled"],
                                        attention_runs["FlexAttention, compiled"])
sdpa_gain = cu.intervals.speedup(attention_runs["unfused attention"], attention_runs["F.scaled_dot_product_attention"])
if None in peaks.values():
    v_flex = cu.fusion.findings.ATTENTION.not_tested(
        "this operating system gives no peak memory of a call (Linux /proc is needed)")
else:  # the bound of both peaks: one score matrix (computed)
    v_flex = cu.fusion.findings.ATTENTION.score(
        cu.findings.below("FlexAttention's peak memory", peaks["FlexAttention, compiled"], attention_bytes.scores,
                          unit="B"),
        cu.findings.above("unfused attention's peak memory", peaks["unfused attention"], attention_bytes.scores,
                          unit="B"),
        cu.findings.faster("FlexAttention over unfused attention", flex_gain),
        cu.findings.faster("FlexAttention over unfused attention compiled", flex_vs_compiled))
v_flex

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_flex.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## Exercises
#
# Each exercise has a cell for your answer (`answer = None` until you fill it in), a hidden solution, and a check
# that scores your answer against this run.
#
# **1. Fuse a softmax.** Write `softmax(x) = exp(x - max(x)) / sum(exp(x - max(x)))` over the last axis with basic
# PyTorch ops, as a function. Count its bytes with `cu.fusion.trace_traffic`, compile it, and count Inductor's
# kernels: does a reduction fuse into one kernel?
#
# <details><summary>Hint</summary>
#
# `x.amax(dim=-1, keepdim=True)` and `.sum(dim=-1, keepdim=True)` are the reductions. Capture the generated code
# with `with cu.compiled.capture_inductor_code() as code:` around the first call; `code[0].kernels` lists them.
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
# **2. Predict, then measure: page faults of the eager polynomial.** Every fresh output of 32 MiB or more comes from
# `mmap`, and each of its 4 KiB pages faults once when first written. **Before running the next cells**, predict
# how many page faults one call of the *eager* polynomial chain (`poly["torch"]`, section 5) takes on `x`, and put
# the number in `answer`. The check scores it against the count measured below (within 25%).

# %%
answer = None  # your prediction here: page faults per call of the eager polynomial chain on x

# %% jupyter={"source_hidden": true} tags=["solution"]
# Each eager op writes one fresh output as large as x; each page of it faults once.
answer = poly_traffic.n_ops * (x_t.nbytes // 4096)
print(f"{poly_traffic.n_ops} ops x {x_t.nbytes // 4096} pages = {answer} page faults predicted")

# %%
poly_faults = cu.memory.page_faults(poly["torch"], x_t, b_t)
print(f"eager polynomial chain on {cu.display.format_bytes(x_t.nbytes)}: {poly_faults:.0f} page faults per call measured")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("02.2", answer, measured=poly_faults, pages=x_t.nbytes // 4096)

# %% [markdown]
# **3. A cheaper `tanh`, and why it is not the default.** Inductor can compute `tanh(v)` on a CPU as
# `2 / (1 + exp(-2v)) - 1` (`torch._inductor.config.cpp.use_decompose_tanh`). It is off by default for accuracy.
# Compile `chain_into` again under that setting and time it against section 3's `chain_into` in alternating
# rounds. Then measure the largest *relative* error of that formula against `torch.tanh` for `|v| <= 1e-3`, in
# float32, and put it in `answer`. (On a GPU the setting does nothing: Triton has its own `tanh`.)
#
# <details><summary>Hint</summary>
#
# The setting is read when Inductor generates code, at the first call: define a new function and call its compiled
# version inside `with inductor_config.patch({"cpp.use_decompose_tanh": True}):`. Near 0, `exp(-2v)` is close to 1
# and `2 / (1 + ...) - 1` subtracts two nearly equal numbers.
# </details>

# %%
answer = None  # your answer here: the max relative error of the exp-based tanh for |v| <= 1e-3

# %% jupyter={"source_hidden": true} tags=["solution"]
def chain_into_fast(x, bias, out):  # a new function: compiled under the setting below
    return out.copy_(chain_t(x, bias))


with inductor_config.patch({"cpp.use_decompose_tanh": True}):
    fast_into = torch.compile(chain_into_fast)
    fast_into(x_t, b_t, torch.empty_like(x_t))
    small_v = torch.linspace(-1e-3, 1e-3, 20001)
    small_v = small_v[small_v != 0]
    tanh_fast = torch.compile(lambda v: torch.tanh(v))(small_v)
fast_runs = cu.timing.interleaved({"default tanh": into["torch"],
                                   "exp-based tanh": functools.partial(fast_into, x_t, b_t, torch.empty_like(x_t))},
                                  rounds=4, min_time=0.4)
print("exp-based tanh over default:", cu.intervals.speedup(fast_runs["default tanh"], fast_runs["exp-based tanh"]))
exact = torch.tanh(small_v.double())
answer = ((tanh_fast.double() - exact).abs() / exact.abs()).max().item()
print(f"tanh max relative error near 0: {answer:.1e}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("02.3", answer)

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## Summary

# %%
summary_rows = [
    (f"memory roof ({machine.bandwidth_probe})", machine.bandwidth / 1e9, "GB/s", "machine figures, best probe"),
    (f"compute roof ({machine.flops_probe})", machine.peak_flops / 1e9, "GFLOP/s", "machine figures, best probe"),
    ("torch's own matmul probe", torch_probe / 1e9, "GFLOP/s", "machine figures"),
    ("page faults of a fresh output", 1e6 * machine.fault_seconds(2**20), "µs per MiB", "machine figures"),
    ("eager ops in the chain", traffic.n_ops, "kernels", "counted by trace_traffic"),
    ("bytes unfused / fused", traffic.ratio, "x", "computed; a ceiling only at equal bandwidth"),
    *[(f"{cu.fusion.FUSED[fw]} over {cu.fusion.EAGER[fw]}", gains[fw].ratio, "x", gains[fw].interval) for fw in FW],
    *[(f"{cu.fusion.FUSED[fw]}, % of bandwidth", 100 * chain_table[cu.fusion.FUSED[fw]].fraction_of_bandwidth, "%",
       "fraction of memory bandwidth (not busy time)") for fw in FW],
    ("torch.add: out= over a fresh output", add_gain.ratio, "x", add_gain.interval),
    *[(f"{cu.fusion.INTO[fw]} over {cu.fusion.FUSED[fw]}", into_gains[fw].ratio, "x", into_gains[fw].interval)
      for fw in FW],
    *[(f"{fw}: polynomial into a buffer over its copy", vs_copy[fw].ratio, "x", vs_copy[fw].interval) for fw in FW],
    ("largest matmul / torch's probe", to_probe, "x", f"n={MM_SIZES[-1]}, the same size"),
    *[(f"{fw} fused epilogue over eager", g.ratio, "x", g.interval) for fw, g in epilogue_gains.items()],
    ("graphs with a NumPy op inside", legacy_check.graph_count, "graphs", "Dynamo, unregistered"),
    ("graphs once registered as a custom op", registered_check.graph_count, "graphs", "Dynamo"),
    ("FlexAttention over unfused attention", flex_gain.ratio, "x", flex_gain.interval),
    ("FlexAttention over unfused attention compiled", flex_vs_compiled.ratio, "x", flex_vs_compiled.interval),
    ("F.scaled_dot_product_attention over unfused attention", sdpa_gain.ratio, "x", sdpa_gain.interval),
    *[(f"{name}, peak memory", value / 2**20, "MiB", "process peak RSS or CUDA allocator")
      for name, value in peaks.items() if value is not None],
]
cu.notebook.summary_table("02_operator_fusion", summary_rows)

# %% [markdown]
# **What to remember**
# - Predict before you measure: count the bytes a chain moves unfused and fused; with the measured bandwidth that
#   is the time to expect. Their ratio is the most fusion gives only when both runs stream at the same bandwidth.
# - A fused kernel off its roof has another limit: fresh output pages (preallocate with `out=`, donate with
#   `donate_argnums`, assign into a `tf.Variable`) or its arithmetic (a `tanh`). Remove them and it runs like a copy.
# - Fusion does nothing for the matmul itself; it removes the epilogue's round trips, and in attention the score
#   matrix. Opaque Python/NumPy calls break fusion: register them as custom ops and count graph breaks.
#
# **Next**: `03_mixed_precision` changes the number format. bf16 halves the bytes per element, so a memory-bound
# kernel *should* take half the time: notebook 03 puts bf16 kernels on this roofline and measures whether it does.

# %%
print(cu.notebook.last_verified())

# %% [markdown] course={"lead": false, "optional": true} slideshow={"slide_type": "slide"}
# ## Going further
#
# Optional reading, measured like the rest: what busy time says about these kernels, the vector units' own roof,
# the speed-up against tensor size, and an epilogue fused into the matmul itself.
#
# ### Busy time from a profiler trace
#
# A CPU has no `nvidia-smi`, but a profiler trace gives busy time: the share of the calls' time in which a
# generated kernel was running. `cu.profile.capture` records three calls of each compiled chain (open the saved
# trace at https://ui.perfetto.dev); Inductor's C++ kernels appear in it when compiled with
# `cpp.enable_kernel_profile`.
#
# **Prediction** (the seed's): compiled frameworks keep the hardware busy 80%+ of the time.

# %%
# NBVAL_CHECK_OUTPUT
def chain_profiled(x, bias):  # a new function: Dynamo caches compiled code per function
    return chain_t(x, bias)


with inductor_config.patch({"cpp.enable_kernel_profile": True}):  # read when Inductor generates the code
    profiled_t = torch.compile(chain_profiled)
    profiled_t(x_t, b_t)
with cu.env.silenced_stderr():  # the profilers log their start and stop from C++
    traced = {"torch.compile": ("torch", cu.profile.capture("torch", profiled_t, x_t, b_t, name="02_chain"),
                                fresh_code.kernels)}
    for fw in sorted(set(FW) - {"torch"}):
        name = cu.fusion.FUSED[fw]
        traced[name] = (fw, cu.profile.capture(fw, fused[fw], *data[fw], name="02_chain"),
                        [n for n, _ in hlo[name].fusions])
for name, (fw, trace, expected) in traced.items():
    print(f"{name}: kernels in the trace == kernels in the compiler's output: "
          f"{sorted(cu.fusion.trace_kernels(trace, fw)) == sorted(expected)}")

# %%
busy = {name: cu.fusion.kernel_busy_share(trace, fw) for name, (fw, trace, _) in traced.items()}
v_busy = cu.fusion.findings.BUSY.not_tested(
    "one multi-millisecond kernel per call keeps a trace busy whatever the kernel does, so this run cannot fail "
    "the seed's 80%+", busy=", ".join(f"{name} {100 * share:.1f}%" for name, share in busy.items()),
    shares=", ".join(f"{r.name} {cu.display.percent(r.fraction_of_bandwidth)}" for r in chain_table.rows if r.fused))
v_busy

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_busy.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The vector units' own roof
#
# Section 5 found `tanh` costing time on top of the bytes. An elementwise kernel has a roof of its own: its
# arithmetic at the rate the vector units sustain, which belongs to the implementation as much as to the chip
# (Inductor calls SLEEF's `tanh`, accurate to about 1 ulp; XLA inlines a cheaper rational approximation).
# `cu.fusion.measure_vector_roof` times each framework's compiled multiply-adds and `tanh` on tensors that stay in
# cache, at two sizes: the slope is the rate, the intercept what a call costs besides its work.
#
# **Prediction**: each framework's chain with `tanh`, into a reused buffer, takes at least 0.8x its roof (the
# larger of its arithmetic at those rates and its bytes) and at most 1.25x the two added up.

# %%
vectors = {fw: cu.fusion.measure_vector_roof(fw) for fw in FW}  # each framework's own code, in cache
per_element = (traffic.flops - x_np.size) / x_np.size  # the chain's 10 multiplies and adds per element; tanh apart
limit_args = dict(elements=x_np.size, flops=per_element, tanh=1, memory_seconds=traffic.fused_bytes / machine.bandwidth)
limits = cu.fusion.chain_roofs(vectors, **limit_args)
cu.fusion.vector_roof_table(vectors, **limit_args, call_cost=machine.call_cost)

# %%
to_roof = {fw: roof_runs[cu.fusion.INTO[fw]].median / limits[fw].seconds for fw in FW}
to_serial = {fw: roof_runs[cu.fusion.INTO[fw]].median / limits[fw].serial for fw in FW}
v_vector = cu.fusion.findings.VECTOR_ROOF.score(
    *[cu.findings.above(f"{cu.fusion.INTO[fw]}, time / its roof ({limits[fw].limit})", to_roof[fw], 0.8) for fw in FW],
    *[cu.findings.below(f"{cu.fusion.INTO[fw]}, time / its parts added up", to_serial[fw], 1.25) for fw in FW])
v_vector

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_vector.prose()

# %% [markdown]
# Where the table's limit reads *arithmetic*, the chain is compute-bound: with a transcendental, an elementwise
# chain can be, on a CPU, and there fusion's byte savings stop paying. The fit's intercept is what a call on those
# in-cache sizes costs besides its work, its parallel loop's threads included; the machine figures' compiled call
# cost is a compiled `x + 1` on 16 elements. They time different calls; where this notebook needs the fixed cost of
# a compiled call, it uses the machine figures'.

# %%
cu.fusion.roofline_with_vector_roof(machine.best, vectors, [r.point() for r in chain_table.rows if r.fused],
                                    flops=per_element, tanh=1,
                                    title="The chain with tanh on the roofline, under each framework's vector roof")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Speed-up against size
#
# For tiny tensors every eager op costs its dispatch overhead whatever its size, so fusing 11 launches into 1 can
# gain more than the bytes ratio; a compiled call has a fixed cost of its own. Each size gets its own static
# compile: reusing one `torch.compile` object would, at its second shape, recompile it shape-generic.
#
# **Prediction**: fusion gains at least as much at the smallest size (overhead) as at the largest, in every
# framework.

# %%
SWEEP_ROWS = sizes.sweep_rows


def compile_static(fw, fn):
    """Each framework's compile call; torch's static (dynamic=False), so every size gets a graph of its own."""
    if fw == "torch":
        return torch.compile(fn, dynamic=False)
    if fw == "jax":
        return jax.jit(fn)
    return tf.function(fn, jit_compile=True)


def first_rows(fw, rows):
    """The chain's inputs cut to their first `rows` rows."""
    x, bias = data[fw]
    return x[:rows], bias


size_runs = cu.graphs.size_sweep({fw: cu.fusion.chain(fw) for fw in FW}, compile_static, SWEEP_ROWS, first_rows)
sweep = {fw: [*v, gains[fw].ratio] for fw, v in size_runs.speedups.items()}  # the full size: section 2's
sweep_bytes = [rows * COLS * 4 for rows in [*SWEEP_ROWS, ROWS]]
cu.fusion.speedup_vs_size_plot(sweep_bytes, {f"{fw} fused / eager": v for fw, v in sweep.items()}, predicted=traffic.ratio)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
for fw, worst in size_runs.worst.items():
    print(f"{fw}: fused == eager (atol 1e-4) at every size: {worst < 1e-4}; "
          f"one graph per size: {size_runs.compiles[fw] == len(SWEEP_ROWS)}")
shapes = [(x_t, b_t)] + [(x_t[:rows], b_t) for rows in SWEEP_ROWS]
print(f"one torch.compile object over {len(shapes)} shapes compiles {cu.graphs.count_compiles('torch', chain_t, shapes)} "
      f"graphs; with dynamic=False {cu.graphs.count_compiles('torch', chain_t, shapes, dynamic=False)}")

# %%
small, full = cu.display.format_bytes(sweep_bytes[0]), cu.display.format_bytes(sweep_bytes[-1])
v_size = cu.fusion.findings.SIZES.score(
    *[cu.findings.above(f"{fw} fused over eager at {small}", v[0], v[-1]) for fw, v in sweep.items()],  # bound: at full
    full=full, n_ops=traffic.n_ops, smallest="; ".join(
        f"{fw}'s fused call took {cu.display.format_time(size_runs.compiled[fw][0].median)} and its eager ops "
        f"{cu.display.format_time(size_runs.eager[fw][0].median)}" for fw in FW))
v_size

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_size.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### An epilogue inside the matmul: max-autotune on a CPU
#
# Inductor's C++ GEMM template needs weights it can pack once, so it applies to frozen parameters in inference:
# `torch._inductor.config.freezing = True` under `torch.no_grad()`. With `mode="max-autotune"` Inductor then
# benchmarks the template against the library call and, where the template wins, writes the epilogue into it.
# Which one wins is a timing, made at compile time on this machine. Read the line below: a module that calls no library
# holds the matmul in Inductor's own template with the epilogue written into it, one pass over the output instead of
# two; a library call leaves the epilogue a separate generated loop. Where Inductor prints its AUTOTUNE table, it
# shows the times it compared.

# %%
class Dense(torch.nn.Module):  # a layer with its epilogue: linear, then the chain
    def __init__(self, n):
        super().__init__()
        self.linear = torch.nn.Linear(n, n)

    def forward(self, x):
        return chain_t(self.linear(x), self.linear.bias)


dense, x_dense = Dense(256).eval(), torch.randn(256, 256)
with torch.no_grad(), inductor_config.patch({"freezing": True}), cu.compiled.capture_inductor_code() as tuned_code:
    tuned = torch.compile(dense, mode="max-autotune")
    tuned_out = tuned(x_dense)
    assert torch.allclose(tuned_out, dense(x_dense), atol=1e-4)
tuned_module = tuned_code[-1]
print(f"library calls {tuned_module.extern_calls + tuned_module.fallback_ops}; generated kernels {tuned_module.kernels}")
