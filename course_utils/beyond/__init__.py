"""course_utils.beyond: the helpers of notebook 06, "What changes when the job outgrows one machine?".

It builds on notebook 05's ``course_utils.distributed`` (the torchrun launcher, the reading of failures, the
worker API, the ring all-reduce cost model); nothing there imports from here.

- ``multinode``: two torchrun "nodes" on 127.0.0.1 joined by a c10d rendezvous, the commands for a real cluster,
  what to check when a job hangs;
- ``jaxmulti``, ``tfmulti``: multi-process JAX (``jax.distributed``) and TF ``MultiWorkerMirroredStrategy``;
- ``sharded``: ZeRO-1 and FSDP2 memory and collectives measured against DDP, JAX parameter sharding;
- ``elastic``: a rank that dies once and a restart from an atomic checkpoint;
- ``findings``: what a run's numbers add up to (traffic over gloo, what a prediction leaves unexplained);
- ``plots``: the figures; ``exercises``: the exercise checkers (registered on import: 06.1-06.3).

Several modules share names such as ``run`` and ``reference``: reach them as ``cu.beyond.<module>.<name>``.
"""

from course_utils.beyond import exercises as _exercises  # noqa: F401  (registers 06.k)
from course_utils.beyond import elastic, findings, jaxmulti, multinode, plots, sharded, tfmulti
from course_utils.beyond.elastic import ElasticRun
from course_utils.beyond.multinode import NodesResult, cluster_commands, hang_checklist, launch_nodes, node_command
from course_utils.beyond.tfmulti import tf_config

__all__ = [
    "ElasticRun", "NodesResult", "cluster_commands", "elastic", "findings", "hang_checklist", "jaxmulti",
    "launch_nodes", "multinode", "node_command", "plots", "sharded", "tf_config", "tfmulti",
]
