"""A measured MigrationGain with a chosen median and interval, made the way assess makes one: from an interval
across fresh processes (``MigrationGain(...)`` itself refuses to be built by hand)."""

from __future__ import annotations

from course_utils import intervals
from course_utils.migrate import ladder


def measured_gain(median: float, low: float, high: float, n: int = 5):
    """The gain of a (made-up) measurement across ``n`` processes with this geometric mean and 95% interval."""
    speedup = intervals.Speedup("eager", "compiled", median, low, high, n, intervals.PROCESSES)
    return ladder.MigrationGain.across_processes(speedup, "torch.compile over eager (a test's measurement)")
