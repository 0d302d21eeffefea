"""course_utils.distributed: the helpers of notebook 05 (data parallelism); notebook 06 builds on them in
``course_utils.beyond``.

Notebook 05:
- ``launch``: run the real ``torchrun`` on 127.0.0.1 from a notebook (``launch``, ``LaunchResult``), with no
  process left behind (``reaping``: a reaper ends the job whatever the learner presses); ``failures``: what the
  ranks printed, and which rank failed with what traceback or signal (``LaunchError``, ``LaunchTimeout``,
  ``LoopbackError``);
- ``worker``: what the launched scripts call (``emit``, ``save``, ``progress``, ``rank``, ``pg_timeout``,
  ``timed_rounds``);
- ``records``: the workers' timings as Measurements with per-round medians (``measurements``, ``summed``);
- ``breakdown``: a step's time taken apart (``chain``, ``accumulation_saving``) and its tables;
- ``devices``: the devices a JAX mesh uses by the device plan (real, or simulated host CPUs), TensorFlow logical
  CPUs, torch's threads (``time_threads``);
- ``comms``: the ring all-reduce cost model, measured one way for the whole course (``allreduce_cost``, with an
  interval over rounds), fitted and scored, and ZeRO traffic;
- ``memory``: model-state bytes per device under DDP and ZeRO stages 1-3;
- ``findings``: the notebook's predictions, each declared once with a sentence per outcome;
- ``plots``: the notebook's figures; ``exercises``: the checkers of its exercises.
"""

from course_utils.distributed import exercises as _exercises  # noqa: F401  (registers the exercise checkers)
from course_utils.distributed import findings
from course_utils.distributed.breakdown import accumulation_saving, chain, chain_table, threads_table
from course_utils.distributed.comms import allreduce_cost, allreduce_sweep, ring_allreduce_time, score, zero_traffic
from course_utils.distributed.devices import (
    mesh_facts,
    mlp_threads_fresh,
    sharding_devices,
    sharding_note,
    simulate_devices,
    tf_logical_cpus,
    time_threads,
)
from course_utils.distributed.launcher import (
    free_port,
    launch,
    pg_timeout_for,
    show_worker,
    torchrun_command,
    worker_path,
    worker_source,
)
from course_utils.distributed.memory import memory_per_device
from course_utils.distributed.plots import allreduce_fit_plot, breakdown_plot, diagram, proof_plot, scaling_plot
from course_utils.distributed.rankfail import rank_failure
from course_utils.distributed.records import measurements, summed

__all__ = [
    "accumulation_saving", "allreduce_cost", "allreduce_fit_plot", "allreduce_sweep", "breakdown_plot", "chain",
    "chain_table", "diagram", "findings", "free_port", "launch", "measurements", "memory_per_device",
    "mesh_facts", "mlp_threads_fresh", "pg_timeout_for", "proof_plot", "rank_failure", "ring_allreduce_time",
    "scaling_plot", "score", "sharding_devices", "sharding_note", "show_worker", "simulate_devices", "summed",
    "tf_logical_cpus", "threads_table", "time_threads", "torchrun_command", "worker_path", "worker_source",
    "zero_traffic",
]
