"""course_utils.graphs.exercises: each checker accepts the right answer and explains a wrong one."""

from __future__ import annotations

import pytest

from course_utils import env, exercises, graphs, timing


def _runs():
    eager = {"torch": timing.Measurement("e", (2e-3,), first_call=2e-3)}
    compiled = {"torch": timing.Measurement("c", (1e-3,), first_call=1.0)}
    return eager, compiled


def test_01_1_seconds_saved() -> None:
    eager, compiled = _runs()
    right = {"torch": graphs.exercises.seconds_saved(eager["torch"], compiled["torch"], 50_000)}
    assert exercises.evaluate("01.1", right, eager_m=eager, compiled_m=compiled).correct
    wrong = exercises.evaluate("01.1", {"torch": 1.0}, eager_m=eager, compiled_m=compiled)
    assert wrong.status == "not yet"
    assert exercises.evaluate("01.1", None, eager_m=eager, compiled_m=compiled).status == "not attempted"
    assert exercises.evaluate("01.1", "lots", eager_m=eager, compiled_m=compiled).status == "not yet"


def test_01_2_scores_the_prediction_against_a_real_count() -> None:
    pytest.importorskip("torch")
    assert exercises.evaluate("01.2", (2, 5)).correct
    assert exercises.evaluate("01.2", (5, 5)).status == "not yet"
    assert exercises.evaluate("01.2", 7).status == "not yet"


def test_01_3_static_argnums() -> None:
    pytest.importorskip("jax")
    assert exercises.evaluate("01.3", 2).correct and not exercises.evaluate("01.3", 3).correct


def test_01_4_python_numbers_retrace() -> None:
    if not env.available("tensorflow"):
        pytest.skip("tensorflow not installed")
    assert exercises.evaluate("01.4", (3, 1)).correct and not exercises.evaluate("01.4", (1, 1)).correct
