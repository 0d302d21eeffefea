"""course_utils.calls: a learner's function that never returns cannot hang the notebook."""

from __future__ import annotations

import time

import pytest

from course_utils import calls, timing


def never_returns() -> None:
    while True:
        time.sleep(0.01)


def test_a_hung_function_is_stopped_and_named() -> None:
    start = time.perf_counter()
    with pytest.raises(calls.LearnerTimeout, match="step = never_returns") as caught:
        calls.call(never_returns, timeout=0.3, name="step")
    assert time.perf_counter() - start < 2 and "timeout=0.3" in str(caught.value)


def test_a_function_that_returns_is_untouched_and_the_timer_is_cleared() -> None:
    assert calls.call(lambda a, b=1: a + b, 2, b=3, timeout=1) == 5
    time.sleep(1.2)  # a timer left running would raise here


def test_an_enclosing_limit_that_ends_first_wins() -> None:
    with pytest.raises(calls.LearnerTimeout, match="outer"), calls.time_limit(0.3, "outer"):
        calls.call(never_returns, timeout=30)


def test_bad_input_is_named() -> None:
    with pytest.raises(TypeError, match="step"):
        calls.call(42, name="step")
    with pytest.raises(ValueError, match="timeout"):
        calls.call(lambda: 1, timeout=float("nan"))
    with pytest.raises(ValueError, match="timeout"):
        calls.call(lambda: 1, timeout=0)


def test_an_enclosing_limit_keeps_the_time_an_inner_one_did_not_use() -> None:
    # The inner call returns at once; the outer second is then still (almost) whole, not cut by the inner 0.5 s
    # (helpers nest limits: a lesson's time_limit around timing.benchmark, whose calls each have their own).
    with calls.time_limit(1.0, "outer"):
        calls.call(lambda: None, timeout=0.5)
        time.sleep(0.7)


def test_a_limit_checks_its_arguments_at_the_call_not_when_entered() -> None:
    with pytest.raises(ValueError, match="timeout"):
        calls.time_limit(float("nan"), "x")
    with pytest.raises(TypeError, match="what"):
        calls.time_limit(1.0, None)


# Core helpers whose callable argument is not run here: described, wrapped, passed on, or the course's own formatter.
_NOT_RUN_HERE = {"calls.describe", "interop.compile_default", "timing.quartiles",
                 "models.gelu_chain", "models.jax_sgd_step", "exercises.register"}


def test_every_core_helper_that_runs_learner_code_takes_a_timeout() -> None:
    import importlib
    import inspect

    from api_walk import kind_of

    core = ("calls", "compiled", "display", "env", "exercises", "interop", "machine", "memory", "models",
            "notebook", "plotting", "profile", "roofline", "timing")
    missing = []
    for module_name in core:
        module = importlib.import_module(f"course_utils.{module_name}")
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            params = inspect.signature(fn).parameters
            kinds = {p.name: kind_of(p.name, str(p.annotation)) for p in params.values()}
            runs = [p for p in params.values() if kinds[p.name] == "callable" or p.name == "fn"
                    or p.name == "calls" and kinds[p.name] == "mapping"]
            if runs and f"{module_name}.{name}" not in _NOT_RUN_HERE and "timeout" not in params:
                missing.append(f"{module_name}.{name}({', '.join(p.name for p in runs)})")
    assert not missing, f"no timeout= although they call the learner's code: {missing}"


def test_the_default_timeout_is_sized_to_the_lesson_and_stated(monkeypatch) -> None:
    monkeypatch.setenv("COURSE_SIZE", "ci")
    assert calls.default_timeout() == calls.DEFAULT_TIMEOUTS["ci"] <= 120
    assert max(calls.DEFAULT_TIMEOUTS.values()) <= 180 and set(calls.DEFAULT_TIMEOUTS) == set(calls.env.SIZES)
    monkeypatch.setitem(calls.DEFAULT_TIMEOUTS, "ci", 0.3)
    with pytest.raises(calls.LearnerTimeout, match=r"the default at size ci is 0\.3 s; pass timeout= to allow more"):
        calls.call(never_returns, name="step")
    with pytest.raises(calls.LearnerTimeout, match=r"the default at size ci is 0\.3 s"):
        timing.benchmark(never_returns)
