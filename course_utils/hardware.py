"""What the CPU offers, read from the OS (model, SIMD flags, bf16 units, cache sizes): machines differ between
sessions, so notebooks decide from this detection."""

from __future__ import annotations

import functools
import platform
import subprocess
from pathlib import Path

from course_utils import validate

_SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "neon", "asimd")


@functools.cache
def cpu_model() -> str:
    """The CPU's marketing name, e.g. 'AMD EPYC 7B13' (falls back to platform.processor())."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    if platform.system() == "Darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            )
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


@functools.cache
def simd_flags() -> tuple[str, ...]:
    """The vector-unit flags that decide fp32/bf16 speed on this CPU (avx2, avx512f, amx_bf16, neon, ...)."""
    cpuinfo = Path("/proc/cpuinfo")
    found: set[str] = set()
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith(("flags", "features")):
                found.update(line.split(":", 1)[1].split())
                break
    elif platform.machine() in ("arm64", "aarch64"):
        found.add("neon")
    return tuple(flag for flag in _SIMD_FLAGS if flag in found)


def has_native_bf16() -> bool:
    """True where the CPU has bf16 arithmetic units (AVX512-BF16 or AMX); on others bf16 is emulated and slow."""
    return bool({"avx512_bf16", "amx_bf16"} & set(simd_flags()))



@functools.cache
def cache_sizes() -> dict[str, int]:
    """Bytes per data cache level of CPU 0 as the OS reports them ({'L1d': ..., 'L2': ..., 'L3': ...}); empty where
    /sys is not available (macOS)."""
    sizes: dict[str, int] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index[0-9]*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        name = f"L{level}" + ("d" if kind == "Data" else "")
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        sizes[name] = int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
    return sizes


def last_level_cache_bytes(default: int = 32 * 2**20) -> int:
    """The largest cache's size in bytes, or ``default`` where the OS does not say."""
    validate.positive("default", default, integer=True)
    return max(cache_sizes().values(), default=default)
