"""Was the machine quiet? One rule over what each measuring process recorded (``assess_worker.machine``): the
1-minute load average at its start and end, the CPU steal over its life (``/proc/stat``, where present), and a
fixed matmul timed before and after it. Busy: the gain depends on other work, so it decides nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

STEAL = 0.05  # of the CPU time, taken by the hypervisor for other guests
CALIBRATION = 1.5  # the matmul after the process over the one before (or the inverse)
RULE = (f"busy when, in any measuring process, the 1-minute load average at its start or end exceeds the logical "
        f"cores, the CPU steal exceeds {STEAL:.0%}, or the calibration matmul timed after it differs from the one "
        f"timed before it by more than {CALIBRATION:g}x either way")


def busiest(loads: Sequence[Mapping[str, Any]]) -> float:
    """The highest 1-minute load average recorded (start or end of any process)."""
    return max(max(x["start"][0], x["end"][0]) for x in loads)


def drift(x: Mapping[str, Any]) -> float:
    """How many times one process's calibration matmul changed between its start and its end (1: not at all)."""
    c = x.get("calibration")
    return max(c["after"] / c["before"], c["before"] / c["after"]) if c else 1.0


def busy(loads: Sequence[Mapping[str, Any]], cores: int) -> str | None:
    """Why the machine was busy (``RULE``), or None when it was quiet."""
    top, steal = busiest(loads), max((x.get("steal") or 0.0 for x in loads), default=0.0)
    worst = max(range(len(loads)), key=lambda i: drift(loads[i]))
    why = [f"the 1-minute load average reached {top:.2f} with {cores} logical cores"] * (top > cores)
    why += [f"the CPU steal reached {steal:.0%}"] * (steal > STEAL)
    why += [f"process {worst + 1}'s calibration matmul changed {drift(loads[worst]):.2f}x between its start and "
            "its end (interference)"] * (drift(loads[worst]) > CALIBRATION)
    return "; ".join(why) or None


def described(loads: Sequence[Mapping[str, Any]], cores: int) -> str:
    """What the guard saw, for the report (computed from the records)."""
    steals = [x["steal"] for x in loads if x.get("steal") is not None]
    return (f"highest 1-minute load {busiest(loads):.2f} with {cores} logical cores; CPU steal "
            + (f"at most {max(steals):.1%}" if steals else "not available (no /proc/stat)")
            + f"; calibration matmul before/after each process within {max(drift(x) for x in loads):.2f}x")
