"""The course as learners meet it elsewhere: the learner edition (solutions removed) in a runtime without
TensorFlow (Colab TPU runtimes ship none) and in one without JAX. Two runs per notebook cover three editions:
each runs top to bottom in a fresh kernel at smoke size (ci sizes, a tenth of the timing: these runs check that a
notebook ends, nbval checks its facts at ci size); any error cell fails the test, the missing framework must be
named, and every exercise check must say "not attempted". Outputs go to a temporary folder, never notebooks/.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import COURSE_NOTEBOOKS, ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]
KERNEL = "eager-to-compiled"


def _run_without(blocked: str, ipynb, tmp_path) -> None:
    env = {**os.environ, "COURSE_SIZE": "smoke", "COURSE_BLOCK": blocked}
    out = subprocess.run([sys.executable, "tools/learner_edition.py", "--out", str(tmp_path), "--execute",
                          "--kernel", KERNEL, str(ipynb)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, f"learner edition of {ipynb.stem} without {blocked}:\n{out.stdout[-3000:]}\n" \
                                f"{out.stderr[-3000:]}"
    executed = (tmp_path / ipynb.name).read_text()
    assert "not installed in this runtime" in executed, f"{ipynb.stem} never said that {blocked} is missing"


# One class per framework: pytest-xdist (--dist loadscope) runs a class on one worker, so the two sets run side by
# side.
class TestWithoutTensorFlow:
    @pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=[p.stem for p in COURSE_NOTEBOOKS])
    def test_learner_edition_runs_to_the_end(self, ipynb, tmp_path) -> None:
        _run_without("tensorflow", ipynb, tmp_path)


class TestWithoutJax:
    @pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=[p.stem for p in COURSE_NOTEBOOKS])
    def test_learner_edition_runs_to_the_end(self, ipynb, tmp_path) -> None:
        _run_without("jax", ipynb, tmp_path)
