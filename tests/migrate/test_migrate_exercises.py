"""course_utils.migrate.exercises: the 07.x checkers accept the reference answer and refuse wrong ones."""

from __future__ import annotations

import math

from migrate_gains import measured_gain

from course_utils import exercises
from course_utils.migrate import exercises as mine
from course_utils.migrate import ladder

GAIN = measured_gain(1.3, 1.2, 1.4)
SLOW = ladder.MigrationGain.claimed(1.001, "a test")


def test_break_even_checker() -> None:
    right = mine.team_estimate(GAIN).break_even_months
    assert exercises.evaluate("07.1", right, gain=GAIN).correct
    assert exercises.evaluate("07.1", right * 2, gain=GAIN).status == "not yet"
    assert exercises.evaluate("07.1", math.inf, gain=SLOW).correct
    assert exercises.evaluate("07.1", 5.0, gain=SLOW).status == "not yet"
    assert exercises.evaluate("07.1", None, gain=GAIN).status == "not attempted"
    assert exercises.evaluate("07.1", "soon", gain=GAIN).status == "not yet"


def test_time_to_result_checker() -> None:
    right = 72 / (72 * 3600 / (72 * 3600 / 1.3 + 20))
    assert exercises.evaluate("07.2", right, gain=GAIN, compile_s=20.0).correct
    assert exercises.evaluate("07.2", 3.0, gain=GAIN, compile_s=20.0).status == "not yet"


def test_graph_count_checker_is_exact() -> None:
    assert exercises.evaluate("07.3", 2, measured=2).correct
    assert exercises.evaluate("07.3", 1, measured=2).status == "not yet"
    assert exercises.evaluate("07.3", True, measured=1).status == "not yet"
