"""course_utils.distributed: the helpers of notebook 05 (data parallelism); notebook 06 (beyond one machine)
adds its own modules here.

- ``launch``: run the real ``torchrun`` on 127.0.0.1 from a notebook (``launch``, ``LaunchResult``,
  ``LaunchError``, ``LaunchTimeout``), with no process left behind;
- ``worker``: what the launched scripts call (``emit``, ``save``, ``progress``, ``rank``);
- ``devices``: simulated JAX CPU devices and TensorFlow logical CPUs;
- ``comms``: the ring all-reduce cost model, fitted and scored against measurement, and ZeRO traffic;
- ``memory``: model-state bytes per device under DDP and ZeRO stages 1-3;
- ``plots``: the notebook's figures; ``exercises``: the checkers of its exercises.
"""

from course_utils.distributed import exercises as _exercises  # noqa: F401  (registers 05.k)
from course_utils.distributed.comms import AllReduceModel, fit_allreduce, ring_allreduce_time, score, zero_traffic
from course_utils.distributed.devices import simulate_devices, tf_logical_cpus
from course_utils.distributed.launch import (
    WORKERS,
    LaunchError,
    LaunchResult,
    LaunchTimeout,
    free_port,
    launch,
    learner_lines,
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
    "WORKERS", "AllReduceModel", "BYTES_PER_PARAMETER", "LaunchError", "LaunchResult", "LaunchTimeout",
    "allreduce_fit_plot", "breakdown_plot", "diagram", "emit", "fit_allreduce", "free_port", "largest_model",
    "launch", "learner_lines", "local_rank", "loopback_env", "memory_per_device", "progress", "rank",
    "ring_allreduce_time", "save", "scaling_plot", "score", "show_worker", "simulate_devices", "tf_logical_cpus",
    "torchrun_command", "worker_path", "worker_source", "world_size", "zero_traffic",
]
