"""course_utils.distributed: the helpers of notebook 05 (data parallelism) and notebook 06 (beyond one machine).

- ``launch``: run the real ``torchrun`` on 127.0.0.1 from a notebook (``launch``, ``LaunchResult``),
  with no process left behind; ``failures``: what the ranks printed, and which rank failed with what
  traceback (``LaunchError``, ``LaunchTimeout``);
- ``worker``: what the launched scripts call (``emit``, ``save``, ``progress``, ``rank``);
- ``devices``: simulated JAX CPU devices and TensorFlow logical CPUs;
- ``comms``: the ring all-reduce cost model, fitted and scored against measurement, and ZeRO traffic;
- ``memory``: model-state bytes per device under DDP and ZeRO stages 1-3;
- ``findings``: sentences that weigh several of its measurements at once (remainders, spinning, baselines);
- ``plots``: the notebook's figures; ``exercises``: the checkers of its exercises.

Notebook 06 (modules kept apart because several share names such as ``run`` and ``reference``):
- ``multinode``: two torchrun "nodes" on 127.0.0.1 (``launch_nodes``), the commands for a real cluster;
- ``jaxmulti``, ``tfmulti``: multi-process JAX (``jax.distributed``) and TF ``MultiWorkerMirroredStrategy``;
- ``sharded``: ZeRO-1 and FSDP2 memory and collectives measured against DDP, JAX parameter sharding;
- ``elastic``: a rank that dies once and a restart from an atomic checkpoint;
- ``beyond_findings``: its sentences on traffic over gloo, profiled steps and what a prediction leaves unexplained;
- ``beyond_plots``, ``beyond_exercises``: the figures and exercise checkers of notebook 06.
"""

from course_utils.distributed import beyond_exercises as _beyond_exercises  # noqa: F401  (registers 06.k)
from course_utils.distributed import (
    beyond_findings,
    beyond_plots,
    elastic,
    findings,
    jaxmulti,
    multinode,
    sharded,
    tfmulti,
)
from course_utils.distributed import exercises as _exercises  # noqa: F401  (registers 05.k)
from course_utils.distributed.comms import AllReduceModel, fit_allreduce, ring_allreduce_time, score, zero_traffic
from course_utils.distributed.devices import simulate_devices, tf_logical_cpus
from course_utils.distributed.elastic import ElasticRun
from course_utils.distributed.failures import LaunchError, LaunchTimeout, LoopbackError, learner_lines
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
from course_utils.distributed.multinode import NodesResult, cluster_commands, hang_checklist, launch_nodes, node_command
from course_utils.distributed.plots import allreduce_fit_plot, breakdown_plot, diagram, scaling_plot
from course_utils.distributed.tfmulti import tf_config
from course_utils.distributed.worker import emit, local_rank, progress, rank, save, world_size

__all__ = [
    "WORKERS", "AllReduceModel", "BYTES_PER_PARAMETER", "ElasticRun", "LaunchError", "LaunchResult", "LaunchTimeout",
    "LoopbackError", "NodesResult", "beyond_findings", "beyond_plots", "cluster_commands", "elastic", "findings", "hang_checklist",
    "jaxmulti", "launch_nodes", "multinode", "node_command", "sharded", "tf_config", "tfmulti",
    "allreduce_fit_plot", "breakdown_plot", "diagram", "emit", "fit_allreduce", "free_port", "largest_model",
    "launch", "learner_lines", "local_rank", "loopback_env", "memory_per_device", "progress", "rank",
    "ring_allreduce_time", "save", "scaling_plot", "score", "show_worker", "simulate_devices", "tf_logical_cpus",
    "torchrun_command", "worker_path", "worker_source", "world_size", "zero_traffic",
]
