"""Print requirements.txt with the CUDA builds of the frameworks, at the same versions (for tools/device_check.sh).

tensorflow-cpu==X becomes tensorflow[and-cuda]==X, jax==X becomes jax[cuda12]==X (its plugin wheels follow),
and torch==X stays: on Linux, PyPI's torch wheel is the CUDA build, which is why a learner's set-up adds the CPU
index and this one must not (the rule: tools/torch_index.py). Every other pin is kept as it is.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

RENAMES = {"tensorflow-cpu": "tensorflow[and-cuda]", "jax": "jax[cuda12]"}


def gpu_lines(text: str) -> list[str]:
    """The requirement lines with the CPU-only frameworks swapped for their CUDA builds."""
    lines = []
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)(.*)$", line)
        if match and match.group(1) in RENAMES:
            line = f"{RENAMES[match.group(1)]}=={match.group(2)}{match.group(3)}"
        lines.append(line)
    return lines


if __name__ == "__main__":
    print("\n".join(gpu_lines(Path(sys.argv[1]).read_text())))
