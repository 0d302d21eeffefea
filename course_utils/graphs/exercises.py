"""Checkers of notebook 01's exercises: each computes the expected answer from this run's measurements (passed
as context) or by running the reference itself, and says what is still wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from course_utils import declare, env, exercises, timing
from course_utils.graphs.breakeven import cumulative_time
from course_utils.graphs.capture import count_compiles

LENGTHS = (100, 200, 300, 400, 500)


@declare.checked
def seconds_saved(eager: timing.Measurement, compiled: timing.Measurement, calls: declare.PositiveInt) -> float:
    """Eager total minus compiled total after ``calls`` calls (first calls included); negative: compiling costs."""
    eager_total = cumulative_time(eager.first_call or eager.median, eager.median, [calls])[0]
    return float(eager_total - cumulative_time(compiled.first_call, compiled.median, [calls])[0])


@exercises.register("01.1", hint="total time is first_call + (calls - 1) * per_call; compare eager with compiled")
def _saved_over_calls(answer: Any, *, eager_m: Mapping[str, Any], compiled_m: Mapping[str, Any],
                      calls: int = 50_000) -> str | None:
    if not isinstance(answer, Mapping):
        raise TypeError(f"the answer should be a dict framework -> seconds saved; got {type(answer).__name__}")
    missing = sorted(set(compiled_m) - set(answer))
    if missing:
        return f"no answer for {', '.join(missing)}"
    for fw in compiled_m:
        expected = seconds_saved(eager_m[fw], compiled_m[fw], calls)
        problem = exercises.close(answer[fw], expected, rel=0.05)
        if problem:
            return f"{fw}: {problem}"
    return None


@exercises.register("01.2", hint="automatic dynamic: the second new length makes Dynamo compile a shape-generic graph")
def _predicted_torch_compiles(answer: Any, **_: Any) -> str | None:
    """The learner predicts (default, dynamic=False) compilations for five lengths; scored against a real count."""
    import torch

    if not isinstance(answer, tuple) or len(answer) != 2:
        raise TypeError(f"the answer should be a pair (default, dynamic=False); got {answer!r}")
    inputs = [(torch.ones(n),) for n in LENGTHS]
    measured = (count_compiles("torch", _double, inputs), count_compiles("torch", _double, inputs, dynamic=False))
    if tuple(answer) == measured:
        return None
    return f"you predicted {answer}; this run counted {measured}"


def _double(x: Any) -> Any:
    return x * 2 + 1


@exercises.register("01.3", hint="jax.jit(f, static_argnums=1) traces once per distinct value of the static argument")
def _static_traces(answer: Any, **_: Any) -> str | None:
    import jax.numpy as jnp

    x = jnp.ones(4)
    flags = [(x, True), (x, False), (x, True)]
    expected = count_compiles("jax", lambda x, scale_down: x / 2 if scale_down else x, flags, static_argnums=1)
    return exercises.exact(answer, expected)


@exercises.register("01.4", hint="a Python number is part of the trace's signature; a tensor is an input")
def _tf_python_numbers(answer: Any, **_: Any) -> str | None:
    tf = env.import_tensorflow()
    if not isinstance(answer, tuple) or len(answer) != 2:
        raise TypeError(f"the answer should be a pair (traces with Python floats, traces with tf.constant); "
                        f"got {answer!r}")
    x = tf.ones(4)
    scales = (0.5, 1.5, 2.5)
    expected = (count_compiles("tf", lambda x, s: x * s, [(x, s) for s in scales]),
                count_compiles("tf", lambda x, s: x * s, [(x, tf.constant(s)) for s in scales]))
    if tuple(answer) == expected:
        return None
    return f"{answer} is not what this run counts"
