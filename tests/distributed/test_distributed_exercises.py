"""course_utils.distributed.exercises: the checkers of notebook 05, right, wrong, missing and malformed."""

from __future__ import annotations

import pytest

from course_utils import distributed as dist
from course_utils import exercises


def _status(exercise_id: str, answer, **context) -> str:
    return exercises.evaluate(exercise_id, answer, **context).status


def test_allreduce_calls_prediction_is_scored_against_the_counts() -> None:
    counts = {"every_micro_batch": 4, "no_sync": 1}
    assert _status("05.1", (4, 1), **counts) == "correct"
    assert _status("05.1", (4, 4), **counts) == "not yet"
    assert _status("05.1", None, **counts) == "not attempted"
    assert _status("05.1", "4 and 1", **counts) == "not yet"


def test_largest_model_per_stage() -> None:
    context = {"device_bytes": 141e9, "n": 64}
    right = {s: dist.comms.largest_model(141e9, 64, s) for s in (0, 2, 3)}
    assert _status("05.2", right, **context) == "correct"
    assert _status("05.2", {**right, 3: right[0]}, **context) == "not yet"
    assert _status("05.2", [1, 2, 3], **context) == "not yet"


def test_first_n_where_communication_exceeds_compute() -> None:
    context = {"nbytes": 4.4e6, "compute_seconds": 0.2e-3, "bandwidth": 12.5e9, "latency": 5e-6}
    expected = next(n for n in range(2, 1025) if dist.ring_allreduce_time(4.4e6, n, 12.5e9, 5e-6) > 0.2e-3)
    assert _status("05.3", expected, **context) == "correct"
    assert _status("05.3", expected + 1, **context) == "not yet"
    assert _status("05.3", None, **{**context, "compute_seconds": 1.0}) == "not attempted"
    assert _status("05.3", 2.5, **context) == "not yet"


@pytest.mark.parametrize("exercise_id", ["05.1", "05.2", "05.3"])
def test_each_exercise_is_registered(exercise_id: str) -> None:
    assert exercise_id in exercises.registered()
