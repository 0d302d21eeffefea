# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 4
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
# # 03 · Mixed precision: what do fp16 and bf16 buy, and what do they break?
#
# Half-size numbers halve the bytes moved and, on hardware with the right units, multiply the FLOP/s. They
# also round harder, overflow sooner and flush small values to zero. This notebook looks at the numbers
# first and at the speed second.
#
# **You will be able to**
# - read a format's range and precision from `finfo` and predict what it does to gradients and sums;
# - write the mixed-precision recipe in PyTorch (`torch.autocast` + `torch.amp.GradScaler`), Keras 3 (a dtype
#   policy) and JAX (fp32 master weights, an explicit cast), and check the dtypes yourself;
# - tell from the CPU flags (or the GPU) how much faster bf16 can be, and measure it;
# - account for training memory per parameter and cut activation memory with checkpointing.
#
# **Time budget** (from the notebook's metadata, not measured here): 3 minutes at ci size on a 2-core CPU, which CI
# enforces; 4 at laptop size; 55 minutes as a workshop. **Accelerators**: every section runs on a CPU. With a
# CUDA GPU the torch parts run on it, and the fp8 training cell in "Going further" runs where the GPU has fp8 units.
# JAX and TensorFlow are optional: without one, its part is skipped with one sentence.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/03_mixed_precision.ipynb)
#
# On a Colab TPU runtime there is no TensorFlow: its parts say so in one sentence and are skipped.

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
import copy

import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import display
from torch.utils.checkpoint import checkpoint

import course_utils as cu

report = cu.notebook.setup()
TORCH = cu.precision.torch_choices(cu.devices.plan(cu.devices.describe()))  # from this runtime's device plan
DEVICE = torch.device(TORCH.device)  # a TPU runtime's torch runs on the host CPU, sized and threaded as a CPU
torch.set_num_threads(TORCH.threads)
AMP, AMP_NAME = getattr(torch, TORCH.amp), TORCH.amp  # the fast 16-bit format: fp16 on a T4 (no bf16 units)
NATIVE_16 = TORCH.native  # units for it here (tensor cores, AVX512-BF16, AMX); else it is emulated
FLAGS = cu.env.simd_flags()
HAS_JAX, HAS_TF = cu.env.available("jax"), cu.env.available("tensorflow")
report

# %% tags=["device"]
sizes = cu.env.sizes(
    quick=dict(ci=0.1, cpu=0.2),  # seconds per timed workload and round
    fp32_steps=dict(smoke=60, ci=400, cpu=400, gpu=500),  # section 2's fp32 run (section 6's where 16-bit has units)
    fp16_steps=dict(ci=120, cpu=200),  # section 2's GradScaler run
    matmul_n=dict(ci=512, cpu=1024, gpu=4096, tpu=1024),  # section 5's square matmul, where 16-bit has units
    matmul_n_emulated=dict(ci=128, cpu=256, gpu=4096, tpu=256),  # the same where 16-bit is emulated
    stream_bytes=dict(ci=64 * 2**20, cpu=128 * 2**20, gpu=2**30, tpu=256 * 2**20),  # a STREAM fp32 array, at least
    stream_cap=dict(ci=256 * 2**20, cpu=2**30, gpu=2**32, tpu=2**30),  # ... and at most (it is 4x the cache)
    step_widths=dict(ci=(256, 1024, 1024, 10), cpu=(256, 2048, 2048, 10), gpu=(1024, 8192, 8192, 10),
                     tpu=(256, 2048, 2048, 10)),  # section 5's MLP step, where 16-bit has units
    step_batch=dict(ci=256, cpu=512, gpu=4096, tpu=512),  # its batch
    fresh_processes=dict(smoke=2, ci=3, cpu=3),  # fresh processes that time the step again
    remat=dict(ci=(128, 6, 2048), cpu=(128, 8, 4096), gpu=(1024, 8, 4096),
               tpu=(128, 8, 8192)),  # section 7's checkpointed blocks: width, blocks, batch
)
QUICK = sizes.quick
sizes

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 1. Formats: where the bits go
#
# A float is sign × 2^exponent × 1.mantissa. **Exponent bits buy range, mantissa bits buy precision.**
# fp16 spends 5 bits on the exponent and 10 on the mantissa; bf16 keeps fp32's 8 exponent bits and only 7
# mantissa bits; TF32 (a tensor-core mode, not a storage type) is fp32's exponent with fp16's mantissa. The table
# reads each format's limits from `finfo`: definitions to look up, not predictions to test.

# %%
table = cu.precision.format_table()
table

# %% slideshow={"slide_type": "subslide"}
cu.precision.bit_layout_plot()

# %% slideshow={"slide_type": "subslide"}
cu.precision.rounding_error_plot()

# %%
# NBVAL_CHECK_OUTPUT
fp32, fp16, bf16 = table["fp32"], table["fp16"], table["bf16"]
print("bf16 range == fp32 range (min normal equal, max within 1%):",
      bf16.min_normal == fp32.min_normal and bf16.max / fp32.max > 0.99)
print("bf16 eps / fp16 eps:", bf16.eps / fp16.eps)
print("fp16 max:", fp16.max, "| fp16 smallest subnormal == 2**-24:", fp16.min_subnormal == 2.0**-24)
print("in fp16, 2**-25 rounds to 0 and 1.01 * 2**-25 to 2**-24:",
      float(cu.precision.round_to(2.0**-25, "float16")) == 0.0,
      float(cu.precision.round_to(1.01 * 2.0**-25, "float16")) == 2.0**-24)
print("1 + 2**-8 in bf16 == 1:", float(cu.precision.round_to(1 + 2.0**-8, "bfloat16")) == 1.0)

# %% [markdown] slideshow={"slide_type": "skip"}
# From `finfo`: fp16 keeps 3.3 decimal digits but tops out at 65,504, and its smallest subnormal is 2^-24 (5.96e-08):
# round-to-nearest sends everything at or below half of it, 2^-25, to zero. bf16 keeps only 2.4 digits but reaches
# 3.39e+38, like fp32 (3.40e+38). In the plot each format has a flat floor of eps/2 in its normal range (bf16
# 3.9e-03, fp16 4.9e-04), a rising error through its subnormals, 1.0 where values flush to zero and a dotted wall
# where they overflow. The fp8 formats (eps 0.125 and 0.25) work only with a per-tensor scale: see Going further.

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 2. fp16 gradients underflow; loss scaling rescues them
#
# Gradients get small as a model learns, and fp16 has no range below 2^-24. The recipe below is the whole AMP
# training step: autocast around the forward pass, a `GradScaler` around backward and the optimizer. We first
# train the course's MLP in fp32 with it (autocast and scaler switched off), then compute the gradients of every
# layer's output once in fp32 and once under fp16 autocast.
#
# **Prediction**: more than 5% of the activation gradients lie at or below 2^-25, where fp16 rounds them to zero;
# multiplying the loss by 2^14 before `backward()` rescues at least three quarters of them and overflows none.

# %%
def train_step(model, opt, scaler, xb, yb, *, dtype, multiplier=1.0, clip=None):
    with torch.autocast(DEVICE.type, dtype=dtype, enabled=dtype != torch.float32):
        loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss * multiplier).backward()  # the scaled loss lifts small gradients into fp16's range
    scaler.unscale_(opt)  # true-size gradients from here on: clip these, not the scaled ones
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    scaler.step(opt)  # skipped when a gradient holds an inf or nan
    scaler.update()  # halves the scale after an overflow, doubles it after growth_interval clean steps
    return loss


# %% slideshow={"slide_type": "subslide"}
SIZES = (32, 128, 128, 128, 10)
x_all, y_all = cu.data.classification(10_240, seed=0)
x_train, y_train = torch.from_numpy(x_all[:8192]).to(DEVICE), torch.from_numpy(y_all[:8192]).to(DEVICE)
x_test, y_test = torch.from_numpy(x_all[8192:]).to(DEVICE), torch.from_numpy(y_all[8192:]).to(DEVICE)
FP32_STEPS = sizes.fp32_steps
BATCH, STEPS = (256, FP32_STEPS) if NATIVE_16 else (64, 150)  # 16-bit runs: fewer steps where 16-bit is emulated

model_fp32 = cu.models.torch_mlp(SIZES, seed=0).to(DEVICE)
no_scaling = torch.amp.GradScaler(DEVICE.type, enabled=False)  # fp32 and bf16 need no loss scaling
with cu.precision.amax_history(model_fp32) as amax:  # each layer's amax per step, read in "Going further" (fp8)
    run_fp32 = cu.precision.train(train_step, model_fp32, torch.optim.Adam(model_fp32.parameters(), lr=3e-3),
                                  no_scaling, x_train, y_train, steps=FP32_STEPS, batch=256, dtype=torch.float32)

LOSS_SCALE = 2.0**14
xb, yb = x_train[:2048], y_train[:2048]
g32 = cu.precision.torch_activation_grads(model_fp32, xb, yb)
g16 = cu.precision.torch_activation_grads(model_fp32, xb, yb, dtype=torch.float16)
g16_scaled = cu.precision.torch_activation_grads(model_fp32, xb, yb, dtype=torch.float16, scale=LOSS_SCALE)
plain, scaled = cu.precision.underflow_stats(g32, g16), cu.precision.underflow_stats(g32, g16_scaled)
cu.precision.gradient_histogram_plot(g32, scale=LOSS_SCALE)

# %%
# NBVAL_CHECK_OUTPUT
print("fp16 without scaling flushes more than 5% of the activation gradients:", plain.flushed_fraction > 0.05)
print("loss scale 2**14 flushes under a quarter as many:", scaled.flushed < plain.flushed / 4)
print("loss scale 2**14 overflows none:", scaled.overflowed == 0)

# %%
v_underflow = cu.precision.findings.UNDERFLOW.score(
    cu.findings.above(f"activation gradients fp16 flushed without scaling (of {plain.nonzero:,} nonzero)",
                      plain.flushed_fraction, 0.05, unit="%"),
    cu.findings.below("share of those still flushed with the loss x 2^14", scaled.flushed / max(plain.flushed, 1),
                      0.25, unit="%"),
    cu.findings.equal("activation gradients overflowed with the loss x 2^14", scaled.overflowed, 0),
    steps=FP32_STEPS, final_loss=f"{run_fp32.final_loss():.3f}", scale_log2=f"{np.log2(LOSS_SCALE):g}",
    predicted=cu.display.percent(cu.precision.simulate_cast(g32).flushed_fraction, 1))
v_underflow

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_underflow.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The dynamic loss scale of `torch.amp.GradScaler`
# A fixed scale is a guess. `GradScaler` starts high and checks the gradients after every backward pass: an inf
# or nan **skips the optimizer step** and halves the scale; `growth_interval` clean steps double it (2000 by
# default: a skipped step costs a forward and a backward pass). We start it deliberately too high (2^24). The weight gradients are computed in fp16 before they reach the fp32 `.grad`, so
# they must fit below 65504 *after* scaling: the ceiling is log2(65504 / max |weight gradient|), computed per step.
#
# **Prediction**: the first steps overflow and are skipped; after that, no step is skipped while the scale lies below
# the computed ceiling's median, and the scale's highest value lies between 1.5 powers of two below and half a power
# above that median. (Exercise 1 computes where the *activation* gradients would overflow.)

# %%
GROWTH = 20
model_fp16 = cu.models.torch_mlp(SIZES, seed=0).to(DEVICE)
scaler = torch.amp.GradScaler(DEVICE.type, init_scale=2.0**24, growth_interval=GROWTH)
run_fp16 = cu.precision.train(train_step, model_fp16, torch.optim.Adam(model_fp16.parameters(), lr=3e-3), scaler,
                              x_train, y_train, steps=sizes.fp16_steps, batch=BATCH, dtype=torch.float16)
trace = cu.precision.scale_trace(run_fp16.scale, run_fp16.skipped, run_fp16.grad_max)
with np.errstate(divide="ignore"):
    ceiling = np.log2(fp16.max / np.asarray(run_fp16.grad_max))  # -inf on the steps whose gradients overflowed
cu.precision.scale_trace_plot(run_fp16.scale, run_fp16.skipped, ceiling=np.where(np.isfinite(ceiling), ceiling, np.nan))

# %%
# NBVAL_CHECK_OUTPUT
print("first step overflowed and was skipped:", run_fp16.skipped[0])
print("scale grew again after clean steps:", bool(np.any(np.diff(run_fp16.scale) > 0)))
print("all losses finite:", bool(np.all(np.isfinite(run_fp16.loss))))

# %%
v_scale = cu.precision.findings.LOSS_SCALE.score(
    cu.findings.true("the first step overflowed and was skipped", trace.first_skipped),
    cu.findings.within("the ceiling's median minus the settled scale's top, in powers of two", trace.gap, -0.5, 1.5,
                       unit=""),
    cu.findings.equal("steps skipped with the scale below the ceiling's median", len(trace.skipped_below), 0),
    start=f"{trace.start:.0f}", skipped=trace.skipped, steps=trace.steps, settled_low=f"{trace.settled_low:.0f}",
    settled_high=f"{trace.settled_high:.0f}", ceiling_median=f"{trace.ceiling_median:.1f}",
    below_steps=", ".join(f"step {i}" for i in trace.skipped_below) or "none")
v_scale

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_scale.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 3. bf16: no scaling needed, but long sums go wrong
#
# bf16 has fp32's exponent, so gradients do not underflow and no loss scaling is needed. Its 8-bit significand is
# the catch: once a running sum is 2^8 times bigger than the next term, adding the term changes nothing. Matrix
# units therefore multiply bf16 inputs but **accumulate in fp32**.
#
# **Prediction**: a bf16 running sum of values near 0.5 stalls (over 50% off at 10^4 terms), while an fp32
# accumulator fed the same bf16 inputs stays near fp32's precision, and rounding its result once costs at most eps/2.

# %%
lengths = np.unique(np.logspace(1, 6, 21).astype(int))
acc_err = cu.precision.accumulation_error(lengths)
cu.precision.accumulation_plot(lengths, acc_err)

# %%
# NBVAL_CHECK_OUTPUT
ones = torch.ones(1000, dtype=torch.bfloat16)
naive = torch.tensor(0.0, dtype=torch.bfloat16)
for v in ones[:300]:
    naive = naive + v
at_1e4 = {k: float(np.interp(1e4, lengths, v)) for k, v in acc_err.items()}
print("bf16 running sum of 300 ones:", naive.item())
print("torch.sum of 1000 bf16 ones (fp32 accumulation inside):", ones.sum().item())
print("bf16 accumulator, 10^4 terms, error > 50%:", at_1e4["bf16 accumulator"] > 0.5)
print("fp32 accumulator error < 1e-5 at every length:", bool(acc_err["fp32 accumulator"].max() < 1e-5))
print("bf16 result error <= bf16 eps/2:", bool(acc_err["fp32 accumulator, bf16 result"].max() <= bf16.unit_roundoff))

# %%
v_accum = cu.precision.findings.ACCUMULATION.score(
    cu.findings.above("bf16 accumulator's error at 10^4 terms", at_1e4["bf16 accumulator"], 0.5, unit="%"),
    cu.findings.below("fp32 accumulator's largest error", acc_err["fp32 accumulator"].max(), 1e-5, unit=""),
    cu.findings.below("fp32 sum rounded once to bf16, largest error", acc_err["fp32 accumulator, bf16 result"].max(),
                      bf16.unit_roundoff, unit=""),
    torch_sum=f"{ones.sum().item():g}", loop_sum=f"{naive.item():g}")
v_accum

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_accum.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 4. The recipe in three frameworks, with its dtypes checked
#
# Each framework keeps **fp32 master weights** and computes matmuls in 16 bits; the loss and the weight gradients
# stay fp32. The device decides torch's dtype: bf16 on CPUs and on GPUs since Ampere, fp16 with a `GradScaler` on
# older GPUs.
#
# The frameworks differ in who casts: autocast decides per operation, Keras per layer (the policy's compute dtype),
# and in JAX you decide, in the function you write.
#
# **Prediction**: weights fp32, layer outputs 16-bit, loss fp32 and gradients fp32 in every framework present; their
# losses on the same batch agree within 0.05.

# %%
xs, ys = x_all[:64], y_all[:64]

model = cu.models.torch_mlp(seed=0).to(DEVICE)
with cu.precision.watch_dtypes(model) as seen:  # records the dtype of every Linear output
    with torch.autocast(DEVICE.type, dtype=AMP):
        loss = F.cross_entropy(model(x_train[:64]), y_train[:64])
    loss.backward()  # outside autocast: each gradient lands in its weight's fp32 .grad
dtypes = {"torch": seen.report(loss)}
cu.precision.dtype_summary(dtypes["torch"])

# %% [markdown]
# Autocast decides per operation, from a list per device. Which list is yours? Ask it:

# %% tags=["device"]
h_in, w = torch.randn(8, 16, device=DEVICE), torch.randn(16, 16, device=DEVICE)
labels = torch.zeros(8, dtype=torch.long, device=DEVICE)
with torch.autocast(DEVICE.type, dtype=AMP):
    h = F.linear(h_in, w)  # autocast casts the input and the weight to 16 bits
    ops = cu.precision.op_dtypes({"linear": h, "softmax": h.softmax(-1), "layer_norm": F.layer_norm(h, (16,)),
                                  "sum": h.sum(), "exp": h.exp(), "cross_entropy": F.cross_entropy(h, labels)})
ops

# %%
# NBVAL_CHECK_OUTPUT
EXPECTED = {"weights": {"float32"}, "activations": {AMP_NAME}, "loss": {"float32"}, "gradients": {"float32"}}
print("torch autocast: weights fp32, activations in the autocast dtype, loss fp32, gradients fp32:",
      cu.precision.dtype_summary(dtypes["torch"]) == EXPECTED)
print("under autocast, linear runs in the autocast dtype and cross_entropy in fp32:",
      ops["linear"] == AMP_NAME and ops["cross_entropy"] == "float32")

# %% [markdown] slideshow={"slide_type": "skip"}
# PyTorch's documented CUDA autocast list sends softmax, layer_norm, sum, exp and cross_entropy to fp32; the CPU list
# is its own, and an op on neither of a device's lists keeps its input's dtype (a reduction may still accumulate in
# fp32 inside its kernel, as `torch.sum` did in section 3). The table above is what this device did.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Keras 3: a dtype policy
# A policy set before the layers are built gives them fp32 variables and 16-bit computation. With
# `"mixed_float16"`, `compile()` wraps the optimizer in a `LossScaleOptimizer` by itself.

# %%
# NBVAL_CHECK_OUTPUT
if cu.notebook.needs("tensorflow"):
    import keras

    keras.config.set_dtype_policy(keras.DTypePolicy("mixed_bfloat16"))  # layers built from here: bf16 compute
    kmodel = cu.models.keras_mlp(seed=0)
    keras.config.set_dtype_policy(keras.DTypePolicy("mixed_float16"))
    kmodel16 = cu.models.keras_mlp(seed=0)
    kmodel16.compile(optimizer=keras.optimizers.Adam(1e-3),
                     loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    keras.config.set_dtype_policy("float32")  # back to fp32 for whatever is built next
    dtypes["keras"] = cu.precision.keras_dtypes(kmodel, xs, ys)
    print("keras mixed_bfloat16: weights fp32, activations bf16, loss fp32, gradients fp32:",
          cu.precision.dtype_summary(dtypes["keras"]) == EXPECTED | {"activations": {"bfloat16"}})
    print("keras mixed_float16: compile() wrapped the optimizer in a LossScaleOptimizer:",
          isinstance(kmodel16.optimizer, keras.optimizers.LossScaleOptimizer))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### JAX: you write the cast
# JAX has no autocast: the optimizer keeps fp32 parameters, and the function casts them (and the input) to bf16
# for the compute. The transpose of a cast is a cast, so `jax.grad` with respect to the fp32 parameters returns
# fp32 gradients. The activation dtypes are read from the program `mixed_apply` really runs (its jaxpr).

# %%
# NBVAL_CHECK_OUTPUT
if cu.notebook.needs("jax"):
    import jax
    import jax.numpy as jnp

    params = cu.models.jax_mlp_params(seed=0)  # fp32 master weights: the optimizer updates these

    def mixed_apply(params, x):  # compute in bf16, hand back fp32
        p16 = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
        return cu.models.jax_mlp_apply(p16, x.astype(jnp.bfloat16)).astype(jnp.float32)

    dtypes["jax"] = cu.precision.jax_dtypes(mixed_apply, params, jnp.asarray(xs), jnp.asarray(ys))
    print("jax cast policy: weights fp32, activations bf16, loss fp32, gradients fp32:",
          cu.precision.dtype_summary(dtypes["jax"]) == EXPECTED | {"activations": {"bfloat16"}})

# %%
losses = {fw: float(next(iter(d["loss value"]))) for fw, d in dtypes.items()}
expected = {fw: EXPECTED | ({} if fw == "torch" else {"activations": {"bfloat16"}}) for fw in dtypes}
spread = max(losses.values()) - min(losses.values())
print("losses on the same batch:", ", ".join(f"{fw} {v:.4f}" for fw, v in losses.items()))
v_dtypes = cu.precision.findings.DTYPES.score(
    *[cu.findings.true(f"{fw}: the dtypes predicted", cu.precision.dtype_summary(d) == expected[fw])
      for fw, d in dtypes.items()],
    cu.findings.below("loss spread across the frameworks", spread, 0.05, unit=""), frameworks=len(losses))
v_dtypes

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_dtypes.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 5. Speed: how much can bf16 buy on *this* machine?
#
# bf16 is fast only where the hardware multiplies it natively: tensor cores on GPUs since Ampere, AVX512-BF16 on
# recent Xeons and EPYCs, AMX tiles on Xeons since Sapphire Rapids. The units also set a ceiling: AVX512-BF16's
# instruction does two bf16 products per fp32 lane (2x), AMX's tiles 16x by Intel's published rates. The roofs
# below were measured once for this run; a share of a roof above 100% means the roof's probe, timed at another
# moment, under-read what this machine sustains. A T4 has fp16 tensor cores and no bf16 units: there the device plan
# makes fp16 the fast format (`AMP`), and this section times fp16 where it says bf16.
#
# **Prediction**: with bf16 units, torch's bf16 matmul beats fp32 beyond the noise but by no more than the units'
# bound (printed below); without them, bf16 is slower beyond the noise.

# %%
machine = cu.machine.figures()  # the machine's roofs, measured once per run and shared by the notebooks
machine

# %%
bound = cu.precision.bf16_bound(FLAGS, DEVICE.type)
FAST = TORCH.short  # 'bf16', or 'fp16' where the plan makes fp16 the fast format
n = sizes.matmul_n if NATIVE_16 else sizes.matmul_n_emulated
a, b = torch.randn(n, n, device=DEVICE), torch.randn(n, n, device=DEVICE)
a16, b16 = a.to(AMP), b.to(AMP)
calls = {"torch fp32": lambda: a @ b, f"torch {FAST}": lambda: a16 @ b16}
if HAS_JAX:
    ja, jb = jnp.asarray(a.cpu().numpy()), jnp.asarray(b.cpu().numpy())
    ja16, jb16 = ja.astype(AMP_NAME), jb.astype(AMP_NAME)
    jmm = jax.jit(jnp.matmul)
    calls |= {"jax fp32": lambda: jmm(ja, jb), f"jax {FAST}": lambda: jmm(ja16, jb16)}
mm = cu.timing.interleaved(calls, rounds=6, min_time=6 * QUICK)
speed = cu.intervals.speedup(mm["torch fp32"], mm[f"torch {FAST}"])
jax_speed = cu.intervals.speedup(mm["jax fp32"], mm[f"jax {FAST}"]) if HAS_JAX else None
flops = {name: 2 * n**3 / m.median for name, m in mm.items()}
print(f"{FAST} units: {bound}")
print(f"torch {FAST} over fp32, n = {n}: {speed}")
print(f"torch fp32 matmul: {cu.display.format_flops(flops['torch fp32'])}, {flops['torch fp32'] / machine.peak_flops:.0%} "
      f"of this machine's compute roof ({machine.flops_probe}, measured once for the run)")
cu.precision.throughput_plot(flops, None if DEVICE.type == "cuda" else cu.precision.A100_PUBLISHED,
                             published_label="published, NVIDIA A100 datasheet (not measured)")

# %% [markdown]
# Which kernels ran? XLA's optimized HLO says what JAX compiled, and MKL and oneDNN say what they ran when asked
# (`MKL_VERBOSE=1`, `ONEDNN_VERBOSE=1`, set for a child process that runs `workers/blas_verbose.py`).

# %%
dot_operands, converts = None, 0
if HAS_JAX:
    dot = cu.compiled.hlo_summary(cu.compiled.jax_hlo(jnp.matmul, ja16, jb16))
    dot_operands, converts = dot.operand_types("dot"), dot.count("convert")
    print(f"XLA, {FAST} matmul: dot operands", dot_operands, "| convert ops:", converts, f"| jax {FAST} over fp32:",
          jax_speed)
libraries = cu.precision.library_verbose(n=256)
print(libraries.excerpt())

# %%
# NBVAL_CHECK_OUTPUT
a64, b64 = a.double(), b.double()
ref = a64 @ b64
err = {dt: ((torch.mm(a64.to(dt), b64.to(dt)).double() - ref).abs().max() / ref.abs().max()).item()
       for dt in (torch.float32, AMP)}
print("fp32 matmul error < 1e-5 of max:", err[torch.float32] < 1e-5)
print(f"{FAST} matmul error < 2e-2 of max ({FAST} inputs, fp32 accumulation):", err[AMP] < 2e-2)

# %%
v_matmul = cu.precision.findings.MATMUL.score(
    cu.precision.matmul_check(speed, bound, FAST), bound=str(bound), n=n, dtype=FAST,
    fast_rate=cu.display.format_flops(flops[f"torch {FAST}"]), fp32_rate=cu.display.format_flops(flops["torch fp32"]))
v_matmul

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_matmul.prose()

# %% [markdown] slideshow={"slide_type": "skip"}
# How to read the lines above. MKL's header (`MKL_VERBOSE oneMKL ... for <ISA>`) names the instruction-set level MKL
# dispatched to on this CPU, not the kernel SGEMM ran: AMX has no fp32 tiles, so an AMX level in the header does not
# put the fp32 matmul on AMX. oneDNN's `exec` line names the kernel the bf16 matmul ran (a `brg_matmul` ending in
# `amx` runs on AMX tiles); no oneDNN matmul line means torch ran bf16 in its own loop.
#
# On a GPU the matmuls ran in cuBLAS, and these lines are the CPU libraries'. In XLA's HLO, a dot on f32 operands
# after convert ops means XLA widened bf16 to fp32, so bf16 units sit idle. The hardware decides what is possible,
# the library what you get.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### bf16 on the roofline: half the bytes
# Below the ridge point an op is limited by bytes moved, and bf16 halves the bytes of every element whether or not
# the CPU has bf16 arithmetic. Two STREAM ops write into preallocated outputs (`out=`), in fp32 and in bf16: a
# **copy** (no arithmetic) and a **triad** `a = b + 1.5·c` (2 FLOPs per element).
#
# **Prediction**: each op runs faster in bf16 than in fp32 beyond the noise, but not beyond 2x (half the bytes at the
# same bandwidth), on any CPU.

# %%
llc = cu.env.last_level_cache_bytes()
COPY_BYTES = min(max(sizes.stream_bytes, 4 * llc), sizes.stream_cap)  # each fp32 array
s32 = [torch.full((COPY_BYTES // 4,), float(i), device=DEVICE) for i in (1, 2, 3)]
s16 = [t.to(torch.bfloat16) for t in s32]
streams = cu.timing.interleaved({
    "copy fp32": lambda: s32[0].copy_(s32[1]), "copy bf16": lambda: s16[0].copy_(s16[1]),
    "triad fp32": lambda: torch.add(s32[1], s32[2], alpha=1.5, out=s32[0]),
    "triad bf16": lambda: torch.add(s16[1], s16[2], alpha=1.5, out=s16[0])}, rounds=6, min_time=6 * QUICK)
halving = {op: cu.intervals.speedup(streams[f"{op} fp32"], streams[f"{op} bf16"]) for op in cu.precision.STREAM_OPS}
triads = [cu.precision.stream_point(f"triad {f}", streams[f"triad {f}"], COPY_BYTES) for f in ("fp32", "bf16")]
shares = {p.label: cu.roofline.share_of_roof(p, machine.best) for p in triads}
print(f"each fp32 array {cu.display.format_bytes(COPY_BYTES)} (bf16: half), last-level cache "
      f"{cu.display.format_bytes(llc) if llc else 'not reported'}; triads' share of the memory roof ("
      f"{machine.bandwidth_probe}, {cu.display.format_rate(machine.bandwidth)}): "
      + ", ".join(f"{label} {share:.0%}" for label, share in shares.items()))
cu.plotting.roofline_plot(machine.best, triads, title=f"STREAM triad in fp32 and bf16 "
                                                      f"({cu.display.format_bytes(COPY_BYTES)} fp32 arrays)")

# %%
v_halving = cu.precision.findings.HALVING.score(
    *[cu.findings.within(f"the {op}, bf16 over fp32", sp, 1.0, 2.0) for op, sp in halving.items()],
    llc=cu.display.format_bytes(llc) if llc else "its size not reported")
v_halving

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_halving.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A whole training step, and the seed's claim
# The seed article says automatic mixed precision "typically speeds up training by ~30% and saves memory". A step is
# more than matmuls: casts, elementwise ops and the optimizer stay in fp32. The step timed here is section 2's
# `train_step` on a wider MLP, in fp32 and under autocast.
#
# **Prediction**: the rest of the step dilutes the matmul's ratio: the step's speed-up lies between 1 and the bare
# matmul's, beyond the noise of both. The seed's claim is scored too, read as 1.2x to 1.4x: the step's whole
# interval inside that band. Either way it is one step, at this size, on this machine: measure it on your model.
#
# Rounds in one process share that process's memory placement, allocator state, code layout and thread pool, so
# their interval holds "in this process" only. The seed's claim is about any run, so it is scored on the same step
# timed again in fresh Python processes, one after another (3 at ci and laptop size, 2 at smoke size), each
# process's two medians paired into one ratio: the interval "across N fresh processes".
#
# A fresh process cannot
# import a function defined in a notebook, so it runs `cu.precision.step_medians`: the same recipe as
# `train_step` above (without its multiplier and clip, left at 1 and off here), with the same widths, batch, dtype,
# optimizer and threads, from `course_utils/precision/training.py`. Each process times the two steps in 2
# alternating rounds and reports one median per step: the two medians of one process form one pair.

# %%
WIDE = sizes.step_widths if NATIVE_16 else (64, 128, 128, 10)
STEP_BATCH = sizes.step_batch if NATIVE_16 else 64
xw, yw = torch.randn(STEP_BATCH, WIDE[0], device=DEVICE), torch.randint(0, WIDE[-1], (STEP_BATCH,), device=DEVICE)
m32, m16 = (cu.models.torch_mlp(WIDE, seed=0).to(DEVICE) for _ in range(2))
o32, o16 = torch.optim.SGD(m32.parameters(), lr=1e-3), torch.optim.SGD(m16.parameters(), lr=1e-3)
scaler16 = torch.amp.GradScaler(DEVICE.type, enabled=AMP == torch.float16)
AMP_STEP = f"{AMP_NAME} autocast step"
step_times = cu.timing.interleaved({"fp32 step": lambda: train_step(m32, o32, no_scaling, xw, yw, dtype=torch.float32),
                                    AMP_STEP: lambda: train_step(m16, o16, scaler16, xw, yw, dtype=AMP)},
                                   rounds=6, min_time=6 * QUICK)
step_speed = cu.intervals.speedup(step_times["fp32 step"], step_times[AMP_STEP])
print(f"{AMP_STEP} over the fp32 step, in this process ({torch.get_num_threads()} threads): {step_speed}")

# %%
# the same step in fresh processes: the recipe above, imported from course_utils/precision/training.py
fresh_steps = cu.fresh.replicate(cu.precision.step_medians, n=sizes.fresh_processes, kwargs={
    "widths": list(WIDE), "batch": STEP_BATCH, "dtype": AMP_NAME, "device": DEVICE.type, "rounds": 2,
    "min_time": 2 * QUICK, "threads": torch.get_num_threads()})
fresh_speed = fresh_steps.speedup(cu.precision.FP32_STEP, cu.precision.amp_step_label(AMP_NAME))
print(f"{AMP_STEP} over the fp32 step, across fresh processes: {fresh_speed}")
print(f"in this process, for comparison: {step_speed}")
fresh_steps

# %%
v_step = cu.precision.findings.STEP.score(*cu.precision.step_checks(step_speed, speed, bound))
v_claim = cu.precision.findings.CLAIM.score(
    cu.findings.within("autocast step over the fp32 step, against the seed's ~1.3x", fresh_speed,
                       *cu.precision.CLAIM_BAND), in_process=str(step_speed))
step_flops = cu.precision.mlp_step_flops(WIDE, STEP_BATCH)  # computed from the layer widths
step_shares = cu.precision.matmul_shares(step_flops, {"fp32": flops["torch fp32"], "16-bit": flops[f"torch {FAST}"]},
                                         {"fp32": step_times["fp32 step"].median, "16-bit": step_times[AMP_STEP].median})
print(f"the step's matmuls, {step_flops / 1e9:.2f} GFLOP (computed from the layer widths), at the bare matmul's "
      f"rates: {step_shares['fp32']:.0%} of the fp32 step's median time, {step_shares['16-bit']:.0%} of the 16-bit "
      "step's (computed; above 100%, the step's shapes ran faster than the square matmul)")
v_step

# %%
v_claim

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_step.prose()

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_claim.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 6. Same model, same data: fp32 against mixed precision, over several seeds
# One run per format cannot say whether a difference is the format or the luck of the draw. Each configuration
# trains from three seeds (initial weights and batch order change together), with section 2's `train_step`, clipping
# the gradient norm at 5 (after `unscale_`, as the recipe does).
#
# **Prediction**: the mean final loss of bf16 autocast and of fp16 + `GradScaler` each lies within one seed-spread
# (max - min over seeds) of fp32's mean; test accuracies agree within 5 points.

# %%
SEEDS = [0, 1, 2]
CONFIGS = {"fp32": (torch.float32, False), "bf16 autocast": (torch.bfloat16, False),
           "fp16 autocast + GradScaler": (torch.float16, True)}
runs = {}
for label, (dtype, use_scaler) in CONFIGS.items():
    for seed in SEEDS:
        m = cu.models.torch_mlp(SIZES, seed=seed).to(DEVICE)
        opt = torch.optim.Adam(m.parameters(), lr=3e-3)
        scaler = torch.amp.GradScaler(DEVICE.type, enabled=use_scaler)
        runs.setdefault(label, []).append(cu.precision.train(train_step, m, opt, scaler, x_train, y_train, steps=STEPS,
                                                             batch=BATCH, seed=seed, label=label, x_test=x_test,
                                                             y_test=y_test, dtype=dtype, clip=5.0))
spread_runs = cu.precision.SeedSpread(runs)
cu.precision.loss_curves_plot(spread_runs.runs, title="fp32 and mixed precision")

# %%
spread_runs

# %%
gaps = {label: spread_runs.gap(label) for label in spread_runs.runs if label != "fp32"}
acc_means = {label: spread_runs.accuracies(label).mean() for label in spread_runs.runs}
fp32_final = spread_runs.final_losses("fp32")
v_seeds = cu.precision.findings.SEEDS.score(
    *[cu.findings.below(f"{label}: gap of mean final loss to fp32, in seed spreads", gap, 1.0, unit="")
      for label, gap in gaps.items()],
    cu.findings.below("spread of the mean test accuracies", max(acc_means.values()) - min(acc_means.values()), 0.05,
                      unit="%"),
    seeds=len(SEEDS), fp32_mean=f"{fp32_final.mean():.3f}", fp32_min=f"{fp32_final.min():.3f}",
    fp32_max=f"{fp32_final.max():.3f}")
v_seeds

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_seeds.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 7. Where training memory goes
# ### Weights, gradients, optimizer state: bytes per parameter
# The standard accounting (the ZeRO paper's): fp32 training with Adam holds 4 bytes of weights, 4 of gradients and 8
# of Adam moments per parameter. Mixed precision as large-model trainers run it keeps 16-bit weights and gradients
# (2 + 2) **plus** fp32 master weights and Adam moments (4 + 8): 16 again. The chart is that formula, computed.
# `torch.autocast` does not even keep 16-bit weights: it casts each weight inside the autocast region. Only pure bf16
# (no fp32 master, with its accuracy risks) halves the 16 B; what mixed precision shrinks is the activations.
#
# **Prediction**: after a step, an autocast model and its Adam hold exactly what fp32 holds (16 bytes per parameter);
# during the forward pass autograd also holds a 16-bit copy of each weight whose layer input needs a gradient.

# %%
per_param = {s: cu.precision.training_memory(1, s) for s in cu.precision.TRAINING_SCHEMES}
cu.precision.memory_stack_plot(per_param)

# %%
held, copies = {}, {}
xm, ym = x_train[:200], y_train[:200]  # 200: no layer width, so no shape mix-up
for mode, dt in (("fp32", torch.float32), (AMP_NAME + " autocast", AMP)):
    mem_model = cu.models.torch_mlp(SIZES, seed=0).to(DEVICE)
    mopt = torch.optim.Adam(mem_model.parameters())

    def forward(model=mem_model, dt=dt):
        with torch.autocast(DEVICE.type, dtype=dt, enabled=dt != torch.float32):
            return F.cross_entropy(model(xm), ym)

    copies[mode] = cu.memory.saved_for_backward(forward, mem_model.parameters())["weight copies"]
    forward().backward()
    mopt.step()
    held[mode] = cu.memory.torch_state_bytes(mem_model, mopt)
n_params = sum(p.numel() for p in mem_model.parameters())
later_weights = sum(m.weight.numel() for m in mem_model if isinstance(m, torch.nn.Linear)) - mem_model[0].weight.numel()
{mode: {k: f"{v / n_params:g} B/param" for k, v in h.items()} for mode, h in held.items()}

# %%
# NBVAL_CHECK_OUTPUT
amp_mode = AMP_NAME + " autocast"
total = {mode: sum(h.values()) / n_params for mode, h in held.items()}
print("bytes per parameter held after a step, fp32 and autocast:", total)
print("autocast holds no 16-bit tensor between steps:", not any("16" in k for k in held[amp_mode]))
print("16-bit weight copies saved during the autocast forward == 2 B x weights of layers 2.. :",
      copies[amp_mode] == 2 * later_weights, "| fp32 forward saves none:", copies["fp32"] == 0)

# %%
v_state = cu.precision.findings.STATE.score(
    *[cu.findings.equal(f"{mode} + Adam, bytes per parameter kept after a step", total[mode], 16, unit="",
                        source="measured") for mode in ("fp32", amp_mode)],
    cu.findings.equal("16-bit weight copies saved during the autocast forward", copies[amp_mode], 2 * later_weights,
                      unit="B", source="measured"),
    n_params=f"{n_params:,}", copies_per_param=f"{copies[amp_mode] / n_params:.2f}")
v_state

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_state.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Activations: what autograd keeps for the backward pass
# Activations grow with the batch, parameters do not. We count the bytes of the tensors autograd saves
# (`torch.autograd.graph.saved_tensors_hooks`), fp32 against 16-bit autocast, for several batch sizes.
#
# **Prediction**: linear in the batch, and at most 0.6x as many bytes per sample under 16-bit autocast, plus a
# constant under autocast: the 16-bit weight copies measured above.

# %%
ACT_WIDE = (256, 1024, 1024, 10) if NATIVE_16 else (64, 128, 128, 10)
act_model = cu.models.torch_mlp(ACT_WIDE, seed=0).to(DEVICE)
batches = [48, 96, 192, 384, 768]  # none equal to a layer width


def saved_bytes(batch, dtype):
    xb_, yb_ = torch.randn(batch, ACT_WIDE[0], device=DEVICE), torch.randint(0, ACT_WIDE[-1], (batch,), device=DEVICE)

    def forward():
        with torch.autocast(DEVICE.type, dtype=dtype, enabled=dtype != torch.float32):
            return F.cross_entropy(act_model(xb_), yb_)
    return cu.memory.saved_activation_bytes(forward, exclude=act_model.parameters())


act_mem = {name: [saved_bytes(b, dt) for b in batches] for name, dt in (("fp32", torch.float32), (amp_mode, AMP))}
cu.precision.lines_plot(batches, {k: np.array(v) / 2**20 for k, v in act_mem.items()}, xlabel="batch size",
                        ylabel="saved for backward (MiB)", title=f"Activation memory, MLP {ACT_WIDE}")

# %%
# NBVAL_CHECK_OUTPUT
(slope32, const32), (slope16, const16) = (np.polyfit(batches, act_mem[k], 1) for k in act_mem)
act_copies = 2 * sum(m.weight.numel() for m in act_model if isinstance(m, torch.nn.Linear)) - 2 * act_model[0].weight.numel()
residual = max(abs(np.polyval(np.polyfit(batches, v, 1), batches) - v).max() for v in act_mem.values())
print("activation memory is linear in the batch (fit residual < 1 KiB):", residual < 1024)
print("autocast's constant == 16-bit copies of the weights of layers 2.. (within 1%):",
      abs((const16 - const32) / act_copies - 1) < 0.01)

# %%
act_state = sum(cu.precision.training_memory(sum(p.numel() for p in act_model.parameters()), "fp32 + Adam").values())
print(f"per sample {cu.display.format_bytes(slope32)} fp32, {cu.display.format_bytes(slope16)} under autocast; at batch "
      f"{batches[-1]}: {cu.display.format_bytes(act_mem['fp32'][-1])} against "
      f"{cu.display.format_bytes(act_mem[amp_mode][-1])}, beside {cu.display.format_bytes(act_state)} of fp32 + Adam "
      "state (computed)")
v_act = cu.precision.findings.ACTIVATIONS.score(
    cu.findings.below("residual of the linear fit", residual, 1024, unit="B"),
    cu.findings.below("16-bit over fp32 bytes per sample", slope16 / slope32, 0.6),
    cu.findings.equal("autocast's constant over the 16-bit weight copies", (const16 - const32) / act_copies, 1.0,
                      tolerance=0.01, unit="x", source="measured"))
v_act

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_act.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Activation checkpointing: recompute instead of store
# `torch.utils.checkpoint.checkpoint` keeps only a block's input and recomputes its inside during backward. The
# blocks are residual MLPs (h + W2·gelu(W1·h), 4x wide inside: a transformer's feed-forward shape).
#
# **Prediction**: the bytes saved for backward drop below a quarter; the peak of live tensors lands within 10% of the
# computed *peak without − saved without + saved with + one block's saved bytes*; the step takes longer, at most 1.6x.

# %%
D, L, CB = sizes.remat
W = cu.precision.block_weights(D, L, seed=0)
blocks = [(torch.tensor(w1, device=DEVICE, requires_grad=True), torch.tensor(w2, device=DEVICE, requires_grad=True))
          for w1, w2 in W]
x_blocks = torch.ones(CB, D, device=DEVICE)


def block(h, w1, w2):
    return h + F.gelu(h @ w1) @ w2


def blocks_loss(remat):
    h = x_blocks
    for w1, w2 in blocks:
        h = checkpoint(block, h, w1, w2, use_reentrant=False) if remat else block(h, w1, w2)
    return (h**2).mean()


remat = cu.precision.torch_remat(blocks_loss, [p for pair in blocks for p in pair], rounds=4, min_time=4 * QUICK)
remat

# %%
# NBVAL_CHECK_OUTPUT
print("torch: same gradients with and without checkpointing:", remat.same_gradients)
print("torch saves less than a quarter with checkpointing:", remat.saved_ratio < 0.25)
if HAS_TF:
    print("tf.recompute_grad: same gradients as the plain block:", cu.precision.tf_recompute_same(W))

# %%
has_peak = remat.live_peak[0] is not None
predicted_peak = cu.precision.predicted_peak_with_remat(remat, L, live=True) if has_peak else None
remat_checks = [cu.findings.below("saved for backward, with over without checkpointing", remat.saved_ratio, 0.25),
                cu.findings.within("step time, with over without checkpointing", remat.cost, 1.0, 1.6)]
if has_peak:  # a platform that reports no live-tensor peak leaves that part of the prediction out
    print(f"live-tensor peak with checkpointing {cu.display.format_bytes(remat.live_peak[1])}, computed "
          f"{cu.display.format_bytes(predicted_peak)}")
    remat_checks.append(cu.findings.within("live-tensor peak over the computed peak",
                                           remat.live_peak[1] / predicted_peak, 0.9, 1.1))
v_remat = cu.precision.findings.REMAT.score(*remat_checks)
v_remat

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_remat.prose()

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## Exercises
# **1. Predict first.** Which loss scale is too big? Before running anything, predict k: the smallest power of two
# at which the fp16 activation gradients of `model_fp32` (on `xb`, `yb`) overflow. Then the check cell measures it.
# <details><summary>Hint</summary>The largest |gradient| times the scale must stay below fp16's max
# (`fp16.max`): k = ceil(log2(max / max|g|)) from the fp32 gradients `g32`. Intermediate values can overflow a
# little earlier than the final gradients.</details>

# %%
answer = None  # your answer here: the predicted exponent k (an int)

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = int(np.ceil(np.log2(fp16.max / g32.abs().max().item())))
print(f"predicted from max|g|: 2^{answer}")

# %%
# NBVAL_CHECK_OUTPUT
k0 = cu.precision.overflow_exponent(g32)
cu.exercises.check("03.1", answer, overflows=cu.precision.torch_fp16_overflows(model_fp32, xb, yb, range(k0 - 3, k0 + 2)))

# %% [markdown]
# **2.** Kahan summation rescues a sum without a wider accumulator. Write `kahan(values) -> float`, a compensated
# sum of an array of `ml_dtypes.bfloat16` values with every operation in bf16, and set `answer = kahan`. The check
# compares it with the exact sum on random arrays.
# <details><summary>Hint</summary>Keep a compensation c: y = x - c; t = s + y; c = (t - s) - y; s = t, all in
# bf16. A Python loop over a few thousand items is fast enough.</details>

# %%
answer = None  # your answer here: a function kahan(values) -> float

# %% jupyter={"source_hidden": true} tags=["solution"]
import ml_dtypes


def kahan(values):
    s = c = ml_dtypes.bfloat16(0)
    for v in values:
        y_ = v - c
        t_ = s + y_
        c = (t_ - s) - y_
        s = t_
    return float(s)


answer = kahan
terms = np.random.default_rng(0).random(10_000).astype(ml_dtypes.bfloat16)
exact = terms.astype(np.float64).sum()
print(f"naive bf16 error {abs(float(np.cumsum(terms, dtype=ml_dtypes.bfloat16)[-1]) - exact) / exact:.1%}, "
      f"Kahan bf16 error {abs(kahan(terms) - exact) / exact:.2%}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("03.2", answer)

# %% [markdown]
# **3. Predict first.** Checkpoint pairs of blocks instead of every block in section 7: predict the bytes saved for
# backward (`answer`, in bytes) before the check cell measures them.
# <details><summary>Hint</summary>With every block checkpointed, torch saved `remat.saved[1]` bytes: mostly one
# block input per block. A pair keeps only its own input.</details>

# %%
answer = None  # your answer here: predicted bytes saved for backward

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = remat.saved[1] * (L // 2 + L % 2) / L
print(f"every block: {cu.display.format_bytes(remat.saved[1])}, predicted for pairs: {cu.display.format_bytes(answer)}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("03.3", answer, measured=cu.precision.torch_grouped_saved(W, CB, 2, device=DEVICE))

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## Summary

# %%
rows = [
    ("fp16 activation gradients flushed to zero", plain.flushed_fraction * 100, "%", "trained MLP, no loss scaling"),
    ("... with loss scale 2^14", scaled.flushed_fraction * 100, "%", "static loss scaling"),
    ("GradScaler steps skipped", trace.skipped, "steps", f"of {trace.steps}, init scale 2^24, growth every {GROWTH}"),
    ("bf16 accumulator error, 10^4 terms", at_1e4["bf16 accumulator"] * 100, "%", "fp32 accumulation: ~0"),
    (f"torch {FAST} / fp32 matmul speed (geometric mean)", speed.ratio, "x",
     f"n = {n}; {speed.interval}; units: {bound.unit}"),
    ("bf16 / fp32 triad speed (geometric mean)", halving["triad"].ratio, "x",
     f"half the bytes: at most 2x; {halving['triad'].interval}"),
    ("autocast step over fp32 step (geometric mean)", fresh_speed.ratio, "x",
     f"{fresh_speed.interval}; seed's ~1.3x: {v_claim.outcome}"),
    ("final-loss gap bf16 vs fp32", gaps["bf16 autocast"], "seed spreads", f"{len(SEEDS)} seeds"),
    ("training state held, fp32 + Adam", total["fp32"], "B/param", "measured"),
    ("training state held, autocast + Adam", total[amp_mode], "B/param", "measured; copies live per forward"),
    ("16-bit / fp32 activation bytes per sample", slope16 / slope32, "x", "plus a constant: 16-bit weight copies"),
    ("torch saved memory with checkpointing", remat.saved_ratio, "x", "of without"),
    ("torch step time with checkpointing (geometric mean)", remat.cost.ratio, "x",
     f"of without; {remat.cost.interval}"),
]
cu.notebook.summary_table("03_mixed_precision", rows)

# %% [markdown]
# **What to remember**
# - fp16 has precision but no range: small gradients flush to zero, so it needs loss scaling (`GradScaler`,
#   `LossScaleOptimizer`; unscale before clipping); bf16 has fp32's range and needs no scaling, but only ~2-3
#   digits, so sums accumulate in fp32 and master weights stay fp32.
# - Speed comes from hardware units and from the library using them: the units set a bound, the library decides
#   what you get; memory-bound ops gain from half the bytes on any hardware. Measure the whole step.
# - Mixed precision does not shrink weights or optimizer state; it shrinks activations. Checkpointing shrinks them
#   further at the price of recomputation.
#
# **Next**: `04_input_pipeline`, where the accelerator may be waiting for the CPU instead.

# %% slideshow={"slide_type": "skip"}
print(cu.notebook.last_verified())

# %% [markdown] course={"lead": false, "optional": true} slideshow={"slide_type": "slide"}
# ## Going further
# Optional reading, with its own predictions: training without a scaler, what XLA makes of `jax.checkpoint`, the
# library behind torch's fp32 matmul, and fp8.
#
# ### Training without a scaler
# The histogram showed gradients lost; does training notice? The same fp16 run with and without the `GradScaler`,
# next to fp32, at the loss's natural size (seed 0 of section 6 for two of them) and with the loss multiplied by
# 2^-12 (a loss with a small weight: its gradients are 2^12 smaller). Adam divides each update by the root of its
# running mean square of the gradient, so a uniform scale cancels in exact arithmetic, except against its eps.
#
# **Prediction**: at natural size the three runs end within 1.2x of fp32's loss; with the 2^-12 loss, fp16 without a
# scaler ends above 1.5x fp32's loss while the `GradScaler` run stays within 1.2x.

# %%
SMALL = 2.0**-12
final = {"fp32, loss x 1": runs["fp32"][0].final_loss(),  # seed 0 of section 6: the same configuration
         "fp16 + GradScaler, loss x 1": runs["fp16 autocast + GradScaler"][0].final_loss()}
for mult_name, mult, label, dtype, use_scaler in (("1", 1.0, "fp16, no scaler", torch.float16, False),
                                                  ("2^-12", SMALL, "fp32", torch.float32, False),
                                                  ("2^-12", SMALL, "fp16 + GradScaler", torch.float16, True),
                                                  ("2^-12", SMALL, "fp16, no scaler", torch.float16, False)):
    m = cu.models.torch_mlp(SIZES, seed=0).to(DEVICE)
    run = cu.precision.train(train_step, m, torch.optim.Adam(m.parameters(), lr=3e-3),
                             torch.amp.GradScaler(DEVICE.type, enabled=use_scaler), x_train, y_train, steps=STEPS,
                             batch=BATCH, dtype=dtype, multiplier=mult, clip=5.0)
    final[f"{label}, loss x {mult_name}"] = run.final_loss()
ratio = {k: v / final["fp32, loss x " + k.rsplit("x ", 1)[1]] for k, v in final.items()}
{k: f"{v:.3f} ({ratio[k]:.2f}x fp32)" for k, v in final.items()}

# %%
xw_, yw_ = x_train[:BATCH], y_train[:BATCH]  # what the optimizer receives without a scaler, on one batch
lost = {name: cu.precision.underflow_stats(
    cu.precision.torch_weight_grads(model_fp32, xw_, yw_, multiplier=mult),
    cu.precision.torch_weight_grads(model_fp32, xw_, yw_, dtype=torch.float16, multiplier=mult))
    for name, mult in (("1", 1.0), ("2^-12", SMALL))}
adam_eps = torch.optim.Adam(model_fp32.parameters()).defaults["eps"]
eps_share = cu.precision.adam_eps_share(cu.precision.torch_weight_grads(model_fp32, xw_, yw_, multiplier=SMALL),
                                        adam_eps)  # computed
print(f"weight gradients fp16 flushed without a scaler, one batch of {BATCH}: {lost['2^-12'].flushed_fraction:.1%} "
      f"of {lost['2^-12'].nonzero:,} at loss x 2^-12, {lost['1'].flushed_fraction:.2%} at natural size; at loss x "
      f"2^-12 Adam's eps ({adam_eps:g}) shortens a typical update to {eps_share:.1%} of its exact length (computed)")
v_noscale = cu.precision.findings.NO_SCALER.score(
    cu.findings.above("fp16, no scaler, loss x 2^-12, over fp32's final loss", ratio["fp16, no scaler, loss x 2^-12"],
                      1.5),
    *[cu.findings.below(f"{k}, over fp32's final loss", ratio[k], 1.2) for k in final
      if k.startswith("fp16") and k != "fp16, no scaler, loss x 2^-12"])
v_noscale

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_noscale.prose()

# %% [markdown]
# The recipe calls `scaler.unscale_(opt)` *before* `clip_grad_norm_`; the check below shows what clipping would see
# otherwise.

# %%
# NBVAL_CHECK_OUTPUT
norms = cu.precision.unscale_norms(model_fp32, xb, yb, torch.amp.GradScaler(DEVICE.type, init_scale=2.0**16))
print("norm before unscale_ / fp32 norm == the scale (within 1%):",
      abs(norms["before unscale_"] / norms["fp32"] / norms["scale"] - 1) < 0.01)
print("norm after unscale_ == fp32 norm (within 1%):", abs(norms["after unscale_"] / norms["fp32"] - 1) < 0.01)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### JAX: what does XLA keep of `jax.checkpoint`?
# Inside one `jax.jit` XLA schedules the whole step, and could merge the recomputed forward with the original one;
# `jax.checkpoint(..., prevent_cse=True)` (the default) exists to stop that. XLA itself is asked: FLOPs from
# `cost_analysis()`, temp buffers from `memory_analysis()` of the compiled step.
#
# **Prediction**: with checkpointing, the compiled step's FLOPs grow by the recomputed first matmul of each block
# (2·B·D·4D·L, computed) within 10%, and its temp buffers shrink below half.

# %%
if HAS_JAX:
    def jblock(p, h):
        return h + jax.nn.gelu(h @ p[0], approximate=False) @ p[1]

    def jblocks_loss(ps, h, remat):
        f = jax.checkpoint(jblock) if remat else jblock
        for p in ps:
            h = f(p, h)
        return jnp.mean(h**2)

    jremat = cu.precision.jax_remat(jblocks_loss, [(jnp.asarray(w1), jnp.asarray(w2)) for w1, w2 in W],
                                    jnp.ones((CB, D)), rounds=4, min_time=4 * QUICK)
    computed_extra = 2 * CB * D * 4 * D * L
    temp = (cu.findings.below("temp buffers, with over without checkpointing", jremat.temp[1] / jremat.temp[0], 0.5)
            if jremat.temp[0] is not None else cu.findings.true("XLA reported its temp buffers", False))
    display(jremat)
    v_jremat = cu.precision.findings.JAX_REMAT.score(
        cu.findings.within(f"extra FLOPs over the computed {computed_extra / 1e9:.3f} GFLOP of recomputed matmuls",
                           (jremat.flops[1] - jremat.flops[0]) / computed_extra, 0.9, 1.1), temp)
else:
    jremat = None
    v_jremat = cu.precision.findings.JAX_REMAT.not_tested("JAX is not installed in this runtime")
v_jremat

# %%
# NBVAL_CHECK_OUTPUT
if HAS_JAX:
    print("jax: same gradients with and without checkpointing:", jremat.same_gradients)
    print("jax vjp residuals less than a quarter with checkpointing:", jremat.saved_ratio < 0.25)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_jremat.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The library behind torch's fp32 matmul
# On AMD EPYC machines, earlier runs of this course saw torch's fp32 matmul (MKL) reach about half the rate of JAX's
# (XLA's own kernels) on the same cores. MKL picks its code path per CPU at run time, and its choice on non-Intel
# CPUs is the known candidate.
#
# MKL's header, printed in section 5, names the instruction-set level it dispatched to here (not SGEMM's kernel). On
# an AMD CPU with avx512f, a level without AVX-512 is MKL choosing a narrower path than the CPU supports; on an Intel
# CPU MKL takes its Intel paths and the candidate does not apply. A gap between the two frameworks, timed in the same
# rounds below, is a measurement; its cause is not established by this run (it times neither MKL on another path nor
# another BLAS).

# %%
vendor = cu.precision.cpu_vendor()
jax_over_torch = cu.intervals.speedup(mm["torch fp32"], mm["jax fp32"]) if HAS_JAX else None
print(f"CPU vendor: {vendor}; avx512f in the CPU flags: {'avx512f' in FLAGS}")
print(f"MKL ran torch's fp32 GEMM: {libraries.mkl_ran}; the ISA level its header names: {libraries.mkl_path}")
if HAS_JAX:
    print(f"JAX's fp32 matmul over torch's: {jax_over_torch} ({jax_over_torch.outcome})")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### fp8: two formats, one scale per tensor
# fp8 comes in two layouts: e4m3 (more precision, max 448) and e5m2 (more range, max 57344). Neither covers a
# tensor's values unscaled, so each tensor gets its own scale: its amax (largest |value|) is mapped onto the format's
# max. Below, each Linear output of the trained fp32 model and the gradient arriving at it make the round trip.
#
# **Prediction**: scaled per tensor, e4m3 stores the activations with less error than e5m2 (3 mantissa bits against
# 2), and e5m2 flushes fewer gradients to zero (5 exponent bits against 4).

# %%
# NBVAL_CHECK_OUTPUT
for dt in (torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16):
    fi = torch.finfo(dt)
    print(f"{str(dt):22} max {fi.max:<8g} smallest normal {fi.smallest_normal:<10.3g} eps {fi.eps:g}")

# %%
tensors = cu.precision.layer_tensors(model_fp32, xb, yb)  # each Linear's output and its gradient, fp32


def fp8_roundtrip(t, dtype):
    scale = torch.finfo(dtype).max / t.abs().max()  # per-tensor scale: the amax lands on the format's max
    return (t * scale).to(dtype).float() / scale


fp8_errors = cu.precision.cast_errors(tensors, {"e4m3": lambda t: fp8_roundtrip(t, torch.float8_e4m3fn),
                                                "e5m2": lambda t: fp8_roundtrip(t, torch.float8_e5m2),
                                                "bf16": lambda t: t.to(torch.bfloat16).float()})
fp8_errors

# %%
v_fp8 = cu.precision.findings.FP8_FORMATS.score(
    cu.findings.below("e4m3's activation error, against e5m2's", fp8_errors["activations"]["e4m3"].error,
                      fp8_errors["activations"]["e5m2"].error, unit=""),
    cu.findings.below("gradients e5m2 flushed to zero, against e4m3's", fp8_errors["gradients"]["e5m2"].flushed,
                      fp8_errors["gradients"]["e4m3"].flushed, unit="%"),
    bf16_error=f"{fp8_errors['activations']['bf16'].error:.1e}")
v_fp8

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_fp8.prose()

# %% [markdown]
# Which amax? *Delayed* scaling takes it from a history of past steps (one reduction saved per cast); *dynamic*
# scaling from the tensor itself. The fp32 training run of section 2 recorded every layer's amax per step:

# %%
delayed = {kind: cu.precision.delayed_scaling(amax, kind, window=16) for kind in ("activations", "gradients")}
for d in delayed.values():
    print(f"{d.kind}: {d.saturated} of {d.checked} layer-steps outgrew their {d.window}-step history (largest amax "
          f"over its history's: {d.worst_overshoot:.2f}x, 1.00x where none did); range left unused, median: "
          f"{d.unused_log2:.1f} powers of two")
cu.precision.amax_plot(amax, layer=1)

# %% [markdown] slideshow={"slide_type": "skip"}
# A layer-step that outgrew its history would saturate its top values at fp8's max under delayed scaling (Transformer
# Engine's recipe). A scale from the current amax (dynamic scaling, the only kind torchao 0.18's float8 training
# offers) never saturates and uses the whole range, at the price of one amax reduction before every cast.

# %% [markdown]
# fp8 *training* needs fp8 matrix units: NVIDIA compute capability 8.9 or later (Ada, Hopper, Blackwell), or AMD's
# MI300, whose fp8 formats are the `fnuz` variants (`torch.float8_e4m3fnuz`, `torch.float8_e5m2fnuz`: no negative
# zero, no infinities, another exponent bias). torchao's `convert_to_float8_training` swaps each `nn.Linear` for a
# `Float8Linear`, whose matmuls take e4m3 inputs and weights and e5m2 output gradients with dynamic per-tensor scales,
# accumulating in higher precision. The cell checks the device first and only then looks for torchao (without
# importing it).
#
# **Prediction**: on a GPU with fp8 units, the fp8 model ends within 5% of bf16's loss, and its step is faster than
# bf16's beyond the noise.

# %% tags=["device"]
fp8_status = cu.precision.gpu_fp8_status()
fp8_run = None
if fp8_status.ready:
    from torchao.float8 import convert_to_float8_training

    x_gpu, y_gpu = torch.randn(8192, 4096, device="cuda"), torch.randn(8192, 4096, device="cuda")
    base = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096)).cuda()
    fp8_model = convert_to_float8_training(copy.deepcopy(base))  # each Linear becomes a Float8Linear
    fp8_run = cu.precision.compare_training({"bf16": torch.compile(base), "fp8": torch.compile(fp8_model)},
                                            x_gpu, y_gpu, steps=50)
    v_fp8_training = cu.precision.findings.FP8_TRAINING.score(
        cu.findings.faster(f"fp8 step over bf16 on {fp8_status.why}", fp8_run.speed),
        cu.findings.within("fp8 final loss over bf16's", fp8_run.final_loss["fp8"] / fp8_run.final_loss["bf16"],
                           0.95, 1.05))
else:
    v_fp8_training = cu.precision.findings.FP8_TRAINING.not_tested(fp8_status.why)
v_fp8_training

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_fp8_training.prose()
