"""tools/colab_check.sh (make colab-check): its arguments are checked before anything is installed. The whole run
(a venv of Colab's versions, every notebook) is make colab-check's own, not make test's."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT


@pytest.mark.parametrize(("args", "named"), [
    (["cpu", "x.whl", sys.executable], "RUNTIME"),
    (["gpu", "no-such.whl", sys.executable], "WHEEL"),
    (["tpu", "pyproject.toml", "/no/such/python"], "RUNNER"),
    (["gpu"], "usage"),
])
def test_a_wrong_argument_is_named_before_anything_is_installed(args: list[str], named: str) -> None:
    out = subprocess.run(["bash", "tools/colab_check.sh", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and named in out.stderr, out.stderr
    assert not (ROOT / ".venv-colab-cpu").exists()

