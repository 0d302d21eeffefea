"""course_utils.distributed: the helpers of notebook 05 (data parallelism); notebook 06 builds on them in
``course_utils.beyond``.

- ``launch``: run the real ``torchrun`` on 127.0.0.1 from a notebook (``launch``, ``LaunchResult``),
  with no process left behind; ``failures``: what the ranks printed, and which rank failed with what
  traceback (``LaunchError``, ``LaunchTimeout``);
- ``worker``: what the launched scripts call (``emit``, ``save``, ``progress``, ``rank``);
- ``devices``: simulated JAX CPU devices and TensorFlow logical CPUs;
- ``comms``: the ring all-reduce cost model, fitted and scored against measurement, and ZeRO traffic;
- ``memory``: model-state bytes per device under DDP and ZeRO stages 1-3;
- ``findings``: sentences that weigh several of its measurements at once (remainders, spinning, baselines);
- ``plots``: the notebook's figures; ``exercises``: the checkers of its exercises.
"""

from course_utils.distributed import exercises as _exercises  # noqa: F401  (registers 05.k)
from course_utils.distributed import findings
from course_utils.distributed.comms import AllReduceModel, fit_allreduce, ring_allreduce_time, score, zero_traffic
from course_utils.distributed.devices import simulate_devices, tf_logical_cpus
from course_utils.distributed.failures import LaunchError, LaunchTimeout, learner_lines
from course_utils.distributed.launcher import (
    WORKERS,
    LaunchResult,
    free_port,
    launch,
    loopback_env,
    show_worker,
    torchrun_command,
    worker_path,
    worker_source,
)
from course_utils.distributed.memory import BYTES_PER_PARAMETER, largest_model, memory_per_device
from course_utils.distributed.plots import allreduce_fit_plot, breakdown_plot, diagram, scaling_plot
from course_utils.distributed.worker import emit, local_rank, progress, rank, save, world_size

__all__ = [
    "WORKERS", "AllReduceModel", "BYTES_PER_PARAMETER", "LaunchError", "LaunchResult", "LaunchTimeout", "findings",
    "allreduce_fit_plot", "breakdown_plot", "diagram", "emit", "fit_allreduce", "free_port", "largest_model",
    "launch", "learner_lines", "local_rank", "loopback_env", "memory_per_device", "progress", "rank",
    "ring_allreduce_time", "save", "scaling_plot", "score", "show_worker", "simulate_devices", "tf_logical_cpus",
    "torchrun_command", "worker_path", "worker_source", "world_size", "zero_traffic",
]
