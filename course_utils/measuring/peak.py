"""The theoretical FP32 peak of this CPU, computed (cores x SIMD lanes x FMA units x 2 x clock, each with its source),
and which library runs each framework's fp32 matmul, found (build configurations, the optimised HLO) not assumed."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from course_utils import compiled, declare, display, env
from course_utils.declare import NonEmpty, PositiveFloat, PositiveInt, Range

_LANES = (("avx512f", 16, "AVX-512"), ("avx2", 8, "AVX2"), ("avx", 8, "AVX"), ("sse4_2", 4, "SSE"),
          ("asimd", 4, "NEON"), ("neon", 4, "NEON"))


@declare.checked
@dataclass(frozen=True, repr=False)
class PeakEstimate(display.Tabled):
    """The factors of the computed peak, each with its source."""

    cores: PositiveInt
    cores_source: str
    lanes: PositiveInt
    isa: str
    fma_units: PositiveInt
    fma: bool
    ghz: Annotated[float, Range(0.1, 10)] | None
    clock_source: str

    @property
    def flops(self) -> float | None:
        """Peak FLOP/s (computed): cores x lanes x FMA units x 2 (multiply and add) x clock; None: clock unknown."""
        if self.ghz is None:
            return None
        per_cycle = self.lanes * self.fma_units * (2 if self.fma else 1)
        return self.cores * per_cycle * self.ghz * 1e9

    def table(self) -> display.Table:
        flops = self.flops
        rows = [
            ("cores", str(self.cores), self.cores_source),
            ("fp32 SIMD lanes", str(self.lanes), f"{self.isa}, from the CPU flags"),
            ("FMA units per core", str(self.fma_units), "assumed: the flags do not say (1 on some cores)"),
            ("FLOPs per lane per unit", "2" if self.fma else "1",
             "fused multiply-add (fma flag)" if self.fma else "no fma flag: one operation"),
            ("clock", f"{self.ghz:.2f} GHz" if self.ghz else "unknown", self.clock_source),
            ("peak fp32 (computed)", display.format_flops(flops) if flops else "unknown", "product of the above"),
        ]
        return display.table(["factor", "value", "source"], rows, title="Theoretical FP32 peak (computed)",
                             note=f"A formula, not a measurement; the clock under sustained {self.isa} load can "
                                  "differ from the clock used here (lower under heavy vector load, higher with "
                                  "boost).")


@declare.checked
def theoretical_peak(cores: Annotated[int, Range(1, 4096)] | None = None) -> PeakEstimate:
    """The computed FP32 peak of this CPU for ``cores`` cores (default: the cores this process may use)."""
    cores, cores_source = _cores() if cores is None else (cores, "given")
    flags = set(env.simd_flags())
    lanes, isa = next(((n, name) for flag, n, name in _LANES if flag in flags), (1, "scalar"))
    fma = "fma" in flags or "avx512f" in flags or isa == "NEON"
    ghz, source = _clock_ghz()
    return PeakEstimate(cores, cores_source, lanes, isa, 2 if fma else 1, fma, ghz, source)


def _cores() -> tuple[int, str]:
    try:
        usable = len(os.sched_getaffinity(0))
        source = "cores this process may run on (sched_getaffinity)"
    except AttributeError:
        usable, source = os.cpu_count() or 1, "os.cpu_count()"
    import psutil

    physical = psutil.cpu_count(logical=False)
    logical = psutil.cpu_count(logical=True)
    if physical and logical and logical > physical:  # hyper-threads share one core's FMA units
        usable = max(1, usable * physical // logical)
        source += ", hyper-threads counted once"
    return usable, source


def _clock_ghz() -> tuple[float | None, str]:
    """(GHz, where it comes from): cpufreq's maximum, the clock in the CPU's name, /proc/cpuinfo's MHz."""
    max_freq = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    try:
        return int(max_freq.read_text().strip()) / 1e6, "maximum clock from cpufreq (cpuinfo_max_freq)"
    except (OSError, ValueError):
        pass
    named = re.search(r"@\s*([\d.]+)\s*GHz", env.cpu_model())
    if named:
        return float(named.group(1)), "nominal clock in the CPU's name"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("cpu mhz"):
                mhz = float(line.split(":", 1)[1])
                return mhz / 1e3, "'cpu MHz' in /proc/cpuinfo (a VM reports the host's nominal clock, not turbo)"
    return None, "not reported by this OS"


@declare.checked
@dataclass(frozen=True)
class KernelLibrary:
    """One framework's matmul library and the evidence for it."""

    framework: declare.Text
    library: declare.Text
    evidence: str


def _torch_library() -> KernelLibrary:
    """PyTorch: the BLAS it was built with (BLAS_INFO), and its versions, from ``torch.__config__.show()``."""
    import torch

    if torch.cuda.is_available():
        return KernelLibrary("torch", "cuBLAS", "torch.cuda is available: fp32 matmuls go to cuBLAS")
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    name = blas.group(1) if blas else "unknown"
    if name == "mkl":  # MKL's own version line, as it reports it (MKL_Get_Version_String): one spelling
        version = re.search(r"(Intel\(R\)[^\n]*?Math Kernel Library Version \S+(?: Build \d+)?)", config)
        library = version.group(1) if version else "Intel MKL (version not reported)"
    else:
        library = name
    dnn = re.search(r"MKL-DNN (v[\w.]+)", config)
    extra = f"; oneDNN {dnn.group(1)} is built in too (used for bf16 and convolutions)" if dnn else ""
    return KernelLibrary("torch", library, f"BLAS_INFO={name} in torch.__config__.show(){extra}")


def _numpy_library() -> KernelLibrary:
    """NumPy: the BLAS named by ``numpy.show_config``."""
    import numpy as np

    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    library = f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    return KernelLibrary("numpy", library, "numpy.show_config()")


def _jax_library(n: int) -> KernelLibrary:
    """JAX: what XLA compiled ``jnp.matmul`` of two n x n fp32 arrays into."""
    import jax
    import jax.numpy as jnp

    x = jnp.ones((n, n), jnp.float32)
    return KernelLibrary("jax", *compiled.hlo_summary(jax.jit(jnp.matmul).lower(x, x).compile().as_text()).library())


def _tensorflow_library(n: int) -> KernelLibrary:
    """TensorFlow: what XLA compiled ``tf.linalg.matmul`` (``jit_compile=True``) into."""
    tf = env.import_tensorflow()
    x = tf.ones((n, n))
    matmul = tf.function(lambda a, b: tf.linalg.matmul(a, b), jit_compile=True)
    hlo = matmul.experimental_get_compiler_ir(x, x)(stage="optimized_hlo")
    return KernelLibrary("tensorflow", *compiled.hlo_summary(hlo).library())


@declare.checked
def matmul_libraries(frameworks: Annotated[Sequence[Literal["torch", "jax", "tensorflow", "numpy"]], NonEmpty,
                                           declare.Unique],
                     n: Annotated[int, Range(2, 16384)] = 512) -> list[KernelLibrary]:
    """The library behind each framework's fp32 matmul (n x n, the size matters for XLA's choice)."""
    found = {"numpy": _numpy_library, "torch": _torch_library, "jax": lambda: _jax_library(n),
             "tensorflow": lambda: _tensorflow_library(n)}
    return [found[name]() for name in frameworks]


@declare.checked
def libraries_table(libraries: Annotated[Sequence[KernelLibrary], NonEmpty],
                    flops: dict[str, PositiveFloat] | None = None) -> display.Table:
    """One row per framework: library, evidence, and the matmul FLOP/s measured with it (when given)."""
    flops = flops or {}
    rows = [(lib.framework, lib.library, display.format_flops(flops[lib.framework]) if lib.framework in flops
             else "not measured", lib.evidence) for lib in libraries]
    return display.table(["framework", "fp32 matmul library", "measured matmul", "how we know"], rows,
                         title="Who runs the matmul")
