"""The theoretical FP32 peak of this CPU, computed (never measured): cores x SIMD lanes x FMA units x 2 x clock.

Each factor says where it comes from: the core count from the OS, the lanes from the CPU flags (AVX-512: 16
fp32 lanes, AVX/AVX2: 8, SSE/NEON: 4), the FMA units per core assumed (the flags do not tell), the clock from
cpufreq, the CPU's name, or /proc/cpuinfo. A measured matmul is set beside it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from course_utils import display, env, validate

_LANES = (("avx512f", 16, "AVX-512"), ("avx2", 8, "AVX2"), ("avx", 8, "AVX"), ("sse4_2", 4, "SSE"),
          ("asimd", 4, "NEON"), ("neon", 4, "NEON"))


@dataclass(frozen=True, repr=False)
class PeakEstimate:
    """The factors of the computed peak, each with its source."""

    cores: int
    cores_source: str
    lanes: int
    isa: str
    fma_units: int
    fma: bool
    ghz: float | None
    clock_source: str

    def __post_init__(self) -> None:
        validate.positive("cores", self.cores, integer=True)
        validate.positive("lanes", self.lanes, integer=True)
        validate.positive("fma_units", self.fma_units, integer=True)
        if self.ghz is not None:
            validate.number("ghz", self.ghz, low=0.1, high=10)

    @property
    def flops(self) -> float | None:
        """Peak FLOP/s (computed): cores x lanes x FMA units x 2 (an FMA is a multiply and an add) x clock;
        None when the clock is unknown."""
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

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def theoretical_peak(cores: int | None = None) -> PeakEstimate:
    """The computed FP32 peak of this CPU for ``cores`` cores (default: the cores this process may use)."""
    if cores is None:
        cores, cores_source = _cores()
    else:
        cores, cores_source = validate.number("cores", cores, low=1, high=4096, integer=True), "given"
    flags = set(env.simd_flags())
    lanes, isa = next(((n, name) for flag, n, name in _LANES if flag in flags), (1, "scalar"))
    fma = "fma" in flags or "avx512f" in flags or isa == "NEON"
    ghz, source = clock_ghz()
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


def clock_ghz() -> tuple[float | None, str]:
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
