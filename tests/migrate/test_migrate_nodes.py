"""assess --nnodes: every node runs the same command, its fresh process i one node of torchrun job i (c10d rendezvous
at --rdzv-endpoint); node 0 writes the report. Simulated here: two nodes on this one machine, over gloo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils.distributed import launcher
from course_utils.migrate import assessing, ddp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.mark.parametrize("nnodes, rank, endpoint, match", [(2, 0, None, "rdzv_endpoint: 2 nodes"),
                                                           (2, 2, "h:1", "node_rank"),
                                                           (1, 0, "h:1", "one node runs on 127.0.0.1")])
def test_several_nodes_need_an_endpoint_and_a_rank_below_their_count(nnodes, rank, endpoint, match) -> None:
    with pytest.raises(ValueError, match=match):
        ddp.check_nodes(nnodes, rank, endpoint)


def test_each_node_joins_the_rendezvous_of_its_fresh_process(tmp_path) -> None:
    command, env = ddp.command(Path("w.py"), ["s", "r"], 1, tmp_path, nnodes=2, node_rank=1,
                               endpoint="node0.cluster:29400", run_id="3")
    assert {"--nnodes=2", "--node-rank=1", "--rdzv-backend=c10d", "--rdzv-endpoint=node0.cluster:29400",
            "--rdzv-id=assess-3"} <= set(command)
    assert not [a for a in command if a.startswith("--local-addr")] and "GLOO_SOCKET_IFNAME" not in env
    line = assessing.command_line("m:f", "b:g", nnodes=2, node_rank=1, rdzv_endpoint="node0.cluster:29400")
    assert "--nnodes 2 --node-rank 1 --rdzv-endpoint node0.cluster:29400" in line


@pytest.mark.integration
@pytest.mark.slow
def test_two_nodes_on_one_machine_node_zero_reports(tmp_path) -> None:
    port = launcher.free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    nodes = [subprocess.Popen(
        [sys.executable, "-m", "course_utils.migrate", "assess", "--model", "assess_models:mlp", "--batches",
         "assess_models:mlp_batches", "--processes", "2", "--steps", "2", "--amp", "off", "--threads", "1",
         "--nnodes", "2", "--node-rank", str(rank), "--nproc-per-node", "1", "--rdzv-endpoint", f"127.0.0.1:{port}",
         "--out", str(tmp_path / f"node{rank}")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True) for rank in (0, 1)]
    logs = [node.communicate(timeout=600)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], logs
    assert "node 1 of 2: every measuring job ran; node 0 writes the report" in logs[1]
    assert not (tmp_path / "node1").exists() and not list(tmp_path.glob(".node1*"))
    job = json.loads((tmp_path / "node0" / "report.json").read_text())["ddp"]
    assert job["nodes"] == 2 and job["ranks"] == 2 and job["backend"] == "gloo", job
    assert "over 2 nodes x 1 rank(s) (world size 2)" in (tmp_path / "node0" / "report.md").read_text()
