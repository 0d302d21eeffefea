"""The course as learners meet it elsewhere: in a runtime without TensorFlow or without JAX (Colab TPU runtimes
ship no TensorFlow), and as the learner edition with the solutions removed. Each notebook runs top to bottom
at ci size in a fresh kernel; any error cell fails the test. Outputs go to a temporary folder, never notebooks/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import COURSE_NOTEBOOKS, ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]
KERNEL = "eager-to-compiled"


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env={**os.environ, "COURSE_SIZE": "ci", **env},
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("blocked", ["tensorflow", "jax"])
@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=[p.stem for p in COURSE_NOTEBOOKS])
def test_notebook_runs_to_the_end_without_a_framework(ipynb, blocked, tmp_path) -> None:
    out = _run(["tools/run_course.py", "--kernel", KERNEL, "--out", str(tmp_path), str(ipynb)],
               {"COURSE_BLOCK": blocked})
    assert out.returncode == 0, f"{ipynb.stem} without {blocked}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    results = json.loads((tmp_path / "summary.json").read_text())
    assert [r["status"] for r in results] == ["ok"]
    executed = (tmp_path / "notebooks" / ipynb.name).read_text()
    assert "not installed in this runtime" in executed, f"{ipynb.stem} never said that {blocked} is missing"


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=[p.stem for p in COURSE_NOTEBOOKS])
def test_learner_edition_runs_and_every_check_says_not_attempted(ipynb, tmp_path) -> None:
    out = _run(["tools/learner_edition.py", "--out", str(tmp_path), "--execute", "--kernel", KERNEL, str(ipynb)], {})
    assert out.returncode == 0, f"learner edition of {ipynb.stem}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
