"""assess's layout: every variant in one process unless memory asks (or --separate) for each variant alone after
the first process; the decision and its interval across fresh processes stay, and the report says which ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_utils import migrate
from course_utils.migrate import assessing

HERE = Path(__file__).resolve().parent
FIRST = {"variants": {"eager": {"peak_bytes": 1000}, "default": {"peak_bytes": 900}}}


@pytest.mark.parametrize("memory, separate", [(10_000, False), (3_000, True), (None, False)])
def test_the_layout_splits_when_the_estimate_exceeds_its_share_of_memory(memory, separate) -> None:
    plan = assessing.layout(FIRST, parameters=10, memory_bytes=memory, separate=False)
    assert plan["need_bytes"] == 2 * (1000 + 16 * 10) and plan["variants"] == 2  # computed, per variant
    assert plan["separate"] is separate and plan["threshold"] == assessing.SEPARATE_SHARE
    assert ("above" if separate else "within" if memory else "unknown") in plan["why"]


def test_forced_or_several_nodes_the_layout_does_not_guess() -> None:
    assert assessing.layout(FIRST, parameters=10, memory_bytes=10**12, separate=True)["separate"]
    several = assessing.layout({}, parameters=10, memory_bytes=None, separate=False, nodes=2)
    assert not several["separate"] and "--separate" in several["why"]
    spec = {"amp": "bfloat16", "modes": ["default"], "nproc": 1, "nnodes": 2}
    assert assessing.variants(spec) == ["eager", assessing.FP32, "default", assessing.COMPILED_FP32,
                                        migrate.ddp.NO_SYNC]


@pytest.mark.integration
def test_separate_processes_still_decide_across_fresh_processes(tmp_path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    out = tmp_path / "report"
    found = migrate.assess("assess_models:mlp", "assess_models:mlp_batches", processes=2, steps=2, amp="off",
                           out=out, progress=False, separate=True)
    assert found.layout["separate"] and found.layout["why"] == "--separate asked for it"
    assert found.decision.outcome in migrate.decision.DECISIONS and found.deciding.speedup.n == 2
    assert len(found.deciding.in_process) == 1  # only the first process interleaved every variant
    assert len(found.loads) == 2 and found.eager_peak_bytes is not None
    assert json.loads((out / "report.json").read_text())["layout"]["separate"] is True
    text = (out / "report.md").read_text()
    assert "each variant ran in a process of its own (1 x 2 processes" in text and "--separate" in found.command
