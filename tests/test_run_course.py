"""tools/run_course.py: a notebook whose kernel dies is reported with the signal and the peak memory."""

from __future__ import annotations

import importlib
import sys

import nbformat
import pytest
from conftest import ROOT

pytestmark = pytest.mark.integration  # starts a Jupyter kernel

sys.path.insert(0, str(ROOT / "tools"))
run_course = importlib.import_module("run_course")


def test_a_dead_kernel_says_which_signal_and_how_much_memory(tmp_path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, signal\nheld = bytearray(200 * 2**20)\nimport time; time.sleep(1.2)\n"
        "os.kill(os.getpid(), signal.SIGKILL)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    path = tmp_path / "dies.ipynb"
    nbformat.write(nb, path)
    _, _, error = run_course.execute(path, "python3", timeout=120)
    assert error.startswith("DeadKernelError: the kernel exited with SIGKILL"), error
    peak = float(error.split("children ")[1].split(" GiB")[0])
    assert peak >= 0.19, error  # the 200 MiB it held was sampled
