"""Bad calls against notebook 06's helpers: each raises TypeError/ValueError naming the argument, starts nothing."""

from __future__ import annotations

import pytest
from badinput import rejects

from course_utils.beyond import elastic, jaxmulti, multinode, sharded, tfmulti
from course_utils.beyond import plots as beyond_plots
from course_utils.distributed import AllReduceModel, LaunchResult

NAN = float("nan")
EMPTY = LaunchResult("w.py", 2, [], 1.0, [], {}, {})


def _node(**kw):
    base = {"nnodes": 2, "node_rank": 0, "nproc_per_node": 1, "port": 29400, "log_dir": "/tmp/x"}
    return lambda: multinode.node_command("fail_demo.py", **{**base, **kw})


BAD_CALLS = [
    ("nnodes", _node(nnodes=0)),
    ("node_rank", _node(node_rank=2)),
    ("nproc_per_node", _node(nproc_per_node=0)),
    ("port", _node(port=70000)),
    ("max_restarts", _node(max_restarts=-1)),
    ("args", _node(args="--steps 3")),
    ("nnodes", lambda: multinode.launch_nodes("fail_demo.py", nnodes=0)),
    ("nproc_per_node", lambda: multinode.launch_nodes("fail_demo.py", nproc_per_node="2")),
    ("timeout", lambda: multinode.launch_nodes("fail_demo.py", timeout=NAN)),
    ("timeout", lambda: multinode.launch_nodes("fail_demo.py", timeout=-1)),
    ("echo", lambda: multinode.launch_nodes("fail_demo.py", echo="yes")),
    ("env", lambda: multinode.launch_nodes("fail_demo.py", env={"A": 1})),
    ("on_line", lambda: multinode.launch_nodes("fail_demo.py", on_line=5)),
    ("steps", lambda: multinode.ddp_reference(steps=0)),
    ("lr", lambda: multinode.ddp_reference(lr=-0.1)),
    ("result", lambda: multinode.proof_diffs(None, {"step1": 0})),
    ("reference", lambda: multinode.proof_diffs(EMPTY, {})),
    ("nnodes", lambda: multinode.cluster_commands(nnodes=1)),
    ("batch", lambda: jaxmulti.run(batch=63)),
    ("devices_per_process", lambda: jaxmulti.run(devices_per_process=0)),
    ("steps", lambda: jaxmulti.reference(steps=0)),
    ("result", lambda: jaxmulti.compare("run", [1])),
    ("hosts", lambda: tfmulti.tf_config([], 0)),
    ("hosts", lambda: tfmulti.tf_config(["no-port"], 0)),
    ("index", lambda: tfmulti.tf_config(["a:1"], 1)),
    ("batch", lambda: tfmulti.run(batch=3, workers=2)),
    ("result", lambda: tfmulti.compare(None)),
    ("nprocs", lambda: sharded.run(nprocs=1)),
    ("repeats", lambda: sharded.run(repeats=0)),
    ("result", lambda: sharded.memory_table(None)),
    ("fit", lambda: sharded.step_predictions("fit", EMPTY)),
    ("ddp_timing", lambda: sharded.step_predictions(AllReduceModel(1e9, 1e-5), EMPTY, ddp_timing=[])),
    ("jax_record", lambda: sharded.step_predictions(AllReduceModel(1e9, 1e-5), EMPTY, jax_record="rec")),
    ("fit", lambda: sharded.model_comm_seconds(None, {}, {}, 2)),
    ("op", lambda: sharded.ring_cost("alltoall", 2)),
    ("n", lambda: sharded.ring_cost("allreduce", 1)),
    ("rows", lambda: sharded.prediction_table({})),
    ("result", lambda: jaxmulti.gloo_ranks(None)),
    ("sizes", lambda: sharded.jax_sharding(sizes=[32, 10])),
    ("batch", lambda: sharded.jax_sharding(batch=0)),
    ("every", lambda: elastic.run(every=0)),
    ("crash_at", lambda: elastic.run(steps=12, crash_at=12)),
    ("nprocs", lambda: elastic.run(nprocs=1)),
    ("every", lambda: elastic.lost_steps(8, 0)),
    ("crash_at", lambda: elastic.lost_steps(-1, 3)),
    ("held", lambda: beyond_plots.memory_plot({}, {}, ranks=2)),
    ("computed", lambda: beyond_plots.elastic_timeline({}, every=3, crash_at=8, steps=12)),
    ("rows", lambda: beyond_plots.prediction_plot({})),
]


@pytest.mark.parametrize(("argument", "call"), BAD_CALLS, ids=[f"{i}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_call_names_its_argument(argument: str, call) -> None:
    rejects(call, argument)
