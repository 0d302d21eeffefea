"""course_utils.beyond: the helpers of notebook 06, "What changes when the job outgrows one machine?", built on 05's
``distributed``: torchrun "nodes", JAX and TF jobs, ZeRO-1 and FSDP2, elastic restarts, resharding, the ring model."""

from course_utils.beyond import exercises as _exercises  # noqa: F401  (registers the exercise checkers)
from course_utils.beyond import findings
from course_utils.beyond.elastic import changed as reshard_changed
from course_utils.beyond.elastic import compare as reshard_compare
from course_utils.beyond.elastic import facts as elastic_facts
from course_utils.beyond.elastic import files as reshard_files
from course_utils.beyond.elastic import files_table, lost_steps
from course_utils.beyond.elastic import reference as elastic_reference
from course_utils.beyond.elastic import run as elastic_run
from course_utils.beyond.jaxmulti import allreduce_groups, gloo_ranks, jax_sharding
from course_utils.beyond.jaxmulti import alone as jax_alone
from course_utils.beyond.jaxmulti import compare as jax_compare
from course_utils.beyond.jaxmulti import facts as jax_facts
from course_utils.beyond.jaxmulti import reference as jax_reference
from course_utils.beyond.jaxmulti import run as jax_run
from course_utils.beyond.multinode import (
    cluster_commands,
    ddp_reference,
    hang_checklist,
    launch_nodes,
    proof_diffs,
    run_nodes,
)
from course_utils.beyond.multinode import facts as nodes_facts
from course_utils.beyond.plots import elastic_timeline, memory_plot, prediction_plot
from course_utils.beyond.predict import prediction_table, step_predictions, traffic_facts, unexplained
from course_utils.beyond.predict import ratios as prediction_ratios
from course_utils.beyond.predict import traffic as moved_traffic
from course_utils.beyond.sharded import LABELS as SHARDED_LABELS
from course_utils.beyond.sharded import calls as sharded_calls
from course_utils.beyond.sharded import (
    collectives_alone,
    comm_table,
    formula_bytes,
    held_bytes,
    largest_rank,
    memory_ratios,
    memory_table,
    reduce_scatter_trace,
    weight_diffs,
)
from course_utils.beyond.sharded import facts as sharded_facts
from course_utils.beyond.sharded import params as sharded_params
from course_utils.beyond.sharded import run as sharded_run
from course_utils.beyond.sharded import steps as sharded_steps
from course_utils.beyond.sharded import world as sharded_world
from course_utils.beyond.tfmulti import compare as tf_compare
from course_utils.beyond.tfmulti import facts as tf_facts
from course_utils.beyond.tfmulti import run as tf_run
from course_utils.beyond.tfmulti import tf_config

__all__ = [
    "SHARDED_LABELS", "allreduce_groups", "cluster_commands", "collectives_alone", "comm_table", "ddp_reference",
    "elastic_facts", "elastic_reference", "elastic_run", "elastic_timeline", "files_table", "findings", "formula_bytes",
    "gloo_ranks", "hang_checklist", "held_bytes", "jax_alone", "jax_compare", "jax_facts", "jax_reference", "jax_run",
    "jax_sharding", "largest_rank", "launch_nodes", "lost_steps", "memory_plot", "memory_ratios", "memory_table",
    "moved_traffic", "nodes_facts", "prediction_plot", "prediction_ratios", "prediction_table", "proof_diffs",
    "reduce_scatter_trace", "reshard_changed", "reshard_compare", "reshard_files", "run_nodes", "sharded_calls",
    "sharded_facts", "sharded_params", "sharded_run", "sharded_steps", "sharded_world", "step_predictions",
    "tf_compare", "tf_config", "tf_facts", "tf_run", "traffic_facts", "unexplained", "weight_diffs",
]
