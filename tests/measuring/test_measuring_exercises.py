"""course_utils.measuring.exercises: each checker accepts the right answer, refuses a wrong one, and says
'not attempted' for None."""

from __future__ import annotations

from course_utils import exercises, measuring, roofline

MACHINE = roofline.Machine("torch", "cpu", {"triad": 2e10}, {"mm": 1e11})


def test_predict_matmul() -> None:
    predicted = MACHINE.roofline_time(2 * 512**3, 3 * 4 * 512**2)
    def check(answer: object, measured: float, drift_now: float = 1.0) -> str:
        return exercises.evaluate("00.1", answer, machine=MACHINE, measured=measured, drift_now=drift_now).status

    assert check(predicted, 1.5 * predicted) == "correct"
    assert check(predicted, 0.6 * predicted) == "correct"
    assert check(predicted, 10 * predicted) == "not yet"
    assert check(predicted, 0.4 * predicted) == "not yet"
    assert check(predicted, 0.4 * predicted, drift_now=3.0) == "correct"  # the roof was measured in a busy moment
    assert check(predicted / 100, predicted) == "not yet"
    assert check(predicted / 2, 10 * predicted) == "not yet"
    assert check("soon", predicted) == "not yet"
    assert exercises.evaluate("00.1", None, machine=MACHINE).status == "not attempted"
    assert measuring.exercises.drift(MACHINE) == 1.0  # no torch probe in this machine: nothing to scale


def test_host_copy() -> None:
    assert exercises.evaluate("00.2", 1.2e-3, synchronised=1e-3, naive=1e-5).correct
    assert exercises.evaluate("00.2", 1e-5, synchronised=1e-3, naive=1e-5).status == "not yet"  # not synchronised
    assert exercises.evaluate("00.2", 0.2e-3, synchronised=1e-3, naive=1e-5).correct  # load between the two
    assert exercises.evaluate("00.2", None, synchronised=1e-3, naive=1e-5).status == "not attempted"


def test_amdahl_exercise() -> None:
    right = measuring.amdahl([0.3, 0.7], [5.0, 1.0])
    assert exercises.evaluate("00.3", right, share=0.3, kernel_speedup=5.0).correct
    wrong = exercises.evaluate("00.3", 5.0, share=0.3, kernel_speedup=5.0)
    assert wrong.status == "not yet" and "kernel's speed-up" in wrong.detail
    assert exercises.evaluate("00.3", None, share=0.3, kernel_speedup=5.0).status == "not attempted"
