"""Print requirements.txt as another platform reads it, for make wheelhouse PLATFORM=... (a stick for macOS or
Windows built on Linux, or the reverse).

pip download --platform picks the target's wheels but evaluates environment markers on the machine that runs it:
from Linux, ``tensorflow-cpu==2.21.0; sys_platform == "linux"`` would be kept for a macOS stick, which has no
such wheel. This tool evaluates each marker for the target instead and prints the lines that apply, without
their markers.

    python tools/platform_requirements.py requirements.txt macosx_14_0_arm64 3.11
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:  # a bare system Python: pip carries its own copy
    from pip._vendor.packaging.requirements import Requirement

SYSTEMS = {  # a wheel platform tag's first word -> its marker environment
    "macosx": {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix"},
    "manylinux": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"},
    "musllinux": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"},
    "linux": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"},
    "win": {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt"},
}


def environment(platform: str, python_version: str) -> dict[str, str]:
    """The marker environment of a wheel ``platform`` tag (``macosx_14_0_arm64``) and a ``python_version``."""
    system = platform.split("_")[0].lower() if isinstance(platform, str) else ""
    if system not in SYSTEMS:
        raise ValueError(f"platform must be a wheel platform tag starting with one of {sorted(SYSTEMS)}; "
                         f"got {platform!r}")
    last = platform.rsplit("_", 1)[-1]
    machine = "x86_64" if platform.endswith("x86_64") else {"amd64": "AMD64"}.get(last, last)
    return {**SYSTEMS[system], "platform_machine": machine, "python_version": python_version,
            "python_full_version": f"{python_version}.0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython"}


def platform_lines(text: str, platform: str, python_version: str = "3.11") -> list[str]:
    """The lines of the lock ``text`` that apply on ``platform``, markers evaluated there and removed."""
    env = environment(platform, python_version)
    lines = []
    for line in text.splitlines():
        if ";" not in line or line.lstrip().startswith("#"):
            lines.append(line)
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(env):
            lines.append(line.split(";", 1)[0].rstrip())
    return lines


if __name__ == "__main__":
    lock, target = Path(sys.argv[1]), sys.argv[2]
    print("\n".join(platform_lines(lock.read_text(), target, sys.argv[3] if len(sys.argv) > 3 else "3.11")))
