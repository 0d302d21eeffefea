"""The theoretical FP32 peak of this CPU, computed (never measured): cores x SIMD lanes x FMA units x 2 x clock,
each factor with its source (the OS, the CPU flags, an assumption, cpufreq or the CPU's name)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from course_utils import declare, display, env
from course_utils.declare import PositiveInt, Range

_LANES = (("avx512f", 16, "AVX-512"), ("avx2", 8, "AVX2"), ("avx", 8, "AVX"), ("sse4_2", 4, "SSE"),
          ("asimd", 4, "NEON"), ("neon", 4, "NEON"))


@declare.checked
@dataclass(frozen=True, repr=False)
class PeakEstimate:
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

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


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
