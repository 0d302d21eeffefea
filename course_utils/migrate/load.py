"""Was the machine quiet? Each measuring process records ``os.getloadavg()`` at its start and its end; the run
was busy when the 1-minute load average, at either moment of any process, exceeded the machine's logical cores:
more threads wanted to run than there were cores, so other work shared the cores with the measurement (the
measuring processes run one at a time, with at most one thread per core). A busy run decides nothing: its gain
depends on the other work (issue 37 saw 1.01x at load 5 and 1.37x at load 1.5 for the same CNN).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

RULE = ("busy when the 1-minute load average at the start or the end of any measuring process exceeds the logical "
        "cores")


def busiest(loads: Sequence[Mapping[str, Any]]) -> float:
    """The highest 1-minute load average recorded (start or end of any process)."""
    return max(max(x["start"][0], x["end"][0]) for x in loads)


def busy(loads: Sequence[Mapping[str, Any]], cores: int) -> str | None:
    """Why the machine was busy (``RULE``), or None when it was quiet."""
    top = busiest(loads)
    if top <= cores:
        return None
    return f"the 1-minute load average reached {top:.2f} with {cores} logical cores"
