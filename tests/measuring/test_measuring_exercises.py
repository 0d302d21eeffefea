"""course_utils.measuring.exercises: each checker accepts the right answer, refuses a wrong one (naming the usual
slip), and says 'not attempted' for None; none depends on the machine's load."""

from __future__ import annotations

from course_utils import exercises, roofline
from course_utils.measuring import speedups

MACHINE = roofline.Machine("torch", "cpu", {"triad": 2e10}, {"mm": 1e11})


def test_predict_matmul() -> None:
    right = MACHINE.roofline_time(2 * 512**3, 3 * 4 * 512**2)  # compute-bound here: 2.68 ms

    def check(answer: object) -> exercises.Result:
        return exercises.evaluate("00.1", answer, machine=MACHINE)

    assert check(right).correct and check(1.04 * right).correct
    assert "two" in check(right / 2).detail  # n³ FLOPs
    assert "memory time" in check(3 * 4 * 512**2 / 2e10).detail
    assert "milliseconds" in check(right * 1e3).detail
    assert "x the roofline's bound" in check(10 * right).detail
    assert check(-1.0).status == "not yet" and check("soon").status == "not yet"
    assert check(None).status == "not attempted"
    memory_bound = roofline.Machine("torch", "cpu", {"triad": 1e9}, {"mm": 1e13})
    slip = exercises.evaluate("00.1", 2 * 512**3 / 1e13, machine=memory_bound)
    assert "compute time" in slip.detail


def test_host_copy() -> None:
    def check(answer: object) -> exercises.Result:
        return exercises.evaluate("00.2", answer, fastest_ready=1e-3, typical_ready=1.5e-3)

    assert check(1.2e-3).correct and check(0.6e-3).correct and check(5e-3).correct  # load only slows
    assert "before the result was ready" in check(1e-5).detail
    assert "not a loop" in check(1.0).detail
    assert check(None).status == "not attempted"


def test_amdahl_exercise() -> None:
    right = speedups.amdahl([0.3, 0.7], [5.0, 1.0])
    assert exercises.evaluate("00.3", right, share=0.3, kernel_speedup=5.0).correct
    wrong = exercises.evaluate("00.3", 5.0, share=0.3, kernel_speedup=5.0)
    assert wrong.status == "not yet" and "kernel's speed-up" in wrong.detail
    assert exercises.evaluate("00.3", None, share=0.3, kernel_speedup=5.0).status == "not attempted"
