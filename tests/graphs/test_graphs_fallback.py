"""course_utils.graphs.fallback: compile-or-fall-back, the eager switches, result comparison."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import env, graphs

torch = pytest.importorskip("torch")


def _strict(fn):
    """The learner's compile call: with fullgraph, a graph break is a failure."""
    return torch.compile(fn, fullgraph=True, backend="eager")


def _jit():
    import jax

    return jax.jit


def _branchy_torch(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def test_fallback_keeps_a_compilable_function_compiled() -> None:
    jnp = pytest.importorskip("jax.numpy")
    decision = graphs.compile_or_fallback(jnp.sin, (jnp.arange(4.0),), compiler=_jit(), framework="jax")
    assert decision.compiled and decision.max_abs_diff is not None and decision.max_abs_diff < 1e-6
    assert "agrees with eager" in decision.reason and "compiled" in repr(decision)
    assert np.allclose(decision(jnp.arange(3.0)), np.sin(np.arange(3.0)))


def test_fallback_on_graph_break_in_torch_returns_eager() -> None:
    decision = graphs.compile_or_fallback(_branchy_torch, (torch.ones(3),), compiler=_strict, framework="torch")
    assert not decision.compiled and decision.fn is _branchy_torch
    assert decision.reason.startswith("compile failed: ") and "\n" not in decision.reason
    assert torch.equal(decision(-torch.ones(2)), _branchy_torch(-torch.ones(2)))
    assert "EAGER fallback" in repr(decision)


def test_fallback_on_tracer_error_in_jax() -> None:
    jnp = pytest.importorskip("jax.numpy")
    decision = graphs.compile_or_fallback(lambda x: x if x.sum() > 0 else -x, (jnp.ones(2),), compiler=_jit(),
                                          framework="jax")
    assert not decision.compiled and "TracerBoolConversionError" in decision.reason


def test_fallback_catches_a_compiled_function_that_disagrees() -> None:
    jnp = pytest.importorskip("jax.numpy")
    seen = []

    def running_sum(x):
        seen.append(x)
        return sum(seen)

    decision = graphs.compile_or_fallback(running_sum, (jnp.ones(3),), compiler=_jit(), framework="jax")
    assert not decision.compiled and decision.reason.startswith("disagrees with eager")
    assert decision.max_abs_diff == pytest.approx(1.0)


def test_fallback_in_tensorflow_compiles_autograph_if() -> None:
    pytest.importorskip("tensorflow")
    tf = env.import_tensorflow()

    def branchy(x):
        if tf.reduce_sum(x) > 0:
            return x * 2
        return x - 1

    decision = graphs.compile_or_fallback(branchy, (tf.ones(3),), compiler=lambda f: tf.function(f, jit_compile=True),
                                          framework="tensorflow")
    assert decision.compiled and decision.framework == "tensorflow"


def test_fallback_lets_an_eager_error_of_the_users_function_through() -> None:
    def broken(x):
        raise ZeroDivisionError("user bug")

    with pytest.raises(ZeroDivisionError, match="user bug"):
        graphs.compile_or_fallback(broken, (torch.ones(2),), compiler=_strict, framework="torch")


def test_decisions_table_has_one_row_per_function() -> None:
    decision = graphs.compile_or_fallback(_branchy_torch, (torch.ones(3),), compiler=_strict, framework="torch")
    table = graphs.decisions_table({("torch", "branchy"): decision})
    assert table.column("kept") == ["EAGER"]


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_eager_mode_really_switches_compilation_off(framework: str) -> None:
    if not env.available(framework):
        pytest.skip(f"{framework} not installed")
    with graphs.fallback._eager_mode(framework) as switch:
        assert graphs.ran_compiled(framework) is False
    assert switch == graphs.fallback.EAGER_SWITCHES[framework]
    assert graphs.ran_compiled(framework) is True


def test_max_abs_diff_across_structures() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert graphs.max_abs_diff({"a": a, "b": [a]}, {"a": a + 1, "b": [a]}) == 1.0
    assert graphs.max_abs_diff(a, torch.from_numpy(a)) == 0.0
    with pytest.raises(ValueError, match="structure or shape"):
        graphs.max_abs_diff(a, a[:1])


def test_eagerly_runs_a_compiled_function_with_compilation_off() -> None:
    for framework in ("torch", "jax", "tensorflow"):
        if not env.available(framework):
            continue
        assert graphs.eagerly(framework, graphs.ran_compiled)(framework) is False
