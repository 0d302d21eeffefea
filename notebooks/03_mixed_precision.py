# ---
# jupyter:
#   course:
#     minutes:
#       ci: 3
#       laptop: 4
#       workshop: 55
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
# - use `torch.autocast` + `torch.amp.GradScaler`, Keras 3 dtype policies, and an explicit bf16 policy in JAX,
#   and check the dtypes of weights, activations and gradients yourself;
# - tell from the CPU flags (or the GPU) whether bf16 will be faster or slower, and measure it;
# - account for training memory per parameter and cut activation memory with checkpointing.
#
# **Time budget** (from the notebook's metadata, not measured here): 3 minutes at ci size on a 2-core CPU, which CI
# enforces; 4 at laptop size; 55 minutes as a workshop. **Accelerators**: every section runs on a CPU. With a
# CUDA GPU, the torch parts run on it (adding fp16 matmuls and `max_memory_allocated`); JAX and Keras use whatever device they find (a TPU on a TPU runtime). JAX and TensorFlow are optional:
# without one, its part is skipped with one sentence.
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/03_mixed_precision.ipynb)
#
# On a Colab TPU runtime there is no TensorFlow: its parts say so in one sentence and are skipped.

# %%
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@v0.2.0"], check=True)

# %% slideshow={"slide_type": "skip"}
import os

import course_utils as cu

report = cu.notebook.setup()
import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import Markdown, display

P, verdict, fmt_bytes = cu.precision, cu.display.verdict, cu.display.format_bytes
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NATIVE_BF16 = cu.env.has_native_bf16() or DEVICE.type == "cuda" or cu.env.accelerator() == "tpu"
HAS_JAX, HAS_TF = cu.env.available("jax"), cu.env.available("tensorflow")
QUICK = cu.env.pick(ci=0.1, cpu=0.3)  # seconds per benchmark
report

# %% [markdown] course={"lead": false, "minutes": 5} slideshow={"slide_type": "slide"}
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
print("bf16 range == fp32 range (min normal equal, max within 1%):",
      bf16.min_normal == fp32.min_normal and bf16.max / fp32.max > 0.99)
print("bf16 eps / fp16 eps:", bf16.eps / fp16.eps)
print("fp16 max:", fp16.max, "| fp16 smallest subnormal == 2**-24:", fp16.min_subnormal == 2.0**-24)
print("1 + 2**-8 in bf16 == 1:", float(P.round_to(1 + 2.0**-8, "bfloat16")) == 1.0)

# %%
v_formats = verdict(bf16.min_normal == fp32.min_normal and bf16.eps / fp16.eps == 8
                    and fp16.min_subnormal == 2.0**-24,
                    f"bf16 min normal {bf16.min_normal:.3g} = fp32's; bf16 eps / fp16 eps = {bf16.eps / fp16.eps:g}; "
                    f"fp16 smallest subnormal = 2^{np.log2(fp16.min_subnormal):.0f}",
                    "finfo disagrees with the layouts described above")
v_formats

# %%
Markdown(
    f"From `finfo`: fp16 keeps {fp16.decimal_digits:.1f} decimal digits but tops out at {fp16.max:,.0f} and "
    f"loses everything below {fp16.min_subnormal:.2e}; bf16 keeps only {bf16.decimal_digits:.1f} digits but "
    f"reaches {bf16.max:.2e}, like fp32 ({fp32.max:.2e}). "
    + ("So the prediction follows from the bit counts alone. " if v_formats.held else
       "The bit counts did not give the predicted limits: read the table above for what this NumPy reports. ")
    + f"In the plot every format has a flat floor of eps/2 in its normal range (bf16: {bf16.unit_roundoff:.1e}, "
    f"fp16: {fp16.unit_roundoff:.1e}), a rising error in the subnormal range, 1.0 where values flush to zero, and "
    f"a dotted wall where they overflow. The fp8 formats ({table['fp8 e4m3'].eps:g} and "
    f"{table['fp8 e5m2'].eps:g} eps) only work with a per-tensor scale, which is what fp8 training recipes add."
)

# %% [markdown] course={"lead": false, "minutes": 10} slideshow={"slide_type": "slide"}
# ## 2. fp16 gradients underflow; loss scaling rescues them
#
# Gradients get small as a model learns: well-predicted samples contribute almost nothing, and the mean
# over the batch divides again. We train the course's MLP (three hidden layers) in fp32 with the standard
# AMP loop (`P.amp_train??` shows it: autocast around the forward pass, a `GradScaler` around backward and
# step), then compute the gradients of every layer's output (the activation gradients) once in fp32 and
# once under fp16 autocast.
#
# **Prediction**: more than 5% of the activation gradients sit below 2^-24 and come back as exact zeros in
# fp16; multiplying the loss by 2^14 before `backward()` (and dividing the gradients by 2^14 after) shifts
# the histogram right by 14 and rescues at least three quarters of them, with none reaching 65504.

# %% slideshow={"slide_type": "subslide"}
SIZES = (32, 128, 128, 128, 10)
x_all, y_all = cu.data.classification(10_240, seed=0)
x_train, y_train = torch.from_numpy(x_all[:8192]).to(DEVICE), torch.from_numpy(y_all[:8192]).to(DEVICE)
x_test, y_test = torch.from_numpy(x_all[8192:]).to(DEVICE), torch.from_numpy(y_all[8192:]).to(DEVICE)
# The fp32 model whose gradients we inspect trains alike on every machine (fp32 is fast everywhere); the
# 16-bit training runs below take fewer, smaller steps where 16-bit arithmetic is emulated (no bf16 units).
FP32_STEPS = cu.env.pick(ci=400, cpu=600)
BATCH, STEPS = (256, FP32_STEPS) if NATIVE_BF16 else (64, 150)
TRAIN = dict(steps=STEPS, batch=BATCH, x_test=x_test, y_test=y_test)
model_fp32, run_fp32 = P.amp_train(SIZES, x_train, y_train, mode="fp32", steps=FP32_STEPS, batch=256,
                                   x_test=x_test, y_test=y_test)
LOSS_SCALE = 2.0**14
xb, yb = x_train[:2048], y_train[:2048]
g32 = P.torch_activation_grads(model_fp32, xb, yb)
g16 = P.torch_activation_grads(model_fp32, xb, yb, dtype=torch.float16)
g16_scaled = P.torch_activation_grads(model_fp32, xb, yb, dtype=torch.float16, scale=LOSS_SCALE)
plain, scaled = P.underflow_stats(g32, g16), P.underflow_stats(g32, g16_scaled)
P.gradient_histogram_plot(g32, scale=LOSS_SCALE)

# %%
# NBVAL_CHECK_OUTPUT
print("fp16 without scaling flushes more than 5% of the activation gradients:", plain.flushed_fraction > 0.05)
print("loss scale 2**14 flushes under a quarter as many:", scaled.flushed_fraction < plain.flushed_fraction / 4)
print("loss scale 2**14 overflows none:", scaled.overflowed == 0)

# %%
v_underflow = verdict(plain.flushed_fraction > 0.05 and scaled.flushed < plain.flushed / 4 and scaled.overflowed == 0,
                      f"{plain.flushed_fraction:.1%} flushed without scaling, {scaled.flushed_fraction:.2%} with "
                      f"2^14 ({scaled.overflowed} overflowed)",
                      "the trained model's gradients did not sit where the prediction put them (see the histogram)")
v_underflow

# %%
rescued = 1 - scaled.flushed / max(plain.flushed, 1)
Markdown(
    f"After {FP32_STEPS} fp32 steps (loss {run_fp32.final_loss():.3f}), fp16 autocast flushed "
    f"**{plain.flushed_fraction:.1%}** of the {plain.nonzero:,} nonzero activation gradients to zero; the fp32 "
    f"values alone predicted {P.simulate_cast(g32, 'float16').flushed_fraction:.1%} (those below half of "
    f"{fp16.min_subnormal:.1e}). With the loss multiplied by 2^14, {scaled.flushed_fraction:.2%} are lost: "
    f"loss scaling rescued **{rescued:.0%}** of the flushed gradients"
    + (", as predicted. " if v_underflow.held else ", which is not what the prediction said: the histogram "
       "shows where this run's gradients really sit. ")
    + "These activation gradients feed the weight gradients, which are sums over the batch and so sit higher."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The dynamic loss scale of `torch.amp.GradScaler`
# A fixed scale is a guess. `GradScaler` starts high, and after every step checks the gradients: an inf or
# nan means the scale was too big, so it **skips the optimizer step** and halves the scale; after
# `growth_interval` clean steps it doubles it. We start it deliberately too high (2^24) to see both.
# What sets the ceiling? Under autocast the weight gradients are computed in fp16 (a matmul of activations
# and activation gradients) before they are added to the fp32 `.grad`: they must fit below 65504 *after*
# scaling. So the largest scale that fits is about log2(65504 / max|weight gradient|), which the loop
# records at every step (after `scaler.unscale_`).
#
# **Prediction**: the first steps overflow and are skipped until the scale fits; then the scale saw-tooths
# just under that computed ceiling: its highest value after settling lies between 1.5 powers of two below
# the ceiling's median and half a power above it.

# %%
GROWTH = 20
_, run_fp16 = P.amp_train(SIZES, x_train, y_train, mode="fp16", steps=cu.env.pick(ci=120, cpu=200),
                          batch=BATCH, init_scale=2.0**24, growth_interval=GROWTH)
log_scales = np.log2(run_fp16.scale)
with np.errstate(divide="ignore"):
    ceiling = np.log2(fp16.max / np.asarray(run_fp16.grad_max))  # -inf on steps whose gradients overflowed
clean = np.isfinite(ceiling)
P.scale_trace_plot(run_fp16.scale, run_fp16.skipped, ceiling=np.where(clean, ceiling, np.nan))

# %%
# NBVAL_CHECK_OUTPUT
n_skipped = sum(run_fp16.skipped)
print("first step overflowed and was skipped:", run_fp16.skipped[0])
print("scale grew again after clean steps:", bool(np.any(np.diff(log_scales) > 0)))
print("all losses finite:", bool(np.all(np.isfinite(run_fp16.loss))))

# %%
settled = log_scales[np.argmax(~np.asarray(run_fp16.skipped)):]  # from the first clean step on
top_ceiling = float(np.median(ceiling[clean]))
gap_log2 = top_ceiling - float(settled.max())
v_scale = verdict(bool(run_fp16.skipped[0] and -0.5 <= gap_log2 <= 1.5),
                  f"{n_skipped} of {len(log_scales)} steps skipped; scale settled at 2^{settled.min():.0f} to "
                  f"2^{settled.max():.0f}, computed ceiling median 2^{top_ceiling:.1f}",
                  "the settled scale is not just under the ceiling computed from the weight gradients: other "
                  "fp16 tensors of the backward pass set the limit")
v_scale

# %%
k_act = P.overflow_exponent(g32)
Markdown(
    f"The scale started at 2^{log_scales[0]:.0f}; {n_skipped} of {len(log_scales)} steps were skipped and it "
    f"settled between 2^{settled.min():.0f} and 2^{settled.max():.0f}; its top is "
    f"{abs(gap_log2):.1f} powers of two {'below' if gap_log2 >= 0 else 'above'} the ceiling computed from "
    f"the largest weight gradient of each step"
    + (" (prediction held). " if v_scale.held else " (prediction failed). ")
    + f"For the *activation* gradients of the trained model, Exercise 1's formula gives a much higher overflow "
    f"point: 2^{k_act} (computed: ceil(log2({fp16.max:g} / max|g|)) from the fp32 gradients `g32`; the exercise's "
    f"check then measures it), {k_act - top_ceiling:.0f} powers of two above the weight gradients' median ceiling "
    f"(computed, above). The weight gradients sum over the batch while the activation gradients are per-sample "
    f"values: a candidate reason why they sit higher, not established by this run. "
    f"A skipped step costs a forward and a backward pass, which is why the default growth interval is long "
    f"({torch.amp.GradScaler(DEVICE.type).get_growth_interval()} steps)."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Training without a scaler
# The histogram showed gradients lost; does training notice? The same fp16 run with and without the
# `GradScaler`, next to fp32, at the loss's natural size and with the loss multiplied by 2^-12 (a loss
# with a small weight, e.g. an auxiliary term: its gradients are 2^12 smaller as a whole; Adam's update
# would not change in exact arithmetic).
#
# **Prediction**: at natural size the three curves end close together (Adam's update divides by the
# gradient's own size, and the gradients that flush are the smallest); with the 2^-12 loss, fp16 without a
# scaler ends with a clearly higher loss (more than 1.5x fp32's), while the `GradScaler` run stays with fp32.

# %%
SMALL = 2.0**-12
no_scaler = {f"{label}, loss x {name}": dict(mode=mode, scaler=sc, loss_multiplier=mult)
             for name, mult in (("1", 1.0), ("2^-12", SMALL))
             for label, mode, sc in (("fp32", "fp32", True), ("fp16 + GradScaler", "fp16", True),
                                     ("fp16, no scaler", "fp16", False))}
scaler_runs = P.seed_spread(no_scaler, [0], SIZES, x_train, y_train, clip=5.0, **TRAIN)
P.loss_curves_plot({k: v for k, v in scaler_runs.runs.items() if "2^-12" in k},
                   title="fp16 with and without GradScaler, loss x 2^-12")

# %%
final = {k: scaler_runs.final_losses(k)[0] for k in scaler_runs.runs}
worse = final["fp16, no scaler, loss x 2^-12"] / final["fp32, loss x 2^-12"]
kept = final["fp16 + GradScaler, loss x 2^-12"] / final["fp32, loss x 2^-12"]
natural_ratio = {k: final[f"{k}, loss x 1"] / final["fp32, loss x 1"] for k in ("fp16 + GradScaler", "fp16, no scaler")}
natural = max(natural_ratio.values())
# what the optimizer receives without a scaler: weight gradients of the trained fp32 model on one training batch
xw, yw = x_train[:BATCH], y_train[:BATCH]
w_lost = {name: P.underflow_stats(P.torch_weight_grads(model_fp32, xw, yw, multiplier=m),
                                  P.torch_weight_grads(model_fp32, xw, yw, dtype=torch.float16, multiplier=m))
          for name, m in (("1", 1.0), ("2^-12", SMALL))}
adam_eps = torch.optim.Adam(model_fp32.parameters()).defaults["eps"]
eps_share = P.adam_eps_share(P.torch_weight_grads(model_fp32, xw, yw, multiplier=SMALL), adam_eps)  # computed
v_noscale = verdict(bool(worse > 1.5 and kept < 1.2 and natural < 1.2),
                    f"final loss vs fp32: no scaler {worse:.2f}x, GradScaler {kept:.2f}x (loss x 2^-12); "
                    "at natural size " + ", ".join(f"{k} {v:.2f}x" for k, v in natural_ratio.items()),
                    f"without a scaler fp16 flushed {w_lost['2^-12'].flushed_fraction:.1%} of the weight gradients at "
                    f"loss x 2^-12 (on the trained model, one batch), and Adam rescales the rest (see below)")
scaler_runs.table()

# %%
v_noscale

# %%
Markdown(
    f"With the 2^-12 loss, fp16 without a scaler ended at **{worse:.2f}x** fp32's final loss and the `GradScaler` "
    f"run at **{kept:.2f}x**; at natural size fp16 + `GradScaler` ended at **{natural_ratio['fp16 + GradScaler']:.2f}x** "
    f"({final['fp16 + GradScaler, loss x 1']:.3f} vs {final['fp32, loss x 1']:.3f}) and fp16 without a scaler at "
    f"**{natural_ratio['fp16, no scaler']:.2f}x** ({final['fp16, no scaler, loss x 1']:.3f}). Each run is one seed: how "
    "much of these ratios is the format and how much the seed is not established here (section 6 measures the "
    "spread over seeds). "
    + f"Without a scaler, fp16 flushed **{w_lost['2^-12'].flushed_fraction:.1%}** of the {w_lost['2^-12'].nonzero:,} "
    f"nonzero weight gradients at loss x 2^-12 ({w_lost['1'].flushed_fraction:.2%} at natural size), measured on "
    f"the trained fp32 model and one training batch of {BATCH}. Adam divides each update by the root of its running "
    "mean square of the gradient, so a uniform gradient scale cancels, except against its eps "
    f"({adam_eps:g}): at loss x 2^-12 eps shortens a typical update to **{eps_share:.1%}** of its exact-arithmetic "
    "length (computed from those gradients). "
    + ("So the lost gradients matter once the gradients as a whole sit low: the scaler moves them back into fp16's "
       "range, which is what it is for. " if v_noscale.held else
       "So the 2^-12 loss did little harm without a scaler: most gradients still reached Adam, which undid the "
       "scale, and no run diverged. Loss scaling matters where more of the gradients flush, or for an optimizer "
       "whose step follows the gradient's size, such as SGD. " if w_lost["2^-12"].flushed_fraction < 0.5
       and eps_share > 0.9 else
       "The loss moved less than predicted although many gradients flushed or eps took over: the table above shows "
       "each run's final loss; why training absorbed it is not established by this run. ")
    + "All runs clip the gradient norm at 5.0, and the loop calls `scaler.unscale_(opt)` *before* "
    "`clip_grad_norm_`: the check below shows what clipping would see otherwise."
)

# %%
# NBVAL_CHECK_OUTPUT
norms = P.unscale_norms(model_fp32, xb, yb, init_scale=2.0**16)
print("norm before unscale_ / fp32 norm == the scale (within 1%):",
      abs(norms["before unscale_"] / norms["fp32"] / norms["scale"] - 1) < 0.01)
print("norm after unscale_ == fp32 norm (within 1%):", abs(norms["after unscale_"] / norms["fp32"] - 1) < 0.01)

# %% [markdown] course={"lead": false, "minutes": 5} slideshow={"slide_type": "slide"}
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
at_1e4 = {k: float(np.interp(1e4, lengths, v)) for k, v in acc_err.items()}
print("bf16 running sum of 300 ones:", naive.item())
print("torch.sum of 1000 bf16 ones (fp32 accumulation inside):", ones.sum().item())
print("bf16 accumulator, 10^4 terms, error > 50%:", at_1e4["bf16 accumulator"] > 0.5)
print("fp32 accumulator error < 1e-5 at every length:", bool(acc_err["fp32 accumulator"].max() < 1e-5))
print("bf16 result error <= bf16 eps/2:", bool(acc_err["fp32 accumulator, bf16 result"].max() <= bf16.unit_roundoff))

# %%
v_accum = verdict(bool(at_1e4["bf16 accumulator"] > 0.5 and acc_err["fp32 accumulator"].max() < 1e-5
                       and acc_err["fp32 accumulator, bf16 result"].max() <= bf16.unit_roundoff),
                  f"bf16 accumulator {at_1e4['bf16 accumulator']:.0%} off at 10^4 terms, fp32 accumulator at most "
                  f"{acc_err['fp32 accumulator'].max():.1e}, rounded once {acc_err['fp32 accumulator, bf16 result'].max():.1e}",
                  "one of the three sums did not behave as the mantissa width predicts")
v_accum

# %%
Markdown(
    f"At 10^4 terms the bf16 accumulator is off by **{at_1e4['bf16 accumulator']:.0%}**, the fp32 accumulator "
    f"by {at_1e4['fp32 accumulator']:.1e}, and the fp32 sum rounded once to bf16 by "
    f"{at_1e4['fp32 accumulator, bf16 result']:.1e} (bound: {bf16.unit_roundoff:.1e}). `torch.sum` on a bf16 "
    f"tensor returned {ones.sum().item():g} for 1000 ones because it accumulates in fp32 internally; a Python "
    f"loop in bf16 stalls at {naive.item():g}. "
    + ("The prediction held: " if v_accum.held else "The prediction failed, but the lesson stands: ")
    + "mixed precision means low-precision storage and multiplies, fp32 sums, fp32 master weights and fp32 "
    "optimizer updates."
)

# %% [markdown] course={"lead": false, "minutes": 8} slideshow={"slide_type": "slide"}
# ## 4. The APIs, on the same MLP, with their dtypes checked
#
# Each framework keeps **fp32 master weights** and computes matmuls in 16 bits; the loss and the weight
# gradients stay fp32. **Prediction**: weights fp32, layer outputs bf16 (fp16 on an old GPU), loss fp32,
# gradients fp32 in every framework present; the three frameworks' losses on the same batch agree within 0.05.
#
# ### PyTorch: `torch.autocast` (+ `torch.amp.GradScaler` for fp16 only)
# The device decides the dtype: bf16 on CPUs and on GPUs with bf16 tensor cores (Ampere and later), fp16 with
# a `GradScaler` on older GPUs such as the T4. The lines that matter:
# ```python
# with torch.autocast(device.type, dtype=torch.bfloat16):
#     loss = F.cross_entropy(model(x), y)
# loss.backward()          # outside autocast; the gradients land in the fp32 .grad of each weight
# ```

# %%
AMP = torch.float16 if DEVICE.type == "cuda" and not torch.cuda.is_bf16_supported(including_emulation=False) \
    else torch.bfloat16
AMP_NAME = str(AMP).removeprefix("torch.")
xs, ys = x_all[:64], y_all[:64]
EXPECTED = {"weights": {"float32"}, "activations": {AMP_NAME}, "loss": {"float32"}, "gradients": {"float32"}}
dtypes = {"torch": P.torch_dtypes(cu.models.torch_mlp(seed=0).to(DEVICE), x_train[:64], y_train[:64], AMP)}
P.dtype_summary(dtypes["torch"])

# %%
# NBVAL_CHECK_OUTPUT
print("torch autocast: weights fp32, activations in the autocast dtype, loss fp32, gradients fp32:",
      P.dtype_summary(dtypes["torch"]) == EXPECTED)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Keras 3: `keras.config.set_dtype_policy("mixed_bfloat16")`
# A policy set before the layers are built gives them fp32 variables and bf16 computation (Keras 3's
# `keras.config.set_dtype_policy`; `keras.mixed_precision.set_global_policy` is its legacy alias). With
# `"mixed_float16"`, `compile()` wraps the optimizer in a `LossScaleOptimizer` by itself.
# `P.keras_dtypes` sets the policy, builds the model, runs one step and restores the previous policy.

# %%
# NBVAL_CHECK_OUTPUT
if cu.notebook.needs("tensorflow"):
    dtypes["keras"] = P.keras_dtypes("mixed_bfloat16", xs, ys)
    print("keras mixed_bfloat16: weights fp32, activations bf16, loss fp32, gradients fp32:",
          P.dtype_summary(dtypes["keras"]) == EXPECTED | {"activations": {"bfloat16"}})
    print("keras mixed_float16: compile() wrapped the optimizer in LossScaleOptimizer:",
          P.keras_compile_wraps_optimizer("mixed_float16"))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### JAX: an explicit policy (fp32 parameters, bf16 compute, fp32 output)
# JAX has no autocast: you cast. `cu.precision.Policy` is a few lines (read it with `P.Policy??`): it casts
# the floating leaves of a pytree. Because the transpose of a cast is a cast, `jax.grad` with respect to
# the fp32 parameters returns fp32 gradients with no extra code. The activation dtypes below are read from
# the program `mixed_apply` really runs (every value in its jaxpr, the casts aside).

# %%
# NBVAL_CHECK_OUTPUT
if cu.notebook.needs("jax"):
    import jax.numpy as jnp

    policy = P.Policy(param_dtype="float32", compute_dtype="bfloat16", output_dtype="float32")
    mixed_apply = policy.wrap(cu.models.jax_mlp_apply)
    jparams = policy.cast_to_param(cu.models.jax_mlp_params(seed=0))
    dtypes["jax"] = P.jax_dtypes(mixed_apply, jparams, jnp.asarray(xs), jnp.asarray(ys))
    print("jax policy: weights fp32, activations bf16, loss fp32, gradients fp32:",
          P.dtype_summary(dtypes["jax"]) == EXPECTED | {"activations": {"bfloat16"}})
    print("activation dtypes read from the jaxpr of mixed_apply:", sorted(dtypes["jax"]["activations"]))

# %%
losses = {fw: float(next(iter(d["loss value"]))) for fw, d in dtypes.items()}
all_right = all(P.dtype_summary(d) == EXPECTED | ({} if fw == "torch" else {"activations": {"bfloat16"}})
                for fw, d in dtypes.items())
spread = max(losses.values()) - min(losses.values())
v_dtypes = verdict(all_right and spread < 0.05,
                   f"dtypes as predicted in {', '.join(dtypes)}: {all_right}; losses "
                   + ", ".join(f"{fw} {v:.4f}" for fw, v in losses.items()) + f" (spread {spread:.4f})",
                   "a framework kept another dtype, or the 16-bit roundings moved the losses apart")
v_dtypes

# %%
Markdown(
    f"On the same batch the {len(losses)} framework(s) present gave losses within {spread:.4f} of each other "
    + ("and the dtypes predicted: fp32 master weights, 16-bit activations, fp32 loss and gradients. "
       if v_dtypes.held else "but not everything matched the prediction (see the verdict). ")
    + "The three APIs differ in who casts: autocast decides per operation (matmuls in 16 bits, reductions "
    "and softmax in fp32), Keras per layer (the policy's compute dtype), and in JAX you decide."
    + ("" if len(losses) == 3 else " (Frameworks missing here were skipped.)")
)

# %% [markdown] course={"lead": true, "minutes": 8} slideshow={"slide_type": "slide"}
# ## 5. Speed: does bf16 pay on *this* machine?
#
# bf16 is only fast where the hardware multiplies bf16 natively: tensor cores on GPUs since Ampere, the MXU
# on TPUs, AVX512-BF16 on recent Xeons and AMD EPYCs, AMX tiles on Xeons since Sapphire Rapids. Elsewhere the library converts every value to fp32 and
# back, often in a slow fallback kernel, and bf16 is **slower**, sometimes by orders of magnitude. The
# library must also use the units: oneDNN (torch on CPU) does, XLA:CPU (JAX) may not.
#
# **Prediction**: the CPU flags below decide it. With `avx512_bf16`/`amx_bf16` (or a GPU) expect torch's
# bf16 matmul to beat fp32 by at least 2x; without them expect it to lose (below 1x). Sizes are chosen from
# the flags so that the slow case stays cheap.

# %%
flags = cu.env.simd_flags()
n = cu.env.pick(ci=512, cpu=1024, gpu=4096) if NATIVE_BF16 else cu.env.pick(ci=128, cpu=256, gpu=4096)
mm_time = P.matmul_times(n, ["torch", "jax"], device=DEVICE, min_time=QUICK)
flops = {name: 2 * n**3 / m.median for name, m in mm_time.items()}
dot_hlo = P.jax_dot_dtypes(n, "bfloat16") if HAS_JAX else None  # what XLA compiled the bf16 matmul into
machine = cu.roofline.measure_machine("torch")  # notebook 02's roofs, measured again in this run (fp32 matmul, bandwidth)
fp32_peak = cu.measuring.theoretical_peak().flops if DEVICE.type == "cpu" else None  # computed, notebook 00
onednn_bf16 = P.torch_onednn_bf16() if DEVICE.type == "cpu" else None  # does torch hand bf16 gemm to oneDNN here?
print(f"SIMD flags: {', '.join(flags)} -> native bf16: {cu.env.has_native_bf16()}; device: {DEVICE}; n = {n}; "
      f"torch's oneDNN bf16 path available: {onednn_bf16}")
if dot_hlo:
    print(f"jax bf16 matmul, optimized HLO: {dot_hlo['dots']} dot on {'/'.join(dot_hlo['dot operands'])} operands, "
          f"{dot_hlo['converts']} convert ops")
P.throughput_plot(flops, None if DEVICE.type == "cuda" else P.A100_PUBLISHED,
                  published_label="published, NVIDIA A100 datasheet (not measured)")

# %%
# NBVAL_CHECK_OUTPUT
a32, b32 = torch.randn(n, n, device=DEVICE, dtype=torch.float64), torch.randn(n, n, device=DEVICE, dtype=torch.float64)
ref = a32 @ b32
err = {dt: ((torch.mm(a32.to(dt), b32.to(dt)).double() - ref).abs().max() / ref.abs().max()).item()
       for dt in (torch.float32, torch.bfloat16)}
print("fp32 matmul error < 1e-5 of max:", err[torch.float32] < 1e-5)
print("bf16 matmul error < 2e-2 of max (bf16 inputs, fp32 accumulation):", err[torch.bfloat16] < 2e-2)

# %%
speed_torch = mm_time["torch fp32"].median / mm_time["torch bf16"].median
speed_jax = mm_time["jax fp32"].median / mm_time["jax bf16"].median if "jax bf16" in mm_time else float("nan")
mm_band = P.ratio_band(mm_time["torch fp32"], mm_time["torch bf16"])  # the matmul's speed-up and its quartile ends
v_matmul = verdict(bool(speed_torch >= 2 if NATIVE_BF16 else speed_torch < 1),
                   f"native bf16 {NATIVE_BF16}; torch bf16 / fp32 matmul speed {speed_torch:.2f}x (quartiles "
                   f"{mm_band[1]:.2f}x to {mm_band[2]:.2f}x, n = {n})",
                   "the flags did not decide the outcome as predicted: the library's kernel for this size "
                   "matters too")
v_matmul

# %%
_xla_f32 = bool(dot_hlo) and dot_hlo["dot operands"] == ("f32",)
Markdown(
    f"On this machine ({report.cpu}, flags {', '.join(flags)}) torch's bf16 matmul ran at **{speed_torch:.2f}x** "
    f"the speed of fp32 ({flops['torch bf16'] / 1e9:,.0f} vs {flops['torch fp32'] / 1e9:,.0f} GFLOP/s, n = {n})"
    + (f"; JAX's at **{speed_jax:.2f}x**. XLA's optimized HLO for the bf16 matmul holds {dot_hlo['dots']} dot on "
       f"{'/'.join(dot_hlo['dot operands'])} operands and {dot_hlo['converts']} converts: "
       + ("XLA widens the bf16 inputs to fp32, runs an fp32 dot and narrows the result: this program does no "
          "bf16 arithmetic at all, so bf16 units, where a CPU has them, sit idle. The hardware decides what is "
          "possible, the library what you get. " if _xla_f32 else
          "the dot runs on bf16 operands, so its speed is the kernel library's. ")
       if HAS_JAX else ". ")
    + (P.fp32_share_text(flops["torch fp32"], n, roof_flops=machine.peak_flops, roof_label=max(
        machine.flops_probes, key=machine.flops_probes.get), peak_flops=fp32_peak) if DEVICE.type == "cpu" else "")
    + (P.bf16_units_text(flags, mm_band, fp32_flops=flops["torch fp32"], bf16_flops=flops["torch bf16"],
                         peak_flops=fp32_peak)
       + f"PyTorch reports its oneDNN bf16 path {'available' if onednn_bf16 else 'unavailable or unknown'} here "
       "(which kernel ran was not observed). "
       + ("The prediction's 2x held" + (", but not by the bf16 units alone (above). "
                                        if mm_band[1] > (P.bf16_unit_ratio(flags) or float("inf")) else ". ")
          if v_matmul.held else "bf16 did not win by 2x at this size. ")
       if cu.env.has_native_bf16() and DEVICE.type == "cpu" else
       "This CPU has no bf16 units, and PyTorch reports its oneDNN bf16 path "
       + ("unavailable here (`torch.ops.mkldnn._is_mkldnn_bf16_supported()` is False): per PyTorch's source, a bf16 "
          "matmul then does not reach oneDNN but runs ATen's own fallback gemm loop (which loop ran was not observed "
          "by this run). " if onednn_bf16 is False else
          f"{'available' if onednn_bf16 else 'unknown'} on it, so this run does not say which kernel ran. ")
       + f"Converting each of the {3 * n * n:,} input and output values once cannot by itself cost a "
       f"{1 / speed_torch:.0f}x slowdown on {2 * n**3 / 1e6:.1f} MFLOP (the roofline subsection below times conversions with an in-cache triad); "
       "a loop that converts at every multiply-add or is not blocked for the cache could, and which of these is the "
       "case is not established by this run. bf16 is a memory format here, not a speed-up. "
       if DEVICE.type == "cpu" else "On the GPU, bf16 and fp16 run on tensor cores. ")
    + (f"The right panel shows what a GPU offers: an A100's published bf16 peak is "
       f"{P.A100_PUBLISHED['A100 bf16 / fp16'] / P.A100_PUBLISHED['A100 fp32']:.0f}x its fp32 peak (datasheet, "
       f"not measured in this run)." if DEVICE.type != "cuda" else "")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### bf16 on the roofline: half the bytes
# Notebook 02's roofline has two roofs. Below the ridge point an op is limited by bytes moved, and bf16
# halves the bytes of every element whether or not the CPU has bf16 arithmetic. Two STREAM ops write into
# preallocated outputs, in fp32 and in bf16, on the same number of elements: a **copy** (read + write, no
# arithmetic) and a **triad** `a = b + 1.5·c` (2 FLOPs per element). Without bf16 units the triad converts each
# bf16 value to fp32 and back; whether that costs time next to memory's is measured too, with the same triad on
# arrays that stay in cache. The streaming arrays are sized from the last-level cache (at least 4x it per copy, up
# to a cap per course size), so both formats stream from main memory.
#
# **Prediction**: in bf16 each op takes 0.35x to 0.75x its fp32 time (ideally 0.5x), on any CPU; on the roofline
# the bf16 triad sits at twice the fp32 triad's intensity, and both triads reach at least half the memory roof.

# %%
llc = cu.env.last_level_cache_bytes()
COPY_BYTES = min(max(cu.env.pick(ci=64 * 2**20, cpu=256 * 2**20, gpu=2**30), 4 * llc),  # each fp32 array
                 cu.env.pick(ci=512 * 2**20, cpu=2**30, gpu=2**32))
streams = P.stream_times(COPY_BYTES, device=DEVICE, min_time=QUICK)
CACHE_BYTES = max(2**18, (llc or 2**23) // 12)  # each fp32 array of the in-cache triad: three of them fill a quarter of the LLC
cached = P.stream_times(CACHE_BYTES, ops=("triad",), device=DEVICE, min_time=QUICK) if DEVICE.type == "cpu" else None
triads = [P.stream_point(f"triad {f}", streams[f"triad {f}"], COPY_BYTES) for f in ("fp32", "bf16")]
ratios = {op: streams[f"{op} bf16"].median / streams[f"{op} fp32"].median for op in P.STREAM_OPS}
shares = {p.label: cu.roofline.share_of_roof(p, machine) for p in triads}
cu.plotting.roofline_plot(machine, triads, title=f"STREAM triad in fp32 and bf16 ({fmt_bytes(COPY_BYTES)} fp32 arrays)")

# %%
v_copy = verdict(
    bool(all(0.35 <= r <= 0.75 for r in ratios.values()) and min(shares.values()) >= 0.5),
    "bf16 / fp32 time: " + ", ".join(f"{op} {r:.2f}x" for op, r in ratios.items()) + "; triads at "
    + ", ".join(f"{p.intensity:.2f} FLOP/byte, {cu.display.percent(shares[p.label])} of the memory roof ({p.label})"
                for p in triads),
    "; ".join([f"the {op} in bf16 did not take about half its fp32 time" for op, r in ratios.items()
               if not 0.35 <= r <= 0.75]
              + [f"{k} ran below half the memory roof" for k, v in shares.items() if v < 0.5]))
v_copy

# %%
bw = {op: P.bandwidth_ratio(streams[f"{op} fp32"], streams[f"{op} bf16"]) for op in P.STREAM_OPS}
rates = {k: P.stream_point(k, m, COPY_BYTES).achieved_bandwidth for k, m in streams.items()}
_gap_real = bw["triad"][2] < bw["copy"][1] or bw["copy"][2] < bw["triad"][1]  # quartile ranges apart
_per = {f"memory {f}": streams[f"triad {f}"].median / (COPY_BYTES // 4) for f in ("fp32", "bf16")}
if cached:  # seconds per element of the triad, from cache and from memory
    _per |= {f"cache {f}": cached[f"triad {f}"].median / (CACHE_BYTES // 4) for f in ("fp32", "bf16")}
Markdown(
    "Bandwidth reached (read + write counted, decimal GB/s): "
    + "; ".join(f"{op} {cu.display.format_rate(rates[f'{op} fp32'])} in fp32, "
                f"{cu.display.format_rate(rates[f'{op} bf16'])} in bf16 ({cu.display.percent(v[0])} of fp32's, "
                f"{cu.display.percent(v[1])} to {cu.display.percent(v[2])} across the quartiles)" for op, v in bw.items())
    + ". " + P.bandwidth_text(bw, ratios, array_bytes=COPY_BYTES, llc=llc)
    + P.roof_share_text(shares, machine.bandwidth, machine.array_bytes)
    + (f"On the roofline the bf16 triad sits at {triads[1].intensity:.2f} FLOP/byte, twice the fp32 triad's "
       f"{triads[0].intensity:.2f}, under the same memory roof: the cheapest speed-up of mixed precision"
       + (", here on a CPU without bf16 units. " if not NATIVE_BF16 else ", with or without bf16 units. ")
       if v_copy.held else "The halving did not show cleanly here (see the verdict). ")
    + (f"The triad's bf16 ratio ({ratios['triad']:.2f}x) is above the copy's ({ratios['copy']:.2f}x)"
       + (", beyond the noise: the quartile ranges of the two bandwidth shares do not overlap. " if _gap_real else
          ", but the quartile ranges of the two bandwidth shares overlap: this run cannot tell them apart. ")
       + (f"From cache ({fmt_bytes(CACHE_BYTES)} fp32 arrays) the triad ran at {_per['cache fp32'] * 1e9:.2f} ns per "
          f"element in fp32 and {_per['cache bf16'] * 1e9:.2f} in bf16, against {_per['memory fp32'] * 1e9:.2f} and "
          f"{_per['memory bf16'] * 1e9:.2f} from main memory. "
          + ("So even with memory out of the way the bf16 triad is barely faster than it was from memory: its "
             "arithmetic, converting each value to fp32 and back on a CPU without bf16 units, is what limits it, "
             "and that is the gap. " if _per["cache bf16"] >= _per["memory bf16"] / 1.3 else
             "From cache the bf16 triad is much faster than from memory, so its conversions alone do not limit it "
             "at memory's pace; what costs it its share of the bandwidth is not established by this run. ")
          + f"That also bounds a conversion: at most {_per['cache bf16'] / 3 * 1e9:.2f} ns (three per element of "
          f"the bf16 triad, computed), so converting the {3 * n * n:,} values of section 5's n = {n} matmul once "
          f"takes at most {cu.display.format_time(_per['cache bf16'] / 3 * 3 * n * n)}, against the "
          f"{cu.display.format_time(mm_time['torch bf16'].median - mm_time['torch fp32'].median)} by which its bf16 "
          "matmul trailed fp32's (computed). " if cached else "")
       if not NATIVE_BF16 and ratios["triad"] > ratios["copy"] and (_gap_real or ratios["triad"] > ratios["copy"] + 0.1)
       else "")
    + (f"Each fp32 array ({fmt_bytes(COPY_BYTES)}) is under 4x the last-level cache this machine reports "
       f"({fmt_bytes(llc)}; the cap of this course size), so part of the traffic may be served from cache. "
       if llc and COPY_BYTES < 4 * llc else "")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A whole training step, and the seed's claim
# The seed article says automatic mixed precision "typically speeds up training by ~30% and saves memory".
# A training step is more than matmuls: casts, elementwise ops and the optimizer stay in fp32. The step is
# the course's one `cu.models.torch_sgd_step` (autocast + SGD), in fp32 and with `amp_dtype`.
#
# **Prediction**: the rest of the step dilutes the matmul's ratio, so the step's ratio lies between 1 and the
# bare matmul's: with bf16 units it gains less than the matmul alone; without them it loses, but less than the
# matmul does.

# %%
WIDE = cu.env.pick(ci=(256, 1024, 1024, 10), cpu=(256, 2048, 2048, 10), gpu=(1024, 8192, 8192, 10)) \
    if NATIVE_BF16 else (64, 128, 128, 10)
STEP_BATCH = cu.env.pick(ci=256, cpu=512, gpu=4096) if NATIVE_BF16 else 64
wide_batch = (torch.randn(STEP_BATCH, WIDE[0], device=DEVICE), torch.randint(0, WIDE[-1], (STEP_BATCH,), device=DEVICE))
AMP_STEP = f"torch {AMP_NAME} autocast step"
step_fns = {"torch fp32 step": cu.models.torch_sgd_step(cu.models.torch_mlp(WIDE, seed=0).to(DEVICE), lr=1e-3),
            AMP_STEP: cu.models.torch_sgd_step(cu.models.torch_mlp(WIDE, seed=0).to(DEVICE), lr=1e-3, amp_dtype=AMP)}
steps = cu.timing.compare(step_fns, wide_batch, min_time=QUICK, max_repeats=20)
cu.plotting.speedup_bars(steps, title=f"Training step, MLP {WIDE}, batch {STEP_BATCH}")

# %%
step_speedup = steps.speedup(AMP_STEP)
_low, _high = steps[AMP_STEP].speedup_low, steps[AMP_STEP].speedup_high
step_kind = P.step_outcome((step_speedup, _low, _high), mm_band)
v_step = verdict(step_kind == "diluted",
                 f"step {step_speedup:.2f}x (quartiles {_low:.2f}x to {_high:.2f}x) over the fp32 step vs bare matmul "
                 f"{speed_torch:.2f}x ({mm_band[1]:.2f}x to {mm_band[2]:.2f}x) over the fp32 matmul",
                 "the step's ratio did not land between 1 and the bare matmul's: "
                 + (P.step_reason(step_kind, (step_speedup, _low, _high), mm_band, n) if step_kind != "diluted" else ""))
claim = P.claim_outcome(_low, _high)
v_claim = verdict(claim == "held",
                  f"seed's claim ~1.3x (30% faster, read as {P.CLAIM_BAND[0]}x to {P.CLAIM_BAND[1]}x); measured "
                  f"{step_speedup:.2f}x over the fp32 step, {_low:.2f}x to {_high:.2f}x across the quartiles",
                  f"exceeded: even the slow end ({_low:.2f}x) is above {P.CLAIM_BAND[1]}x; this step ran "
                  f"{step_speedup:.2f}x, not ~1.3x" if claim == "exceeded" else
                  f"fell short: even the fast end ({_high:.2f}x) is below {P.CLAIM_BAND[0]}x")
v_step

# %%
v_claim

# %%
step_flops = P.mlp_step_flops(WIDE, STEP_BATCH)  # computed from the layer widths
mm_share = P.matmul_shares(step_flops, {"fp32": flops["torch fp32"], "bf16": flops["torch bf16"]},
                           {"fp32": steps["torch fp32 step"].measurement.median,
                            "bf16": steps[AMP_STEP].measurement.median})
Markdown(
    f"The {AMP_STEP.removeprefix('torch ')} ran at **{step_speedup:.2f}x** the speed of the fp32 step "
    f"({_low:.2f}x to {_high:.2f}x across the quartiles"
    + ("; interquartile range over median: " + ", ".join(
        f"{name} {m.iqr / m.median:.0%}" for name, m in steps.measurements.items()) if _high > 2 * _low else "")
    + f"), against **{speed_torch:.2f}x** for the bare matmul ({mm_band[1]:.2f}x to {mm_band[2]:.2f}x)"
    + (": the rest of the step diluted the matmul's ratio, as predicted, beyond the noise. " if v_step.held else
       ": the prediction failed, because " + P.step_reason(step_kind, (step_speedup, _low, _high), mm_band, n) + ". ")
    + P.matmul_share_text(mm_share, step_flops, step_kind)
    + P.claim_text(claim, step_speedup, _low, _high)
    + ("Whether the claim holds where matmuls dominate and the hardware has 16-bit units was not tested here: "
       "this machine has none. " if not NATIVE_BF16 else
       "That is one step, on this machine's 16-bit units, at this size; a step with more work outside the "
       "matmuls (normalisation, softmax, data loading) was not tested here. ")
    + "A small or cast-heavy step can come out slower" + (", and so did this one on a CPU without bf16 units"
                                                           if not NATIVE_BF16 and step_speedup < 1 else "")
    + ". Measure it on your model."
)

# %% [markdown] course={"lead": false, "minutes": 4} slideshow={"slide_type": "slide"}
# ## 6. Same model, same data: fp32 against mixed precision, over several seeds
# One run per format cannot say whether a difference is the format or the luck of the draw. Each
# configuration trains from three seeds (initial weights and batch order change together).
#
# **Prediction**: the mean final loss of bf16 autocast and of fp16 + `GradScaler` each lies within one
# seed-spread (max - min over seeds) of fp32's mean; test accuracies agree within a few points.

# %%
SEEDS = [0, 1, 2]
spread_runs = P.seed_spread({"fp32": dict(mode="fp32"), "bf16 autocast": dict(mode="bf16"),
                             "fp16 autocast + GradScaler": dict(mode="fp16")}, SEEDS, SIZES, x_train, y_train, **TRAIN)
P.loss_curves_plot(spread_runs.runs, title="fp32 and mixed precision")

# %%
spread_runs

# %%
gaps = {label: spread_runs.gap(label) for label in spread_runs.runs if label != "fp32"}
acc_means = {label: spread_runs.accuracies(label).mean() for label in spread_runs.runs}
v_seeds = verdict(bool(max(gaps.values()) <= 1 and max(acc_means.values()) - min(acc_means.values()) < 0.05),
                  "gap of mean final loss to fp32, in seed spreads: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in gaps.items())
                  + f"; test accuracies {min(acc_means.values()):.1%} to {max(acc_means.values()):.1%}",
                  "a format moved the mean final loss by more than the seeds do")
v_seeds

# %%
Markdown(
    f"Over {len(SEEDS)} seeds, fp32 ended at a final loss of {spread_runs.final_losses('fp32').mean():.3f} "
    f"(seeds from {spread_runs.final_losses('fp32').min():.3f} to {spread_runs.final_losses('fp32').max():.3f}). "
    + ("Both mixed-precision runs ended within one seed spread of it: with three seeds, that is as far as this "
       "run can see. A difference smaller than the spread would need many more seeds to show. "
       if v_seeds.held else
       "At least one mixed-precision configuration ended further from fp32 than the seeds spread: with three "
       "seeds this is a hint, not proof, but here the format did change the result. ")
    + "Mixed precision changes speed (section 5) and memory (section 7); what the model learns should not move."
)

# %% [markdown] course={"lead": true, "minutes": 10} slideshow={"slide_type": "slide"}
# ## 7. Where training memory goes
# ### Weights, gradients, optimizer state: bytes per parameter
# The standard accounting (the ZeRO paper's): fp32 training with Adam holds 4 bytes of weights, 4 of
# gradients and 8 of Adam moments per parameter, 16 in all. Mixed precision as large-model trainers run it
# keeps 16-bit weights and gradients (2 + 2) **plus** fp32 master weights and fp32 Adam moments (4 + 8):
# 16 again. The chart is that formula, computed, not measured.
#
# `torch.autocast` does not even keep the 16-bit weights: it casts each weight inside the autocast region,
# and the copy lives only until the backward pass that needs it.
#
# **Prediction**: after a step, an autocast model and its Adam hold exactly what fp32 holds (16 bytes per
# parameter, all fp32); during a forward pass, autograd additionally holds a 16-bit copy of every weight
# whose layer input needs a gradient (2 bytes per weight of layers 2 and up).

# %%
per_param = {s: {k: v / 1 for k, v in P.training_memory(1, s).items()} for s in P.TRAINING_SCHEMES}
P.memory_stack_plot(per_param)

# %%
held, copies = {}, {}
xm, ym = torch.from_numpy(x_all[:200]), torch.from_numpy(y_all[:200])  # 200: no layer width, so no shape mix-up
for mode, dt in (("fp32", torch.float32), (AMP_NAME + " autocast", AMP)):
    mem_model = cu.models.torch_mlp(SIZES, seed=0)
    mopt = torch.optim.Adam(mem_model.parameters())

    def forward(model=mem_model, dt=dt):
        with torch.autocast("cpu", dtype=dt, enabled=dt != torch.float32):
            return F.cross_entropy(model(xm), ym)

    copies[mode] = P.saved_for_backward(forward, mem_model.parameters())["weight copies"]
    forward().backward()
    mopt.step()
    held[mode] = P.torch_state_bytes(mem_model, mopt)
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
v_state = verdict(total["fp32"] == total[amp_mode] == 16 and copies[amp_mode] == 2 * later_weights,
                  f"held after a step: fp32 {total['fp32']:g} B/param, autocast {total[amp_mode]:g} B/param; "
                  f"16-bit weight copies during the forward: {fmt_bytes(copies[amp_mode])} "
                  f"(= {copies[amp_mode] / n_params:.2f} B/param)",
                  "autocast held something else than the fp32 state plus per-step copies")
v_state

# %%
Markdown(
    f"Measured on the {n_params:,}-parameter MLP: after a step, fp32 + Adam holds {total['fp32']:g} bytes per "
    f"parameter and {AMP_NAME} autocast + Adam {total[amp_mode]:g}, all fp32. During the autocast forward pass "
    f"autograd saved {fmt_bytes(copies[amp_mode])} of 16-bit weight copies ({copies[amp_mode] / n_params:.2f} B per "
    f"parameter), freed by the backward pass. "
    + ("So the prediction held: " if v_state.held else "The prediction failed; what was measured: ")
    + "autocast's memory story is neither \"16 + 2 bytes per parameter\" nor a saving on the parameter side. "
    "The standard accounting in the chart (computed) gives 16 B/param for fp32 Adam and 16 B/param for mixed "
    "precision with fp32 master weights; only pure bf16 (no fp32 master, with its accuracy risks) halves it. "
    "What mixed precision shrinks is the activations, next."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Activations: what autograd keeps for the backward pass
# Activations grow with the batch, parameters do not. We count the bytes of the tensors autograd saves
# (`torch.autograd.graph.saved_tensors_hooks`), fp32 against 16-bit autocast, for several batch sizes.
#
# **Prediction**: linear in the batch, and at most 0.6x as many bytes per sample under 16-bit autocast;
# plus a constant under autocast: the 16-bit weight copies measured above, independent of the batch.

# %%
ACT_WIDE = (256, 1024, 1024, 10) if NATIVE_BF16 else (64, 128, 128, 10)
act_model = cu.models.torch_mlp(ACT_WIDE, seed=0).to(DEVICE)
batches = [48, 96, 192, 384, 768]  # none equal to a layer width


def saved_bytes(batch, dtype):
    xb_, yb_ = torch.randn(batch, ACT_WIDE[0], device=DEVICE), torch.randint(0, ACT_WIDE[-1], (batch,), device=DEVICE)

    def forward():
        with torch.autocast(DEVICE.type, dtype=dtype, enabled=dtype != torch.float32):
            return F.cross_entropy(act_model(xb_), yb_)
    return P.saved_activation_bytes(forward, exclude=act_model.parameters())


act_mem = {name: [saved_bytes(b, dt) for b in batches] for name, dt in
           (("fp32", torch.float32), (f"{AMP_NAME} autocast", AMP))}
P.lines_plot(batches, {k: np.array(v) / 2**20 for k, v in act_mem.items()}, xlabel="batch size",
             ylabel="saved for backward (MiB)", title=f"Activation memory, MLP {ACT_WIDE}")

# %%
# NBVAL_CHECK_OUTPUT
(slope32, const32), (slope16, const16) = (np.polyfit(batches, act_mem[k], 1) for k in act_mem)
act_ratio = slope16 / slope32
act_copies = 2 * sum(m.weight.numel() for m in act_model if isinstance(m, torch.nn.Linear)) - 2 * act_model[0].weight.numel()
residual = max(abs(np.polyval(np.polyfit(batches, v, 1), batches) - v).max() for v in act_mem.values())
print("activation memory is linear in the batch (fit residual < 1 KiB):", residual < 1024)
print("autocast's constant == 16-bit copies of the weights of layers 2.. (within 1%):",
      abs((const16 - const32) / act_copies - 1) < 0.01)

# %%
v_act = verdict(bool(residual < 1024 and act_ratio <= 0.6 and abs((const16 - const32) / act_copies - 1) < 0.01),
                f"per sample {fmt_bytes(slope32)} fp32 vs {fmt_bytes(slope16)} autocast ({act_ratio:.2f}x); "
                f"constant {fmt_bytes(const16 - const32)} (16-bit weight copies: {fmt_bytes(act_copies)})",
                "the saved bytes did not split into a halved per-sample part plus the weight copies")
v_act

# %%
state_fp32 = sum(P.training_memory(sum(p.numel() for p in act_model.parameters()), "fp32 + Adam").values())
Markdown(
    f"Per sample, autograd kept {fmt_bytes(slope32)} in fp32 and {fmt_bytes(slope16)} under {AMP_NAME} autocast "
    f"(**{act_ratio:.2f}x**); autocast added a constant {fmt_bytes(const16 - const32)}, the 16-bit weight copies. "
    f"At batch {batches[-1]} that is {fmt_bytes(act_mem['fp32'][-1])} vs "
    f"{fmt_bytes(act_mem[f'{AMP_NAME} autocast'][-1])}, against {fmt_bytes(state_fp32)} of fp32 + Adam state "
    f"(computed). So the seed's \"saves memory\" is about activations, and pays off with large batches or long "
    f"sequences" + (", as predicted." if v_act.held else "; this run did not show it as cleanly as predicted.")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Activation checkpointing: recompute instead of store
# `torch.utils.checkpoint`, `jax.checkpoint` (alias `jax.remat`) and `tf.recompute_grad` keep only each
# block's input and recompute the inside during backward. We use residual MLP blocks
# (h + W2·gelu(W1·h), 4x wide inside, exact GELU in all three frameworks), the shape of a transformer's
# feed-forward layer, with a batch large enough that activations, not weight gradients, dominate the peak.
#
# **Prediction** (torch): the bytes saved for backward drop below a quarter, and the step's peak of live
# tensors drops to the computed value *peak without − saved without + saved with + one block's saved bytes*
# (the block being recomputed), within 10%; the step costs about one extra forward pass (1.1x to 1.6x the
# time). On a CPU the live tensors are read from the PyTorch profiler's memory timeline (on a GPU:
# `max_memory_allocated`); the process RSS is shown beside them, since it also counts what the allocator keeps.

# %%
D, L, CB = cu.env.pick(ci=(128, 6, 4096), cpu=(128, 8, 8192), gpu=(1024, 8, 16384))
W = P.block_weights(D, L, seed=0)
remat = {"torch": P.torch_remat(W, CB, device=DEVICE, min_time=QUICK)}
remat["torch"]

# %%
# NBVAL_CHECK_OUTPUT
print("torch: same gradients with and without checkpointing:", remat["torch"].same_gradients)
print("torch saves less than a quarter with checkpointing:", remat["torch"].saved_ratio < 0.25)
if cu.notebook.needs("tensorflow"):
    print("tf.recompute_grad: same gradients as the plain block:", P.tf_recompute_same(W))

# %%
t_remat = remat["torch"]
has_peak = t_remat.live_peak[0] is not None
predicted_peak = P.predicted_peak_with_remat(t_remat, L, live=True) if has_peak else None
peak_ok = has_peak and abs(t_remat.live_peak[1] / predicted_peak - 1) <= 0.1
time_ok = 1.1 <= t_remat.time_ratio <= 1.6
missed = [what for what, ok in (("saved bytes", t_remat.saved_ratio < 0.25), ("peak", peak_ok or not has_peak),
                                ("step time", time_ok)) if not ok]
v_remat = verdict(not missed,
                  f"saved {t_remat.saved_ratio:.2f}x; live-tensor peak {fmt_bytes(t_remat.live_peak[0] or 0)} -> "
                  f"{fmt_bytes(t_remat.live_peak[1] or 0)}, computed {fmt_bytes(predicted_peak or 0)}; "
                  f"step time {t_remat.time_ratio:.2f}x",
                  f"{' and '.join(missed)} outside the predicted band")
v_remat

# %%
_rss = DEVICE.type == "cpu" and t_remat.peak[0] is not None and has_peak  # RSS beside the live tensors
Markdown(
    f"torch kept {fmt_bytes(t_remat.saved[0])} for backward without checkpointing and {fmt_bytes(t_remat.saved[1])} "
    f"with it (**{t_remat.saved_ratio:.2f}x**)"
    + (f"; the peak of live tensors went from {fmt_bytes(t_remat.live_peak[0])} to {fmt_bytes(t_remat.live_peak[1])} "
       f"(**{t_remat.live_peak[1] / t_remat.live_peak[0]:.2f}x**), against {fmt_bytes(predicted_peak)} computed "
       f"({t_remat.live_peak[1] / predicted_peak - 1:+.0%})" if has_peak else "")
    + f", for a step **{t_remat.time_ratio:.2f}x** as long. "
    + ("The peak falls less than the saved bytes because the backward pass's own temporaries (gradients of "
       "the 4x-wide intermediates) and the recomputed block are there in both cases, as the formula says. "
       if peak_ok else "The live-tensor peak missed the formula by more than 10%: something besides the saved "
       "activations, the backward temporaries and one recomputed block was alive at the peak. " if has_peak else "")
    + (f"The process RSS peaked at {fmt_bytes(t_remat.peak[0])} and {fmt_bytes(t_remat.peak[1])}: "
       f"{fmt_bytes(t_remat.peak[0] - t_remat.live_peak[0])} and {fmt_bytes(t_remat.peak[1] - t_remat.live_peak[1])} "
       "above the live tensors: memory the allocator (glibc malloc) still holds after tensors are freed, "
       "which the RSS counts and the formula does not. The same formula "
       f"applied to the RSS would have missed by {t_remat.peak[1] / P.predicted_peak_with_remat(t_remat, L) - 1:+.0%}. "
       if _rss else "")
    + ("" if time_ok else f"The step-time ratio ({t_remat.time_ratio:.2f}x) left the predicted 1.1x-1.6x band, "
       f"which one recomputed forward pass should land in; the load average was {os.getloadavg()[0]:.1f} on "
       f"{os.cpu_count()} cores when this cell ran, so compare the quartiles of the two timings before trusting "
       "the ratio, and rerun on a quiet machine. ")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### JAX: does XLA keep the recomputation?
# Inside one `jax.jit` XLA schedules the whole step, and common-subexpression elimination could merge the
# recomputed forward with the original one. `jax.checkpoint(..., prevent_cse=True)` (the default) exists to
# stop that. An earlier version of this notebook claimed, from counting `dot(` in the HLO text, that
# XLA:CPU undoes `jax.checkpoint`; here XLA itself is asked as well: FLOPs from `cost_analysis()` and temp
# buffers from `memory_analysis()` of the compiled step.
#
# **Prediction**: with checkpointing, the compiled step's FLOPs grow by the recomputed first matmul of each
# block (2·B·D·4D·L, computed; the second matmul's output is not needed by backward) within 10%; and its
# temp buffers shrink like the `jax.vjp` residuals do (below half).

# %%
if cu.notebook.needs("jax"):
    remat["jax"] = P.jax_remat(W, CB, min_time=QUICK)
    j_remat = remat["jax"]
    extra_flops = j_remat.flops[1] - j_remat.flops[0]
    computed_extra = 2 * CB * D * 4 * D * L
    flops_ok = abs(extra_flops / computed_extra - 1) <= 0.1
    temp_ok = j_remat.temp[1] < 0.5 * j_remat.temp[0]
    display(j_remat)
    display(verdict(bool(flops_ok and temp_ok),
                    f"extra FLOPs {extra_flops / 1e9:.3f} G vs computed {computed_extra / 1e9:.3f} G; dot ops "
                    f"{j_remat.dots[0]} -> {j_remat.dots[1]}; temp {fmt_bytes(j_remat.temp[0])} -> "
                    f"{fmt_bytes(j_remat.temp[1])}; vjp residuals {j_remat.saved_ratio:.2f}x",
                    ("the FLOPs grew as computed but " if flops_ok else "XLA did not recompute the matmuls and ")
                    + ("the compiled step's temp buffers did not shrink" if not temp_ok else "the temp buffers shrank")))

# %%
# NBVAL_CHECK_OUTPUT
if HAS_JAX:
    print("jax: same gradients with and without checkpointing:", j_remat.same_gradients)
    print("jax vjp residuals less than a quarter with checkpointing:", j_remat.saved_ratio < 0.25)

# %%
if HAS_JAX:
    per_element = extra_flops / (CB * 4 * D * L)  # FLOPs per element of the 4D-wide GELU input
    text = (f"XLA's own numbers: the compiled step has {j_remat.flops[0] / 1e9:.2f} GFLOP without and "
            f"{j_remat.flops[1] / 1e9:.2f} GFLOP with checkpointing, and {j_remat.dots[0]} vs {j_remat.dots[1]} "
            f"dot ops. " + ("The extra is the recomputed matmuls, as predicted. " if flops_ok else
                            f"The extra ({extra_flops / computed_extra:.2f}x the matmul estimate) is "
                            f"{per_element:.0f} FLOPs per element of the B x 4D x L GELU input: XLA recomputes the "
                            f"exact GELU (its erf is a long polynomial) but not the matmul, whose 4D-wide output it "
                            f"keeps from the forward pass. So the old claim was half right: the matmul "
                            f"recomputation is gone even with `prevent_cse=True`, only the elementwise part stays. ")
            + P.temp_change_text(j_remat.temp, CB, D)
            + f"The `jax.vjp` residuals (what a forward hands to a separate backward) fell to {j_remat.saved_ratio:.2f}x. "
            + ("On this backend the saving shows where forward and backward are separate programs, not in the single "
               "compiled step, which pays some recomputation anyway. Measure both on your backend (the same cell "
               "runs on a GPU or TPU) before relying on it. " if not temp_ok else
               "The compiled step saves memory here too. ")
            + f"Step time with checkpointing: {j_remat.time_ratio:.2f}x.")
else:
    text = "JAX is not installed here: the JAX half of this section was skipped."
Markdown(text)

# %% [markdown] course={"lead": false, "minutes": 3} slideshow={"slide_type": "slide"}
# ## Exercises
# **1. Predict first.** Which loss scale is too big? Before running anything, predict k: the smallest power
# of two at which the fp16 activation gradients of `model_fp32` (on `xb`, `yb`) overflow. Then the check
# cell measures it.
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
k0 = P.overflow_exponent(g32)
cu.exercises.check("03.1", answer, overflows=P.torch_fp16_overflows(model_fp32, xb, yb, range(k0 - 3, k0 + 2)))

# %% [markdown]
# **2.** Kahan summation rescues a sum without a wider accumulator. Write `kahan(values) -> float`, a
# compensated sum of an array of `ml_dtypes.bfloat16` values with every operation in bf16, and set
# `answer = kahan`. The check compares it with the exact sum on random arrays.
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
# **3. Predict first.** Checkpoint pairs of blocks instead of every block in the torch model of section 7:
# predict the bytes saved for backward (`answer`, in bytes) before the check cell measures them.
# <details><summary>Hint</summary>With every block checkpointed, torch saved `remat["torch"].saved[1]`
# bytes: mostly one block input per block. A pair keeps only its own input.</details>

# %%
answer = None  # your answer here: predicted bytes saved for backward

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = remat["torch"].saved[1] * (L // 2 + L % 2) / L
print(f"every block: {fmt_bytes(remat['torch'].saved[1])}, predicted for pairs: {fmt_bytes(answer)}")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("03.3", answer, measured=P.torch_grouped_saved(W, CB, 2, device=DEVICE))

# %% [markdown] course={"lead": true, "minutes": 2} slideshow={"slide_type": "slide"}
# ## Summary

# %%
rows = [
    ("fp16 activation gradients flushed to zero", plain.flushed_fraction * 100, "%", "trained MLP, no loss scaling"),
    ("... with loss scale 2^14", scaled.flushed_fraction * 100, "%", "static loss scaling"),
    ("GradScaler steps skipped", n_skipped, "steps", f"of {len(log_scales)}, init scale 2^24, growth every {GROWTH}"),
    ("fp16 without scaler, loss x 2^-12: final loss vs fp32", worse, "x", f"with GradScaler: {kept:.2f}x"),
    ("bf16 accumulator error, 10^4 terms", at_1e4["bf16 accumulator"] * 100, "%", "fp32 accumulation: ~0"),
    ("torch bf16 / fp32 matmul speed", speed_torch, "x", f"n = {n}; bf16 units: {', '.join(P.bf16_units(flags)) or 'none'}"
     + (f"; they give at most {P.bf16_unit_ratio(flags):.0f}x (computed)" if P.bf16_unit_ratio(flags) else "")),
    ("bf16 / fp32 copy time", ratios["copy"], "x", "half the bytes: 0.5x if bandwidth alone decides"
     + ("" if 0.35 <= ratios["copy"] <= 0.75 else "; not so here (section 5)")),
    ("bf16 / fp32 triad time", ratios["triad"], "x", f"{cu.display.percent(shares['triad bf16'])} of this run's "
     "memory-roof probe" + ("; above 100%: the probe under-read" if shares["triad bf16"] > 1 else "")),
    ("torch autocast training step speed-up", step_speedup, "x", f"over the fp32 step; seed claims ~1.3x: {claim}"),
    ("final-loss gap bf16 vs fp32", gaps["bf16 autocast"], "seed spreads", f"{len(SEEDS)} seeds"),
    ("training state held, fp32 + Adam", total["fp32"], "B/param", "measured"),
    ("training state held, autocast + Adam", total[amp_mode], "B/param", "measured; copies live per forward"),
    ("16-bit / fp32 activation bytes per sample", act_ratio, "x", "plus a constant: 16-bit weight copies"),
    ("torch saved memory with checkpointing", t_remat.saved_ratio, "x", "of without"),
    ("torch step time with checkpointing", t_remat.time_ratio, "x", "of without"),
]
if HAS_JAX:
    rows += [("jax bf16 / fp32 matmul speed", speed_jax, "x", "XLA:CPU" if DEVICE.type == "cpu" else "XLA"),
             ("jax checkpointing: extra FLOPs", extra_flops / computed_extra, "x", "of the recomputed-matmul estimate"),
             ("jax checkpointing: compiled temp bytes", j_remat.temp[1] / j_remat.temp[0], "x", "of without")]
cu.notebook.summary_table("03_mixed_precision", rows)

# %% [markdown]
# **What to remember**
# - fp16 has precision but no range: small gradients flush to zero, so it needs loss scaling (`GradScaler`,
#   `LossScaleOptimizer`; unscale before clipping); bf16 has fp32's range and needs no scaling, but only
#   ~2-3 digits, so sums must accumulate in fp32 and master weights stay fp32.
# - Speed comes from hardware units and from the library using them: check the CPU flags or GPU, then
#   measure the whole step; memory-bound ops gain from half the bytes on any hardware.
# - Mixed precision does not shrink weights or optimizer state; it shrinks activations. Checkpointing
#   shrinks them further at the price of recomputation; check what the compiler made of it (FLOPs, buffers).
#
# **Next**: `04_input_pipeline`, where the accelerator may be waiting for the CPU instead.

# %% slideshow={"slide_type": "skip"}
print(cu.notebook.last_verified())
