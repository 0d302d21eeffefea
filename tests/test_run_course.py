"""tools/run_course.py: a notebook whose kernel dies is reported with the signal and the peak memory; each run names
its slowest cells."""

from __future__ import annotations

import importlib
import sys

import nbformat
import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
run_course = importlib.import_module("run_course")


@pytest.mark.integration  # starts a Jupyter kernel
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


def test_a_hung_cell_is_aborted_before_its_timeout_and_names_its_processes(tmp_path) -> None:
    """A cell past its timeout less 30 s is taken for a hang: its processes are listed and sent SIGABRT, so the
    faulthandler prints every thread's stack (CI's 07 edition once hung until pytest's timeout, without a trace)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(120)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    path = tmp_path / "hangs.ipynb"
    nbformat.write(nb, path)
    _, seconds, error = run_course.execute(path, "python3", timeout=32)
    assert error.startswith("DeadKernelError: the kernel exited with SIGABRT"), error
    assert "cell 0 ran past 2 s: taken for a hang" in error and "ipykernel" in error and seconds < 30, error


def test_the_slowest_cells_come_from_the_runs_timing_metadata() -> None:
    def cell(source: str, start: str | None, end: str) -> nbformat.NotebookNode:
        made = nbformat.v4.new_code_cell(source)
        if start is not None:
            made.metadata["execution"] = {"iopub.execute_input": start, "shell.execute_reply": end}
        return made

    nb = nbformat.v4.new_notebook(cells=[
        cell("# a comment first\nsizes = 1", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:02.500Z"),
        cell("fast = 2", "2026-01-01T00:00:03Z", "2026-01-01T00:00:03.100Z"),
        cell("never_ran = 3", None, ""),
        cell("slow = 4", "2026-01-01T00:00:04Z", "2026-01-01T00:00:44Z")])
    assert run_course.cell_seconds(nb) == [(3, 40.0), (0, 2.5), (1, 0.1)]
    assert run_course.slowest(nb, 2) == "cell 3 (slow = 4) 40 s, cell 0 (sizes = 1) 2 s"
