"""course_utils.precision.exercises: each checker accepts the solution, rejects a wrong answer, and says
'not attempted' for None."""

from __future__ import annotations

import pytest

from course_utils import exercises, precision  # noqa: F401  (precision registers 03's checkers)


def test_overflow_exponent_prediction() -> None:
    over = {24: False, 25: False, 26: True, 27: True}
    assert exercises.evaluate("03.1", 26, overflows=over).correct
    assert exercises.evaluate("03.1", 25, overflows=over).correct  # one power of two of slack
    assert exercises.evaluate("03.1", 20, overflows=over).status == "not yet"
    assert exercises.evaluate("03.1", "26", overflows=over).status == "not yet"
    assert exercises.evaluate("03.1", None, overflows=over).status == "not attempted"


def _kahan(values: object) -> float:
    """A compensated sum with every operation in bf16: a right answer to 03.2."""
    import ml_dtypes
    import numpy as np

    s = c = ml_dtypes.bfloat16(0)
    for v in np.asarray(values).astype(ml_dtypes.bfloat16):
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
    return float(s)


def test_kahan_function() -> None:
    import ml_dtypes
    import numpy as np

    assert exercises.evaluate("03.2", _kahan).correct
    naive = lambda v: float(np.cumsum(v, dtype=ml_dtypes.bfloat16)[-1])  # noqa: E731
    assert exercises.evaluate("03.2", naive).status == "not yet"
    assert "not a bf16 value" in exercises.evaluate("03.2", lambda v: float(v.astype(np.float64).sum())).detail
    assert "raised" in exercises.evaluate("03.2", lambda v: 1 / 0).detail
    assert exercises.evaluate("03.2", 3.0).status == "not yet"


def test_pair_prediction(capsys: pytest.CaptureFixture[str]) -> None:
    assert exercises.evaluate("03.3", 7.2e6, measured=7e6).correct
    assert exercises.evaluate("03.3", 14e6, measured=7e6).status == "not yet"
    exercises.check("03.3", None, measured=7e6)
    assert capsys.readouterr().out.strip() == "exercise 03.3: not attempted"
