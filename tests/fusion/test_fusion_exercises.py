"""course_utils.fusion.exercises: each checker accepts the right answer, refuses a wrong one, and
'not attempted' for None."""

from __future__ import annotations

import pytest

from course_utils import exercises, fusion

torch = pytest.importorskip("torch")


def softmax(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def test_softmax_exercise() -> None:
    assert exercises.evaluate("02.1", softmax).correct
    assert exercises.evaluate("02.1", lambda x: torch.softmax(x, -1)).status == "not yet"  # calls softmax itself
    assert exercises.evaluate("02.1", lambda x: torch.exp(x)).status == "not yet"
    assert exercises.evaluate("02.1", "softmax").status == "not yet"
    assert exercises.evaluate("02.1", None).status == "not attempted"


def test_page_fault_prediction_is_scored_against_the_run() -> None:
    assert exercises.evaluate("02.2", 1024, measured=1024.0, pages=1024).correct
    assert exercises.evaluate("02.2", 0, measured=10.0, pages=1024).correct  # both about none
    assert exercises.evaluate("02.2", 0, measured=1024.0, pages=1024).status == "not yet"
    assert exercises.evaluate("02.2", "many", measured=1024.0, pages=1024).status == "not yet"


def test_decomposed_tanh_error_exercise() -> None:
    reference = fusion.exercises.decomposed_tanh_error()
    assert 0 < reference <= 1.0
    assert exercises.evaluate("02.3", reference).correct
    assert exercises.evaluate("02.3", reference / 100).status == "not yet"


def test_checks_print_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    exercises.check("02.1", None)
    assert capsys.readouterr().out == "exercise 02.1: not attempted\n"
