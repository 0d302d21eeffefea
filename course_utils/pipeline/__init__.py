"""course_utils.pipeline: the helpers of notebook 04 (04_input_pipeline, "Is my accelerator waiting for my CPU?").

- ``dataset``: ``SyntheticImages`` (seeded samples whose decode and augmentation cost CPU time), ``NumpyBatches``,
  ``numpy_collate``, ``fingerprint`` (equal batches from every loader);
- ``workers``: DataLoader workers from a notebook (forkserver, never fork), unpickling in a fresh process,
  leftover workers and their memory, cores kept for compute;
- ``prefetch``: ``Prefetch`` (a background thread running ``jax.device_put`` ahead) and ``InLoop`` (the baseline);
- ``loop``: ``run_loop`` and ``Timeline`` (wait vs compute per step, utilisation = busy time share);
- ``steps``: the course MLP's one SGD step per framework (from ``course_utils.models``), warmed up;
- ``tfdata``: tf.data pipelines in TF ops (vectorised) or through ``tf.numpy_function`` (the slow path);
- ``stall``: the data stall read from a profiler trace alone (gaps between marked steps);
- ``compare``: two loops compared in words (medians, quartiles, outlier steps flagged), the before/after table;
- ``explain``: the explanations whose wording depends on which way this run's numbers fell;
- ``plots``: the notebook's figures; ``exercises``: the checkers of its exercises.
"""

from course_utils.pipeline import compare, explain
from course_utils.pipeline import exercises as _exercises  # noqa: F401  (registers 04.k)
from course_utils.pipeline.dataset import (
    AugmentParams,
    NumpyBatches,
    SyntheticImages,
    fingerprint,
    max_difference,
    numpy_collate,
)
from course_utils.pipeline.exercises import reference_utilisation, smallest_removing
from course_utils.pipeline.loop import Timeline, apart, run_loop, timelines_table
from course_utils.pipeline.plots import timeline_plot, utilisation_plot, workers_plot
from course_utils.pipeline.prefetch import InLoop, Prefetch, PrefetchIterator, prefetch_threads
from course_utils.pipeline.stall import STEP_MARK, Stalls, capture_loop, data_stalls, stalls_table
from course_utils.pipeline.steps import mlp_step, warm_steps
from course_utils.pipeline.tfdata import tf_augment_ops, tf_decode_ops, tf_pipeline
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
    "compare", "explain",
    "STEP_MARK", "Stalls", "capture_loop", "data_stalls", "stalls_table",
    "AugmentParams", "InLoop", "apart", "NumpyBatches", "Prefetch", "PrefetchIterator", "SyntheticImages", "Timeline",
    "data_cores", "fingerprint", "limit_compute_threads", "max_difference", "mlp_step", "numpy_collate",
    "oversubscribing",
    "prefetch_threads", "reference_utilisation", "run_loop", "smallest_removing", "start_forkserver", "tf_augment_ops",
    "tf_decode_ops", "tf_pipeline", "timeline_plot", "timelines_table", "unpickles_in_fresh_process",
    "utilisation_plot", "warm_steps", "worker_context", "worker_counts", "worker_memory", "worker_processes",
    "workers_plot",
]
