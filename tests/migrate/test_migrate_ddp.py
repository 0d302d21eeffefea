"""assess --nproc-per-node: each fresh process one torchrun job on 127.0.0.1, eager DDP against compiled DDP over
gloo on this CPU (which stands in for NCCL and says so), the all-reduce's share measured with ``no_sync()``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from course_utils import migrate
from course_utils.migrate import ddp

HERE = Path(__file__).resolve().parent


def test_the_torchrun_command_binds_to_loopback_and_names_the_ranks(tmp_path) -> None:
    command, env = ddp.command(Path("worker.py"), ["spec.json", "result.json"], 2, tmp_path)
    assert "--nproc-per-node=2" in command and "--master-addr=127.0.0.1" in command
    assert command[-3:] == ["worker.py", "spec.json", "result.json"] and int(env["OMP_NUM_THREADS"]) >= 1


def test_the_communication_share_is_one_minus_the_step_without_the_all_reduce() -> None:
    share = ddp.comm_share([2.0, 2.2, 1.8], [1.5, 1.65, 1.35])  # the same 25% in every process
    assert math.isclose(share["share"], 0.25) and share["low"] <= share["share"] <= share["high"]
    assert share["processes"] == 3
    assert ddp.summary([{"ddp": None}]) is None


def test_one_process_outside_torchrun_joins_no_group() -> None:
    ranks = ddp.join("cpu")
    assert ranks == ddp.Ranks(0, 1, None, "cpu") and ddp.wrap("model", ranks) == "model"


@pytest.mark.integration
@pytest.mark.slow
def test_two_ranks_through_torchrun_on_gloo(tmp_path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    out = tmp_path / "report"
    found = migrate.assess("assess_models:tokens", "assess_models:token_batches", processes=2, steps=2, amp="off",
                           out=out, progress=False, nproc_per_node=2)
    job = found.ddp
    assert job["ranks"] == 2 and job["backend"] == "gloo" and job["on_cpu"], job
    assert job["buckets"] >= 1 and job["subgraphs"] and all(n >= 1 for n in job["subgraphs"].values()), job
    share = job["comm_share"]
    assert share["low"] <= share["share"] <= share["high"] and share["processes"] == 2
    assert "2 ranks in DDP over gloo" in found.setup and "--nproc-per-node 2" in found.command
    assert json.loads((out / "report.json").read_text())["ddp"]["ranks"] == 2
    assert "one torchrun job of 2 ranks on 127.0.0.1" in (out / "report.md").read_text()
