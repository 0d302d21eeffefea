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
# # 07 · Should we migrate? A measured decision, with costs
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/eager-to-compiled/course/blob/v0.2.0/notebooks/07_should_we_migrate.ipynb)
#
# **The question.** Is moving our training to a compiled framework worth it, for *our* model, on *our*
# hardware, at *our* bill?
#
# **You will be able to** separate the speed-ups you can have today without migrating (loader workers, pinned
# memory, mixed precision, batch size) from what the migration itself buys (`torch.compile`); measure that gain
# on your own model in fresh processes with `python -m course_utils.migrate assess`; price it with every input's
# source named; and decide by an interval against the **break-even speed-up**, the smallest gain that pays back.
#
# **Time:** the guide's agendas give this session's minutes, computed from the material; run time budgeted at 6 minutes on a 2-core laptop, 3 at ci size.
# **Accelerators:** everything runs on a CPU (the model on one core, notebook 04's stand-in accelerator, the
# loader on the others); a CUDA GPU adds the pinned-memory rung. The decision on the last page is measured on the
# machine that runs this notebook, and the page names it: a CPU stand-in decides nothing for a GPU fleet.

# %% slideshow={"slide_type": "skip"}
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

# On a CPU-only machine the "accelerator" is the CPU itself: as in notebook 04, the model gets one core (our
# stand-in accelerator) and the loader workers the others. This must run before JAX starts.
compute_threads = cu.pipeline.limit_compute_threads(1)
cu.notebook.setup()

# %% slideshow={"slide_type": "skip"} tags=["device"]
import os

import torch
from torch.utils.data import DataLoader

plan = cu.devices.plan(cu.devices.describe())  # where each framework runs here, and its matmul precision
device = torch.device(plan.torch_device)  # on a TPU runtime PyTorch runs on the host CPU

# %% tags=["device"]
sizes = cu.env.sizes(
    samples=dict(smoke=208, ci=400, cpu=400, gpu=8192),  # images per epoch of the ladder's loaders (smoke's 208 and
    # ci's 400 both end exercise 3's batch-96 epoch on 16 rows: one compiled graph for both runs of make test; on
    # a CPU more images per epoch only narrow the rounds' medians, and the ladder's rounds are its replicates)
    image=dict(cpu=64),  # image side, pixels
    work=dict(ci=2, cpu=2, gpu=8),  # decoding work per image: what loader workers take off the training process
    batch=dict(ci=32, cpu=32, gpu=128),  # the baseline's batch (the ladder), and the CNN's batch in assess
    rounds=dict(smoke=2, cpu=4),  # the ladder's paired rounds (an epoch per rung each, in turns): every set-up,
    final_rounds=dict(smoke=3, cpu=6),  # and the fastest set-up eager beside compiled
    processes=dict(smoke=2, ci=3, cpu=3),  # fresh processes per assess
    steps=dict(smoke=2, ci=10, cpu=10, gpu=20),  # timed steps per variant in each fresh process (replicates: processes)
    vocab=dict(ci=256, cpu=256, gpu=4096),  # transformer block: vocabulary
    dim=dict(ci=64, cpu=128, gpu=512),  # transformer block: width
    heads=dict(ci=4, cpu=4, gpu=8),  # transformer block: attention heads
    length=dict(ci=64, cpu=128, gpu=512),  # transformer block: tokens per sequence
    sequences=dict(ci=16, cpu=16, gpu=32),  # transformer block: sequences per batch
    min_time=dict(smoke=0.05, ci=0.2, cpu=0.2, gpu=0.3),  # framework table: seconds per timed round
)
sizes

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## 1. The model, and the migration in one line
# The seed's scenario is a medical-imaging team waiting days for each run. Our stand-in: the course CNN (three
# 3x3 convolutions, global pooling, a linear head) on synthetic image patches that cost real CPU work to decode
# (`cu.pipeline.SyntheticImages`, notebook 04's dataset). The migration is one line: `compile_model` below is
# what the ladder, the agreement checks, the checklist, `assess` (section 3) and the framework table apply. It is
# written to a small file that the cell shows, because `assess` imports it in fresh processes.

# %% tags=["device"]
dataset = cu.pipeline.SyntheticImages(sizes.samples, size=sizes.image, classes=10, work=sizes.work)
x0, y0 = dataset.batch(range(sizes.batch))  # NCHW, float32
cores = os.cpu_count() or 1
workers = cu.pipeline.data_cores(cores)  # notebook 04's rule: one core stays with the training process


def fresh_model():
    return cu.models.torch_cnn(classes=dataset.classes).to(device)


migration = cu.migrate.recipe("recipe07", """
import torch


def compile_model(model):
    return torch.compile(model, dynamic=False)  # the migration; shapes are fixed per job, so no dynamic graphs
""")  # written to build/recipes/recipe07.py, so that assess's fresh processes import this very function
compile_model = migration.compile_model
print(dataset, "| batch", x0.shape, f"| {cores} cores: {workers} for loader workers")

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 2. The ladder: what you get without migrating, then what the migration buys
# Each rung keeps everything from the rung before and changes one thing; every step includes the wait for the
# data loader, as in real training, and every speed-up compares **time per sample** (one rung doubles the
# batch). *No migration needed*: loader workers (notebook 04), pinned memory (GPU only), autocast where the
# hardware has bf16 units (notebook 03), a doubled batch. A rung slower than the set-up before it is *tried, not
# kept*. *What the migration buys*: `compile_model` at the fastest no-migration set-up, beside its own eager
# twin, and once more on the baseline ("compile first").
#
# **Prediction.** The no-migration wins together give a larger speed-up than compilation on top of them: this
# CNN spends its time in convolutions, which are library kernels either way.
#
# **Prediction.** Compile measured first, on the baseline, is credited with less than compile measured last,
# because on the baseline part of each step waits for data.

# %%
def loader(setup):  # the rung's DataLoader, as a training script writes it
    return DataLoader(dataset, batch_size=setup["batch"], num_workers=setup["workers"], pin_memory=setup["pin"],
                      drop_last=True, multiprocessing_context=cu.pipeline.worker_context() if setup["workers"] else None)


def train_step(model, setup):  # one SGD step, under autocast where the set-up names a dtype
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device.type, enabled=setup["amp"] == torch.float16)  # fp16 needs loss scaling

    def step(batch):
        x, y = (t.to(device, non_blocking=True) for t in batch)
        with torch.autocast(device.type, dtype=setup["amp"], enabled=setup["amp"] is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()
    return step


# %%
amp_dtype = cu.migrate.autocast_dtype(device)  # None where the hardware has no bf16 (or fp16) units
setups = {"eager fp32": dict(batch=sizes.batch, workers=0, pin=False, amp=None)}  # what the team runs today
rung = dict(setups["eager fp32"], workers=workers)  # each rung: the one before, one thing changed
setups[cu.migrate.workers_label(workers)] = rung
if device.type == "cuda":
    setups["+ pinned memory"] = rung = dict(rung, pin=True)
if amp_dtype is not None:
    setups[f"+ autocast {str(amp_dtype).split('.')[-1]}"] = rung = dict(rung, amp=amp_dtype)
setups[f"+ batch {2 * sizes.batch}"] = dict(rung, batch=2 * sizes.batch)
ladder, compiled_model = cu.migrate.torch_ladder(setups, loader, train_step, fresh_model, compiler=compile_model,
                                                 skipped=cu.migrate.skipped_rungs(device, amp_dtype),
                                                 rounds=sizes.rounds, final_rounds=sizes.final_rounds)
gain = ladder.interval(ladder.migration_gain().label)  # compile last, over its eager twin
first = ladder.interval("torch.compile on the baseline")  # compile first
cheap = ladder.no_migration_interval()  # the kept no-migration set-up over the baseline
kept = ladder.kept.setup  # batch, loader workers, pinned memory, autocast of the compiled rung
ladder

# %%
cu.migrate.waterfall(ladder)

# %%
# NBVAL_CHECK_OUTPUT
print("rungs tagged 'migration':", [r.label for r in (*ladder.rungs, *ladder.extra) if r.kind == cu.migrate.MIGRATION])

# %% [markdown] slideshow={"slide_type": "subslide"}
# A faster step is worthless if it trains a different model: three steps of the compiled model give eager's
# losses and weights; six steps under autocast stay close to fp32's, while the same check catches a wrong cast
# (the whole model in bf16, no fp32 master weights); the worker loader delivers the very same batches.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
batch = (torch.from_numpy(x0), torch.from_numpy(y0))
fp32 = cu.migrate.step_agreement(fresh_model, batch, compiler=compile_model)
print("compiled == eager over 3 steps (losses and weights within 1e-4 relative):",
      fp32["loss"] < 1e-4 and fp32["weights"] < 1e-4)
small, checked = (batch[0][:8], batch[1][:8]), amp_dtype or torch.bfloat16
amp = cu.migrate.amp_agreement(fresh_model, small, checked)
wrong = cu.migrate.amp_agreement(fresh_model, small, checked, master_weights=False)
print(f"autocast, {amp['steps']} steps, within tolerance: {amp['close']}; the whole model cast instead: {wrong['close']}")
same_batches = ladder.baseline.fingerprints == ladder[cu.migrate.workers_label(workers)].fingerprints
print("worker loader yields identical batches:", same_batches)
assert fp32["loss"] < 1e-4 and fp32["weights"] < 1e-4 and amp["close"] and not wrong["close"] and same_batches

# %%
v_cheap = cu.migrate.findings.CHEAP.score(
    cu.findings.faster("speed-up of the no-migration rungs over that of compile on top of them",
                       cu.migrate.gap(cheap, gain)), cheap=str(cheap), last=str(gain))
v_order = cu.migrate.findings.ORDER.score(
    cu.findings.faster("speed-up of compile last over that of compile first", cu.migrate.gap(gain, first)),
    first=str(first), last=str(gain), wait=f"{ladder.baseline.wait_share:.0%}",
    bare=str(ladder.interval("torch.compile on the baseline", "compute")))
v_cheap

# %%
v_order

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.migrate.ladder_story(v_cheap, v_order)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The seed also claims that *automatic mixed precision typically gives ~30% speed-up and saves memory*.
#
# **Prediction.** Where this hardware has bf16 units, the autocast rung is at least 1.25x faster per sample than
# the rung before it, across its whole interval.

# %%
amp_label = ladder.find("+ autocast")  # None where the rung was skipped
if amp_label is None:
    v_amp = cu.migrate.findings.AMP.not_tested("this CPU has no bf16 units, so the autocast rung was skipped; "
                                               "notebook 03 measured emulated bf16")
else:
    v_amp = cu.migrate.findings.AMP.score(cu.findings.above(
        "autocast per sample over the rung before it (the seed: ~1.3x)", ladder.interval(amp_label), 1.25))
v_amp

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_amp.prose()

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 3. Your model, in fresh processes: `assess`
# The ladder's intervals come from rounds inside one process, which keeps state for its whole life (its
# allocator, where its threads run, the code its compiler generated); another process can land elsewhere. A
# decision rests on **fresh processes**: `cu.migrate.assess` trains your model eager and compiled in several new
# Python processes (`course_utils/workers/assess_worker.py`, rounds interleaved inside each) and takes a
# Student-t interval across them. Each step draws its batch from your `make_batches()` as training does, the wait
# timed apart; the compile call measured is yours, `compiler=compile_model`. It also times the cold and warm
# compile, counts graph breaks, checks parity and a rollback, and computes MFU. Here: the course CNN, and a
# transformer block.
#
# **Prediction.** Compile buys the transformer block more than the CNN, beyond the noise: the CNN's time is in
# convolution library kernels, the block's in many small operations that fuse.

# %%
block_model = dict(vocab=sizes.vocab, dim=sizes.dim, heads=sizes.heads, length=sizes.length)
block_data = dict(vocab=sizes.vocab, length=sizes.length, batch=sizes.sequences)
threads = torch.get_num_threads()  # the ladder's: on a CPU stand-in the model computes on one core
# amp="off": fp32, as the team runs today (autocast needs no migration: the ladder measured it as a rung)
cnn = cu.migrate.assess(cu.migrate.cnn, cu.migrate.cnn_batches, batches_args=dict(batch=sizes.batch), amp="off",
                        compiler=compile_model, processes=sizes.processes, steps=sizes.steps, threads=threads,
                        out=cu.env.build_dir("assess", "cnn"))
block = cu.migrate.assess(cu.migrate.transformer, cu.migrate.token_batches, model_args=block_model, amp="off",
                          compiler=compile_model, batches_args=block_data, processes=sizes.processes,
                          steps=sizes.steps, threads=threads, out=cu.env.build_dir("assess", "transformer"))
cu.migrate.compare_assessments({"course CNN": cnn, "transformer block": block})

# %%
cu.migrate.assess_figure(cnn, block)

# %%
v_models = cu.migrate.findings.MODELS.score(
    cu.findings.faster("speed-up compile bought the transformer block over the one it bought the CNN",
                       cu.migrate.gap(block.deciding.speedup, cnn.deciding.speedup)),
    processes=cnn.processes, block=str(block.deciding.speedup), cnn=str(cnn.deciding.speedup))
v_models

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_models.prose()

# %% [markdown] slideshow={"slide_type": "subslide"}
# This page now holds several figures for what compile buys the CNN. Each is measured on its own set-up (batch,
# loader, dtype, threads, device) and scope; the decision below uses only the fresh-process figure.

# %%
cu.migrate.compile_gains(ladder, cnn)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Your own model and cluster: put `make_model()` and `make_batches()` in a module, then run this command on the
# machine you pay for (on a cluster, inside one job on one node of the accelerator you rent). It writes
# `report.html`, the decision first; the CNN's, as `assess` wrote it above, is unfolded below.

# %%
print(cu.migrate.command_line("mypkg.models:make_model", "mypkg.data:make_batches", config="costs.toml",
                              compiler="mypkg.train:compile_model"))

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["sample-report"]
cu.migrate.saved_report(cu.env.build_dir("assess", "cnn"))

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 4. What is it worth? Every input with its source
# The seed's rule: GPU spend 100k/month, ~30% saved, 2 engineers x 2 weeks (~40k), a 20% buffer for harder
# debugging, break-even in about two months; the bill grows 50% a month. The cost model does the same arithmetic
# (**computed**, not measured) from the fresh-process gain only. Every input carries its source: a config file
# (`cu.migrate.read_config`), the seed article, a measurement, or a default with its reason; a number typed below
# must be given a source too.

# %%
# NBVAL_CHECK_OUTPUT
seed = cu.migrate.seed_example()
shares = cu.migrate.seed_shares()  # GPU-hours left, computed from the seed's own figures
print(f"the seed's own numbers: break-even after {seed.break_even_months:.1f} months, net after 12 months "
      f"{seed.net():,.0f}")
print(f"utilisation 40% -> 80% leaves {shares['utilisation']:.0%} of the GPU-hours; their example, 10 GPUs x 10 h "
      f"becoming 5 x 5 h, leaves {shares['example']:.0%}")

# %%
lead = cu.migrate.typed(training_share=(0.8, "the lead's estimate: 20% of the bill is inference"),
                        eager_upkeep=(2_000, "the lead's estimate: a day a month keeping the eager path"))
seed_terms = cu.migrate.read_config(None)  # every field at the seed article's figure or a stated default
priced = {"the seed's own terms": cnn.priced(seed_terms), "the lead's inputs": cnn.priced(lead)}
cu.migrate.compare_pricing(priced)

# %%
lead.table()

# %%
cu.migrate.payback(priced["the lead's inputs"].pricing.estimate, seed,
                   labels=[f"measured: {cnn.deciding.speedup.ratio:.2f}x", f"the seed's claim ({seed.speedup.median:.2f}x)"])

# %% [markdown]
# The break-even speed-up rises with the share of the bill that is not training, with the upkeep of the eager
# path and with each job's cold compile. A bill that grows by half every month, as the seed says, is a claim to
# check with finance, not an input to trust.
#
# **Prediction.** At the lead's inputs, the CNN's whole fresh-process interval lies above the break-even speed-up,
# so the migration pays back within the year.

# %%
at_lead = priced["the lead's inputs"]
if at_lead.busy or at_lead.deciding.nothing:  # assess refuses to decide: the machine was busy, or nothing compiled
    v_pays = cu.migrate.findings.DECISION.not_tested(at_lead.busy or at_lead.deciding.nothing)
else:
    v_pays = cu.migrate.findings.DECISION.score(
        at_lead.decision.check(f"The CNN's speed-up across {cnn.processes} fresh processes ({cnn.setup})"),
        horizon=at_lead.pricing.inputs.value("horizon_months"), next_step=at_lead.decision.next_step,
        break_even=cu.migrate.speed_text(at_lead.pricing.break_even))
v_pays

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
v_pays.prose(cu.migrate.money_sentence(at_lead))

# %% [markdown] slideshow={"slide_type": "subslide"}
# The same gain on a growing bill and on reserved capacity (paid whatever happens: the gain buys time, not
# money), then sliders for your own bill (JupyterLab, Colab; slides show the static table).

# %%
cu.migrate.pricing_cases(at_lead, growth=0.5)

# %%
cu.migrate.explore(at_lead.pricing.estimate.speedup, training_share=lead.value("training_share"),
                   eager_upkeep=lead.value("eager_upkeep"), compile_s_per_job=at_lead.deciding.compile_cold_s)

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 5. The launch checklist, run as code
# The seed's checklist, each item a check that can fail, on the whole training step at the compiled rung's
# set-up: the **MVP bar is the break-even speed-up** (the fresh-process interval must lie above it) with compiled
# losses equal to eager's; operator compatibility (graph breaks); the rollback; monitoring (cold compile against
# 1% of the competitor's 3 h run); data-dependent control flow. Utilisation is not checked: the ladder's *waiting
# for data* column measures the data stall, not how busy the accelerator's kernels are (a faster compiled compute
# raises the share spent waiting), and MFU in `assess`'s table is the model's FLOP/s over the peak, a third
# quantity. The rollback is one line:

# %%
with torch.compiler.set_stance("force_eager"):  # the rollback: every torch.compile'd model runs eager
    rolled_back = train_step(compiled_model, kept)(batch)
print("the compiled model ran eager under force_eager: loss", f"{float(rolled_back):.4f}")

# %%
x2, y2 = dataset.batch(range(kept["batch"]))
big = (torch.from_numpy(x2), torch.from_numpy(y2))
ready = cu.migrate.run_checklist(lambda compiler: train_step(compiler(fresh_model()), kept), big, compiler=compile_model,
                                 gain=at_lead.pricing.estimate.speedup, min_speedup=at_lead.pricing.break_even,
                                 forward=(fresh_model(), (big[0],)), compile_s=cnn.deciding.compile_cold_s,
                                 compile_budget_s=0.01 * cu.migrate.SEED_COMPETITOR_HOURS * 3600,
                                 rtol=cu.migrate.PARITY_RTOL["fp32" if kept["amp"] is None else "amp"])
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


not_ready = cu.migrate.run_checklist(lambda compiler: train_step(compiler(BranchyCNN()), setups["eager fp32"]), batch, compiler=compile_model,
                                     forward=(BranchyCNN(), (batch[0],)), steps=2)
not_ready

# %%
# NBVAL_CHECK_OUTPUT
for name, result in (("CNN", ready), ("CNN with a data-dependent branch", not_ready)):
    print(f"{name}: " + " | ".join(f"{c.name.split(':')[0]} {c.mark}" for c in result.checks
                                   if not c.name.startswith(("MVP", "monitoring"))))

# %% [markdown] course={"lead": true} slideshow={"slide_type": "slide"}
# ## 6. The page to hand to your lead

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.migrate.lead_page(priced, block.priced(lead), ladder, ready, cores)

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## Exercises
# **1.** A team rents 32 GPUs on demand at 2.50 per GPU-hour (an assumption close to public cloud prices for a
# mid-range data-centre GPU), running all month (730 h): `cu.migrate.monthly_spend_for(32, 2.5)`. 60% of it is
# training; the migration takes 3 engineers for 3 weeks at 10k per engineer-week, plus the 20% buffer. With the
# CNN's fresh-process gain, after how many months does it pay back? (`math.inf` if not within ten years.)
# <details><summary>Hint</summary><code>cu.migrate.estimate(spend, cnn_gain, engineers=3, weeks=3,
# training_share=0.6).break_even_months</code></details>

# %%
cnn_gain = at_lead.pricing.estimate.speedup  # the CNN's gain across fresh processes, as the cost model takes it
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = cu.migrate.estimate(cu.migrate.monthly_spend_for(32, 2.5), cnn_gain, engineers=3, weeks=3,
                             training_share=0.6).break_even_months
print(f"spend {cu.migrate.monthly_spend_for(32, 2.5):,.0f} a month; break-even after {answer:.1f} months")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("07.1", answer, gain=cnn_gain)

# %% [markdown]
# **2.** Now the same team's GPUs are reserved for a year (paid whatever happens). A run takes 72 hours in
# eager PyTorch and pays the CNN's cold compile once. How many hours does a run take after the migration?
# <details><summary>Hint</summary><code>cu.migrate.estimate(..., reserved=True, job_hours=72,
# compile_s_per_job=compile_s).time_to_result()</code>; the money saved is zero.</details>

# %%
compile_s = cnn.deciding.compile_cold_s
answer = None  # your answer here

# %% jupyter={"source_hidden": true} tags=["solution"]
answer = cu.migrate.estimate(100_000, cnn_gain, reserved=True, job_hours=72, compile_s_per_job=compile_s).time_to_result()
print(f"a 72 h run takes {answer:.1f} h after the migration (money saved on reserved capacity: none)")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("07.2", answer, gain=cnn_gain, compile_s=compile_s)

# %% [markdown]
# **3. Predict, then measure.** The ladder's loaders drop the last, smaller batch of an epoch
# (`drop_last=True`). A team that keeps it, with batch 96 over this run's dataset, ends each epoch on a
# smaller batch. With `torch.compile(..., dynamic=False)`, how many graphs will Dynamo build for the model's
# forward over one epoch? Predict it from the batch sizes before the next cell counts them (an int).
# <details><summary>Hint</summary>Static shapes: one graph per distinct input shape. List the batch sizes of
# one epoch: <code>min(96, len(dataset) - start)</code> for each start.</details>

# %%
answer = None  # your prediction here

# %% jupyter={"source_hidden": true} tags=["solution"]
epoch_sizes = {min(96, len(dataset) - start) for start in range(0, len(dataset), 96)}
answer = len(epoch_sizes)
print(f"batch sizes in one epoch: {sorted(epoch_sizes)}, so predicted graphs: {answer}")

# %%
probe = fresh_model()
epoch = [(torch.from_numpy(xb),) for xb, _ in torch.utils.data.DataLoader(dataset, batch_size=96, collate_fn=cu.pipeline.numpy_collate)]
graphs_built = cu.graphs.count_compiles("torch", lambda x: probe(x), epoch, dynamic=False)
print(f"measured: Dynamo built {graphs_built} graph(s) over one epoch of {len(epoch)} batches")

# %%
# NBVAL_CHECK_OUTPUT
cu.exercises.check("07.3", answer, measured=graphs_built)

# %% [markdown] course={"lead": false} slideshow={"slide_type": "slide"}
# ## Summary

# %%
cu.notebook.summary_table("07_should_we_migrate", cu.migrate.summary_rows(ladder, cnn, block, at_lead))

# %% [markdown]
# **What to remember**
# - Take the no-migration rungs first (loader, pinned memory, mixed precision where the units exist, batch):
#   they cost no migration, and they decide how much compile is credited with.
# - Decide on fresh processes and an interval, against the break-even speed-up of *your* inputs, each with its
#   source; "not decided: measure more" is an answer, with the number of processes that would settle it.
# - The gain differs per model and per device: run `assess` on your model, on the hardware you pay for.
#
# **Next:** rerun notebooks 00-07 on the hardware you actually pay for (Colab GPU or TPU) and compare.

# %% [markdown] course={"lead": false, "optional": true} slideshow={"slide_type": "slide"}
# ## Going further: the seed's framework table, rebuilt on a common baseline
# The seed's view: *PyTorch* high development efficiency, DDP, strongest ecosystem; *TensorFlow* strong
# deployment, Strategy API; *JAX* highest performance via XLA, cheapest on TPU. Here: the same CNN, the same
# batch, one fp32 SGD step (no loader), each framework on one compute thread, against **PyTorch eager** (what the
# team runs today) and against its own eager mode.
#
# **Prediction.** The seed says JAX is fastest: `jax.jit`'s step is the fastest compiled step of the frameworks
# installed here.

# %%
frameworks = cu.migrate.framework_table(x0, y0, torch_compiler=compile_model, classes=10,
                                        min_time=sizes.min_time, device=device)
frameworks

# %% tags=["device"]
# NBVAL_CHECK_OUTPUT
agree = cu.migrate.outputs_agree(x0, plan=plan, classes=10)  # the tolerance: this device's default matmul precision
print(f"the same model in every installed framework (outputs within {agree.tolerance:g} of PyTorch's on the CPU):",
      agree.close)

# %%
fastest = max((r.framework for r in frameworks.rows), key=frameworks.vs_baseline)
if cu.env.available("jax"):
    v_jax = cu.migrate.findings.JAX.score(cu.findings.true(
        f"jax.jit's step is the fastest compiled step (fastest: {fastest}, {frameworks.vs_baseline(fastest):.2f}x "
        "over PyTorch eager)", fastest == "jax"), ranking=frameworks.ranking(), where=frameworks.where())
else:
    v_jax = cu.migrate.findings.JAX.not_tested("JAX is not installed in this runtime, so the seed's claim is not "
                                               "measured", ranking=frameworks.ranking())
v_jax

# %%
frameworks.decomposition()

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"}
cu.migrate.frameworks_story(v_jax)

# %%
# NBVAL_CHECK_OUTPUT
print("PyTorch graph breaks in the model:", frameworks["torch"].graph_breaks)

# %%
print(cu.notebook.last_verified())
