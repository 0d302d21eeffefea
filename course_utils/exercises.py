"""A learner's exercise answer checked against this run: lessons ``register`` checkers (None when right, else what is
wrong), and ``check("02.1", answer, **context)`` prints one line; a malformed answer is "not yet", never an error."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from course_utils import calls, declare, validate

Checker = Callable[..., "str | None"]
_ID = re.compile(r"^\d\d\.\d+$")


@dataclass(frozen=True)
class _Entry:
    checker: Checker
    hint: str


_REGISTRY: dict[str, _Entry] = {}
MAX_TRIALS = 1000  # random inputs same_function may try: a handful decide, more is a typo


@declare.checked
@dataclass(frozen=True)
class Result:
    """The outcome of one check: ``status`` is 'correct', 'not attempted' or 'not yet'."""

    exercise_id: Annotated[str, declare.Matches(r"\d\d\.\d+", "like '02.1' (notebook.number)")]
    status: Literal["correct", "not attempted", "not yet"]
    detail: str = ""

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        tail = f": {self.detail}" if self.detail else ""
        return f"exercise {self.exercise_id}: {self.status}{tail}"


def register(exercise_id: str, hint: str) -> Callable[[Checker], Checker]:
    """Decorator: make ``checker(answer, **context)`` the check of ``exercise_id`` ('NN.k')."""
    _check_id(exercise_id)
    validate.text("hint", hint)

    def decorate(checker: Checker) -> Checker:
        validate.function("checker", checker)
        known = _REGISTRY.get(exercise_id)
        if known is not None and _origin(known.checker) != _origin(checker):  # a module reloaded registers again
            raise ValueError(f"exercise_id {exercise_id!r} is already registered by {_origin(known.checker)}: "
                             "choose another id")
        _REGISTRY[exercise_id] = _Entry(checker, hint)
        return checker

    return decorate


def _origin(checker: Checker) -> str:
    return f"{getattr(checker, '__module__', '?')}.{getattr(checker, '__qualname__', repr(checker))}"


def registered() -> list[str]:
    """The exercise ids known so far (those of the lesson packages imported in this process)."""
    return sorted(_REGISTRY)


def evaluate(exercise_id: str, answer: Any, **context: Any) -> Result:
    """Score ``answer`` without printing: None is 'not attempted'; the checker decides the rest."""
    _check_id(exercise_id)
    if exercise_id not in _REGISTRY:
        known = ", ".join(registered()) or "none (import the lesson's package, e.g. cu.fusion)"
        raise ValueError(f"exercise_id {exercise_id!r} is not registered; known: {known}")
    entry = _REGISTRY[exercise_id]
    if answer is None:
        return Result(exercise_id, "not attempted")
    try:
        problem = entry.checker(answer, **context)
    except (TypeError, ValueError, LookupError, AttributeError) as exc:  # an answer of the wrong shape
        problem = f"could not read this answer ({type(exc).__name__}: {exc}); {entry.hint}"
    if problem is None:
        return Result(exercise_id, "correct")
    return Result(exercise_id, "not yet", str(problem) or entry.hint)


def check(exercise_id: str, answer: Any, **context: Any) -> None:
    """Print 'exercise NN.k: correct', 'exercise NN.k: not attempted' or 'exercise NN.k: not yet: <hint>'."""
    print(evaluate(exercise_id, answer, **context))


def _check_id(exercise_id: Any) -> None:
    validate.instance("exercise_id", exercise_id, str)
    if not _ID.match(exercise_id):
        raise ValueError(f"exercise_id must look like '02.1' (notebook.number); got {exercise_id!r}")


# ---------------------------------------------------------------------------------------------------------
# Comparisons for checkers: each returns None when the answer is right, else what is wrong.


def exact(answer: Any, expected: Any) -> str | None:
    """Counts, booleans, names: right only when equal (a bool is not accepted for a number)."""
    if isinstance(expected, bool) != isinstance(answer, bool):
        raise TypeError(f"the answer should be {type(expected).__name__}, like {expected!r}; got {answer!r}")
    if answer == expected:
        return None
    return f"{answer!r} is not what this run gives"


@declare.checked
def close(answer: Any, expected: float, rel: declare.PositiveFloat = 0.1) -> str | None:
    """A measured or computed number: right within ``rel`` (relative) of ``expected``."""
    value = _as_number(answer)
    if math.isclose(value, expected, rel_tol=rel, abs_tol=0.0 if expected else rel):
        return None
    direction = "too high" if value > expected else "too low"
    return f"{value:.4g} is {direction} (this run: within {rel:.0%} of the value it measured)"


def within(answer: Any, low: float, high: float) -> str | None:
    """A prediction or estimate: right when it falls in the band [low, high] that this run supports."""
    value = _as_number(answer)
    validate.number("low", low)
    validate.number("high", high, low=low)
    if low <= value <= high:
        return None
    return f"{value:.4g} is outside the range this run supports ({low:.3g} to {high:.3g})"


@declare.checked
def same_function(candidate: Callable[..., Any], reference: Callable[..., Any], make_inputs: Callable[[int], tuple],
                  trials: Annotated[int, declare.Range(1, MAX_TRIALS)] = 5, rtol: declare.PositiveFloat = 1e-5, *,
                  timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> str | None:
    """A function the learner wrote: right when it matches ``reference`` on ``trials`` inputs ``make_inputs(seed)``;
    one that raises or does not return within ``timeout`` is an answer, not a hung notebook."""
    import numpy as np

    for seed in range(trials):
        args = calls.call(make_inputs, seed, timeout=timeout, name="make_inputs")
        if not isinstance(args, tuple):
            raise TypeError(f"make_inputs must return the tuple of arguments of one trial; make_inputs = "
                            f"{calls.describe(make_inputs)} returned {type(args).__name__} {args!r:.60}")
        want = np.asarray(calls.call(reference, *args, timeout=timeout, name="reference"))
        try:
            got = np.asarray(calls.call(candidate, *args, timeout=timeout, name="candidate"))
        except Exception as exc:  # the learner's function failing (or never returning) is an answer, not a crash
            return f"your function raised {type(exc).__name__}: {exc}"
        if got.shape != want.shape:
            return f"output shape {got.shape} differs from {want.shape} (trial {seed})"
        if not np.allclose(got, want, rtol=rtol, atol=rtol):
            return f"outputs differ from the reference by up to {np.max(np.abs(got - want)):.3g} (trial {seed})"
    return None


def _as_number(answer: Any) -> float:
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) and type(answer).__module__ != "numpy":
        raise TypeError(f"the answer should be a number; got {type(answer).__name__} {answer!r}")
    value = float(answer)
    if not math.isfinite(value):
        raise ValueError(f"the answer should be a finite number; got {answer!r}")
    return value
