"""tools/device_check.sh: the script for the day a GPU is lent, tested on its CPU dry-run path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from device_summary import assessments, headlines  # noqa: E402
from gpu_requirements import gpu_lines  # noqa: E402


def test_gpu_requirements_swap_only_the_framework_builds() -> None:
    text = "jax==0.10.2\njaxlib==0.10.2\ntensorflow-cpu==2.21.0; sys_platform == \"linux\"\ntorch==2.13.0\nnumpy==2.4.6"
    assert gpu_lines(text) == ["jax[cuda12]==0.10.2", "jaxlib==0.10.2",
                               "tensorflow[and-cuda]==2.21.0; sys_platform == \"linux\"", "torch==2.13.0",
                               "numpy==2.4.6"]


def test_every_headline_matches_a_key_the_benchmarks_write() -> None:
    """The keys below are the shapes bench_fusion, bench_precision, bench_ladder, bench_ddp and bench_beyond write."""
    bench = {
        "fusion": {"torch": {"fresh output": {"fraction_of_copy": 0.2}}},
        "precision": {"matmul": {"torch bf16 n=2048 fraction of the computed fp32 peak": 0.4,
                                 "torch bf16/fp32 speed n=2048": 4.5}},
        "ladder": {"rungs": {"+ autocast bfloat16": {"speedup_per_sample_over_previous": 1.3}}},
        "ddp": {"ddp_step_seconds_2_processes": {"tiny": 0.002}},
        "beyond": {"step_seconds_2_ranks": {"ddp": 0.01}},
    }
    found = headlines(bench)
    assert "not recorded" not in found.values(), found
    assert "not recorded" in headlines({}).values()


def test_the_summary_reports_each_assessed_models_gain_interval_and_decision(tmp_path) -> None:
    """The keys are those ``python -m course_utils.migrate assess`` writes to report.json (tests/migrate checks
    them)."""
    for name, decision, even in (("cnn", "migrate", 1.04), ("transformer", "not decided: measure more", "inf")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.json").write_text(json.dumps({
            "speedup": {"median": 1.3, "low": 1.2, "high": 1.4}, "break_even_speedup": even, "processes": 5,
            "decision": decision, "device_name": "NVIDIA H100"}))
    rows = assessments(tmp_path)
    assert "| cnn | 1.3x (1.2x to 1.4x, 5 processes) | 1.04x | migrate | NVIDIA H100 |" in rows
    assert any(r.startswith("| transformer |") and "| inf |" in r for r in rows)
    assert assessments(tmp_path / "none") == []


@pytest.mark.integration
def test_dry_run_executes_a_notebook_and_writes_the_summary(tmp_path) -> None:
    out = subprocess.run(["bash", "tools/device_check.sh", "--dry-run", "--skip-bench", "--skip-assess",
                          "--notebooks", "00_measuring", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=900, env={**os.environ, "COURSE_SIZE": "smoke"})  # runs to the end: no timing kept
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    summary = (tmp_path / "summary.md").read_text()
    assert "| 00_measuring | ok |" in summary and "no GPU (dry run)" in summary
    assert (tmp_path / "build" / "notebooks" / "00_measuring.ipynb").exists()


@pytest.mark.integration
def test_a_spent_budget_fails_loudly_and_keeps_the_summary(tmp_path) -> None:
    out = subprocess.run(["bash", "tools/device_check.sh", "--dry-run", "--budget", "10", "--skip-assess",
                          "--notebooks", "00_measuring",
                          str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    summary = (tmp_path / "summary.md").read_text()
    assert "failed or cut short" in summary and "benchmarks (not run" in summary
    assert "FAILED" in out.stderr
