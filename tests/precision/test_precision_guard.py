"""course_utils.precision.guard: learner code under a deadline that names it."""

from __future__ import annotations

import signal
import time

import pytest

from course_utils import precision as P


def test_a_call_past_its_deadline_is_stopped_and_named() -> None:
    def slow_step():
        while True:
            pass

    before = signal.getitimer(signal.ITIMER_REAL)[0]  # pytest-timeout may hold an alarm of its own
    with pytest.raises(P.LearnerTimeout, match="slow_step"), P.deadline(0.2, slow_step, "step"):
        slow_step()
    after = signal.getitimer(signal.ITIMER_REAL)[0]
    assert after == 0.0 if before == 0.0 else before - 5 < after <= before  # the outer alarm is given back


def test_a_call_within_its_deadline_runs_and_an_outer_deadline_survives() -> None:
    def quick():
        return 1

    before = signal.getitimer(signal.ITIMER_REAL)[0]
    with P.deadline(5, quick, "outer"):
        with P.deadline(1, quick, "inner"):
            assert quick() == 1
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 3 < remaining <= 5
    time.sleep(0.01)
    after = signal.getitimer(signal.ITIMER_REAL)[0]
    assert after == 0.0 if before == 0.0 else before - 5 < after <= before


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), 10**9])
def test_bad_deadlines_are_refused(seconds) -> None:
    with pytest.raises(ValueError, match="seconds"):
        P.deadline(seconds, print)  # refused at the call, before any block runs


def test_an_inner_deadline_never_extends_an_outer_one() -> None:
    def slow():
        while True:
            pass

    with pytest.raises(P.LearnerTimeout, match="outer_fn"):
        with P.deadline(0.2, outer_fn, "outer"):
            with P.deadline(30, slow, "inner"):  # longer than what is left outside: the outer one fires
                slow()


def outer_fn():
    return None
