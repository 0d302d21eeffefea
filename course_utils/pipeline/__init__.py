"""course_utils.pipeline: the helpers of notebook 04 ("Is my accelerator waiting for my CPU?")."""

from course_utils.pipeline import exercises as _exercises  # noqa: F401  (registers 04.k)
from course_utils.pipeline import findings
from course_utils.pipeline.dataset import (
    NumpyBatches,
    SyntheticImages,
    max_difference,
    numpy_collate,
    numpy_function_pipeline,
    tf_decode_augment,
)
from course_utils.pipeline.loop import (
    EpochsOf,
    Timeline,
    before_after_table,
    floor,
    later_startups,
    ms,
    run_loop,
    run_loops,
    timelines_table,
    warm_steps,
)
from course_utils.pipeline.plots import samples_plot, timeline_plot, trace_plot, utilisation_plot, workers_plot
from course_utils.pipeline.prefetch import InLoop, Prefetch, grain_available, prefetch_threads
from course_utils.pipeline.stall import capture_loop, data_stalls, stalls_table
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

# what notebooks 04 and 07 use as cu.pipeline.<name>, and Timeline, which migrate's ladder annotates with
__all__ = [
    "EpochsOf", "InLoop", "NumpyBatches", "Prefetch", "SyntheticImages", "Timeline", "before_after_table",
    "capture_loop", "data_cores", "data_stalls", "findings", "floor", "grain_available", "later_startups",
    "limit_compute_threads", "max_difference", "ms", "numpy_collate", "numpy_function_pipeline", "oversubscribing",
    "prefetch_threads", "run_loop", "run_loops", "samples_plot", "stalls_table", "start_forkserver",
    "tf_decode_augment", "timeline_plot", "timelines_table", "trace_plot", "unpickles_in_fresh_process",
    "utilisation_plot", "warm_steps", "worker_context", "worker_counts", "worker_memory", "worker_processes",
    "workers_plot",
]
