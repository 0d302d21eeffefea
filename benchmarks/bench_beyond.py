"""Beyond one machine: per-rank model-state bytes (DDP vs ZeRO-1 vs FSDP2) and multi-process step times.

Runs the workers of notebook 06 through the course launchers: ``fsdp_train.py`` on 2 ranks (bytes held per
rank, counted collectives, step times), ``ddp_train.py`` as two torchrun nodes (DDP step, compute-only, all-reduce),
``jax_multiprocess.py`` (2 processes x 2 CPU devices) and ``tf_multiworker.py`` (2 workers) when those frameworks
are installed. Run alone: ``python benchmarks/run_all.py --only beyond``.
"""

from __future__ import annotations

import statistics

from course_utils import env
from course_utils.beyond import jaxmulti, multinode, sharded, tfmulti

ONE_THREAD = {"OMP_NUM_THREADS": "1"}  # a "device" is one core in every run


def _median(values) -> float:
    return statistics.median(values) if values else float("nan")


def run() -> dict:
    shard = sharded.run(steps=5, rounds=8, per_round=5, timeout=600, env=ONE_THREAD, echo=False, progress=False)
    held = sharded.held_bytes(shard)
    params = sharded.params(shard)
    out = {
        "model_state_bytes_per_rank": {k: {str(r): h for r, h in per.items()} for k, per in held.items()},
        "formula_bytes_per_rank": sharded.formula_bytes(params, 2),
        "params": params,
        "collectives_per_step": sharded.calls(shard),
        "step_seconds_2_ranks": sharded.step_medians(shard),
        "collective_seconds": {op: m.median for op, m in sharded.collectives_alone(shard).items()},
        "weights_max_diff_vs_ddp": sharded.weight_diffs(shard),
    }
    nodes = multinode.launch_nodes("ddp_train.py", nnodes=2, nproc_per_node=1, timeout=600,
                                   args=["--phases", "timing", "--repeats", 20, "--wide-batch", 512],
                                   env=ONE_THREAD, echo=False, progress=False)
    out["two_nodes_ddp"] = {name: {"params": r["params"], "ddp_step_seconds": _median(r["ddp"]),
                                   "compute_only_seconds": _median(r["compute"]),
                                   "allreduce_seconds": _median(r["allreduce"])}
                            for name in ("tiny", "wide") for r in [nodes.record(f"timing_{name}")]}
    out["launch_seconds"] = {"fsdp_train": shard.seconds, "two_nodes": nodes.seconds}
    if env.available("jax"):
        jax_run = jaxmulti.run(steps=10, rounds=8, per_round=5, timeout=600, echo=False, progress=False)
        out["jax_2_processes_step_seconds"] = _median(jax_run.record("jax")["step_times"])
        out["launch_seconds"]["jax"] = jax_run.seconds
    if env.available("tensorflow"):
        tf_run = tfmulti.run(steps=20, timeout=600, echo=False, progress=False)
        out["tf_2_workers_step_seconds"] = _median(tf_run.record("multiworker")["step_times"])
        out["launch_seconds"]["tf"] = tf_run.seconds
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
