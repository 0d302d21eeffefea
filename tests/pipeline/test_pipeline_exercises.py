"""course_utils.pipeline.exercises: right, wrong, missing and malformed answers to 04.1-04.3."""

from __future__ import annotations

import numpy as np

from course_utils import exercises, pipeline  # noqa: F401  (importing pipeline registers 04.k)

WAITS = {0: 0.013, 1: 0.0044, 2: 0.0018, 4: 0.0014}


def status(exercise_id: str, answer, **context) -> str:
    return exercises.evaluate(exercise_id, answer, **context).status


def test_workers_needed() -> None:
    run = dict(wait=0.013, compute=0.0125, free=1, waits=WAITS)
    assert status("04.1", 1, **run) == "correct"  # the model: ceil(13 / 12.5) = 2, capped at 1 free core
    assert status("04.1", 2, **{**run, "free": 3}) == "correct"
    assert status("04.1", 4, **run) == "not yet"
    assert status("04.1", 0, **run) == "not yet"
    assert status("04.1", "one", **run) == "not yet"
    assert status("04.1", None, **run) == "not attempted"
    busy = dict(wait=0.013, compute=0.0125, free=1, waits={0: 0.1, 1: 0.07, 2: 0.04, 4: 0.05})
    assert status("04.1", 2, **busy) == "correct"  # what the sweep showed on a loaded machine


# per-round medians, paired round by round
FAST, SLOW = [0.012, 0.0125, 0.013, 0.0128, 0.0122], [0.016, 0.017, 0.0165, 0.018, 0.0168]
NOISY = [0.008, 0.019, 0.010, 0.0175, 0.011]  # faster in some rounds, slower in others: the interval contains 1


def test_processes_or_threads_follows_the_run() -> None:
    assert status("04.2", "threads", thread_rounds=FAST, process_rounds=SLOW) == "correct"
    assert status("04.2", "processes", thread_rounds=FAST, process_rounds=SLOW) == "not yet"
    assert status("04.2", "tie", thread_rounds=FAST, process_rounds=SLOW) == "not yet"
    assert status("04.2", " Processes", thread_rounds=SLOW, process_rounds=FAST) == "correct"
    assert status("04.2", "tie", thread_rounds=FAST, process_rounds=NOISY) == "correct"
    assert status("04.2", "threads", thread_rounds=FAST, process_rounds=NOISY) == "not yet"  # within the noise
    assert status("04.2", "processes", thread_rounds=NOISY, process_rounds=FAST) == "not yet"
    assert status("04.2", "fibres", thread_rounds=FAST, process_rounds=SLOW) == "not yet"
    assert status("04.2", None, thread_rounds=FAST, process_rounds=SLOW) == "not attempted"


def test_utilisation_function() -> None:
    def right(waits, computes):
        w, c = np.asarray(waits)[1:], np.asarray(computes)[1:]
        return c.sum() / (w.sum() + c.sum())

    def with_startup(waits, computes):
        return np.sum(computes) / (np.sum(waits) + np.sum(computes))

    assert status("04.3", right) == "correct"
    assert status("04.3", with_startup) == "not yet"
    assert status("04.3", 0.9) == "not yet"


def test_a_bad_context_names_its_argument() -> None:
    short = exercises.evaluate("04.2", "tie", thread_rounds=FAST, process_rounds=SLOW[:3])
    assert short.status == "not yet" and "process_rounds and thread_rounds must be the same length" in short.detail
    no_zero = exercises.evaluate("04.1", 1, wait=0.01, compute=0.01, free=1, waits={1: 0.01})
    assert "waits must include 0 workers" in no_zero.detail
