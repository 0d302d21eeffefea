"""Bad calls against notebook 06's helpers: each raises TypeError/ValueError naming the argument, starts nothing."""

from __future__ import annotations

import pytest
from badinput import rejects
from beyond_fakes import fake

from course_utils.beyond import (
    elastic,
    jaxmulti,
    multinode,
    plots,
    predict,
    sharded,
    tfmulti,
)
from course_utils.distributed.breakdown import from_rounds
from course_utils.distributed.comms import AllReduceModel
from course_utils.distributed.launcher import LaunchResult

NAN = float("nan")
EMPTY = LaunchResult("w.py", 2, [], 1.0, [], {}, {})
FIT = AllReduceModel(1e9, 1e-5)


def _node(**kw):
    base = {"nnodes": 2, "node_rank": 0, "nproc_per_node": 1, "port": 29400}
    return lambda: multinode.node_command("fail_demo.py", **{**base, **kw})


BAD_CALLS = [
    ("nnodes", _node(nnodes=0)),
    ("node_rank", _node(node_rank=2)),
    ("nproc_per_node", _node(nproc_per_node=0)),
    ("port", _node(port=70000)),
    ("port", _node(port=NAN)),
    ("max_restarts", _node(max_restarts=-1)),
    ("args", _node(args="--steps 3")),
    ("command", lambda: multinode.read_command(42)),
    ("command", lambda: multinode.read_command("")),
    ("commands", lambda: multinode.run_nodes("torchrun --nnodes=1 x.py")),
    ("commands", lambda: multinode.run_nodes([])),
    ("timeout", lambda: multinode.run_nodes(["not a torchrun line"], timeout=0)),
    ("env", lambda: multinode.run_nodes(["not a torchrun line"], env=[("A", "1")])),
    ("echo", lambda: multinode.run_nodes(["not a torchrun line"], echo="yes")),
    ("on_line", lambda: multinode.run_nodes(["not a torchrun line"], on_line=42)),
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
    ("result", lambda: multinode.backend("run")),
    ("nnodes", lambda: multinode.cluster_commands(nnodes=1)),
    ("host", lambda: multinode.cluster_commands(host="")),
    ("batch", lambda: jaxmulti.run(batch=63)),
    ("devices_per_process", lambda: jaxmulti.run(devices_per_process=0)),
    ("rounds", lambda: jaxmulti.run(rounds=1)),
    ("steps", lambda: jaxmulti.run(steps=10**9)),
    ("steps", lambda: jaxmulti.reference(steps=0)),
    ("result", lambda: jaxmulti.compare("run", [1])),
    ("record", lambda: jaxmulti.alone({})),
    ("sizes", lambda: jaxmulti.jax_sharding(["cpu0", "cpu1"], sizes=[32])),
    ("sizes", lambda: jaxmulti.jax_sharding(["cpu0", "cpu1"], sizes="32,10")),
    ("sizes", lambda: jaxmulti.jax_sharding(["cpu0", "cpu1"], sizes=(32, 10**9, 10))),
    ("steps", lambda: multinode.ddp_reference(steps=10**9)),
    ("every", lambda: multinode.ddp_reference(steps=4, every=5)),
    ("batch", lambda: elastic.reference(batch=10**9)),
    ("timeout", lambda: multinode.run_nodes(["torchrun --nnodes=1 --rdzv-backend=c10d "
                                             "--rdzv-endpoint=127.0.0.1:1 fail_demo.py"], timeout=10**9)),
    ("batch", lambda: jaxmulti.jax_sharding(["cpu0", "cpu1"], batch=0)),
    ("devices", lambda: jaxmulti.jax_sharding(["cpu0"])),  # a 1-device mesh shows no collective
    ("hosts", lambda: tfmulti.tf_config([], 0)),
    ("hosts", lambda: tfmulti.tf_config("a:1", 0)),
    ("hosts", lambda: tfmulti.tf_config(["no-port"], 0)),
    ("index", lambda: tfmulti.tf_config(["a:1"], 1)),
    ("batch", lambda: tfmulti.run(batch=3, workers=2)),
    ("result", lambda: tfmulti.compare(None)),
    ("nprocs", lambda: sharded.run(nprocs=1)),
    ("rounds", lambda: sharded.run(rounds=0)),
    ("per_round", lambda: sharded.run(per_round=10**6)),
    ("batch", lambda: sharded.run(batch=2**30)),
    ("result", lambda: sharded.memory_table(None)),
    ("n_params", lambda: sharded.formula_bytes(0, 2)),
    ("n", lambda: sharded.formula_bytes(10, 2.5)),
    ("fit", lambda: predict.step_predictions("fit", EMPTY)),
    ("ddp_timing", lambda: predict.step_predictions(FIT, EMPTY, ddp_timing=[])),
    ("jax_record", lambda: predict.step_predictions(FIT, EMPTY, jax_record="rec")),
    ("fit", lambda: predict.model_comm_seconds(None, {}, {}, 2)),
    ("calls", lambda: predict.model_comm_seconds(FIT, "allreduce", {}, 2)),
    ("nbytes", lambda: predict.model_comm_seconds(FIT, {"allreduce": 1}, {"allreduce": NAN}, 2)),
    ("op", lambda: predict.ring_cost("alltoall", 2)),
    ("n", lambda: predict.ring_cost("allreduce", 1)),
    ("rows", lambda: predict.prediction_table({})),
    ("rows", lambda: predict.ratios({})),
    ("result", lambda: jaxmulti.gloo_ranks(None)),
    ("result", lambda: predict.traffic(None)),
    ("fit", lambda: predict.collective_ratios("fit", fake())),
    ("every", lambda: elastic.run(every=0)),
    ("crash_at", lambda: elastic.run(steps=12, crash_at=12)),
    ("nprocs", lambda: elastic.run(nprocs=1)),
    ("every", lambda: elastic.lost_steps(8, 0)),
    ("crash_at", lambda: elastic.lost_steps(-1, 3)),
    ("saved_by", lambda: elastic.compare(None, EMPTY)),
    ("saved_by", lambda: elastic.compare(EMPTY, EMPTY)),
    ("folder", lambda: elastic.files(3)),
    ("folder", lambda: elastic.files("/nonexistent/checkpoint")),
    ("folders", lambda: elastic.files_table({})),
    ("label", lambda: from_rounds("", [[1.0], [1.0]])),
    ("per_round", lambda: from_rounds("x", [[1.0]])),
    ("per_round", lambda: from_rounds("x", "abc")),
    ("per_round", lambda: from_rounds("x", [[1.0], [NAN]])),
    ("per_round", lambda: from_rounds("x", [[1.0], []])),
    ("result", lambda: plots.memory_plot(None)),
    ("run", lambda: plots.elastic_timeline({})),
    ("rows", lambda: plots.prediction_plot({})),
    ("result", lambda: multinode.facts(EMPTY)),
    ("result", lambda: jaxmulti.facts(None)),
    ("crash", lambda: elastic.facts(None)),
    ("fit", lambda: predict.traffic_facts(None, fake())),
]


@pytest.mark.parametrize(("argument", "call"), BAD_CALLS, ids=[f"{i}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_call_names_its_argument(argument: str, call) -> None:
    rejects(call, argument)
