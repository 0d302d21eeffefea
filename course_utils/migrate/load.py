"""Was the machine quiet? The run was busy when the 1-minute load average at the start or end of any measuring
process exceeded the logical cores: other work shared them, so the gain depends on it and decides nothing."""

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
