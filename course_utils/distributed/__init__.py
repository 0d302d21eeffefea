"""course_utils.distributed: the helpers of notebook 05 (data parallelism), built on by 06's ``beyond``: torchrun
launched with nothing left behind, the workers' API, their timings taken apart, the ring all-reduce model, figures."""

from course_utils.distributed import exercises as _exercises  # noqa: F401  (registers the exercise checkers)
from course_utils.distributed import findings
from course_utils.distributed.breakdown import (
    accumulation_saving,
    chain,
    chain_table,
    measurements,
    summed,
    threads_table,
)
from course_utils.distributed.comms import (
    allreduce_cost,
    allreduce_sweep,
    memory_per_device,
    ring_allreduce_time,
    score,
    zero_traffic,
)
from course_utils.distributed.devices import (
    mesh_facts,
    mlp_threads_fresh,
    sharding_devices,
    sharding_note,
    simulate_devices,
    tf_logical_cpus,
    time_threads,
)
from course_utils.distributed.failures import rank_failure
from course_utils.distributed.launcher import free_port, launch, pg_timeout_for, torchrun_command
from course_utils.distributed.plots import allreduce_fit_plot, breakdown_plot, diagram, proof_plot, scaling_plot
from course_utils.distributed.worker import show_worker, worker_path, worker_source

__all__ = [
    "accumulation_saving", "allreduce_cost", "allreduce_fit_plot", "allreduce_sweep", "breakdown_plot", "chain",
    "chain_table", "diagram", "findings", "free_port", "launch", "measurements", "memory_per_device", "mesh_facts",
    "mlp_threads_fresh", "pg_timeout_for", "proof_plot", "rank_failure", "ring_allreduce_time", "scaling_plot", "score",
    "sharding_devices", "sharding_note", "show_worker", "simulate_devices", "summed", "tf_logical_cpus",
    "threads_table", "time_threads", "torchrun_command", "worker_path", "worker_source", "zero_traffic",
]
