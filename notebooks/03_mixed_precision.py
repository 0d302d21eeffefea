# ---
# jupyter:
#   course:
#     minutes:
#       ci: 2
#       laptop: 3
#       workshop: 50
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
# - use `torch.autocast` + `torch.amp.GradScaler`, Keras' mixed policies, and an explicit bf16 policy in JAX,
#   and check the dtypes of weights, activations and gradients yourself;
# - tell from the CPU flags (or the GPU) whether bf16 will be faster or slower, and measure it;
# - account for training memory per parameter and cut activation memory with checkpointing.
#
# **Time**: a few minutes to run on a laptop, 50 minutes as a workshop. **Accelerators**: every section
# runs on a CPU. With a CUDA GPU, the torch parts of sections 2 and 4-7 run on it (adding fp16 matmuls and
# `max_memory_allocated`); JAX and Keras use whatever device they find (a TPU on a TPU runtime).
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/main/notebooks/03_mixed_precision.ipynb)

# %%
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@main"], check=True)

# %% slideshow={"slide_type": "skip"}
import os

import course_utils as cu

report = cu.env.setup_notebook()
import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import Markdown

P = cu.precision
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NATIVE_BF16 = cu.env.has_native_bf16() or DEVICE.type == "cuda" or cu.env.accelerator() == "tpu"
QUICK = cu.env.pick(ci=0.1, cpu=0.3)  # seconds per benchmark


def busy_note():
    """A warning for the explanation cells when other programs competed for the CPU during this run."""
    load, cores = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0, os.cpu_count() or 1
    return (f" (Other programs shared this machine during the run: load average {load:.1f} on {cores} cores, "
            f"so these timings are noisier than usual.)" if DEVICE.type == "cpu" and load > cores else "")


report

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Formats: where the bits go
#
# A float is sign × 2^exponent × 1.mantissa. **Exponent bits buy range, mantissa bits buy precision.**
# fp16 spends 5 bits on the exponent and 10 on the mantissa; bf16 keeps fp32's 8 exponent bits and only 7
# mantissa bits; TF32 (a tensor-core mode, not a storage type) is fp32's exponent with fp16's mantissa.
#
# **Prediction**: bf16 covers the same range as fp32 but rounds about 8x more coarsely than fp16
# (3 fewer mantissa bits); fp16 flushes anything below about 2^-24 to zero.

# %%
table = P.format_table()
table

# %% slideshow={"slide_type": "subslide"}
P.bit_layout_plot()

# %% slideshow={"slide_type": "subslide"}
P.rounding_error_plot()

# %%
# NBVAL_CHECK_OUTPUT
fp32, fp16, bf16 = table["fp32"], table["fp16"], table["bf16"]
assert bf16.max / fp32.max > 0.99 and bf16.min_normal == fp32.min_normal
assert bf16.eps == 8 * fp16.eps == 2.0**-7
print("bf16 range == fp32 range (min normal, max within 1%):", bf16.min_normal == fp32.min_normal)
print("bf16 eps / fp16 eps:", bf16.eps / fp16.eps)
print("fp16 max:", fp16.max, "| fp16 smallest subnormal == 2**-24:", fp16.min_subnormal == 2.0**-24)
print("1 + 2**-8 in bf16 == 1:", float(P.round_to(1 + 2.0**-8, "bfloat16")) == 1.0)

# %%
Markdown(
    f"From `finfo`: fp16 keeps {fp16.decimal_digits:.1f} decimal digits but tops out at {fp16.max:,.0f} and "
    f"loses everything below {fp16.min_subnormal:.2e}; bf16 keeps only {bf16.decimal_digits:.1f} digits but "
    f"reaches {bf16.max:.2e}, like fp32 ({fp32.max:.2e}). In the plot every format has a flat floor of "
    f"eps/2 in its normal range (bf16: {bf16.unit_roundoff:.1e}, fp16: {fp16.unit_roundoff:.1e}), a rising "
    f"error in the subnormal range, 1.0 where values flush to zero, and a dotted wall where they overflow. "
    f"The fp8 formats ({table['fp8 e4m3'].eps:g} and {table['fp8 e5m2'].eps:g} eps) only work with a "
    f"per-tensor scale, which is what fp8 training recipes add."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. fp16 gradients underflow; loss scaling rescues them
#
# Gradients get small as a model learns: well-predicted samples contribute almost nothing, and the mean
# over the batch divides again. We train the course's MLP (with three hidden layers) in fp32, then compute the
# gradients of every layer's output (the activation gradients) once in fp32 and once under fp16 autocast.
#
# **Prediction**: a noticeable share of the activation gradients sits below 2^-24 and comes back as exact
# zeros in fp16; multiplying the loss by 2^k before `backward()` (and dividing the gradients by 2^k after)
# shifts the whole histogram right by k and rescues them, as long as nothing reaches 65504.

# %% slideshow={"slide_type": "subslide"}
SIZES = (32, 128, 128, 128, 10)
x_all, y_all = cu.data.classification(10_240, seed=0)
x_train, y_train = torch.from_numpy(x_all[:8192]).to(DEVICE), torch.from_numpy(y_all[:8192]).to(DEVICE)
x_test, y_test = torch.from_numpy(x_all[8192:]).to(DEVICE), torch.from_numpy(y_all[8192:]).to(DEVICE)
AMP_DTYPE = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
BATCH, STEPS = 256, 600
# Where bf16/fp16 arithmetic is emulated (no 16-bit units) it is slow: the 16-bit runs use smaller batches.
LOW_BATCH = BATCH if NATIVE_BF16 else 64


def train_torch(mode="fp32", steps=STEPS, batch=BATCH, **scaler_args):
    """The standard AMP loop: autocast around the forward pass, GradScaler around backward and step."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    if DEVICE.type == "cpu":
        torch.set_num_threads(1)  # a model this small is fastest on one core: no fork/join around every op
    model = cu.models.torch_mlp(SIZES, seed=0).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler(DEVICE.type, enabled=mode == "fp16", **scaler_args)
    losses, scales, skipped = [], [], []
    for step in range(steps):
        i = (step * batch) % len(x_train)
        xb, yb = x_train[i : i + batch], y_train[i : i + batch]
        with torch.autocast(DEVICE.type, dtype=AMP_DTYPE[mode], enabled=mode != "fp32"):
            loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scale = scaler.get_scale()
        scaler.step(opt)  # skipped when the (unscaled) gradients hold an inf or nan
        scaler.update()  # halves the scale after an overflow, doubles it after growth_interval good steps
        losses.append(loss.item())
        scales.append(scale)
        skipped.append(scaler.is_enabled() and scaler.get_scale() < scale)
    torch.set_num_threads(threads)
    return model, {"loss": losses, "scale": scales, "skipped": skipped}


model_fp32, run_fp32 = train_torch("fp32")
LOSS_SCALE = 2.0**14
xb, yb = x_train[: 8 * LOW_BATCH], y_train[: 8 * LOW_BATCH]
g32 = P.torch_activation_grads(model_fp32, xb, yb)
g16 = P.torch_activation_grads(model_fp32, xb, yb, dtype=torch.float16)
g16_scaled = P.torch_activation_grads(model_fp32, xb, yb, dtype=torch.float16, scale=LOSS_SCALE)
plain, scaled = P.underflow_stats(g32, g16), P.underflow_stats(g32, g16_scaled)
P.gradient_histogram_plot(g32, scale=LOSS_SCALE)

# %%
# NBVAL_CHECK_OUTPUT
assert plain.flushed_fraction > 0.05 and scaled.flushed_fraction < plain.flushed_fraction / 4
assert scaled.overflowed == 0
print("fp16 without scaling flushes more than 5% of the activation gradients:", plain.flushed_fraction > 0.05)
print("loss scale 2**14 flushes under a quarter as many:", scaled.flushed_fraction < plain.flushed_fraction / 4)
print("loss scale 2**14 overflows none:", scaled.overflowed == 0)

# %%
rescued = 1 - scaled.flushed / plain.flushed
Markdown(
    f"After {STEPS} fp32 steps (loss {run_fp32['loss'][-1]:.3f}), fp16 autocast flushed "
    f"**{plain.flushed_fraction:.1%}** of the {plain.nonzero:,} nonzero activation gradients to zero; the "
    f"fp32 histogram predicted {P.simulate_cast(g32, 'float16').flushed_fraction:.1%} (values below half of "
    f"{fp16.min_subnormal:.1e}). With the loss multiplied by 2^{np.log2(LOSS_SCALE):.0f}, only "
    f"{scaled.flushed_fraction:.2%} are lost: loss scaling rescued **{rescued:.0%}** of the flushed gradients. "
    f"(Those gradients feed the weight gradients, which are sums over the batch and so underflow less.)"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The dynamic loss scale of `torch.amp.GradScaler`
# A fixed scale is a guess. `GradScaler` starts high, and after every step checks the gradients: an inf or
# nan means the scale was too big, so it **skips the optimizer step** and halves the scale; after
# `growth_interval` clean steps it doubles it. We start it deliberately too high to see both.
#
# **Prediction**: the first steps overflow and are skipped until the scale fits, then a saw-tooth: the
# scale doubles after every `growth_interval` clean steps (set short here) until a step overflows again.

# %%
GROWTH = 20 if NATIVE_BF16 else 10
_, run_fp16 = train_torch("fp16", steps=cu.env.pick(ci=120, cpu=200) if NATIVE_BF16 else 60, batch=LOW_BATCH,
                          init_scale=2.0**24, growth_interval=GROWTH)
P.scale_trace_plot(run_fp16["scale"], run_fp16["skipped"])

# %%
# NBVAL_CHECK_OUTPUT
log_scales = np.log2(run_fp16["scale"])
n_skipped = sum(run_fp16["skipped"])
grew = bool(np.any(np.diff(log_scales) > 0))
print("first step overflowed and was skipped:", run_fp16["skipped"][0])
print("scale grew again after clean steps:", grew)
print("a step after the start overflowed and was skipped:", any(run_fp16["skipped"][10:]))
print("all losses finite:", bool(np.all(np.isfinite(run_fp16["loss"]))))

# %%
Markdown(
    f"The scale started at 2^{log_scales[0]:.0f}; {n_skipped} of {len(log_scales)} steps were skipped, and "
    f"the scale settled between 2^{log_scales[20:].min():.0f} and 2^{log_scales[20:].max():.0f}. A skipped "
    f"step costs one forward and backward pass, which is why the growth interval is long "
    f"({torch.amp.GradScaler(DEVICE.type).get_growth_interval()} steps by default): "
    f"it keeps skips rare while the scale stays near the largest one that fits."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. bf16: no scaling needed, but long sums go wrong
#
# bf16 has fp32's exponent, so gradients do not underflow and no loss scaling is needed. Its 8-bit
# significand is the catch: once a running sum is 2^8 times bigger than the next term, adding the term
# changes nothing. Matrix units therefore multiply bf16 inputs but **accumulate in fp32**.
#
# **Prediction**: a bf16 running sum of n numbers near 0.5 stops growing near 256 (relative error toward
# 100%), while an fp32 accumulator fed the same bf16 inputs stays near fp32's own precision, and rounding
# only its final result to bf16 costs at most bf16's eps/2.

# %%
lengths = np.unique(np.logspace(1, 6, 21).astype(int))
acc_err = P.accumulation_error(lengths)
P.accumulation_plot(lengths, acc_err)

# %%
# NBVAL_CHECK_OUTPUT
ones = torch.ones(1000, dtype=torch.bfloat16)
naive = torch.tensor(0.0, dtype=torch.bfloat16)
for v in ones[:300]:
    naive = naive + v
print("bf16 running sum of 300 ones:", naive.item())
print("torch.sum of 1000 bf16 ones (fp32 accumulation inside):", ones.sum().item())
at_1e4 = {k: float(np.interp(1e4, lengths, v)) for k, v in acc_err.items()}
print("bf16 accumulator, 10^4 terms, error > 50%:", at_1e4["bf16 accumulator"] > 0.5)
print("fp32 accumulator error < 1e-5 at every length:", bool(acc_err["fp32 accumulator"].max() < 1e-5))
print("bf16 result error <= bf16 eps/2:", bool(acc_err["fp32 accumulator, bf16 result"].max() <= bf16.unit_roundoff))

# %%
Markdown(
    f"At 10^4 terms the bf16 accumulator is off by **{at_1e4['bf16 accumulator']:.0%}**, the fp32 accumulator "
    f"by {at_1e4['fp32 accumulator']:.1e}, and the fp32 sum rounded once to bf16 by "
    f"{at_1e4['fp32 accumulator, bf16 result']:.1e} (bound: {bf16.unit_roundoff:.1e}). `torch.sum` on a bf16 "
    f"tensor returned {ones.sum().item():g} for 1000 ones because it accumulates in fp32 internally; a Python "
    f"loop in bf16 stalls at {naive.item():g}. Mixed precision means exactly this split: low-precision storage "
    f"and multiplies, fp32 sums, fp32 master weights and fp32 optimizer updates."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. The APIs, on the same MLP, with their dtypes checked
#
# Each framework keeps **fp32 master weights** and computes matmuls in 16 bits; the loss and the weight
# gradients stay fp32. **Prediction**: weights fp32, layer outputs bf16, loss fp32, gradients fp32 in all
# three; fp16 needs a loss scaler, bf16 does not.
#
# ### PyTorch: `torch.autocast` (+ `torch.amp.GradScaler` for fp16 only)
# The device decides the dtype: bf16 on CPUs and on GPUs with bf16 tensor cores (Ampere and later), fp16 with
# a `GradScaler` on older GPUs such as the T4.

# %%
AMP = torch.float16 if DEVICE.type == "cuda" and not torch.cuda.is_bf16_supported(including_emulation=False) \
    else torch.bfloat16
AMP_NAME = str(AMP).removeprefix("torch.")
model = cu.models.torch_mlp(seed=0).to(DEVICE)
acts = []
hooks = [m.register_forward_hook(lambda m, i, o: acts.append(o.dtype)) for m in model if isinstance(m, torch.nn.Linear)]
xs, ys = x_train[:64], y_train[:64]
with torch.autocast(DEVICE.type, dtype=AMP):
    loss = F.cross_entropy(model(xs), ys)
loss.backward()
for h in hooks:
    h.remove()
torch_dtypes = {
    "weights": {p.dtype for p in model.parameters()},
    "activations": set(acts),
    "loss": {loss.dtype},
    "gradients": {p.grad.dtype for p in model.parameters()},
}
torch_dtypes

# %%
# NBVAL_CHECK_OUTPUT
expected = {"weights": {torch.float32}, "activations": {AMP}, "loss": {torch.float32}, "gradients": {torch.float32}}
assert torch_dtypes == expected, torch_dtypes
print("torch autocast: weights fp32, activations in the autocast dtype, loss fp32, gradients fp32:",
      torch_dtypes == expected)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Keras: `mixed_precision.set_global_policy("mixed_bfloat16")`
# A policy set before the layers are built gives them fp32 variables and bf16 computation. With
# `"mixed_float16"`, `compile()` wraps the optimizer in a `LossScaleOptimizer` by itself.

# %%
tf = cu.env.import_tensorflow()
import keras

keras.mixed_precision.set_global_policy("mixed_bfloat16")
kmodel = cu.models.keras_mlp(seed=0)
with tf.GradientTape() as tape:
    klogits = kmodel(x_all[:64])
    kloss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
        y_all[:64], tf.cast(klogits, "float32"), from_logits=True))
kgrads = tape.gradient(kloss, kmodel.trainable_variables)
keras_dtypes = {
    "weights": {v.dtype for v in kmodel.trainable_variables},
    "activations": {str(kmodel.layers[0](x_all[:4]).dtype.name), str(klogits.dtype.name)},
    "loss": {kloss.dtype.name},
    "gradients": {g.dtype.name for g in kgrads},
}
keras.mixed_precision.set_global_policy("mixed_float16")
k16 = cu.models.keras_mlp(seed=0)
k16.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
keras.mixed_precision.set_global_policy("float32")  # later cells build fp32 models again
keras_dtypes

# %%
# NBVAL_CHECK_OUTPUT
expected = {"weights": {"float32"}, "activations": {"bfloat16"}, "loss": {"float32"}, "gradients": {"float32"}}
assert keras_dtypes == expected, keras_dtypes
wrapped = isinstance(k16.optimizer, keras.optimizers.LossScaleOptimizer)
assert wrapped
print("keras mixed_bfloat16: weights fp32, activations bf16, loss fp32, gradients fp32:", keras_dtypes == expected)
print("keras mixed_float16: compile() wrapped the optimizer in LossScaleOptimizer:", wrapped)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### JAX: an explicit policy (fp32 parameters, bf16 compute, fp32 output)
# JAX has no autocast: you cast. `cu.precision.Policy` is a few lines (read it with `P.Policy??`): it casts
# the floating leaves of a pytree. Because the transpose of a cast is a cast, `jax.grad` with respect to
# the fp32 parameters returns fp32 gradients with no extra code.

# %%
policy = P.Policy(param_dtype="float32", compute_dtype="bfloat16", output_dtype="float32")
jparams = policy.cast_to_param(cu.models.jax_mlp_params(seed=0))
mixed_apply = policy.wrap(cu.models.jax_mlp_apply)


def jax_loss(params, x, y):
    logits = mixed_apply(params, x)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


jx, jy = jnp.asarray(x_all[:64]), jnp.asarray(y_all[:64])
jloss, jgrads = jax.jit(jax.value_and_grad(jax_loss))(jparams, jx, jy)
hidden = jax.nn.relu(policy.cast_to_compute(jx) @ policy.cast_to_compute(jparams)[0]["w"])
jax_dtypes = {
    "weights": {str(a.dtype) for a in jax.tree.leaves(jparams)},
    "activations": {str(hidden.dtype)},
    "loss": {str(jloss.dtype)},
    "gradients": {str(a.dtype) for a in jax.tree.leaves(jgrads)},
}
jax_dtypes

# %%
# NBVAL_CHECK_OUTPUT
expected = {"weights": {"float32"}, "activations": {"bfloat16"}, "loss": {"float32"}, "gradients": {"float32"}}
assert jax_dtypes == expected, jax_dtypes
same = abs(float(jloss) - loss.item()) < 0.05 and abs(float(jloss) - float(kloss)) < 0.05
print("jax policy: weights fp32, activations bf16, loss fp32, gradients fp32:", jax_dtypes == expected)
print("same model, same batch: torch, keras and jax bf16 losses agree within 0.05:", same)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Speed: does bf16 pay on *this* machine?
#
# bf16 is only fast where the hardware multiplies bf16 natively: tensor cores on GPUs since Ampere, the MXU
# on TPUs, AVX512-BF16 and AMX on recent Xeons. Elsewhere the library converts every value to fp32 and
# back, often in a slow fallback kernel, and bf16 is **slower**, sometimes by orders of magnitude. The
# library must also use the units: oneDNN (torch on CPU) does, XLA:CPU (JAX) may not.
#
# **Prediction**: the CPU flags below decide it. With `avx512_bf16`/`amx_bf16` expect torch's bf16 matmul
# to beat fp32 by several times; without them expect it to lose badly. Sizes are chosen from the flags so
# that the slow case stays cheap.

# %%
flags = cu.env.simd_flags()
n = cu.env.pick(ci=512, cpu=1024, gpu=4096) if NATIVE_BF16 else cu.env.pick(ci=128, cpu=256, gpu=4096)
a32, b32 = torch.randn(n, n, device=DEVICE), torch.randn(n, n, device=DEVICE)
torch_mm = {f"torch {name}": (a32.to(dt), b32.to(dt)) for name, dt in AMP_DTYPE.items()
            if name != "fp16" or DEVICE.type == "cuda"}
ja, jb = jnp.asarray(a32.cpu().numpy()), jnp.asarray(b32.cpu().numpy())
jmm = jax.jit(jnp.matmul)
jax_mm = {"jax fp32": (ja, jb), "jax bf16": (ja.astype(jnp.bfloat16), jb.astype(jnp.bfloat16))}
mm_time = {name: cu.timing.benchmark(torch.mm, *ab, min_time=QUICK, max_repeats=20, label=name)
           for name, ab in torch_mm.items()}
mm_time |= {name: cu.timing.benchmark(jmm, *ab, min_time=QUICK, max_repeats=20, label=name)
            for name, ab in jax_mm.items()}
flops = {name: 2 * n**3 / m.median for name, m in mm_time.items()}
# Published dense peaks of one NVIDIA A100 SXM (datasheet), shown where no GPU is present; not measured here.
A100_PUBLISHED = {"A100 fp32": 19.5e12, "A100 tf32 (tensor cores)": 156e12, "A100 bf16 / fp16": 312e12}
print(f"SIMD flags: {', '.join(flags)} -> native bf16: {cu.env.has_native_bf16()}; device: {DEVICE}; n = {n}")
P.throughput_plot(flops, None if DEVICE.type == "cuda" else A100_PUBLISHED,
                  published_label="published, NVIDIA A100 datasheet (not measured)")

# %%
# NBVAL_CHECK_OUTPUT
ref = (a32.double() @ b32.double())
err_bf16 = ((torch.mm(*torch_mm["torch bf16"]).double() - ref).abs().max() / ref.abs().max()).item()
err_fp32 = ((torch.mm(a32, b32).double() - ref).abs().max() / ref.abs().max()).item()
assert err_fp32 < 1e-5 and err_bf16 < 2e-2
print("fp32 matmul error < 1e-5 of max:", err_fp32 < 1e-5)
print("bf16 matmul error < 2e-2 of max (bf16 inputs, fp32 accumulation):", err_bf16 < 2e-2)

# %%
speed_torch = mm_time["torch fp32"].median / mm_time["torch bf16"].median
speed_jax = mm_time["jax fp32"].median / mm_time["jax bf16"].median
Markdown(
    f"On this machine ({report.cpu}, flags {', '.join(flags)}) torch's bf16 matmul ran at "
    f"**{speed_torch:.2f}x** the speed of fp32 ({flops['torch bf16'] / 1e9:,.0f} vs "
    f"{flops['torch fp32'] / 1e9:,.0f} GFLOP/s, n = {n}); JAX's at **{speed_jax:.2f}x**. "
    + ("The CPU has bf16 units (AVX512-BF16/AMX) and oneDNN uses them for torch, so bf16 wins there; "
       "where JAX's bf16 is not faster, XLA:CPU is not using them: the hardware decides what is possible, "
       "the library decides what you get. "
       if cu.env.has_native_bf16() and DEVICE.type == "cpu" else
       "This CPU has no bf16 units, so each bf16 value is converted to fp32 and back: bf16 is a memory "
       "format here, not a speed-up. " if DEVICE.type == "cpu" else
       "On the GPU, bf16 and fp16 run on tensor cores. ")
    + (f"The right panel shows what a GPU gives: an A100's published bf16 peak is "
       f"{A100_PUBLISHED['A100 bf16 / fp16'] / A100_PUBLISHED['A100 fp32']:.0f}x its fp32 peak (datasheet, "
       f"not measured in this run)." if DEVICE.type != "cuda" else "") + busy_note()
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A whole training step, and the seed's claim
# The seed article says automatic mixed precision "typically speeds up training by ~30% and saves memory".
# A training step is more than matmuls: casts, elementwise ops and the optimizer stay in fp32.
#
# **Prediction**: the step gains less than the matmul alone; on a CPU without bf16 units it loses.

# %%
WIDE = cu.env.pick(ci=(256, 1024, 1024, 10), cpu=(256, 2048, 2048, 10), gpu=(1024, 8192, 8192, 10)) \
    if NATIVE_BF16 else (64, 128, 128, 10)
STEP_BATCH = cu.env.pick(ci=256, cpu=512, gpu=4096) if NATIVE_BF16 else LOW_BATCH
wide = cu.models.torch_mlp(WIDE, seed=0).to(DEVICE)
wopt = torch.optim.SGD(wide.parameters(), lr=1e-3)
wx = torch.randn(STEP_BATCH, WIDE[0], device=DEVICE)
wy = torch.randint(0, WIDE[-1], (STEP_BATCH,), device=DEVICE)


def torch_step(dtype):
    def step():
        with torch.autocast(DEVICE.type, dtype=dtype, enabled=dtype != torch.float32):
            loss = F.cross_entropy(wide(wx), wy)
        wopt.zero_grad(set_to_none=True)
        loss.backward()
        wopt.step()
        return loss
    return step


AMP_STEP = f"torch {AMP_NAME} autocast step"
steps = cu.timing.compare({"torch fp32 step": torch_step(torch.float32), AMP_STEP: torch_step(AMP)},
                          min_time=QUICK, max_repeats=20)
cu.plotting.speedup_bars(steps, title=f"Training step, MLP {WIDE}, batch {STEP_BATCH}")

# %%
step_speedup = steps.speedup(AMP_STEP)
Markdown(
    f"The {AMP_STEP.removeprefix('torch ')} ran at **{step_speedup:.2f}x** the speed of the fp32 step (quartile "
    f"range {steps[AMP_STEP].speedup_low:.2f}x to {steps[AMP_STEP].speedup_high:.2f}x), "
    f"against **{speed_torch:.2f}x** for the bare matmul. The seed's \"~30% faster\" is a 1.3x claim: "
    + ("this run " + ("matches or beats it" if step_speedup >= 1.3 else
                      "gains something, but less" if step_speedup > 1.05 else "does not confirm it")
       + f" on {DEVICE.type}. ")
    + "The claim holds where matmuls dominate and the hardware has 16-bit units; a small or cast-heavy "
    "step, or a CPU without bf16 units, can come out slower. Measure it on your model." + busy_note()
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Same model, same data: fp32 against mixed precision
# **Prediction**: the loss curves overlap within the noise and the final test accuracies agree within a
# few points; bf16 needs no scaler, fp16 needs the `GradScaler`.

# %%
# emulated bf16/fp16 is slow: fewer, smaller steps there, and an fp32 run with the same settings
mp_steps = STEPS if NATIVE_BF16 else 150
if NATIVE_BF16:
    model_ref, run_ref = model_fp32, run_fp32
else:
    model_ref, run_ref = train_torch("fp32", steps=mp_steps, batch=LOW_BATCH)
model_bf16, run_bf16 = train_torch("bf16", steps=mp_steps, batch=LOW_BATCH)
model_fp16, run_fp16_full = train_torch("fp16", steps=mp_steps, batch=LOW_BATCH)


def accuracy(model):
    with torch.no_grad():
        return (model(x_test).argmax(1) == y_test).float().mean().item()


acc = {"fp32": accuracy(model_ref), "bf16 autocast": accuracy(model_bf16),
       "fp16 autocast + GradScaler": accuracy(model_fp16)}
smooth = lambda v: np.convolve(v, np.ones(20) / 20, mode="valid")  # noqa: E731
P.lines_plot(np.arange(len(smooth(run_bf16["loss"]))),
             {"fp32": smooth(run_ref["loss"]), "bf16 autocast": smooth(run_bf16["loss"]),
              "fp16 autocast + GradScaler": smooth(run_fp16_full["loss"])},
             xlabel="step", ylabel="training loss (20-step mean)", title="fp32 and mixed precision", logy=True)

# %%
# NBVAL_CHECK_OUTPUT
assert all(a > 0.3 for a in acc.values()), acc
assert max(acc.values()) - min(acc.values()) < 0.05, acc
print("all three above 3x chance (30%) test accuracy:", all(a > 0.3 for a in acc.values()))
print("test accuracies within 5 points of each other:", max(acc.values()) - min(acc.values()) < 0.05)

# %%
Markdown(
    "Test accuracy after the same steps: " + ", ".join(f"{k} **{v:.1%}**" for k, v in acc.items())
    + f". Final training loss (20-step mean): fp32 {np.mean(run_ref['loss'][-20:]):.3f}, "
    f"bf16 {np.mean(run_bf16['loss'][-20:]):.3f}, fp16 {np.mean(run_fp16_full['loss'][-20:]):.3f}. "
    "Mixed precision did not change what the model learned; it changes the speed (section 5) and the memory "
    "(section 7)."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Where training memory goes
# ### Weights, gradients, optimizer state: bytes per parameter
# fp32 training with Adam holds 4 bytes of weights, 4 of gradients and 8 of Adam moments per parameter.
# Mixed precision **keeps** the fp32 master weights and fp32 optimizer, and adds a bf16 copy of the weights.
#
# **Prediction**: mixed precision does not shrink this part at all; it grows it by 2 bytes per parameter.
# Only "pure bf16" (no fp32 master weights, with its accuracy risks) halves it.

# %%
mem_model = cu.models.torch_mlp(SIZES, seed=0)
mopt = torch.optim.Adam(mem_model.parameters())
F.cross_entropy(mem_model(x_train[:64].cpu()), y_train[:64].cpu()).backward()
mopt.step()
n_params = sum(p.numel() for p in mem_model.parameters())
measured_state = P.torch_state_bytes(mem_model, mopt)
per_param = {scheme: {k: v / n_params for k, v in P.training_memory(n_params, scheme).items()}
             for scheme in P.TRAINING_SCHEMES}
P.memory_stack_plot(per_param)

# %%
# NBVAL_CHECK_OUTPUT
assert measured_state == P.training_memory(n_params, "fp32"), measured_state
print("torch fp32 + Adam holds exactly 4 + 4 + 8 bytes per parameter:",
      measured_state == P.training_memory(n_params, "fp32"))
print("bytes per parameter:", {k: sum(v.values()) for k, v in per_param.items()})

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Activations: what autograd keeps for the backward pass
# Activations grow with the batch, parameters do not. We count the bytes of the tensors autograd saves
# (`torch.autograd.graph.saved_tensors_hooks`), fp32 against bf16 autocast, for several batch sizes.
#
# **Prediction**: linear in the batch, and half as many bytes per sample under bf16 autocast. But autocast
# also saves the bf16 copies of the weights it needs for the backward pass: a constant, independent of the batch.

# %%
ACT_WIDE = (256, 1024, 1024, 10) if NATIVE_BF16 else (64, 128, 128, 10)
act_model = cu.models.torch_mlp(ACT_WIDE, seed=0).to(DEVICE)
batches = [64, 128, 256, 512, 1024]


def saved_bytes(batch, dtype):
    xb = torch.randn(batch, ACT_WIDE[0], device=DEVICE)
    yb = torch.randint(0, ACT_WIDE[-1], (batch,), device=DEVICE)

    def forward():
        with torch.autocast(DEVICE.type, dtype=dtype, enabled=dtype != torch.float32):
            return F.cross_entropy(act_model(xb), yb)
    return P.saved_activation_bytes(forward, exclude=act_model.parameters())


act_mem = {name: [saved_bytes(b, dt) for b in batches] for name, dt in
           (("fp32", torch.float32), (f"{AMP_NAME} autocast", AMP))}
P.lines_plot(batches, {k: np.array(v) / 2**20 for k, v in act_mem.items()}, xlabel="batch size",
             ylabel="saved for backward (MiB)", title=f"Activation memory, MLP {ACT_WIDE}")

# %%
# NBVAL_CHECK_OUTPUT
(slope32, const32), (slope16, const16) = (np.polyfit(batches, act_mem[k], 1) for k in act_mem)
ratio = slope16 / slope32
linears = [m for m in act_model if isinstance(m, torch.nn.Linear)]
copies = 2 * sum(m.weight.numel() for m in linears[1:])  # layer 1's input needs no gradient: no copy saved
residual = max(abs(np.polyval(np.polyfit(batches, v, 1), batches) - v).max() for v in act_mem.values())
print("activation memory is linear in the batch (fit residual < 1 KiB):", residual < 1024)
print("bytes per sample, 16-bit autocast / fp32 < 0.6:", ratio < 0.6)
print("autocast's constant == 16-bit copies of the weights of layers 2.. (within 1%):",
      abs((const16 - const32) / copies - 1) < 0.01)

# %%
state_fp32 = sum(P.training_memory(sum(p.numel() for p in act_model.parameters()), "fp32").values())
Markdown(
    f"Per sample, autograd kept {cu.units.format_bytes(slope32)} in fp32 and {cu.units.format_bytes(slope16)} under {AMP_NAME} autocast "
    f"(**{ratio:.2f}x**); autocast added a constant {cu.units.format_bytes(const16 - const32)}, the 16-bit weight copies "
    f"(the 2 extra bytes per parameter of the bar chart above, measured). At batch {batches[-1]} that is "
    f"{cu.units.format_bytes(act_mem['fp32'][-1])} vs {cu.units.format_bytes(act_mem[f'{AMP_NAME} autocast'][-1])}, against "
    f"{cu.units.format_bytes(state_fp32)} of fp32 training state. So the seed's \"saves memory\" is about activations, "
    f"and pays off with large batches (or long sequences): the parameter side grows from 16 to 18 bytes per "
    f"parameter, the per-sample activation side halves."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Activation checkpointing: recompute instead of store
# `torch.utils.checkpoint`, `jax.checkpoint` (alias `jax.remat`) and `tf.recompute_grad` keep only each
# block's input and recompute the inside during backward. We use residual MLP blocks
# (h + W2·gelu(W1·h), 4x wide inside), the shape of a transformer's feed-forward layer.
#
# **Prediction**: each block saves its input instead of ~9 block-widths of intermediates, so saved
# memory drops several-fold, and the step costs about one extra forward pass (~+30%).

# %%
D, L, CB = cu.env.pick(ci=(256, 6, 256), cpu=(256, 8, 1024), gpu=(1024, 8, 4096))
rng = np.random.default_rng(0)
W = [((rng.standard_normal((D, 4 * D)) / np.sqrt(D)).astype(np.float32),
      (rng.standard_normal((4 * D, D)) / np.sqrt(4 * D) / L).astype(np.float32)) for _ in range(L)]
tW = [(torch.tensor(a, device=DEVICE, requires_grad=True), torch.tensor(b, device=DEVICE, requires_grad=True))
      for a, b in W]
tx = torch.ones(CB, D, device=DEVICE)


def t_block(h, w1, w2):
    return h + F.gelu(h @ w1) @ w2


def t_loss(remat):
    h = tx
    for w1, w2 in tW:
        h = torch.utils.checkpoint.checkpoint(t_block, h, w1, w2, use_reentrant=False) if remat else t_block(h, w1, w2)
    return (h**2).mean()


def t_step(remat):
    for w in tW:
        for p in w:
            p.grad = None
    t_loss(remat).backward()
    return [p.grad for w in tW for p in w]


flat_tW = [p for w in tW for p in w]
ckpt = {}
for remat in (False, True):
    ckpt[("torch", remat)] = {
        "saved": P.saved_activation_bytes(lambda r=remat: t_loss(r), exclude=flat_tW),
        "peak": P.torch_peak_bytes(lambda r=remat: t_step(r), DEVICE),
        "time": cu.timing.benchmark(t_step, remat, warmup=0, min_time=QUICK, min_repeats=3, max_repeats=10,
                                    label=f"torch remat={remat}"),
    }
torch_same = all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(t_step(False), t_step(True)))

# %% slideshow={"slide_type": "subslide"}
jW = [(jnp.asarray(a), jnp.asarray(b)) for a, b in W]
jxx = jnp.ones((CB, D))
weight_bytes = sum(a.nbytes for a in jax.tree.leaves(jW))  # residuals include the weights: they exist anyway


def j_block(p, h):
    return h + jax.nn.gelu(h @ p[0]) @ p[1]


def j_loss(params, x, remat):
    block = jax.checkpoint(j_block) if remat else j_block
    for p in params:
        x = block(p, x)
    return jnp.mean(x**2)


for remat in (False, True):
    loss_fn = lambda p, x, r=remat: j_loss(p, x, r)  # noqa: E731
    lowered = jax.jit(jax.grad(loss_fn)).lower(jW, jxx)
    grad_step = lowered.compile()
    ckpt[("jax", remat)] = {
        # what the forward pass must keep for backward: the residuals of jax.vjp, sized by XLA
        "saved": P.jax_memory(lambda p, x, f=loss_fn: jax.vjp(f, p, x)[1], jW, jxx)["output"] - weight_bytes,
        "temp": grad_step.memory_analysis().temp_size_in_bytes,
        "dots": grad_step.as_text().count(" dot("),
        "lowered dots": lowered.as_text().count("dot_general"),
        "grads": grad_step(jW, jxx),
        "time": cu.timing.benchmark(grad_step, jW, jxx, warmup=0, min_time=QUICK, min_repeats=3, max_repeats=10,
                                    label=f"jax remat={remat}"),
    }
jax_same = all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in
               zip(jax.tree.leaves(ckpt[("jax", False)]["grads"]), jax.tree.leaves(ckpt[("jax", True)]["grads"])))

# tf.recompute_grad: the same block, gradients checked against the plain one
tw1, tw2 = tf.constant(W[0][0]), tf.constant(W[0][1])
tfx = tf.ones((64, D))
tf_block = lambda h: h + tf.nn.gelu(h @ tw1, approximate=False) @ tw2  # noqa: E731
tf_grads = []
for fn in (tf_block, tf.recompute_grad(tf_block)):
    with tf.GradientTape() as tape:
        tape.watch(tfx)
        out = tf.reduce_mean(fn(tfx) ** 2)
    tf_grads.append(tape.gradient(out, tfx).numpy())
tf_same = bool(np.allclose(*tf_grads, rtol=1e-5, atol=1e-7))

mem_rows = {"torch: saved\nfor backward": (ckpt[("torch", False)]["saved"], ckpt[("torch", True)]["saved"]),
            "jax: vjp residuals\n(memory_analysis, no weights)": (ckpt[("jax", False)]["saved"], ckpt[("jax", True)]["saved"])}
peak_name = "torch: peak\n" + ("max_memory_allocated" if DEVICE.type == "cuda" else "RSS")
if ckpt[("torch", False)]["peak"] is not None:
    mem_rows[peak_name] = (ckpt[("torch", False)]["peak"], ckpt[("torch", True)]["peak"])
fig_mem = P.before_after_plot({k: (a / 2**20, b / 2**20) for k, (a, b) in mem_rows.items()}, ylabel="MiB",
                              title=f"Checkpointing {L} blocks, width {D}, batch {CB}")
fig_mem

# %% slideshow={"slide_type": "subslide"}
P.before_after_plot({f"{fw} step": (ckpt[(fw, False)]["time"].median * 1e3, ckpt[(fw, True)]["time"].median * 1e3)
                     for fw in ("torch", "jax")}, ylabel="ms per training step", title="The price: step time")

# %%
# NBVAL_CHECK_OUTPUT
torch_ratio = ckpt[("torch", True)]["saved"] / ckpt[("torch", False)]["saved"]
jax_ratio = ckpt[("jax", True)]["saved"] / ckpt[("jax", False)]["saved"]
assert torch_same and jax_same and tf_same
print("same gradients with and without checkpointing (torch, jax, tf):", torch_same, jax_same, tf_same)
print("torch saves less than a quarter with checkpointing:", torch_ratio < 0.25)
print("jax vjp residuals less than a quarter with checkpointing:", jax_ratio < 0.25)

# %%
t_cost = ckpt[("torch", True)]["time"].median / ckpt[("torch", False)]["time"].median
j_cost = ckpt[("jax", True)]["time"].median / ckpt[("jax", False)]["time"].median
peak = (ckpt[("torch", False)]["peak"], ckpt[("torch", True)]["peak"])
dots = (ckpt[("jax", False)]["dots"], ckpt[("jax", True)]["dots"])
lowered = (ckpt[("jax", False)]["lowered dots"], ckpt[("jax", True)]["lowered dots"])
Markdown(
    f"torch kept {cu.units.format_bytes(ckpt[('torch', False)]['saved'])} for backward without checkpointing and "
    f"{cu.units.format_bytes(ckpt[('torch', True)]['saved'])} with it (**{torch_ratio:.2f}x**)"
    + (f"; the measured peak ({'max_memory_allocated' if DEVICE.type == 'cuda' else 'process RSS'}) went from "
       f"{cu.units.format_bytes(peak[0])} to {cu.units.format_bytes(peak[1])} (the peak also holds the {cu.units.format_bytes(weight_bytes)} of "
       f"weight gradients, which no checkpointing removes)" if peak[0] is not None else "")
    + f", for a step **{t_cost:.2f}x** as long. In JAX the forward residuals (without the weights) went from "
    f"{cu.units.format_bytes(ckpt[('jax', False)]['saved'])} to {cu.units.format_bytes(ckpt[('jax', True)]['saved'])} "
    f"(**{jax_ratio:.2f}x**; unfused, JAX's tanh-GELU keeps several 4x-wide intermediates per block). "
    f"But inside one `jax.jit` the whole step is XLA's to schedule: here the compiled step has {dots[0]} "
    f"dot ops without and {dots[1]} with checkpointing, temp buffers of "
    f"{cu.units.format_bytes(ckpt[('jax', False)]['temp'])} vs {cu.units.format_bytes(ckpt[('jax', True)]['temp'])}, "
    f"and a step {j_cost:.2f}x as long"
    + (f". The program JAX hands to XLA does ask for the recomputation ({lowered[1]} dot ops instead of "
       f"{lowered[0]}), but the CPU compiler removed it again: on this backend `jax.checkpoint` inside one jit "
       f"does not recompute, and its temp memory barely moves (a step-time difference is noise). Check the "
       f"compiled program, not the source."
       if dots[0] == dots[1] else ": the recomputation is really there (more dot ops), and so is the saving.")
    + busy_note()
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
# **1.** Which loss scale is too big? Using `P.torch_activation_grads` on `model_fp32`, find the smallest
# power of two at which fp16 gradients overflow (`underflow_stats(...).overflowed > 0`).
# <details><summary>Hint</summary>The largest |gradient| times the scale must stay below fp16's max
# (`table["fp16"].max`): predict k from log2(max / max|g|), then test a few scales around it (each test is a
# forward and backward pass in fp16, slow where fp16 is emulated). Intermediate values can overflow a little
# earlier than the final gradients.</details>

# %% jupyter={"source_hidden": true}
predicted = int(np.ceil(np.log2(fp16.max / g32.abs().max().item())))
overflows = {k: P.underflow_stats(g32, P.torch_activation_grads(model_fp32, xb, yb, dtype=torch.float16,
                                                                scale=2.0**k)).overflowed > 0
             for k in (predicted - 2, predicted - 1, predicted, predicted + 1)}
print(f"predicted from max|g|: 2^{predicted}; overflow at 2^k: {overflows}")

# %% [markdown]
# **2.** Kahan summation rescues a sum without a wider accumulator. Write a compensated sum in bf16
# (NumPy with `ml_dtypes.bfloat16`) and compare its error for 10^4 terms with the naive bf16 running sum.
# <details><summary>Hint</summary>Keep a compensation c: y = x - c; t = s + y; c = (t - s) - y; s = t, all in
# bf16. A Python loop over 10^4 items is fast enough.</details>

# %% jupyter={"source_hidden": true}
import ml_dtypes

terms = np.random.default_rng(0).random(10_000).astype(ml_dtypes.bfloat16)
s = c = ml_dtypes.bfloat16(0)
for v in terms:
    y_ = v - c
    t_ = s + y_
    c = (t_ - s) - y_
    s = t_
exact = terms.astype(np.float64).sum()
print(f"naive bf16 error {abs(float(np.cumsum(terms, dtype=ml_dtypes.bfloat16)[-1]) - exact) / exact:.1%}, "
      f"Kahan bf16 error {abs(float(s) - exact) / exact:.2%}")

# %% [markdown]
# **3.** Checkpoint every other block instead of every block in the torch model: predict the saved bytes
# before you measure them.
# <details><summary>Hint</summary>Wrap two blocks in one function and checkpoint that; only the input of each
# pair is kept, plus the intermediates of the one pair being recomputed during backward.</details>

# %% jupyter={"source_hidden": true}
def t_loss_pairs():
    h = tx
    for i in range(0, L - 1, 2):
        def pair(h, i=i):
            return t_block(t_block(h, *tW[i]), *tW[i + 1])
        h = torch.utils.checkpoint.checkpoint(pair, h, use_reentrant=False)
    if L % 2:
        h = t_block(h, *tW[-1])
    return (h**2).mean()


pairs = P.saved_activation_bytes(t_loss_pairs, exclude=flat_tW)
print(f"every block: {cu.units.format_bytes(ckpt[('torch', True)]['saved'])}, every pair: {cu.units.format_bytes(pairs)}, "
      f"none: {cu.units.format_bytes(ckpt[('torch', False)]['saved'])}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.summary.table("03_mixed_precision", [
    ("fp16 activation gradients flushed to zero", plain.flushed_fraction * 100, "%", "trained MLP, no loss scaling"),
    ("... with loss scale 2^14", scaled.flushed_fraction * 100, "%", "static loss scaling"),
    ("GradScaler steps skipped", n_skipped, "steps", f"of {len(log_scales)}, init scale 2^24, growth every {GROWTH}"),
    ("bf16 accumulator error, 10^4 terms", at_1e4["bf16 accumulator"] * 100, "%", "fp32 accumulation: ~0"),
    ("torch bf16 / fp32 matmul speed", speed_torch, "x", f"n = {n}, native bf16: {cu.env.has_native_bf16()}"),
    ("jax bf16 / fp32 matmul speed", speed_jax, "x", "XLA:CPU" if DEVICE.type == "cpu" else "XLA"),
    ("torch bf16 autocast training step speed-up", step_speedup, "x", "seed claims ~1.3x"),
    ("test accuracy fp32", acc["fp32"] * 100, "%", ""),
    ("test accuracy bf16 autocast", acc["bf16 autocast"] * 100, "%", ""),
    ("training state, fp32 + Adam", sum(per_param["fp32"].values()), "bytes/param", "measured on the model"),
    ("training state, mixed + Adam", sum(per_param["mixed (fp32 master)"].values()), "bytes/param",
     "fp32 master + bf16 copy"),
    ("bf16 / fp32 activation bytes per sample", ratio, "x", "plus a constant: bf16 weight copies"),
    ("torch saved memory with checkpointing", torch_ratio, "x", "of without"),
    ("torch step time with checkpointing", t_cost, "x", "of without"),
])

# %% [markdown]
# **What to remember**
# - fp16 has precision but no range: small gradients flush to zero, so it needs loss scaling (`GradScaler`,
#   `LossScaleOptimizer`); bf16 has fp32's range and no scaling, but only ~2-3 digits, so sums must
#   accumulate in fp32 and master weights stay fp32.
# - Speed comes from hardware units and from the library using them: check the CPU flags or GPU, then
#   measure the whole step; "30% faster" is a claim about matmul-heavy steps on 16-bit hardware.
# - Mixed precision does not shrink weights or optimizer state; it shrinks activations. Checkpointing
#   shrinks them further at the price of recomputation (and a compiler may undo it: look at the program).
#
# **Next**: `04_input_pipeline`, where the accelerator may be waiting for the CPU instead.

# %% slideshow={"slide_type": "skip"}
print(cu.summary.last_verified())
