"""course_utils.measuring.exercises: each checker accepts the right answer, refuses a wrong one, and says
'not attempted' for None."""

from __future__ import annotations

from course_utils import exercises, measuring, roofline

MACHINE = roofline.Machine("torch", "cpu", {"triad": 2e10}, {"mm": 1e11})


def test_predict_matmul() -> None:
    predicted = MACHINE.roofline_time(2 * 512**3, 3 * 4 * 512**2)
    assert exercises.evaluate("00.1", predicted, machine=MACHINE, measured=1.5 * predicted).correct
    assert exercises.evaluate("00.1", predicted, machine=MACHINE, measured=10 * predicted).correct  # the model
    assert exercises.evaluate("00.1", predicted / 100, machine=MACHINE, measured=predicted).status == "not yet"
    assert exercises.evaluate("00.1", predicted / 2, machine=MACHINE, measured=10 * predicted).status == "not yet"
    assert exercises.evaluate("00.1", "soon", machine=MACHINE, measured=predicted).status == "not yet"
    assert exercises.evaluate("00.1", None, machine=MACHINE).status == "not attempted"


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
