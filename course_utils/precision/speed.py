"""Speed per format: where torch runs and in which 16-bit format, the bf16 units' bound and its check, a STREAM op as
a roofline point, a step's matmul FLOPs and dilution checks; which library kernel ran (``workers/blas_verbose.py``)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from course_utils import calls, declare, devices, env, findings, intervals, roofline, timing
from course_utils.declare import MinItems, NonEmpty, PositiveFloat, Range, Text

# Published dense peaks of one NVIDIA A100 SXM (datasheet); shown as published, never as measured.
A100_PUBLISHED = {"A100 fp32": 19.5e12, "A100 tf32 (tensor cores)": 156e12, "A100 bf16 / fp16": 312e12}
# VDPBF16PS (AVX512-BF16) multiplies two bf16 pairs per fp32 lane where an fp32 FMA multiplies one pair.
AVX512_BF16_RATIO = 2.0
# Intel's published per-core rates: AMX-BF16 1,024 FLOPs per cycle; AVX-512 fp32 with two FMA units 64.
AMX_BF16_FLOPS_PER_CYCLE, AVX512_FP32_FLOPS_PER_CYCLE = 1024, 64
# The seed's claim, "~30% faster", read as a band: an interval inside it is "about 1.3x".
CLAIM_BAND = (1.2, 1.4)
STREAM_OPS = ("copy", "triad")
_STREAM = {"copy": (2, 0), "triad": (3, 2)}  # arrays touched per element (read + write), FLOPs per element
_SHORT = {"bfloat16": "bf16", "float16": "fp16"}


@declare.checked
@dataclass(frozen=True)
class TorchChoices:
    """Where notebook 03's torch work runs: ``device``, ``threads``, ``amp`` (the plan's fast 16-bit dtype) and
    ``native`` (whether that dtype has units here or is emulated)."""

    device: Literal["cuda", "cpu"]
    threads: Annotated[int, Range(1, 4096)]
    amp: Literal["bfloat16", "float16"]
    native: bool

    @property
    def short(self) -> str:
        """'bf16' or 'fp16'."""
        return _SHORT[self.amp]


@declare.checked
def torch_choices(plan: devices.Plan) -> TorchChoices:
    """What ``plan`` says for torch: fp16 on a GPU without bf16 units (a T4), else bf16; on a TPU runtime
    torch runs on the host CPU, and bf16 is native where the host has bf16 units."""
    amp = plan.fast_dtype if plan.fast_dtype in _SHORT else "bfloat16"
    native = plan.torch_device == "cuda" or env.has_native_bf16()
    return TorchChoices(plan.torch_device, plan.torch_threads, amp, native)


@dataclass(frozen=True)
class UnitBound:
    """How much faster than fp32 the CPU's best bf16 unit can make a matmul, and where that figure comes from."""

    unit: str
    ratio: float | None
    source: str

    def __str__(self) -> str:
        if self.ratio is None:
            return f"{self.unit}: {self.source}"
        if math.isinf(self.ratio):
            return f"{self.unit}: no bound computed ({self.source})"
        return f"{self.unit}: at most {self.ratio:g}x ({self.source})"


@declare.checked
def bf16_bound(flags: Sequence[str], device_type: Literal["cpu", "cuda"] = "cpu") -> UnitBound:
    """The bound of a 16-bit matmul's speed-up over fp32: AMX 16x, AVX512-BF16 2x, none without bf16 units (ratio
    None); a CUDA device's tensor cores get none computed (ratio inf: the prediction is only "faster")."""
    have = set(flags)
    if device_type == "cuda":
        return UnitBound("tensor cores", math.inf, "not computed here: it depends on the GPU (an A100's datasheet "
                                                   "gives 16x, see the plot)")
    if "amx_bf16" in have:
        return UnitBound("AMX", AMX_BF16_FLOPS_PER_CYCLE / AVX512_FP32_FLOPS_PER_CYCLE,
                         f"Intel's published per-core rates: {AMX_BF16_FLOPS_PER_CYCLE:,} bf16 FLOPs per cycle "
                         f"with AMX against {AVX512_FP32_FLOPS_PER_CYCLE} fp32 FLOPs with two AVX-512 FMA units")
    if "avx512_bf16" in have:
        return UnitBound("AVX512-BF16", AVX512_BF16_RATIO,
                         "computed from the instruction: VDPBF16PS does two bf16 multiply-adds per fp32 lane where "
                         "an fp32 FMA does one")
    return UnitBound("none", None, "no avx512_bf16 or amx_bf16 flag: bf16 is converted to fp32 in software")


@declare.checked
def matmul_check(speed: intervals.Speedup, bound: UnitBound, dtype: Literal["bf16", "fp16"] = "bf16",
                 ) -> findings.Check:
    """torch's 16-bit matmul over fp32 against the units' bound: inside [1x, bound], faster where none is computed,
    slower without units."""
    name = f"torch {dtype} matmul over fp32"
    if bound.ratio is None:
        return findings.slower(name, speed)
    if math.isinf(bound.ratio):
        return findings.faster(name, speed)
    return findings.within(name, speed, 1.0, bound.ratio)


@declare.checked
def stream_point(name: Literal["copy fp32", "copy bf16", "triad fp32", "triad bf16"],
                 seconds: PositiveFloat | timing.Measurement, n_bytes_fp32: Annotated[int, Range(4096, 2**40)],
                 ) -> roofline.Point:
    """The roofline ``Point`` of a STREAM op over ``n_bytes_fp32 // 4`` elements that took ``seconds``."""
    op, _, fmt = name.partition(" ")
    count = n_bytes_fp32 // 4
    arrays, flops = _STREAM[op]
    return roofline.Point(name, flops * count, arrays * count * (4 if fmt == "fp32" else 2),
                          float(getattr(seconds, "median", seconds)))


@declare.checked
def mlp_step_flops(sizes: Annotated[Sequence[Annotated[int, Range(1, 2**20)]], MinItems(2)],
                   batch: Annotated[int, Range(1, 2**24)]) -> int:
    """Matmul FLOPs of one MLP training step (computed): 3 x 2·B·in·out per layer, but 2 x for the first."""
    products = [a * b for a, b in zip(sizes[:-1], sizes[1:])]
    return int(2 * batch * (3 * sum(products) - products[0]))


@declare.checked
def matmul_shares(step_flops: PositiveFloat, flops: Annotated[Mapping[Text, PositiveFloat], NonEmpty],
                  step_seconds: Mapping[Text, PositiveFloat]) -> dict[str, float]:
    """Per format, the share of the step's median time its matmuls would take at the bare matmul's measured rate
    (computed): ``step_flops / flops[f] / step_seconds[f]``."""
    return {f: step_flops / flops[f] / step_seconds[f] for f in flops}


@declare.checked
def step_checks(step: intervals.Speedup, matmul: intervals.Speedup, bound: UnitBound) -> tuple[findings.Check, ...]:
    """The checks of "the rest of the step dilutes the matmul's ratio": with units, faster and below the bare matmul's
    low end; without, slower and above its high end."""
    name = "autocast step over the fp32 step"
    if bound.ratio is None:
        return (findings.slower(name, step), findings.above(f"{name}, against the bare matmul's high end", step,
                                                            matmul.high))
    return findings.faster(name, step), findings.below(f"{name}, against the bare matmul's low end", step, matmul.low)


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
