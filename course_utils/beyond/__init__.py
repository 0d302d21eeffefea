"""course_utils.beyond: the helpers of notebook 06, "What changes when the job outgrows one machine?".

It builds on notebook 05's ``course_utils.distributed`` (the torchrun launcher, the reading of failures, the
worker API, the ring all-reduce cost model); nothing there imports from here.

- ``multinode``: torchrun "nodes" on 127.0.0.1 joined by a c10d rendezvous, run from the learner's own command
  lines (``run_nodes``) or written for a worker (``launch_nodes``); the proof that the ranks agree;
- ``cluster``: the commands for a real cluster, and what to check first when a job hangs;
- ``jaxmulti``, ``tfmulti``: multi-process JAX (``jax.distributed``) and TF ``MultiWorkerMirroredStrategy``;
- ``sharded``: ZeRO-1 and FSDP2 memory and collectives measured against DDP; ``rounds``: a worker's times in
  rounds as Measurements that ``cu.intervals.speedup`` pairs;
- ``elastic``: a rank that dies once and a restart from an atomic checkpoint; ``reshard``: a sharded checkpoint
  (``torch.distributed.checkpoint``) saved at one world size and loaded at another;
- ``predict``: 05's ring model prices every multi-process step; ``totals``: what several numbers add up to;
- ``findings``: the notebook's predictions, each declared once with a sentence per outcome;
- ``plots``: the figures; ``exercises``: the exercise checkers (registered on import: 06.1-06.3).

Several modules share names such as ``run`` and ``reference``: reach them as ``cu.beyond.<module>.<name>``.
"""

from course_utils.beyond import (
    cluster,
    elastic,
    findings,
    jaxmulti,
    multinode,
    plots,
    predict,
    reshard,
    rounds,
    sharded,
    tfmulti,
    totals,
)
from course_utils.beyond import exercises as _exercises  # noqa: F401  (registers 06.k)
from course_utils.beyond.cluster import cluster_commands, hang_checklist
from course_utils.beyond.elastic import ElasticRun
from course_utils.beyond.multinode import NodesResult, launch_nodes, node_command, run_nodes
from course_utils.beyond.tfmulti import tf_config

__all__ = [
    "ElasticRun", "NodesResult", "cluster", "cluster_commands", "elastic", "findings", "hang_checklist", "jaxmulti",
    "launch_nodes", "multinode", "node_command", "plots", "predict", "reshard", "rounds", "run_nodes", "sharded",
    "tf_config", "tfmulti", "totals",
]
