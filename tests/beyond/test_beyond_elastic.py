"""The elastic run's bookkeeping, its reference, and one real crash-and-resume."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils.beyond import elastic


def test_lost_steps_formula() -> None:
    assert elastic.lost_steps(8, 3) == 2
    assert elastic.lost_steps(9, 3) == 0
    assert elastic.lost_steps(5, 10) == 5


def test_run_bookkeeping_counts_steps_computed_twice() -> None:
    run = elastic.ElasticRun(12, 3, 8, 6, {0: list(range(8)), 1: list(range(6, 12))}, {}, 1.0, None)
    assert run.lost_steps == 2 and run.attempts == 2
    assert run.table().column("end") == ["crashed", "finished"]
    assert "resumed from step 6" in repr(run)


def test_startups_are_the_slowest_rank_per_attempt() -> None:
    from course_utils.distributed.launcher import LaunchResult

    starts = {0: (2.0, 3.0), 1: (2.5, 1.0)}  # rank: seconds of attempt 0, attempt 1
    records = {r: [{"kind": "startup", "attempt": a, "seconds": s} for a, s in enumerate(per)]
               for r, per in starts.items()}
    result = LaunchResult("elastic_train.py", 2, [], 12.0, [], records)
    assert elastic.startups(result) == {"startup 0": 2.5, "startup 1": 3.0}
    assert math.isnan(elastic.startups(LaunchResult("elastic_train.py", 2, [], 12.0, [], {0: []}))["startup 1"])


def test_reference_is_deterministic() -> None:
    a, b = elastic.reference(steps=3), elastic.reference(steps=3)
    assert np.array_equal(a, b) and a.ndim == 1


@pytest.mark.integration
def test_real_crash_resumes_to_the_uninterrupted_weights() -> None:
    run = elastic.run(steps=6, every=2, crash_at=3, echo=False, progress=False)
    assert run.attempts == 2 and run.resumed_from == 2 and run.lost_steps == 1
    assert all(run.timeline[f"startup {a}"] > 0 and run.timeline[f"training {a}"] > 0 for a in (0, 1))
    parts = sum(v for k, v in run.timeline.items() if k != "wall")  # the parts and "outside" add up to the wall
    assert parts == pytest.approx(run.timeline["wall"]) and run.timeline["wall"] == pytest.approx(run.seconds)
    ref = elastic.reference(steps=6)
    assert max(float(np.max(np.abs(w - ref))) for w in run.weights.values()) < 1e-5
