"""The course as learners meet it elsewhere: the learner edition (solutions removed) in a runtime without the
optional frameworks (Colab TPU runtimes ship no TensorFlow; other runtimes lack JAX). One run per notebook, with
TensorFlow and JAX both blocked (tools/blocker), in a fresh kernel at smoke size (ci sizes, a tenth of the timing:
these runs check that a notebook ends, nbval checks its facts at ci size): any error cell fails the test, every
exercise check must say "not attempted", and the notebook's outputs (not its sources) must name each missing
framework in a sentence ("TensorFlow is not installed ...", "TensorFlow and JAX are not installed ..."). Every part
guarded by one framework thus runs with it (nbval: all frameworks present) and is skipped without it (here).
Outputs go to a temporary folder, never notebooks/.

COURSE_EDITIONS=each runs the two runtimes with exactly one of the two missing instead (without TensorFlow, then
without JAX: two kernels per notebook, twice the time): the check for a part that needs both frameworks at once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import COURSE_NOTEBOOKS, ROOT

KERNEL = "eager-to-compiled"
TITLES = {"tensorflow": "TensorFlow", "jax": "JAX"}
# a cell past this is taken for a hang (smoke cells take seconds): the kernel's stacks are printed before pytest's
# own 900 s timeout would end the test without them
CELL_TIMEOUT_S = 420
BLOCKED = ["tensorflow,jax"] if os.environ.get("COURSE_EDITIONS", "both") != "each" else ["tensorflow", "jax"]
_TITLE = "|".join(TITLES.values())
_MISSING = re.compile(rf"((?:{_TITLE})(?: and (?:{_TITLE}))*) (?:is|are) not installed")


def _output_text(output: dict) -> str:
    data = output.get("data", {})
    return "".join("".join(part) for part in (output.get("text", ""), data.get("text/plain", ""),
                                                data.get("text/html", ""), data.get("text/markdown", "")))


def missing_named(executed: str) -> set[str]:
    """The frameworks that the executed notebook (its JSON text) said, in its outputs (printed or displayed; not
    in its sources), are not installed."""
    import json

    text = "\n".join(_output_text(o) for c in json.loads(executed)["cells"] for o in c.get("outputs", []))
    return {fw for fw, title in TITLES.items() for names in _MISSING.findall(text) if title in names.split(" and ")}


def run_without(blocked: str, ipynb, tmp_path) -> None:
    env = {**os.environ, "COURSE_SIZE": "smoke", "COURSE_BLOCK": blocked}
    out = subprocess.run([sys.executable, "tools/learner_edition.py", "--out", str(tmp_path), "--execute",
                          "--kernel", KERNEL, "--timeout", str(CELL_TIMEOUT_S), str(ipynb)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"learner edition of {ipynb.stem} without {blocked}:\n{out.stdout[-3000:]}\n" \
                                f"{out.stderr[-8000:]}"
    said = missing_named((tmp_path / ipynb.name).read_text())
    for framework in blocked.split(","):
        assert framework in said, f"{ipynb.stem} never said that {TITLES[framework]} is missing (it named {said})"


@pytest.mark.integration
@pytest.mark.slow
class _Edition:
    """One notebook's learner edition. A class per notebook: --dist loadscope runs a class on one worker, so the
    notebooks' editions spread over the workers."""

    ipynb = None

    @pytest.mark.parametrize("blocked", BLOCKED)
    def test_learner_edition_runs_to_the_end(self, blocked, tmp_path) -> None:
        run_without(blocked, self.ipynb, tmp_path)


for _ipynb in COURSE_NOTEBOOKS:  # make test starts the longest first (tests/conftest.py)
    _name = "TestEdition_" + _ipynb.stem
    globals()[_name] = type(_name, (_Edition,), {"ipynb": _ipynb, "__doc__": f"The learner edition of {_ipynb.stem}."})


def test_missing_named_reads_each_sentence() -> None:
    """The check above: one sentence may name both frameworks ("TensorFlow and JAX are"), or each its own."""
    import json

    def notebook(*lines):
        return json.dumps({"cells": [{"outputs": [{"text": line + "\n"}]} for line in lines]})

    shown = {"cells": [{"source": "print('JAX is not installed in this runtime')", "outputs": [
        {"data": {"text/html": "<p><b>TensorFlow is not installed in this runtime</b></p>"}}]}]}

    assert missing_named(notebook("TensorFlow and JAX are not installed in this runtime: skipped.")) == \
        {"tensorflow", "jax"}
    assert missing_named(notebook("JAX is not installed in this runtime: skipped.")) == {"jax"}
    assert missing_named(notebook("Skipped: TensorFlow is not installed here: its row is skipped.")) == {"tensorflow"}
    assert missing_named(notebook("TensorFlow is not installed in this runtime (Colab TPU runtimes ship none): x",
                                  "JAX is not installed in this runtime: y")) == {"tensorflow", "jax"}
    assert missing_named(notebook("PyTorch is not installed: this course needs it")) == set()
    assert missing_named(json.dumps(shown)) == {"tensorflow"}  # displayed counts, a cell's source does not
