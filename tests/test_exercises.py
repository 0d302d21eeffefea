"""course_utils.exercises: right, wrong, missing and malformed answers; unknown ids are a clear error."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import exercises


@exercises.register("99.1", hint="count the passes over memory")
def _count(answer, *, expected):
    return exercises.exact(answer, expected)


@exercises.register("99.2", hint="a speed-up within the band this run supports")
def _band(answer, *, low, high):
    return exercises.within(answer, low, high)


@exercises.register("99.3", hint="write f(x) = 2x + 1")
def _function(answer):
    return exercises.same_function(answer, lambda x: 2 * x + 1,
                                   lambda seed: (np.random.default_rng(seed).normal(size=4),))


@exercises.register("99.4", hint="a JSON object with a 'cluster' key")
def _structure(answer):
    import json

    return None if json.loads(answer)["cluster"].get("worker") else "no workers listed"


def test_right_wrong_and_missing(capsys) -> None:
    exercises.check("99.1", 3, expected=3)
    exercises.check("99.1", None, expected=3)
    exercises.check("99.1", 4, expected=3)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "exercise 99.1: correct"
    assert lines[1] == "exercise 99.1: not attempted"
    assert lines[2].startswith("exercise 99.1: not yet: ")


def test_malformed_answers_are_not_yet_never_an_exception() -> None:
    result = exercises.evaluate("99.2", "fast", low=1.0, high=2.0)
    assert result.status == "not yet" and "number" in result.detail
    assert exercises.evaluate("99.1", True, expected=1).status == "not yet"
    assert exercises.evaluate("99.2", float("nan"), low=1.0, high=2.0).status == "not yet"
    for shape in ('[1]', '{"cluster": []}', '{}', 'not json', 42):  # wrong structure: never an exception
        result = exercises.evaluate("99.4", shape)
        assert result.status == "not yet" and "could not read" in result.detail, shape
    assert exercises.evaluate("99.4", '{"cluster": {"worker": ["127.0.0.1:1"]}}').correct


def test_bands_and_functions() -> None:
    assert exercises.evaluate("99.2", 1.5, low=1.0, high=2.0).correct
    assert not exercises.evaluate("99.2", 3, low=1.0, high=2.0).correct
    assert exercises.evaluate("99.3", lambda x: 1 + x * 2).correct
    wrong = exercises.evaluate("99.3", lambda x: 2 * x)
    assert wrong.status == "not yet" and "differ" in wrong.detail
    crash = exercises.evaluate("99.3", lambda x: x.nope)
    assert "raised AttributeError" in crash.detail


def test_close_is_relative() -> None:
    assert exercises.close(10.5, 10.0, rel=0.1) is None
    assert "too high" in exercises.close(12.0, 10.0, rel=0.1)


def test_unknown_or_malformed_ids_are_errors() -> None:
    with pytest.raises(ValueError, match="exercise_id"):
        exercises.check("98.7", 1)
    with pytest.raises(ValueError, match="exercise_id"):
        exercises.register("2.1", hint="x")
    with pytest.raises(TypeError, match="exercise_id"):
        exercises.evaluate(21, 1)
    with pytest.raises(ValueError, match="hint"):
        exercises.register("99.9", hint="")


def test_an_id_cannot_be_taken_twice() -> None:
    @exercises.register("99.7", "a hint")
    def first(answer, **context):
        return None

    exercises.register("99.7", "a hint")(first)  # the same checker again (a module reloaded) is fine
    with pytest.raises(ValueError, match="already registered"):
        @exercises.register("99.7", "another")
        def second(answer, **context):
            return None


def test_same_function_names_a_callback_that_returned_none_and_stops_a_hung_candidate() -> None:
    import time

    def inputs(seed: int) -> None:  # forgot the return
        np.ones(3)

    with pytest.raises(TypeError, match="make_inputs = .*inputs.* returned NoneType"):
        exercises.same_function(abs, abs, inputs)

    def hangs(x: float) -> float:
        while True:
            time.sleep(0.01)

    problem = exercises.same_function(hangs, abs, lambda seed: (1.0,), timeout=0.3)
    assert "LearnerTimeout" in problem and "hangs" in problem  # an answer ("not yet"), not a hung notebook
    with pytest.raises(ValueError, match="trials"):
        exercises.same_function(abs, abs, lambda seed: (1.0,), trials=10**12)
