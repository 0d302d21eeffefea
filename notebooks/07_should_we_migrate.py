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
# # 07 · Should we migrate? A measured decision, with costs
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/07_should_we_migrate.ipynb)
#
# **The question.** Is moving our training to a compiled framework worth it, for *our* model, on *our*
# hardware, at *our* bill?
#
# **You will be able to** separate the speed-ups you can have today without migrating (loader workers,
# pinned memory, mixed precision, batch size) from what the migration itself buys (compilation), put only
# the latter into a cost model with its uncertainty, rebuild the seed articles' framework table on a common
# baseline, and run the seed's launch checklist as code, with checks that can fail.
#
# **Time:** about 45 minutes in a workshop; the notebook runs in under 6 minutes on a 2-core laptop.
# **Accelerators:** everything runs on CPU; a CUDA GPU adds the pinned-memory rung and fp16/bf16 autocast; on a
# TPU runtime the JAX row uses the TPU and PyTorch stays on the CPU. Colab TPU runtimes ship no TensorFlow: its
# row says so in one sentence and is skipped (JAX likewise where it is missing).

# %% slideshow={"slide_type": "skip"}
# Colab only: install the course helpers. Colab's own torch, jax and tensorflow are left as they are.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "course_utils @ git+https://github.com/eager-to-compiled/course@v0.2.0"], check=True)

# %%
import course_utils as cu

cu.notebook.setup()

# %% slideshow={"slide_type": "skip"}
import math

import torch
from IPython.display import Markdown

from course_utils.display import format_time, verdict

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 3, "lead": false}
# ## 1. The model: a small CNN on image patches
# The seed's scenario is a medical-imaging team waiting days for each run. Our stand-in: a small CNN
# (three 3x3 convolutions, global pooling, a linear head) on synthetic image patches that cost real CPU
# work to decode and augment (`cu.pipeline.SyntheticImages`, the dataset of notebook 04). The same
# architecture and the same initial weights exist in PyTorch, JAX and Keras (`cu.models`).

# %%
size = cu.env.pick(ci=32, cpu=32, gpu=64, tpu=64)
batch_size = cu.env.pick(ci=32, cpu=32, gpu=128, tpu=128)
dataset = cu.pipeline.SyntheticImages(cu.env.pick(ci=640, cpu=1536, gpu=8192, tpu=8192), size=size, classes=10,
                                      work=cu.env.pick(ci=4, cpu=8))
x0, y0 = dataset.batch(range(batch_size))  # NCHW, float32
print(dataset, "| batch", x0.shape)

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
agree = cu.migrate.outputs_agree(x0, classes=10)
print("the same model in every installed framework (outputs within 1e-4 of PyTorch's):",
      all(d < 1e-4 for d in agree.values()))
assert all(d < 1e-4 for d in agree.values()), agree

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 10, "lead": true}
# ## 2. The ladder: what you get without migrating, then what the migration buys
# Each rung keeps everything from the rung before and changes one thing; every step time includes the wait
# for the data loader, as in real training. Because one rung doubles the batch, every speed-up compares the
# **time per sample**.
#
# *No migration needed* (all of it is in eager PyTorch today): 1. DataLoader workers prepare batches in
# parallel (notebook 04); 2. pinned memory for faster host-to-GPU copies (GPU only); 3. autocast to bf16 where
# the hardware has bf16 units (notebook 03); 4. a doubled batch. *What the migration buys*: 5. `torch.compile`.
# The compiled model is also measured on the baseline ("compile first") to show why the order matters.
#
# **Prediction.** The no-migration wins together give a larger speed-up than compilation on top of them:
# this CNN spends its time in convolutions, which are already library kernels, and the baseline waits for
# its data.
#
# **Prediction.** Compile measured first, on the baseline, is credited with *less* than compile measured
# last: on the baseline a share of each step is waiting for data, which no compiler shortens.

# %%
def fresh_model():
    return cu.models.torch_cnn(classes=10).to(device)


workers = min(2, cu.env.report(devices=False).cores_logical)
ladder, compiled_model = cu.migrate.torch_ladder(dataset, batch_size, fresh_model, workers=workers,
                                                 rounds=cu.env.pick(ci=2, cpu=3), final_rounds=cu.env.pick(ci=6, cpu=8))
gain = ladder.migration_gain()  # the one number the cost model may use
first = ladder.migration_gain("torch.compile on the baseline")
ladder

# %%
cu.migrate.waterfall(ladder)

# %%
ladder.attribution("torch.compile on the baseline")

# %% [markdown] slideshow={"slide_type": "subslide"}
# A faster step is worthless if it trains a different model. The checks: three whole training steps of the
# compiled model give eager's losses and weights, mixed precision stays close to fp32, and the worker loader
# delivers the very same batches as the in-process one.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
amp_dtype = cu.migrate.autocast_dtype(device)
batch = (torch.from_numpy(x0), torch.from_numpy(y0))
fp32 = cu.migrate.step_agreement(fresh_model, batch)
print("compiled == eager over 3 steps (losses and weights within 1e-4 relative):",
      fp32["loss"] < 1e-4 and fp32["weights"] < 1e-4)
fp32_loss = float(cu.migrate.train_step(fresh_model())(batch))
amp_close = amp_dtype is None or abs(float(cu.migrate.train_step(fresh_model(), amp_dtype)(batch)) - fp32_loss) < 0.02 * fp32_loss
print("mixed-precision loss within 2% of fp32's, wherever the rung runs:", amp_close)
same_batches = ladder.baseline.fingerprints == ladder[f"+ {workers} loader workers"].fingerprints
print("worker loader yields identical batches:", same_batches)
assert fp32["loss"] < 1e-4 and fp32["weights"] < 1e-4 and amp_close and same_batches

# %%
cheap = ladder.no_migration_gain()
verdict(cheap > gain.median, f"the no-migration wins gave {cheap:.2f}x per sample, compile on top of them "
        f"{gain.median:.2f}x", "compilation bought more than all the cheap rungs together on this machine")

# %%
verdict(first.median < gain.median, f"compile first {first.median:.2f}x, compile last {gain.median:.2f}x",
        "compile was credited with more on the baseline than after the cheap rungs")

# %%
base = ladder.baseline
Markdown(
    f"The baseline waited for data {base.wait_share:.0%} of each step; after the cheap rungs the compiled step "
    f"waited {ladder['+ torch.compile'].wait_share:.0%}. A compiler shortens only the compute part, so "
    + ("measured first its gain is diluted by the wait: "
       if first.median < gain.median else
       "yet here compile measured first was not diluted more than measured last: "
       "on 2 shared cores the loader workers also compete with the compiled kernels for the same cores, and ")
    + f"first {first.median:.2f}x, last {gain.median:.2f}x. Both orders end at the same total "
    f"({ladder.speedup('+ torch.compile'):.2f}x over the baseline); what differs is the credit, and the credit "
    f"is what a migration budget pays for. The cheap rungs need no migration: "
    + ("they gave more than compile did, so they come first in any plan."
       if cheap > gain.median else "here compile gave more than they did, which makes the migration worth costing.")
    + ("\n\nSkipped here: " + "; ".join(ladder.skipped) + "." if ladder.skipped else "")
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The seed also claims that *automatic mixed precision typically gives ~30% speed-up and saves memory*.
#
# **Prediction.** The autocast rung, over the rung before it, is at least 1.25x faster per sample (the
# seed's ~30%), where this hardware has the units to run it.

# %%
amp_label = next((r.label for r in ladder.rungs if r.label.startswith("+ autocast")), None)
amp_gain = ladder.over_previous(amp_label) if amp_label else None
(verdict(False, "autocast not measured", "this machine has no bf16 units, so the rung was skipped (notebook 03 "
         "measured emulated bf16: many times slower)") if amp_gain is None else
 verdict(amp_gain >= 1.25, f"autocast gave {amp_gain:.2f}x per sample over the rung before it (the seed: ~1.3x)",
         "on this hardware mixed precision bought less than the seed's 30%"))

# %%
Markdown("" if amp_label is None else
         f"Mixed precision: {ladder.over_previous(amp_label):.2f}x per sample; the step's peak memory went from "
         f"{cu.display.format_bytes(ladder.rungs[ladder.rungs.index(ladder[amp_label]) - 1].peak_bytes or 0)} to "
         f"{cu.display.format_bytes(ladder[amp_label].peak_bytes or 0)} (process peak RSS on a CPU, the allocator's "
         "peak on a GPU). On a CPU, bf16 matmul units (AMX, avx512_bf16) decide it; on a GPU the tensor cores do, "
         "and the seed's 30% is a GPU number. Autocast is in eager PyTorch today: it needs no migration.")

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 7, "lead": false}
# ## 3. The seed's framework table, rebuilt on a common baseline
# The seed's view: *PyTorch* high development efficiency, DDP, strongest ecosystem; *TensorFlow* strong
# deployment, Strategy API; *JAX* highest performance via XLA, cheapest on TPU. Here: the same CNN, the
# same batch, one fp32 SGD step (no loader), each framework's compiled step against **PyTorch eager** (the
# common baseline: what the team runs today) and against the framework's own eager mode.
#
# **Prediction.** The seed says JAX is fastest: on the common baseline, `jax.jit`'s step is the fastest
# compiled step of the frameworks installed here.

# %%
frameworks = cu.migrate.framework_table(x0, y0, classes=10, min_time=cu.env.pick(ci=0.3, cpu=0.5))
frameworks

# %%
fastest = max((r.framework for r in frameworks.rows), key=frameworks.vs_baseline)
(verdict(fastest == "jax", f"fastest compiled step: {fastest} ({frameworks.vs_baseline(fastest):.2f}x over "
         "PyTorch eager)", f"{fastest} was faster than JAX here") if "jax" in [r.framework for r in frameworks.rows]
 else verdict(False, "JAX not measured", "JAX is not installed in this runtime, so the seed's claim is untested"))

# %%
ranking = " > ".join(f"{r.framework} {frameworks.vs_baseline(r.framework):.2f}x"
                     for r in sorted(frameworks.rows, key=lambda r: -frameworks.vs_baseline(r.framework)))
Markdown(f"Compiled steps over PyTorch eager: {ranking}. What each compiler sees differs: `jax.jit` and "
         "`tf.function(jit_compile=True)` compile the whole step (forward, backward, update) into one XLA program, "
         "while `torch.compile` of the model compiles forward and backward and leaves the optimizer step eager. "
         + ("Here that whole-program view put JAX first, as the seed says." if fastest == "jax" else
            f"Here {fastest} came first, so the seed's 'JAX is fastest' did not hold on this machine: it is a claim "
            "about TPUs and long chains of small ops, and on a CPU the libraries that run the convolutions "
            "decide much of the step (below)."))

# %%
# NBVAL_CHECK_OUTPUT
print("PyTorch graph breaks in the model:", frameworks["torch"].graph_breaks)

# %% [markdown] slideshow={"slide_type": "subslide"}
# What runs the convolutions? PyTorch's CPU convolutions call oneDNN. XLA:CPU (JAX, and TensorFlow with
# `jit_compile=True`) compiles its own code; the optimised HLO of the JAX step says which of its operations
# went to a library.

# %%
if cu.notebook.needs("jax"):
    kernels = cu.migrate.xla_cpu_kernels(cu.migrate.jax_step_hlo(x0, y0, classes=10))
    print(kernels)

# %%
Markdown("" if not cu.env.available("jax") else
         f"In the HLO XLA:CPU will run, {kernels['ynn convolutions']} of the step's {kernels['all convolutions']} "
         f"convolutions and {kernels['ynn dots']} matmuls are `__ynn_fusion`s (YNNPACK, the successor of XNNPACK), "
         f"{kernels['convolutions outside ynn']} convolutions stay with XLA's own emitter, and "
         f"{'no' if kernels['onednn calls'] == 0 else kernels['onednn calls']} oneDNN call appears. So the frameworks "
         "do **not** all call the same library: differences in the table are differences of libraries and of "
         "what each compiler fuses around them. JAX op-by-op (its 'eager' column) dispatches every primitive "
         "separately and is not how JAX is used; its column is there only to show what `jit` removes.")

# %%
torch_fixed = frameworks.vs_own_eager("torch")
Markdown(
    f"**One number for torch.compile.** This notebook measured compile three ways: on the baseline with its "
    f"loader (compile first, {first.median:.2f}x, diluted by the data wait), on a fixed batch with no loader "
    f"(the table, {torch_fixed:.2f}x, compute alone, fp32, batch {batch_size}), and on top of the no-migration "
    f"wins (compile last, {gain}). The decision uses the last one: it is what the migration adds to what the "
    "team can have anyway, on whole training steps with the real loader, measured interleaved with its "
    f"eager twin over {ladder['+ torch.compile'].steps.n} steady steps. The checklist below judges that same number."
)

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 9, "lead": true}
# ## 4. What is it worth? The cost model, fed only what the migration buys
# The seed's rule: GPU spend 100k/month, ~30% saved, 2 engineers x 2 weeks (~40k), a 20% buffer for harder
# debugging, break-even in about two months; the bill grows 50% a month. `cu.migrate.estimate` does the same
# arithmetic (it is **computed**, not measured) but accepts only a `MigrationGain`: the cheap rungs cannot
# feed it. Inputs a lead knows: spend and its growth, training share, engineers x weeks x cost, compile time
# paid per job, the upkeep of the eager path kept for rollback, and whether capacity is reserved.

# %%
# NBVAL_CHECK_OUTPUT
seed = cu.migrate.seed_example()
print(f"the seed's own numbers: break-even after {seed.break_even_months:.1f} months, "
      f"net after 12 months {seed.net():,.0f}")
print(f"with the seed's +50% a month, the bill in month 12 is {1.5 ** 11:.0f}x month 1's (computed)")

# %%
compile_s = max(0.0, ladder["+ torch.compile"].first_step - ladder["+ torch.compile"].step_time)
utilisation = 1 - ladder["+ torch.compile"].wait_share
lead_inputs = dict(training_share=0.8, engineers=2, weeks=2, engineer_week_cost=10_000, debugging_buffer=0.2,
                   job_hours=72, compile_s_per_job=compile_s, eager_upkeep=2_000)
measured = cu.migrate.estimate(100_000, gain, **lead_inputs)
growing = cu.migrate.estimate(100_000, gain, spend_growth=0.5, **lead_inputs)
measured

# %%
cu.migrate.payback(seed, measured, labels=["the seed's claim (1.43x)", f"measured: compile buys {gain.median:.2f}x"])

# %% [markdown]
# **Prediction.** On the seed's 100k/month bill (80% of it training, 2 engineers x 2 weeks, 2k a month to
# keep the eager path alive), what compile alone buys pays the migration back within 12 months even at the
# low quartile of its measured speed-up.

# %%
soon, late = measured.break_even_range
verdict(late <= 12, f"break-even {measured.break_even_months:.1f} months (band {soon:.1f} to {late:.1f}) at a "
        f"{gain.median:.2f}x speed-up", "at the low quartile the migration does not pay back within a year")

# %%
def months(m):
    return "never (within 10 years)" if math.isinf(m) else f"{m:.1f} months"


reserved = cu.migrate.estimate(100_000, gain, reserved=True, **lead_inputs)
Markdown(
    f"Fed the cheap rungs too (the old notebook's mistake) the model would have seen "
    f"{ladder.speedup('+ torch.compile'):.2f}x instead of {gain.median:.2f}x. With the measured gain the "
    f"migration pays back after {months(measured.break_even_months)} (band {months(soon)} to {months(late)}); "
    f"with the seed's +50% a month, after {months(growing.break_even_months)}: growth shortens any payback, "
    f"but a bill that grows {1.5 ** 11:.0f}-fold in eleven months is a claim to check with finance, not an input to trust.\n\n"
    f"**Reserved capacity** (the GPUs are paid whatever we do): the speed-up saves no money, it buys time. The "
    f"seed's 3-day run becomes {reserved.time_to_result():.1f} hours (band {reserved.time_to_result('high'):.1f} to "
    f"{reserved.time_to_result('low'):.1f}); the seed's competitor's 3 hours would need a 24x speed-up. "
    f"**The seed's arithmetic slip:** utilisation from 40% to 80% halves the GPU-hours for the same work, but "
    f"their example, 10 GPUs x 10 h = 100 GPU-hours becoming 5 GPUs x 5 h = 25, is a quarter (computed)."
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Move the sliders to your own bill and team (in JupyterLab or Colab; a static copy of this notebook shows
# the table above instead).

# %%
cu.migrate.explore(gain, **{k: v for k, v in lead_inputs.items() if k not in ("engineers", "weeks")})

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 7, "lead": true}
# ## 5. The launch checklist, run as code
# The seed's checklist: an MVP comparison on a non-critical model, an operator compatibility check, a
# rollback plan, monitoring of compile time and utilisation, and refactoring dynamic control flow first.
# `cu.migrate.run_checklist` turns each into a check that can fail, on the **whole training step** at the
# ladder's final settings: the MVP judges the migration's measured gain (its low quartile must reach 1.05x)
# and compares three compiled steps with eager; the rollback check *forces* a compile failure (a compiler
# backend that raises) and requires the fallback to reproduce eager's losses; monitoring reads compile time
# and the busy share of the step from `torch.profiler` traces (`cu.profile`), against 1% of the competitor's
# 3-hour run (108 s) and the seed's 80%.

# %%
final_loader = cu.migrate.make_loader(dataset, 2 * batch_size, workers, device.type == "cuda")
monitoring = cu.migrate.monitor(lambda: cu.migrate.train_step(cu.migrate.compile_model(fresh_model()), amp_dtype),
                                final_loader, steps=cu.env.pick(ci=5, cpu=8))
monitoring

# %%
Markdown(
    f"The trace counts {format_time(monitoring.compile_s)} of compiler phases in the first step; the ladder's "
    f"first compiled step exceeded a steady one by {format_time(compile_s)} (the two agree only roughly: the "
    "trace counts Dynamo and Inductor alone, and Inductor's on-disk cache, warm after the ladder, serves the "
    f"second compile). Busy share: {monitoring.utilisation:.0%} from the trace, {utilisation:.0%} from the "
    "ladder's timeline. Both are the share of the step not spent waiting for data, not MFU."
)

# %%
x2, y2 = dataset.batch(range(2 * batch_size))
big = (torch.from_numpy(x2), torch.from_numpy(y2))
ready = cu.migrate.run_checklist(
    cu.migrate.step_factory(fresh_model, amp_dtype), big, gain=gain, min_speedup=1.05,
    forward=(fresh_model(), (big[0],)), compile_s=max(monitoring.compile_s, compile_s), compile_budget_s=108.0,
    utilisation=monitoring.utilisation, min_utilisation=0.8, rtol=1e-3 if amp_dtype is None else 3e-2)
ready

# %% [markdown] slideshow={"slide_type": "subslide"}
# The same checklist on a model whose forward branches on a tensor's value (the seed's pitfall: "data-dependent
# control flow breaks static graphs"):

# %%
class BranchyCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = fresh_model()

    def forward(self, x):
        logits = self.cnn(x)
        if logits.mean() > 0:  # a Python branch on a tensor's value
            return logits * 2
        return logits


not_ready = cu.migrate.run_checklist(cu.migrate.step_factory(BranchyCNN), batch, forward=(BranchyCNN(), (batch[0],)),
                                     steps=2)
not_ready

# %%
# NBVAL_CHECK_OUTPUT
for name, result in (("CNN", ready), ("CNN with a data-dependent branch", not_ready)):
    print(f"{name}: " + " | ".join(f"{c.name.split(':')[0]} {c.mark}" for c in result.checks
                                   if not c.name.startswith(("MVP", "monitoring"))))

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 3, "lead": true}
# ## 6. The page to hand to your lead

# %%
decisive = {"MVP: whole training step, speed and equality": f"at its low quartile compile buys {gain.low:.2f}x, "
            "below the 1.05x bar (or the losses differ)",
            "monitoring: compile time and utilisation": f"compile {format_time(max(monitoring.compile_s, compile_s))} "
            f"against 108 s, busy {monitoring.utilisation:.0%} against 80%"}
if not ready.passed:
    why = "the launch checklist failed: " + "; ".join(f"*{name}* ({decisive.get(name, 'see its evidence above')})"
                                                      for name in ready.failed)
elif late > 12:
    why = f"at the low quartile of its speed-up the migration pays back only after {months(late)}"
else:
    why = f"every check passed and break-even is {months(soon)} to {months(late)}, inside a year"
decision = "migrate" if ready.passed and late <= 12 else "do not migrate yet"
Markdown(f"""
**Model:** small CNN, {size}x{size} patches, batch {batch_size} (x2 after the batch rung), on {cu.env.cpu_model()}
({device.type}). **Measured in this run, except the money, which is computed from it.**

| | this run | the seed claims |
|---|---|---|
| no-migration wins (workers, AMP, batch, per sample) | {cheap:.2f}x | "is data loading multi-process, is AMP on?" |
| what the migration buys (torch.compile, on top) | {gain} | ~1.43x (30% less compute) |
| compile time per job | {format_time(compile_s)} | "debugging is harder" |
| busy share of the final step (trace) | {monitoring.utilisation:.0%} | 80%+ |
| break-even, 100k/month, 80% training, 40k + 20% | {months(measured.break_even_months)} (band {months(soon)} to {months(late)}) | about 2 months |
| 12-month net | {measured.net():,.0f} (band {measured.net('low'):,.0f} to {measured.net('high'):,.0f}) | {seed.net():,.0f} |
| a 3-day run on reserved capacity | {reserved.time_to_result():.1f} h | 3 hours at the competitor |

**Verdict for this machine: {decision}**, because {why}. Whatever the verdict, take the no-migration wins
first: they cost no migration. **Caveat:** a CPU is not the accelerator you pay for; rerun this notebook on
the target GPU/TPU before deciding.
""")

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 5, "lead": false}
# ## Exercises
# **1.** A team rents 32 GPUs on demand at 2.50 per GPU-hour (an assumption close to public cloud prices for
# a mid-range data-centre GPU), running all month (730 h): `cu.migrate.monthly_spend_for(32, 2.5)`. 60% of it
# is training; the migration takes 3 engineers for 3 weeks at 10k per engineer-week, plus the 20% buffer.
# With this run's `gain`, after how many months does it pay back? (`math.inf` if not within ten years.)
# <details><summary>Hint</summary><code>cu.migrate.estimate(spend, gain, engineers=3, weeks=3,
# training_share=0.6).break_even_months</code></details>

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = cu.migrate.estimate(cu.migrate.monthly_spend_for(32, 2.5), gain, engineers=3, weeks=3,
                             training_share=0.6).break_even_months
print(f"spend {cu.migrate.monthly_spend_for(32, 2.5):,.0f} a month; break-even after {answer:.1f} months")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("07.1", answer, gain=gain)

# %% [markdown]
# **2.** Now the same team's GPUs are reserved for a year (paid whatever happens). A run takes 72 hours in
# eager PyTorch and pays this run's compile time once. How many hours does a run take after the migration?
# <details><summary>Hint</summary><code>cu.migrate.estimate(..., reserved=True, job_hours=72,
# compile_s_per_job=compile_s).time_to_result()</code>; the money saved is zero.</details>

# %%
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = cu.migrate.estimate(100_000, gain, reserved=True, job_hours=72, compile_s_per_job=compile_s).time_to_result()
print(f"a 72 h run takes {answer:.1f} h after the migration (money saved on reserved capacity: none)")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("07.2", answer, gain=gain, compile_s=compile_s)

# %% [markdown]
# **3. Predict, then measure.** The ladder's loaders drop the last, smaller batch of an epoch
# (`drop_last=True`). A team that keeps it, with batch 96 over this run's dataset, ends each epoch on a
# smaller batch. With `torch.compile(..., dynamic=False)`, how many graphs will Dynamo build for the model's
# forward over one epoch? Predict it from the batch sizes before the next cell counts them (an int).
# <details><summary>Hint</summary>Static shapes: one graph per distinct input shape. List the batch sizes of
# one epoch: <code>min(96, len(dataset) - start)</code> for each start.</details>

# %%
answer = None  # your prediction here

# %% tags=["solution"] jupyter={"source_hidden": true}
sizes = {min(96, len(dataset) - start) for start in range(0, len(dataset), 96)}
answer = len(sizes)
print(f"batch sizes in one epoch: {sorted(sizes)}, so predicted graphs: {answer}")

# %%
probe = fresh_model()
epoch = [(torch.from_numpy(xb),) for xb, _ in torch.utils.data.DataLoader(dataset, batch_size=96, collate_fn=cu.pipeline.numpy_collate)]
graphs_built = cu.graphs.count_compiles("torch", lambda x: probe(x), epoch, dynamic=False)
print(f"measured: Dynamo built {graphs_built} graph(s) over one epoch of {len(epoch)} batches; each one is "
      "compile time that a job pays and that monitoring should see")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("07.3", answer, measured=graphs_built)

# %% [markdown] slideshow={"slide_type": "slide"} course={"minutes": 1, "lead": false}
# ## Summary

# %%
cu.notebook.summary_table("07_should_we_migrate", [
    *[(f"ladder: {r.label}", ladder.speedup(r.label), "x", f"per sample over eager fp32; {r.kind}") for r in ladder.rungs],
    ("compile first (on the baseline)", first.median, "x", "diluted by the data wait"),
    ("what the migration buys (compile last)", gain.median, "x", f"band {gain.low:.2f} to {gain.high:.2f}"),
    ("torch.compile time per job", compile_s, "s", ""),
    *[(f"{r.framework}: compiled vs PyTorch eager", frameworks.vs_baseline(r.framework), "x", "common baseline")
      for r in frameworks.rows],
    ("break-even, migration gain only", measured.break_even_months, "months", "computed; seed: about 2"),
])

# %% [markdown]
# **What to remember**
# - Take the no-migration wins first (loader, pinned memory, mixed precision where the units exist, batch):
#   they cost no migration, and they decide how much compile is credited with.
# - Feed the cost model only what the migration buys, with its spread; a break-even range, not a point.
# - Launch only with checks that can fail: a forced compile failure proven to fall back to eager's numbers.
#
# **Next:** rerun notebooks 00-07 on the hardware you actually pay for (Colab GPU or TPU) and compare.

# %%
print(cu.notebook.last_verified())
