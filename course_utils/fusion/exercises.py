"""Checkers for notebook 02's exercises; ``cu.exercises.check("02.k", answer, ...)`` calls them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from course_utils import declare, exercises
from course_utils.declare import NonNegativeFloat, PositiveInt, Range
from course_utils.fusion.traffic import trace_traffic


def _softmax_inputs(seed: int) -> tuple[Any]:
    import torch

    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(16, 64, generator=generator) * (1 + 10 * seed),)


@exercises.register("02.1", hint="write softmax with amax, exp, sum and a division over the last axis")
@declare.checked
def softmax_written_out(answer: Callable[..., Any]) -> str | None:
    """Right when ``answer(x)`` equals ``torch.softmax(x, -1)`` on random inputs and is built from basic ops."""
    import torch

    problem = exercises.same_function(answer, lambda x: torch.softmax(x, -1), _softmax_inputs, rtol=1e-5)
    if problem is not None:
        return problem
    ops = [op.name for op in trace_traffic(answer, ((16, 64), "float32")).ops]
    if any("softmax" in name for name in ops):
        return "it calls a softmax op itself; write it from amax, exp, sum and a division"
    return None


@exercises.register("02.2", hint="each eager op writes a fresh output as large as x; each 4 KiB page faults once")
@declare.checked
def page_fault_prediction(answer: Any, *, measured: NonNegativeFloat, pages: PositiveInt) -> str | None:
    """Predicted page faults per call, scored against this run's count: within 25% (or 5% of the pages)."""
    slack = max(0.25 * measured, 0.05 * pages)
    return exercises.within(answer, max(measured - slack, 0.0), measured + slack)


@declare.checked
def decomposed_tanh_error(points: Annotated[int, Range(2, 10**7)] = 20001,
                          span: Annotated[float, Range(0, 10, low_open=True)] = 1e-3) -> float:
    """Max relative error of ``2 / (1 + exp(-2v)) - 1`` against ``torch.tanh`` for float32 v in [-span, span]."""
    import torch

    v = torch.linspace(-span, span, points, dtype=torch.float32)
    v = v[v != 0]
    exact = torch.tanh(v.double())
    approx = (2.0 / (1.0 + torch.exp(-2.0 * v)) - 1.0).double()
    return float(((approx - exact).abs() / exact.abs()).max())


@exercises.register("02.3", hint="measure the relative error of the exp-based tanh for small |v| (|v| < 1e-3)")
def decomposed_tanh_accuracy(answer: Any) -> str | None:
    """The max relative error of the exp-based tanh near zero, within 3x of the reference computed in float32."""
    reference = decomposed_tanh_error()
    return exercises.within(answer, reference / 3, reference * 3)
