"""Which library kernel ran: the CPU vendor, and what MKL and oneDNN print for a torch matmul (``MKL_VERBOSE=1``,
``ONEDNN_VERBOSE=1``) in a child process running ``workers/blas_verbose.py``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from course_utils import calls, declare
from course_utils.declare import Range

WORKER = Path(__file__).resolve().parent.parent / "workers" / "blas_verbose.py"
_DONE = "blas_verbose: two"
_MKL_HEADER = re.compile(r"^MKL_VERBOSE (?P<version>(?:oneMKL|Intel\(R\) MKL) [^ ].*?) (?:Product )?build \d+ for "
                         r"(?P<path>.*?), Lnx", re.M)
_MKL_CALL = re.compile(r"^MKL_VERBOSE (?P<routine>[SDCZ]GEMM\w*)\(.*?\) (?P<time>[\d.]+(?:us|ms|s))", re.M)
_ONEDNN_ISA = re.compile(r"^onednn_verbose,.*?info,cpu,isa:(?P<isa>[^\n]*)$", re.M)
_ONEDNN_EXEC = re.compile(r"^onednn_verbose,.*?primitive,exec,cpu,(?P<kind>\w+),(?P<impl>[^,]+),[^,]*,"
                          r"src:(?P<src>\w+)", re.M)


@declare.checked
def cpu_vendor(cpuinfo: str | None = None) -> str:
    """'Intel', 'AMD' or 'other', from the ``vendor_id`` line of /proc/cpuinfo (or of ``cpuinfo`` text given)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text(errors="replace") if path.exists() else ""
    match = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo, re.M)
    vendor = match.group(1) if match else ""
    return {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(vendor, "other")


@dataclass(frozen=True)
class LibraryReport:
    """What MKL and oneDNN printed for an fp32 and a bf16 torch matmul: MKL's version, code path and GEMM calls;
    oneDNN's ISA and the matmul kernels it ran as (implementation, source dtype)."""

    mkl_version: str | None
    mkl_path: str | None
    mkl_calls: tuple[tuple[str, str], ...]
    onednn_isa: str | None
    onednn_matmuls: tuple[tuple[str, str], ...]
    lines: tuple[str, ...]

    @property
    def mkl_ran(self) -> bool:
        """True when MKL reported a GEMM call: torch's fp32 matmul went through MKL."""
        return bool(self.mkl_calls)

    def excerpt(self) -> str:
        """The lines worth reading: MKL's header and GEMM lines, oneDNN's ISA and matmul lines."""
        return "\n".join(self.lines) if self.lines else "(neither MKL nor oneDNN printed a line)"


@declare.checked
def read_verbose(text: str) -> LibraryReport:
    """Read the output of ``workers/blas_verbose.py``; text without its closing line is refused."""
    if _DONE not in text:
        raise ValueError(f"text must be the output of {WORKER.name} (its last line starts {_DONE!r}); got "
                         f"{text[:60]!r}")
    header = _MKL_HEADER.search(text)
    calls = tuple((m.group("routine"), m.group("time")) for m in _MKL_CALL.finditer(text))
    isa = _ONEDNN_ISA.search(text)
    matmuls = tuple((m.group("impl"), m.group("src")) for m in _ONEDNN_EXEC.finditer(text)
                    if m.group("kind") == "matmul")
    keep = [line for line in text.splitlines()
            if line.startswith("MKL_VERBOSE") or ",info,cpu,isa:" in line or ",primitive,exec,cpu,matmul," in line]
    path = header.group("path").removeprefix("Intel(R) 64 architecture ").strip() if header else None
    return LibraryReport(header.group("version") if header else None, path, calls,
                         isa.group("isa").strip() if isa else None, matmuls, tuple(keep))


@declare.checked
def library_verbose(n: Annotated[int, Range(16, 4096)] = 256, *,
                    timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> LibraryReport:
    """Run ``workers/blas_verbose.py`` (an n x n torch matmul in fp32 and in bf16) with MKL and oneDNN verbose."""
    timeout = calls.default_timeout() if timeout is None else timeout
    environ = os.environ | {"MKL_VERBOSE": "1", "ONEDNN_VERBOSE": "1", "PYTHONUNBUFFERED": "1"}
    try:
        run = subprocess.run([sys.executable, str(WORKER), str(n)], env=environ, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        raise calls.LearnerTimeout(f"{WORKER.name} ran past timeout={timeout:g} s and was stopped") from None
    if run.returncode != 0:
        raise RuntimeError(f"{WORKER.name} exited with {run.returncode}: {run.stderr.strip()[-400:]}")
    return read_verbose(run.stdout + run.stderr)
