"""course_utils.graphs: capture and op counts, compile counts, the eager fallback, break-even and its plots."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from course_utils import env, graphs, models, timing

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(scope="module")
def tf():
    pytest.importorskip("tensorflow")
    return env.import_tensorflow()


def _branchy_torch(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def _where_torch(x):
    return torch.where(x.sum() > 0, x * 2, x - 1)


def _chain_torch(x):
    return models.gelu_chain(x, 0.1, torch.tanh)


# ---------------------------------------------------------------------------------------------------------
# Capture


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_capture_counts_the_eleven_ops_of_gelu_chain(framework: str, tf) -> None:
    x = graphs.to_framework(framework, np.ones(8, np.float32))
    captured = graphs.capture(framework, models.chain_for(framework), x, x)
    assert captured.count == 11 and len(captured.ops) == 11
    assert sum(captured.counts().values()) == 11
    assert captured.text and captured.framework == framework
    assert f"{captured.count} ops" in repr(captured) and "<pre>" in captured._repr_html_()


def test_capture_tf_leaves_out_bookkeeping_ops(tf) -> None:
    captured = graphs.capture("tf", lambda x: x * 2.0 + 1.0, tf.ones(3))
    assert captured.ops == ("Mul", "AddV2")
    assert "Placeholder" in captured.text and "Const" in captured.text


def test_capture_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="framework must be one of"):
        graphs.capture("mxnet", lambda x: x, 1)
    with pytest.raises(TypeError, match="fn must be callable"):
        graphs.capture("jax", 3)


def test_side_by_side_shows_every_capture() -> None:
    a = graphs.capture_jax(lambda x: x + 1, jnp.ones(2))
    b = graphs.capture_jax(lambda x: jnp.sin(x) * 2, jnp.ones(2))
    shown = graphs.side_by_side([a, b])
    html = shown._repr_html_()
    assert html.count("<td") == 2 and "sin" in html and "jax: 1 ops" in repr(shown)
    with pytest.raises(TypeError):
        graphs.side_by_side([])


def test_graph_recorder_counts_graphs_and_names_ops() -> None:
    recorder = graphs.GraphRecorder()
    with pytest.raises(ValueError, match="no graph recorded"):
        recorder.ops()
    compiled = torch.compile(graphs.fresh_function(_chain_torch), backend=recorder, dynamic=False)
    compiled(torch.ones(4))
    compiled(torch.ones(4))  # same shape: no recompilation
    assert recorder.count == 1 and recorder.ops().count("tanh") == 1 and len(recorder.ops()) == 11


def test_fresh_function_is_an_equal_function_with_a_new_code_object() -> None:
    copy = graphs.fresh_function(_chain_torch)
    assert copy.__code__ is not _chain_torch.__code__ and copy.__name__ == _chain_torch.__name__
    x = torch.randn(5)
    assert torch.equal(copy(x), _chain_torch(x))
    with pytest.raises(TypeError, match="Python function"):
        graphs.fresh_function(torch.sin)


# ---------------------------------------------------------------------------------------------------------
# Recompilation and graph breaks


def test_count_compiles_torch_static_dynamic_and_marked() -> None:
    inputs = [(torch.ones(n),) for n in (10, 20, 30)]
    assert graphs.count_compiles("torch", _chain_torch, inputs, dynamic=False) == 3
    assert graphs.count_compiles("torch", _chain_torch, inputs) == 2  # automatic dynamic after the 2nd shape
    assert graphs.count_compiles("torch", _chain_torch, inputs, dynamic=True) == 1
    same = [(torch.ones(10),)] * 3
    assert graphs.count_compiles("torch", _chain_torch, same) == 1


def test_count_compiles_jax_traces_once_per_shape_or_static_value() -> None:
    assert graphs.count_compiles("jax", jnp.sin, [(jnp.ones(n),) for n in (2, 3, 2)]) == 2
    flagged = [(jnp.ones(2), True), (jnp.ones(2), False), (jnp.ones(2), True)]
    assert graphs.count_compiles("jax", lambda x, f: x if f else -x, flagged, static_argnums=1) == 2


def test_count_compiles_tf_with_and_without_signature(tf) -> None:
    inputs = [(tf.ones(n),) for n in (2, 3, 4)]
    assert graphs.count_compiles("tensorflow", tf.sin, inputs) == 3
    spec = [tf.TensorSpec([None], tf.float32)]
    assert graphs.count_compiles("tensorflow", tf.sin, inputs, input_signature=spec) == 1


def test_count_compiles_rejects_bad_inputs() -> None:
    with pytest.raises(TypeError, match="argument tuples"):
        graphs.count_compiles("jax", jnp.sin, [jnp.ones(2)])
    with pytest.raises(ValueError, match="framework"):
        graphs.count_compiles("numpy", np.sin, [(np.ones(2),)])


def test_torch_graph_breaks_counts_a_python_if_on_a_tensor() -> None:
    found = graphs.torch_graph_breaks(_branchy_torch, torch.ones(3))
    assert (found.graph_count, found.break_count, len(found.reasons)) == (2, 1, 1)
    assert "\n" not in found.reasons[0] and "1 graph break" in repr(found)
    clean = graphs.torch_graph_breaks(_where_torch, torch.ones(3))
    assert (clean.graph_count, clean.break_count, clean.reasons) == (1, 0, ())


# ---------------------------------------------------------------------------------------------------------
# compile_or_fallback


def test_fallback_keeps_a_compilable_function_compiled() -> None:
    decision = graphs.compile_or_fallback(jnp.sin, (jnp.arange(4.0),), framework="jax")
    assert decision.compiled and decision.max_abs_diff is not None and decision.max_abs_diff < 1e-6
    assert "agrees with eager" in decision.reason and "compiled" in repr(decision)
    assert np.allclose(decision(jnp.arange(3.0)), np.sin(np.arange(3.0)))


def test_fallback_on_graph_break_in_torch_returns_eager() -> None:
    decision = graphs.compile_or_fallback(_branchy_torch, (torch.ones(3),), framework="torch", backend="eager")
    assert not decision.compiled and decision.fn is _branchy_torch
    assert decision.reason.startswith("compile failed: ") and "\n" not in decision.reason
    assert torch.equal(decision(-torch.ones(2)), _branchy_torch(-torch.ones(2)))
    assert "EAGER fallback" in repr(decision)


def test_fallback_on_tracer_error_in_jax() -> None:
    decision = graphs.compile_or_fallback(lambda x: x if x.sum() > 0 else -x, (jnp.ones(2),), framework="jax")
    assert not decision.compiled and "TracerBoolConversionError" in decision.reason


def test_fallback_catches_a_compiled_function_that_disagrees() -> None:
    seen = []

    def running_sum(x):
        seen.append(x)
        return sum(seen)

    decision = graphs.compile_or_fallback(running_sum, (jnp.ones(3),), framework="jax")
    assert not decision.compiled and decision.reason.startswith("disagrees with eager")
    assert decision.max_abs_diff == pytest.approx(1.0)


def test_fallback_in_tensorflow_compiles_autograph_if(tf) -> None:
    def branchy(x):
        if tf.reduce_sum(x) > 0:
            return x * 2
        return x - 1

    decision = graphs.compile_or_fallback(branchy, (tf.ones(3),), framework="tf", jit_compile=True)
    assert decision.compiled and decision.framework == "tensorflow"


def test_fallback_rejects_bad_arguments() -> None:
    with pytest.raises(TypeError, match="sample_args"):
        graphs.compile_or_fallback(jnp.sin, jnp.ones(2), framework="jax")
    with pytest.raises(ValueError, match="framework"):
        graphs.compile_or_fallback(jnp.sin, (jnp.ones(2),), framework="numpy")
    with pytest.raises(ValueError, match="fails eagerly"):
        graphs.compile_or_fallback(lambda x: x @ x, (jnp.ones((2, 3)),), framework="jax")


# ---------------------------------------------------------------------------------------------------------
# Conversions and comparisons


def test_to_framework_and_max_abs_diff_across_frameworks(tf) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    values = [graphs.to_framework(fw, a) for fw in ("torch", "jax", "tensorflow")]
    assert all(graphs.max_abs_diff(a, v) == 0.0 for v in values)
    assert graphs.max_abs_diff({"a": a, "b": [a]}, {"a": a + 1, "b": [a]}) == 1.0
    with pytest.raises(ValueError, match="structure or shape"):
        graphs.max_abs_diff(a, a[:1])
    with pytest.raises(ValueError, match="framework"):
        graphs.to_framework("numpy", a)


# ---------------------------------------------------------------------------------------------------------
# Break-even


def test_break_even_calls_formula() -> None:
    # compiled: 10 s, then 1 s per call; eager 2 s per call: 10 + (n-1) <= 2n  ->  n >= 9
    assert graphs.break_even_calls(first_call=10, per_call=1, eager_per_call=2) == 9
    cum_c = graphs.cumulative_time(10, 1, np.array([8, 9]))
    cum_e = graphs.cumulative_time(2, 2, np.array([8, 9]))
    assert cum_c[0] > cum_e[0] and cum_c[1] <= cum_e[1]
    assert graphs.break_even_calls(first_call=1, per_call=1, eager_per_call=2, eager_first_call=5) == 1
    assert graphs.break_even_calls(first_call=10, per_call=3, eager_per_call=2) == math.inf


def test_break_even_from_measurements() -> None:
    eager = timing.Measurement("eager", (2.0, 2.0), first_call=2.0)
    compiled = timing.Measurement("compiled", (1.0, 1.0), first_call=10.0)
    assert graphs.break_even(eager, compiled) == 9
    with pytest.raises(ValueError, match="first_call"):
        graphs.break_even(eager, timing.Measurement("c", (1.0,)))


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "1", True])
def test_break_even_rejects_bad_times(bad) -> None:
    with pytest.raises(ValueError, match="first_call"):
        graphs.break_even_calls(first_call=bad, per_call=1, eager_per_call=2)


def test_cumulative_time_rejects_zero_calls() -> None:
    with pytest.raises(ValueError, match="calls"):
        graphs.cumulative_time(1.0, 1.0, np.array([0, 1]))


# ---------------------------------------------------------------------------------------------------------
# Plots


def test_crossover_plot_one_panel_per_framework_with_break_even() -> None:
    eager = timing.Measurement("e", (2e-3,), first_call=2e-3)
    pairs = {
        "torch": (eager, timing.Measurement("c", (1e-3,), first_call=1.0)),  # breaks even after ~1,000 calls
        "jax": (eager, timing.Measurement("c", (3e-3,), first_call=0.1)),  # never
    }
    fig = graphs.crossover_plot(pairs, title="t")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("break-even: 999 calls" in t for t in texts) and "never breaks even" in texts
    assert all(len(ax.get_lines()) >= 2 for ax in fig.axes)
    with pytest.raises(TypeError):
        graphs.crossover_plot({})


def test_compile_count_bars() -> None:
    fig = graphs.compile_count_bars({"torch": {"static": 4, "dynamic": 1}, "jax": {"jit": 4}}, calls=4)
    ax = fig.axes[0]
    assert len(ax.patches) == 3 and [t.get_text() for t in ax.get_yticklabels()][0] == "torch: static"
    with pytest.raises(TypeError):
        graphs.compile_count_bars({"torch": {}})


def test_compile_cache_times_cold_then_warm() -> None:
    pytest.importorskip("torch")
    times = graphs.compile_cache_times(2**8)
    assert set(times) == {"cold", "warm"} and times["warm"] < times["cold"]
    with pytest.raises(ValueError, match="elements"):
        graphs.compile_cache_times(0)
