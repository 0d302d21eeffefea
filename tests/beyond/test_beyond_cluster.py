"""The commands for a real cluster and the hang checklist: text a learner copies, so it must be right."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from course_utils.beyond import multinode


def test_cluster_commands_name_every_framework() -> None:
    text = multinode.cluster_commands("10.1.2.3", nnodes=4, nproc_per_node=8)
    assert "--rdzv-endpoint=10.1.2.3:29400" in text and "num_processes=4" in text and "TF_CONFIG" in text
    assert "local_device_ids" in text  # one JAX process per GPU is shown too
    assert "MultiWorkerMirroredStrategy()" in text


def test_hang_checklist_is_current_for_torch_2_13() -> None:
    text = " ".join(" ".join(row) for row in multinode.hang_checklist().rows)
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING=1: fail" not in text  # the outdated advice: 3 is the default
    assert "defaults to 3" in text and "timeout=" in text
    assert "TORCH_NCCL_DUMP_ON_TIMEOUT=1" in text and "torchfrtrace" in text
    assert "TORCH_FR_BUFFER_SIZE" in text and "TORCH_FR_BUFFER_SIZE=" not in text  # its default is kept, not advised


def test_the_flight_recorder_names_are_those_torch_reads() -> None:
    """The checklist's variables, looked up in the installed torch (Python source or its C++ library)."""
    torch = pytest.importorskip("torch")
    from pathlib import Path

    root = Path(torch.__file__).parent
    library = (root / "lib" / "libtorch_cpu.so").read_bytes() if (root / "lib" / "libtorch_cpu.so").exists() else b""
    c10d = (root / "distributed" / "distributed_c10d.py").read_text()
    for name in ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        assert name in c10d or name.encode() in library, name
    headers = root / "include" / "torch" / "csrc" / "distributed" / "c10d"
    if headers.is_dir():  # the NCCL variable (absent from a CPU build's library) and the default the checklist quotes
        assert "TORCH_NCCL_DUMP_ON_TIMEOUT" in (headers / "ProcessGroupNCCL.hpp").read_text()
        default = '{"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}, 2000)'
        assert default in (headers / "FlightRecorder.hpp").read_text()
    assert shutil.which("torchfrtrace", path=str(Path(sys.executable).parent)) is not None


@pytest.mark.parametrize("nnodes", [2, 6])  # written out, and built by Python for many hosts
def test_cluster_tf_config_line_is_valid_json_in_a_shell(nnodes: int) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    (line,) = [t for t in multinode.cluster_commands(nnodes=nnodes).splitlines() if t.startswith("export TF_CONFIG=")]
    line = line.replace("$(python ", f"$({sys.executable} ")
    out = subprocess.run([bash, "-c", f'export NODE_INDEX=1; {line}; printf %s "$TF_CONFIG"'], capture_output=True,
                         text=True, check=True).stdout
    config = json.loads(out)
    assert config["task"] == {"type": "worker", "index": 1} and len(config["cluster"]["worker"]) == nnodes
