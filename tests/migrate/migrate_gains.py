"""A measured MigrationGain with a chosen median and band, made the only way there is: from a ladder's
migration rung (``MigrationGain(...)`` itself refuses to be built by hand)."""

from __future__ import annotations

from course_utils import migrate, timing
from course_utils.migrate import ladder as lad


def measured_gain(median: float, low: float, high: float, before: float = 1.0):
    """A two-rung ladder whose migration rung gives (median, low, high) over its baseline; its gain."""
    slow = timing.Measurement("base", (before,) * 5)
    fast = timing.Measurement("compiled", (before / high, before / high, before / median, before / low, before / low))
    rungs = [lad.Rung("base", migrate.NO_MIGRATION, 4, before, slow, 0.0, None),
             lad.Rung("+ torch.compile", migrate.MIGRATION, 4, before, fast, 0.0, None)]
    return migrate.build_ladder(rungs).migration_gain()
