"""Notebook 04's predictions, each declared once with one sentence per outcome its checks can reach; the
notebook scores them (``cu.pipeline.findings.WORKERS.score(...)``) and shows ``v.prose()``."""

from __future__ import annotations

from course_utils.findings import Template

_UNSURE = " More rounds (a larger `COURSE_SIZE`) narrow the interval."
_COST = ("Decode + augment of one sample took {sample} of CPU time, decoding alone {decode}, and a batch of {batch} "
         "{whole} (medians).")
BATCH_COST = Template(
    "pipeline.batch_cost", ("within",),
    held=_COST + " The cost is per sample: a batch costs {batch} samples' CPU time before the model sees a single "
                 "number. Whether that matters depends on how long the step computes: the next section measures both.",
    above=_COST + " A batch cost more than {batch} samples by over 25%: it is not simply the sum of its samples here. "
                  "What else it costs (stacking the samples, Python's per-sample calls) is not measured apart here.",
    below=_COST + " A batch cost less than {batch} samples by over 25%: it is not simply the sum of its samples here, "
                  "and what a batch saves over single samples is not measured apart in this run.",
    undecided=_COST + " The interval reaches past the {batch} ± 25% band: this run cannot tell whether a batch is the "
                      "sum of its samples." + _UNSURE)

_LOOP = ("Each step waited {wait} for its batch and computed for {compute} (means): the accelerator was busy "
         "**{busy}** of the time.")
_APART = (" What the DataLoader adds or saves (fetching samples one by one, collating NumPy into a torch tensor) is "
          "not measured apart in this run.")
BUSY_SHARE = Template(
    "pipeline.busy_share", ("equal",),
    held=_LOOP + " Nothing overlaps, so wait and compute add up, and the batch measured alone in section 1 ({batch}) "
                 "predicts it, {predicted} (computed), within 10 points. Grey in the timeline is time the "
                 "accelerator had nothing to do.",
    above=_LOOP + " That is more than 10 points above the {predicted} computed from the batch measured alone "
                  "in section 1 ({batch}): the loop waited less than that batch took." + _APART,
    below=_LOOP + " That is more than 10 points below the {predicted} computed from the batch measured alone "
                  "in section 1 ({batch}): the loop waited longer than that batch took." + _APART)

_GAP = ("From the trace alone, the training thread sat idle {gap} between steps (mean; longest {longest}) and was "
        "busy {busy} of the time; `run_loop` had measured a wait of {wait}.")
_ACROSS = " Compare gaps within one trace, not across tools."
_WORKER_TRACE = ("\n\nThe trace with one worker had gaps of {gap_after} on average (busy {busy_after}), from a few "
                 "steps each: whether a worker pays is decided in section 4, with an interval over rounds. Drop the "
                 "saved `.json` files on https://ui.perfetto.dev to browse them.")
TRACE_GAP = Template(
    "pipeline.trace_gap", ("equal",),
    held=_GAP + " The two agree within 50%: a trace is enough to find a data stall in a job you did not instrument."
    + _WORKER_TRACE,
    above=_GAP + " The gap exceeds the wait by more than 50%: the profiler adds overhead to every traced op (a "
                 "candidate, not measured apart here)." + _ACROSS + _WORKER_TRACE,
    below=_GAP + " The gap falls short of the wait by more than 50%: what the trace books as busy that `run_loop` "
                 "booked as waiting is not established by this run." + _ACROSS + _WORKER_TRACE)

_START = ("The first batch arrived {spawn} after `iter()` with spawn and {fork} with forkserver, whose server "
          "had started once, in section 3, in {server}.")
START_METHODS = Template(
    "pipeline.start_methods", ("above",),
    held=_START + " Spawn pays the imports (torch, the dataset's module) in every worker at every loader start; "
                  "forkserver pays them once and then forks. `persistent_workers` (below) pays even the fork once.",
    below=_START + " Both first batches include making that batch; how much of spawn's start was imports is not "
                   "measured apart in this run.",
    undecided=_START + " The interval reaches across 5x: this run cannot tell whether forkserver starts 5x sooner."
    + _UNSURE)

_FREE = "{free} of {cores} core(s) were free for workers; the best count within them was {best}."
WORKERS = Template(
    "pipeline.workers", ("within",),
    held=_FREE + " No count above them changed the steady step by a factor of 1.2 or more either way: past the "
                 "free cores, a worker waits for a core, not for work.",
    above=_FREE + " Yet {failed} ran the step more than 1.2x as fast: the free cores are a budget we set, the OS "
                  "schedules each process where it likes. Why it paid here is not established by this run (the data "
                  "is in memory: no disk wait for extra workers to hide).",
    below=_FREE + " With {failed} the step took more than 1.2x as long: a worker past the free cores takes core time "
                  "from the model (a candidate, not measured apart here).",
    undecided=_FREE + " For {undecided} the interval reaches past the 1.2x margin: this run cannot tell whether "
                      "workers past the free cores change the step." + _UNSURE)

_DEPTH = "With `prefetch_factor=8`, {workers} worker(s) may hold {in_flight} batches of the {steps} per epoch."
_SAME_COST = " Its batches all cost the same (synthetic, in memory): why is not established by this run."
QUEUE_DEPTH = Template(
    "pipeline.queue_depth", ("within",),
    held=_DEPTH + " A deeper queue absorbs jitter; it cannot make batches faster than the workers make them. It is "
                  "worth its memory where batch times vary (network storage, images of varying size).",
    above=_DEPTH + " The deeper queue ran the step more than 1.2x as fast." + _SAME_COST,
    below=_DEPTH + " With the deeper queue the step took more than 1.2x as long." + _SAME_COST,
    undecided=_DEPTH + " The interval reaches past the 1.2x margin: this run cannot tell whether the deeper queue "
                       "changes the step." + _UNSURE)

_RESTART = ("Without `persistent_workers` a loader starts its workers again at every epoch: the later rounds' first "
            "batches arrived after {plain}; with them the workers stay and each epoch only waits for its first batch: "
            "{kept}.")
_PRICE = ("\n\nThe price: an idle persistent worker kept {worker_mem} of private memory (USS, measured) "
          "between epochs, and {most} workers keep {in_flight} of batches in flight (computed: workers x "
          "`prefetch_factor` 2 x batch bytes).")
PERSISTENT = Template(
    "pipeline.persistent", ("above",),
    held=_RESTART + " Keeping the workers paid: a later epoch starts without a fork." + _PRICE,
    below=_RESTART + " Restarted workers started the later epochs sooner: why is not established by this run."
    + _PRICE,
    undecided=_RESTART + " Within this run's noise the two starts cannot be ranked." + _UNSURE + _PRICE)

# a section a runtime may lack quotes no fact (``not_tested`` needs every fact): its table shows the numbers
TF_PREFETCH = Template(
    "pipeline.tf_prefetch", ("above",),
    held="tf.data's C++ threads made the next batch while the step computed, without the GIL: the wait fell to less "
         "than half.",
    below="The wait did not fall to less than half. A step lasts at least max(compute, data): where making a batch on "
          "the cores left takes longer than the step computes, the rest of the wait cannot be hidden (a candidate: "
          "this run did not measure the batch alone in TF).",
    undecided="The interval reaches across 2x: this run cannot tell whether the wait fell to less than half." + _UNSURE,
    untested="Without TensorFlow the `tf.data` cells are skipped; on a runtime with it they measure the same chain.")

JAX_FLOOR = Template(
    "pipeline.jax_floor", ("within",),
    held="The step came within 20% of its floor and not below it: the thread made the next batch while XLA computed, "
         "since a compiled JAX computation releases the GIL.",
    above="The step ran below its floor: the loop alone waited or computed longer than the same work beside the "
          "thread. Why is not established by this run.",
    below="The step stayed more than 20% above its floor: the thread and the step slowed each other. Why is not "
          "established by this run (candidates: the cores and the GIL they share).",
    undecided="The interval reaches past an edge of the band: this run cannot tell whether the step reached its floor, "
              "or went below it." + _UNSURE,
    untested="Without JAX the prefetching thread is not run here; the recipe above is unchanged where JAX is.")

_GRAIN = ("Grain's worker processes called the same `data[i]` as the DataLoader; they started once, so only the "
          "first batch waited for a spawned process to import Grain and the dataset's module (the table's start-up).")
GRAIN = Template(
    "pipeline.grain", ("above",),
    held=_GRAIN + " A process escapes the GIL and overlaps the step, as a DataLoader worker does; Grain adds an "
                  "iterator whose position can be saved and restored with a checkpoint.",
    below=_GRAIN + " The processes made the step slower than the loop alone; why is not established by this run "
                   "(candidates: each batch's copy between processes, and the cores the workers share with the model).",
    undecided=_GRAIN + " Within this run's noise Grain's step and the loop's own cannot be ranked." + _UNSURE,
    untested="Grain's worker processes are not run here; the recipe above is unchanged where Grain is installed.")

_WIDTHS = ("With width {hidden} the loop was busy {busy} of the time; with width {wide_hidden}, the same loader, "
           "{wide_busy} (compute per step {compute} → {wide_compute}).")
_CHOSEN = " A busy share is set by the ratio of model to data work, which this notebook chose."
SEED = Template(
    "pipeline.seed", ("true",),
    held=_WIDTHS + " The first lay in the seed's 40-60%." + _CHOSEN,
    failed=_WIDTHS + " The first lay outside the seed's 40-60%." + _CHOSEN,
    untested=_WIDTHS + _CHOSEN + " The seed's 40-60% speaks of real jobs' accelerators. What transfers to your job "
                                 "is the method: measure the wait and the compute of your own step, then remove the "
                                 "wait.")

_EITHER = " Why is not established by this run."
SLOW_PATH = Template(
    "pipeline.slow_path", ("above", "below"),
    held="Every `numpy_function` call leaves TF's C++ runtime for Python under the GIL and converts tensors to arrays "
         "and back, so parallel `map` calls cannot overlap it; in TF ops the work stays in C++.",
    above="Through `numpy_function` the batches came faster than from the same NumPy code called directly." + _EITHER,
    below="In TF ops the batches came slower than from the NumPy code called directly." + _EITHER,
    undecided="This run cannot rank {undecided}: within the noise, an interval that contains 1x." + _UNSURE,
    untested="Without TensorFlow tf.data's slow path is not run here.")
