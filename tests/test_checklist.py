"""course_utils.checklist: the five launch checks pass on a clean function and catch a dynamic one."""

from __future__ import annotations

import pytest

from course_utils import checklist


def test_clean_jax_function_passes() -> None:
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.linspace(-2.0, 2.0, 200_000)
    result = checklist.run(lambda v: jnp.tanh(v) * 2.0 + v * v - 1.0, (x,), framework="jax", min_speedup=0.01,
                           utilisation=0.5, min_time=0.02)
    assert [c.passed for c in result.checks] == [True, True, True, True, True]
    assert result.passed and "utilisation 50%" in result["monitoring (compile time, utilisation)"].evidence
    assert "PASS" in repr(result) and "<table>" in result._repr_html_()


def test_data_dependent_branch_fails_the_right_checks_in_jax() -> None:
    jnp = pytest.importorskip("jax.numpy")

    def branchy(v):
        return v * 2 if v.sum() > 0 else v - 1

    result = checklist.run(branchy, (jnp.ones(8),), framework="jax")
    assert not result.passed
    assert result["MVP comparison (speed and equality)"].passed is False
    assert result["no data-dependent Python control flow"].passed is False
    assert result["rollback path (eager kept)"].passed is True  # falls back to eager, which still works
    assert result["monitoring (compile time, utilisation)"].passed is None


def test_graph_break_is_caught_in_torch() -> None:
    torch = pytest.importorskip("torch")

    def branchy(v):
        return v * 2 if v.sum() > 0 else v - 1

    result = checklist.run(branchy, (torch.ones(8),), framework="torch")
    compat = result["operator compatibility"]
    assert compat.passed is False and "1 graph break" in compat.evidence
    assert result["no data-dependent Python control flow"].passed is False


def test_bad_input() -> None:
    with pytest.raises(TypeError, match="fn"):
        checklist.run(3, ())
    with pytest.raises(ValueError, match="min_speedup"):
        checklist.run(lambda: 1, (), min_speedup=0)
    with pytest.raises(ValueError, match="utilisation"):
        checklist.run(lambda: 1, (), utilisation=2.0)
