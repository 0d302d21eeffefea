"""Checkers of notebook 03's exercises; each compares the learner's answer with this run's measurements."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

import numpy as np

from course_utils import declare, exercises
from course_utils.declare import NonEmpty, PositiveFloat, PositiveInt


@exercises.register("03.1", hint="predict k = ceil(log2(fp16 max / max|g|)) from the fp32 gradients, then test it")
@declare.checked
def _overflow_exponent(answer: Any, *, overflows: Annotated[Mapping[int, bool], NonEmpty]) -> str | None:
    """A predicted power of two at which fp16 gradients overflow, scored against the smallest k that did."""
    hits = sorted(k for k, over in overflows.items() if over)
    if not hits:
        raise ValueError("overflows must contain at least one exponent that overflowed")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        raise TypeError(f"the answer should be an integer exponent k (scale 2**k); got {answer!r}")
    measured = hits[0]
    if abs(int(answer) - measured) <= 1:
        return None
    return f"2^{int(answer)} is {'too high' if answer > measured else 'too low'}: this run overflowed from 2^{measured}"


@exercises.register("03.2", hint="keep a compensation c in bf16: y = x - c; t = s + y; c = (t - s) - y; s = t")
@declare.checked
def _kahan(answer: Callable[[Any], Any], *, trials: PositiveInt = 3) -> str | None:
    """A function summing bf16 values in bf16 with compensation: within 1% of the exact sum, a bf16 result."""
    import ml_dtypes

    for seed in range(trials):
        values = np.random.default_rng(seed).random(3000).astype(ml_dtypes.bfloat16)
        exact = float(values.astype(np.float64).sum())
        try:
            got = float(answer(values))
        except Exception as exc:  # the learner's function failing is an answer, not a crash
            return f"your function raised {type(exc).__name__}: {exc}"
        if float(ml_dtypes.bfloat16(got)) != got:
            return f"{got!r} is not a bf16 value: keep the running sum in bf16"
        if not abs(got - exact) / exact < 0.01:
            return f"error {abs(got - exact) / exact:.1%} of the exact sum (a naive bf16 sum is off by ~90%)"
    return None


@exercises.register("03.3", hint="each pair keeps only its input; a pair's inside is recomputed during backward")
@declare.checked
def _pair_prediction(answer: Any, *, measured: PositiveFloat) -> str | None:
    """Predicted bytes saved for backward when checkpointing pairs of blocks, within 25% of this run's count."""
    return exercises.within(answer, 0.75 * measured, 1.25 * measured)
