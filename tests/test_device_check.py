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
from gpu_minutes import merge, record  # noqa: E402
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


def _run_folder(folder, results: list[dict], device: str) -> None:
    """What tools/device_check.sh leaves before gpu_minutes.py runs: run_course.py's summary.json, device.txt."""
    (folder / "build").mkdir(parents=True)
    (folder / "build" / "summary.json").write_text(json.dumps(results))
    (folder / "device.txt").write_text(device + "\n")


def test_minutes_are_recorded_per_notebook_and_merged_per_device(tmp_path) -> None:
    """The keys are those tools/run_course.py writes to summary.json (tests/test_run_course.py checks them)."""
    _run_folder(tmp_path / "t4", [{"notebook": "00_measuring", "status": "ok", "minutes": 2.3456},
                                  {"notebook": "01_dynamic_vs_static", "status": "FAILED: not run (interrupted)",
                                   "minutes": 0.0}], "Tesla T4, 15360 MiB, 550.54.15")
    found = record(tmp_path / "t4", "gpu")
    assert found["device"] == "Tesla T4" and found["size"] == "gpu"
    assert found["minutes"] == {"00_measuring": 2.35, "01_dynamic_vs_static": None}  # a cut run is no time
    into = tmp_path / "gpu-minutes.json"
    merge(into, found)
    _run_folder(tmp_path / "t4b", [{"notebook": "01_dynamic_vs_static", "status": "ok", "minutes": 4.0}],
                "Tesla T4, 15360 MiB, 550.54.15")
    _run_folder(tmp_path / "l4", [{"notebook": "00_measuring", "status": "ok", "minutes": 1.0}], "NVIDIA L4, 1, 2")
    merge(into, record(tmp_path / "t4b", "gpu"))
    devices = merge(into, record(tmp_path / "l4", "gpu"))["devices"]
    assert [d["device"] for d in devices] == ["NVIDIA L4", "Tesla T4"]
    assert devices[1]["minutes"] == {"00_measuring": 2.35, "01_dynamic_vs_static": 4.0}  # the earlier run kept
    assert json.loads(into.read_text())["devices"] == devices
    _run_folder(tmp_path / "none", [], "")
    with pytest.raises(ValueError, match="device.txt"):
        record(tmp_path / "none", "gpu")


@pytest.mark.integration
def test_dry_run_executes_a_notebook_and_writes_the_summary(tmp_path) -> None:
    """The script's plumbing (run_course.py, gpu_minutes.py, device_summary.py) on a one-cell notebook that reads
    the size through course_utils: the course notebooks themselves run under nbval and as learner editions."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import course_utils as cu\nprint('size', cu.env.size_name())")])
    nbformat.write(nb, tmp_path / "one_cell.ipynb")
    out_dir = tmp_path / "out"
    out = subprocess.run(["bash", "tools/device_check.sh", "--dry-run", "--skip-bench", "--skip-assess",
                          "--notebooks", str(tmp_path / "one_cell.ipynb"), str(out_dir)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, env={**os.environ, "COURSE_SIZE": "smoke"})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    summary = (out_dir / "summary.md").read_text()
    assert "| one_cell | ok |" in summary and "no GPU (dry run)" in summary
    ran = nbformat.read(out_dir / "build" / "notebooks" / "one_cell.ipynb", as_version=4)
    assert ran.cells[0].outputs[0]["text"] == "size smoke\n"  # the kernel ran at the size the script was given
    minutes = json.loads((out_dir / "gpu-minutes.json").read_text())
    assert minutes["size"] == "smoke" and minutes["device"] == "no GPU (dry run)"
    assert isinstance(minutes["minutes"]["one_cell"], float)
    assert "merged into" not in out.stdout  # a dry run leaves the repository's gpu-minutes.json alone


@pytest.mark.integration
def test_a_spent_budget_fails_loudly_and_keeps_the_summary(tmp_path) -> None:
    out = subprocess.run(["bash", "tools/device_check.sh", "--dry-run", "--budget", "10", "--skip-assess",
                          "--notebooks", "00_measuring",
                          str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    summary = (tmp_path / "summary.md").read_text()
    assert "failed or cut short" in summary and "benchmarks (not run" in summary
    assert "FAILED" in out.stderr
