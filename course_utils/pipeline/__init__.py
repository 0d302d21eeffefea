"""course_utils.pipeline: the helpers of notebook 04 (04_input_pipeline, "Is my accelerator waiting for my CPU?").

The notebook writes the loaders itself (``DataLoader(...)``, the ``tf.data`` chain, Grain's dataset); these
helpers make the data, run and time the learner's loaders, and explain what they measured.

- ``dataset``: ``SyntheticImages`` (seeded samples whose decode and augmentation cost CPU time), ``NumpyBatches``,
  ``numpy_collate``, ``fingerprint`` (equal batches from every loader);
- ``workers``: DataLoader workers from a notebook (forkserver, never fork), unpickling in a fresh process
  (``workers/unpickle_check.py``), leftover workers and their memory, cores kept for compute;
- ``prefetch``: ``Prefetch`` (a background thread running ``jax.device_put`` ahead), ``InLoop`` (the baseline),
  ``grain_available``;
- ``loop``: ``run_loop``, ``run_loops`` (loaders in alternating rounds: paired replicates for an interval),
  ``Timeline`` (wait vs compute per step, utilisation = busy time share), ``EpochsOf``;
- ``steps``: the course MLP's one SGD step per framework (from ``course_utils.models``), warmed up;
- ``tfdata``: the TF-ops map function, and tf.data's slow path through ``tf.numpy_function``;
- ``stall``: the data stall read from a profiler trace alone (gaps between marked steps);
- ``compare``: loops compared with intervals, the floor overlap can reach, the before/after table, ``ms`` and
  ``later_startups`` (facts the findings quote);
- ``findings``: the notebook's predictions, each declared once with a sentence per outcome (``v.prose()``);
- ``plots``: the notebook's figures; ``exercises``: the checkers of its exercises.
"""

from course_utils.pipeline import compare, findings
from course_utils.pipeline import exercises as _exercises  # noqa: F401  (registers 04.k)
from course_utils.pipeline.compare import before_after_table, floor, later_startups, ms
from course_utils.pipeline.dataset import (
    AugmentParams,
    NumpyBatches,
    SyntheticImages,
    fingerprint,
    max_difference,
    numpy_collate,
)
from course_utils.pipeline.exercises import reference_utilisation, smallest_removing
from course_utils.pipeline.loop import EpochsOf, Timeline, run_loop, run_loops, timelines_table
from course_utils.pipeline.plots import samples_plot, timeline_plot, trace_plot, utilisation_plot, workers_plot
from course_utils.pipeline.prefetch import InLoop, Prefetch, PrefetchIterator, grain_available, prefetch_threads
from course_utils.pipeline.stall import STEP_MARK, Stalls, capture_loop, data_stalls, stalls_table
from course_utils.pipeline.steps import mlp_step, warm_steps
from course_utils.pipeline.tfdata import tf_augment_ops, tf_decode_augment, tf_decode_ops, tf_pipeline
from course_utils.pipeline.workers import (
    data_cores,
    limit_compute_threads,
    oversubscribing,
    start_forkserver,
    unpickles_in_fresh_process,
    worker_context,
    worker_counts,
    worker_memory,
    worker_processes,
)

__all__ = [
    "compare", "findings",
    "STEP_MARK", "Stalls", "capture_loop", "data_stalls", "stalls_table",
    "AugmentParams", "EpochsOf", "InLoop", "NumpyBatches", "Prefetch", "PrefetchIterator",
    "SyntheticImages", "Timeline", "before_after_table", "data_cores", "fingerprint", "floor", "grain_available",
    "later_startups", "limit_compute_threads", "max_difference", "ms", "mlp_step", "numpy_collate", "oversubscribing",
    "prefetch_threads",
    "reference_utilisation", "run_loop", "run_loops", "samples_plot", "smallest_removing", "start_forkserver",
    "tf_augment_ops", "tf_decode_augment", "tf_decode_ops", "tf_pipeline", "timeline_plot", "timelines_table",
    "trace_plot", "unpickles_in_fresh_process", "utilisation_plot", "warm_steps", "worker_context", "worker_counts",
    "worker_memory", "worker_processes", "workers_plot",
]
