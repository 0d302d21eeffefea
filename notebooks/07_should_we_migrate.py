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
# # 06 · Should we migrate? A measured decision, with costs
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/main/notebooks/06_should_we_migrate.ipynb)
#
# **The question.** Is moving our training to a compiled framework worth it, for *our* model, on *our*
# hardware, at *our* bill?
#
# **You will be able to** take one model from an eager fp32 baseline through each technique of this
# course, read the step-time waterfall, rebuild the seed articles' framework table from measurement, put
# the measured speed-up into a cost model, and run the seed's launch checklist as code.
#
# **Time:** about 45 minutes in a workshop; the notebook runs in under 6 minutes on a 2-core laptop.
# **Accelerators:** everything runs on CPU; a CUDA GPU adds the fp16/bf16 and multi-GPU rungs; on a
# TPU runtime the JAX and TensorFlow rows use the TPU and PyTorch stays on the CPU.

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@main"], check=True)

# %%
import course_utils as cu

cu.env.setup_notebook()

# %% slideshow={"slide_type": "skip"}
import inspect

import jax
import jax.numpy as jnp
import keras
import numpy as np
import tensorflow as tf
import torch
from IPython.display import Markdown, display

from course_utils.timing import benchmark, format_time

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The model: a small CNN on image patches
# The seed's scenario is a medical-imaging team waiting days for each run. Our stand-in: a small CNN
# (three 3x3 convolutions, global pooling, a linear head) on synthetic image patches that cost real CPU
# work to decode and augment (`cu.pipeline.SyntheticImages`, the dataset of notebook 04). The same
# architecture and the same initial weights exist in PyTorch, JAX and Keras (`cu.models`).

# %%
size = cu.env.pick(ci=32, cpu=32, gpu=64, tpu=64)
batch_size = cu.env.pick(ci=32, cpu=64, gpu=256, tpu=256)
dataset = cu.pipeline.SyntheticImages(cu.env.pick(ci=224, cpu=1024, gpu=8192, tpu=8192), size=size, classes=10,
                                      work=cu.env.pick(ci=4, cpu=8))
x0, y0 = dataset.batch(range(batch_size))  # NCHW, float32
x0_nhwc = np.ascontiguousarray(x0.transpose(0, 2, 3, 1))
print(dataset, "| batch", x0.shape)

# %%
# NBVAL_CHECK_OUTPUT
torch_out = cu.models.torch_cnn(classes=10)(torch.from_numpy(x0)).detach().numpy()
jax_out = np.asarray(cu.models.jax_cnn_apply(cu.models.jax_cnn_params(classes=10), jnp.asarray(x0_nhwc)))
keras_out = np.asarray(cu.models.keras_cnn(classes=10, size=size)(x0_nhwc))
same = max(np.abs(jax_out - torch_out).max(), np.abs(keras_out - torch_out).max()) < 1e-4
print("same model in all three frameworks (outputs agree within 1e-4):", same)
assert same

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The PyTorch ladder, one change at a time
# Each rung keeps everything from the rung before and changes one thing; every step time includes
# waiting for the data loader, as in real training.
#
# 1. eager fp32, data prepared in the training process (the usual first version);
# 2. `torch.compile` of the model;
# 3. mixed precision (bf16 autocast where the hardware has bf16 units; fp16 + `GradScaler` is the GPU
#    alternative, notebook 03);
# 4. DataLoader workers prepare batches in parallel (notebook 04);
# 5. data parallel over several devices, where there are several (notebook 05).
#
# **Prediction.** The seed claims ~30% from compilation and ~30% from mixed precision. On a small CNN on
# a CPU, expect compilation to help less than on the elementwise chain of notebook 00 (convolutions are
# already optimised kernels), and the loader rung to matter as much as any compiler.

# %%
def fresh_model():
    return cu.models.torch_cnn(classes=10).to(device)


torch_step_for = cu.ladder.torch_train_step  # forward, loss, backward, SGD update (source below)
amp_dtype = cu.ladder.autocast_dtype(device)
workers = min(2, cu.env.report(devices=False).cores_logical)
torch_ladder, compiled_model = cu.ladder.torch_ladder(dataset, batch_size, fresh_model, workers=workers,
                                                      epochs=cu.env.pick(ci=1, cpu=2))
rungs = list(torch_ladder.rungs)
print(f"device {device}, autocast dtype {amp_dtype}, loader workers for the last rung: {workers}")
torch_ladder

# %% [markdown] slideshow={"slide_type": "skip"}
# The training step and the ladder, as `course_utils.ladder` runs them:

# %% slideshow={"slide_type": "skip"}
from IPython.display import Code

Code(inspect.getsource(cu.ladder.torch_train_step) + "\n\n" + inspect.getsource(cu.ladder.torch_ladder),
     language="python")

# %%
cu.plotting.waterfall(torch_ladder.waterfall_steps(), title="PyTorch: step time, one change at a time")

# %% [markdown] slideshow={"slide_type": "subslide"}
# A faster step is worthless if it trains a different model. The checks: one step of the compiled model
# gives the same loss and weights as eager, mixed precision stays close, and the worker loader delivers the
# very same batches as the in-process one.

# %%
# NBVAL_CHECK_OUTPUT
eager_model, compiled_check = fresh_model(), torch.compile(fresh_model())
batch = (torch.from_numpy(x0), torch.from_numpy(y0))
loss_eager = torch_step_for(eager_model)(batch).item()
loss_compiled = torch_step_for(compiled_check)(batch).item()
weights_equal = all(torch.allclose(a, b, atol=1e-4) for a, b in
                    zip(eager_model.parameters(), compiled_check.parameters()))
print("compiled step == eager step (loss within 1e-4, weights within 1e-4):",
      abs(loss_eager - loss_compiled) < 1e-4 and weights_equal)
amp_close = amp_dtype is None or abs(torch_step_for(fresh_model(), amp_dtype)(batch).item() - loss_eager) < 0.02 * loss_eager
print("mixed-precision loss within 2% of fp32, wherever the rung runs:", amp_close)
same_batches = rungs[0].timeline.fingerprints == rungs[-1].timeline.fingerprints
print("worker loader yields identical batches:", same_batches)
assert abs(loss_eager - loss_compiled) < 1e-4 and weights_equal and amp_close and same_batches

# %%
skipped = [] if amp_dtype is not None else [
    "mixed precision: this CPU has no bf16 units (no avx512_bf16/amx), so bf16 would be emulated and slower "
    "(notebook 03 measured it)"]
if torch.cuda.device_count() < 2:
    skipped.append("data parallel: one device here; notebook 05 measured that two processes on one CPU are "
                   "slower than one (the seed's 'more machines can be slower' pitfall)")
best = max(torch_ladder.rungs, key=lambda r: torch_ladder.speedup(r.label))
overall = (f"No rung beat the baseline's {format_time(rungs[0].step_time)} per step on this machine. "
           if best is rungs[0] else
           f"From {format_time(rungs[0].step_time)} to {format_time(best.step_time)} per step: "
           f"**{torch_ladder.speedup(best.label):.2f}x** overall on this machine, best at the rung *{best.label}*. ")
Markdown(
    overall + "Compilation alone: "
    f"**{torch_ladder.speedup('+ torch.compile'):.2f}x** (the seed's ~30% less compute would be 1.43x); its "
    f"first step took {format_time(rungs[1].first_step)} against {format_time(rungs[0].first_step)} eager. "
    f"The baseline spent {rungs[0].wait_share:.0%} of each step waiting for data.\n\n"
    + ("Skipped here: " + "; ".join(skipped) + "." if skipped else "")
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The seed's framework table, rebuilt from measurement
# The seed's view: *PyTorch* high development efficiency, DDP, strongest ecosystem; *TensorFlow* strong
# deployment, Strategy API; *JAX* highest performance via XLA, cheapest on TPU. Here is what this machine
# says for the same CNN training step, fp32, on one fixed batch (data loading excluded: the ladder above
# covers it).

# %%
def jax_loss(params, x, y):
    logits = cu.models.jax_cnn_apply(params, x)
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])


def jax_step(params, x, y):
    loss, grads = jax.value_and_grad(jax_loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss


keras_model = cu.models.keras_cnn(classes=10, size=size)
keras_optimizer = keras.optimizers.SGD(0.05)


def tf_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, keras_model(x, training=True)))
    keras_optimizer.apply_gradients(zip(tape.gradient(loss, keras_model.trainable_variables),
                                        keras_model.trainable_variables))
    return loss


# %%
jax_params, xj, yj = cu.models.jax_cnn_params(classes=10), jnp.asarray(x0_nhwc), jnp.asarray(y0)
xt, yt = tf.constant(x0_nhwc), tf.constant(y0)
torch_batch = (torch.from_numpy(x0), torch.from_numpy(y0))
fast = dict(min_time=0.1, max_repeats=20)
steps = {
    "PyTorch eager": benchmark(torch_step_for(fresh_model()), torch_batch, **fast),
    "PyTorch torch.compile": benchmark(torch_step_for(compiled_model), torch_batch, **fast),
    "JAX op-by-op": benchmark(jax_step, jax_params, xj, yj, **fast),
    "JAX jax.jit": benchmark(jax.jit(jax_step), jax_params, xj, yj, **fast),
    "TensorFlow eager": benchmark(tf_step, xt, yt, **fast),
    "TensorFlow tf.function(jit_compile)": benchmark(tf.function(tf_step, jit_compile=True), xt, yt, **fast),
}
cu.plotting.time_bars(steps, log=True, show_first_call=True, title="One CNN training step, fp32")

# %%
forward = cu.models.torch_cnn(classes=10)
table_inputs = [(torch.from_numpy(x0),), (torch.from_numpy(x0),)]
breaks = cu.graphs.torch_graph_breaks(forward, torch.from_numpy(x0))
compiles = {
    "PyTorch": cu.graphs.count_compiles("torch", lambda x: forward(x), table_inputs),
    "JAX": cu.graphs.count_compiles("jax", jax_step, [(jax_params, xj, yj)] * 2),
    "TensorFlow": cu.graphs.count_compiles("tensorflow", tf_step, [(xt, yt)] * 2),
}
memory = {
    "PyTorch": cu.precision.peak_rss_delta(lambda: torch_step_for(fresh_model())(torch_batch)),
    "JAX": cu.precision.jax_memory(jax_step, jax_params, xj, yj).get("temp"),
    "TensorFlow": None,
}
code = {"PyTorch": torch_step_for, "JAX": jax_step, "TensorFlow": tf_step}
seed_says = {"PyTorch": "high dev efficiency, DDP, strongest ecosystem",
             "JAX": "highest performance via XLA, cheapest on TPU",
             "TensorFlow": "strong deployment, Strategy API"}
pairs = {"PyTorch": ("PyTorch eager", "PyTorch torch.compile"), "JAX": ("JAX op-by-op", "JAX jax.jit"),
         "TensorFlow": ("TensorFlow eager", "TensorFlow tf.function(jit_compile)")}

# %%
first_step = {"PyTorch": rungs[1].first_step,  # the ladder compiled this model first: its cold compile
              "JAX": steps["JAX jax.jit"].first_call, "TensorFlow": steps["TensorFlow tf.function(jit_compile)"].first_call}


def row(fw):
    eager, compiled = (steps[k] for k in pairs[fw])
    mem = "n/a (no per-step peak on CPU)" if memory[fw] is None else f"{memory[fw] / 2**20:.1f} MiB"
    return (f"| {fw} | {format_time(first_step[fw])} | {format_time(compiled.median)} | "
            f"{eager.median / compiled.median:.2f}x | {mem} | {compiles[fw]} | "
            f"{cu.ladder.lines_changed(torch_step_for, code[fw])} | {seed_says[fw]} |")


Markdown(
    "| framework | first compiled step | compiled step | vs its own eager | step memory | traces for 2 calls "
    "| lines changed from the PyTorch step | the seed says |\n|---|---|---|---|---|---|---|---|\n"
    + "\n".join(row(fw) for fw in pairs)
    + f"\n\nPyTorch graph breaks in the model: {breaks.break_count}. Memory: PyTorch, growth of the process's "
    "peak resident memory during one step; JAX, the temporary buffers XLA plans for the step."
)

# %%
# NBVAL_CHECK_OUTPUT
print("graph breaks in the PyTorch model:", breaks.break_count)
print("traces for two calls with the same shapes:", compiles)

# %%
fastest = min(pairs, key=lambda fw: steps[pairs[fw][1]].median)
Markdown(
    f"On this machine the fastest compiled step is **{fastest}**'s. "
    "Whether that matches the seed's table depends on the hardware: XLA's advantage is largest on TPUs and "
    "for long chains of small ops; on a CPU, convolutions run in vendor libraries (oneDNN) whichever "
    "framework calls them. The line counts show the real migration cost: compiling is one line in each "
    "framework, but moving a PyTorch code base to JAX or Keras rewrites the training step."
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. What is it worth? The cost model
# The seed's rule: GPU spend 100k/month, ~30% saved, 2 engineers x 2 weeks (~40k), a 20% buffer for
# harder debugging, break-even in about two months. `cu.cost.estimate` does the same arithmetic with a
# **measured** speed-up: here, the PyTorch ladder's best rung over the baseline.

# %%
# NBVAL_CHECK_OUTPUT
seed = cu.cost.seed_example()
print(f"the seed's own numbers: break-even after {seed.break_even_months:.1f} months "
      f"(about 2, as the article says), net after 12 months {seed.net:,.0f}")

# %%
measured = cu.cost.estimate(100_000, torch_ladder.speedup(best.label), 40_000, risk_buffer=0.2)
compile_only = cu.cost.estimate(100_000, torch_ladder.speedup("+ torch.compile"), 40_000, risk_buffer=0.2)
display(measured)
cu.cost.plot(seed, measured, compile_only,
             labels=["seed's claim (1.43x)", f"measured ladder ({measured.speedup:.2f}x)",
                     f"measured compile only ({compile_only.speedup:.2f}x)"])

# %% [markdown] slideshow={"slide_type": "subslide"}
# Move the sliders to your own bill and team (in JupyterLab or Colab; a static copy of this notebook shows
# the table above instead).

# %%
cu.cost.explore(measured.speedup)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The launch checklist, run as code
# The seed's checklist: an MVP comparison on a non-critical model, an operator compatibility check, a
# rollback plan, monitoring of compile time and utilisation, and refactoring dynamic control flow first.
# `cu.checklist.run` turns each into a check with evidence. First on our model's forward pass, then on a
# function with a data-dependent branch.

# %%
utilisation = 1 - rungs[-1].wait_share
ready = cu.checklist.run(forward, (torch.from_numpy(x0),), framework="torch", min_speedup=1.0,
                         utilisation=utilisation, min_time=0.1)
ready

# %%
def forward_with_branch(x):
    logits = forward(x)
    if logits.mean() > 0:  # a Python branch on a tensor's value
        return logits * 2
    return logits


not_ready = cu.checklist.run(forward_with_branch, (torch.from_numpy(x0),), framework="torch", min_time=0.1)
not_ready

# %%
# NBVAL_CHECK_OUTPUT
print("model forward: operator compatibility", ready["operator compatibility"].mark,
      "| dynamic control flow", ready["no data-dependent Python control flow"].mark,
      "| rollback", ready["rollback path (eager kept)"].mark)
print("with a data-dependent branch: operator compatibility", not_ready["operator compatibility"].mark,
      "| dynamic control flow", not_ready["no data-dependent Python control flow"].mark,
      "| rollback", not_ready["rollback path (eager kept)"].mark)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. The page to hand to your lead

# %%
verdict = "migrate" if measured.break_even_months <= 6 and ready.passed else "do not migrate yet"
Markdown(f"""
**Model:** small CNN, {dataset.size}x{dataset.size} patches, batch {batch_size}, on {cu.env.cpu_model()}
({device.type}). **Measured, not assumed.**

| | measured here | the seed claims |
|---|---|---|
| speed-up from compilation | {torch_ladder.speedup('+ torch.compile'):.2f}x | ~1.43x (30% less compute) |
| speed-up, whole ladder | {torch_ladder.speedup(best.label):.2f}x | |
| first step (compile) | {format_time(rungs[1].first_step)} | "debugging harder" |
| data-loading share of the baseline step | {rungs[0].wait_share:.0%} | "sometimes the bottleneck" |
| break-even on 100k/month, 40k migration, +20% | {"never" if measured.break_even_months == float("inf") else f"{measured.break_even_months:.1f} months"} | about 2 months |
| 12-month net | {measured.net:,.0f} | {seed.net:,.0f} |

**Decision rule:** migrate when the *measured* break-even is well inside your planning horizon and the
checklist passes; otherwise fix the cheap rungs first (loader, mixed precision on hardware that has the
units). **Verdict for this machine:** {verdict}. **Caveats:** a CPU is not the accelerator you pay for;
rerun this notebook on the target GPU/TPU before deciding. Kernel-level gains (notebook 02) bound the
model's; communication (notebook 05) can eat them at scale.
""")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
# **1.** Your team trains on 8 GPUs at 250k a month, 60% of it training, and estimates the migration at
# 3 engineers for 3 weeks (90k). With this notebook's measured compile speed-up, when does it pay back?
# <details><summary>Hint</summary><code>cu.cost.estimate(250_000, speedup, 90_000,
# training_share=0.6)</code>.</details>

# %% jupyter={"source_hidden": true}
mine = cu.cost.estimate(250_000, torch_ladder.speedup("+ torch.compile"), 90_000, training_share=0.6)
print(mine)

# %% [markdown]
# **2.** Run the launch checklist on JAX's training step (`jax_step`) instead. What changes in the
# evidence, and why is there no "graph break" in JAX?
# <details><summary>Hint</summary><code>cu.checklist.run(jax_step, (jax_params, xj, yj),
# framework="jax")</code>; JAX either traces the whole function or raises.</details>

# %% jupyter={"source_hidden": true}
print(cu.checklist.run(jax_step, (jax_params, xj, yj), framework="jax", min_speedup=1.0, min_time=0.1))

# %% [markdown]
# **3.** Which rung would you try first on a GPU, and what would you measure to decide? Write the one
# cell that measures it.
# <details><summary>Hint</summary>On a GPU, autocast fp16/bf16 usually gives the largest single gain;
# measure it with <code>cu.ladder.measure_rung</code> exactly as above.</details>

# %% jupyter={"source_hidden": true}
print("On this machine the rungs measured:", ", ".join(f"{r.label}: {torch_ladder.speedup(r.label):.2f}x"
                                                        for r in torch_ladder.rungs))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.summary.table("06_should_we_migrate", [
    *[(f"PyTorch ladder: {r.label}", torch_ladder.speedup(r.label), "x", "over eager fp32")
      for r in torch_ladder.rungs],
    ("torch.compile first step", rungs[1].first_step, "s", ""),
    ("data wait share, baseline", rungs[0].wait_share, "fraction", "seed: loading can be the bottleneck"),
    *[(f"{fw}: compiled vs own eager", steps[pairs[fw][0]].median / steps[pairs[fw][1]].median, "x", seed_says[fw])
      for fw in pairs],
    ("break-even, measured ladder", measured.break_even_months, "months", "seed: about 2"),
    ("12-month net, measured ladder", measured.net, "currency", f"seed: {seed.net:,.0f}"),
])

# %% [markdown]
# **What to remember**
# - Measure the ladder on your model: rungs that are not compilers (loader, precision) often pay as much.
# - Put the *measured* speed-up into the cost model; the article's 30% is a claim, not your number.
# - Launch only with the checklist green: equality, no graph breaks, eager kept as the rollback path.
#
# **Next:** rerun notebooks 00-06 on the hardware you actually pay for (Colab GPU or TPU) and compare.

# %%
print(cu.summary.last_verified())
