"""course_utils.graphs.capture: compile counts, strategies, graph breaks, captured TORCH_LOGS, TF warnings."""

from __future__ import annotations

import pytest

from course_utils import env, graphs, models

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tf():
    pytest.importorskip("tensorflow")
    return env.import_tensorflow()


def _branchy_torch(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def _chain_torch(x):
    return models.gelu_chain(x, 0.1, torch.tanh)


def test_count_compiles_torch_static_dynamic_and_marked() -> None:
    inputs = [(torch.ones(n),) for n in (10, 20, 30)]
    assert graphs.count_compiles("torch", _chain_torch, inputs, dynamic=False) == 3
    assert graphs.count_compiles("torch", _chain_torch, inputs) == 2  # automatic dynamic after the 2nd shape
    assert graphs.count_compiles("torch", _chain_torch, inputs, dynamic=True) == 1
    assert graphs.count_compiles("torch", _chain_torch, [(torch.ones(10),)] * 3) == 1


def test_count_compiles_jax_traces_once_per_shape_or_static_value() -> None:
    jnp = pytest.importorskip("jax.numpy")
    assert graphs.count_compiles("jax", jnp.sin, [(jnp.ones(n),) for n in (2, 3, 2)]) == 2
    flagged = [(jnp.ones(2), True), (jnp.ones(2), False), (jnp.ones(2), True)]
    assert graphs.count_compiles("jax", lambda x, f: x if f else -x, flagged, static_argnums=1) == 2


def test_count_compiles_tf_with_and_without_signature(tf) -> None:
    inputs = [(tf.ones(n),) for n in (2, 3, 4)]
    assert graphs.count_compiles("tensorflow", tf.sin, inputs) == 3
    spec = [tf.TensorSpec([None], tf.float32)]
    assert graphs.count_compiles("tensorflow", tf.sin, inputs, input_signature=spec) == 1


def test_tf_retracing_warning_appears_from_the_fifth_trace(tf) -> None:
    four = graphs.tf_retracing_warnings(lambda x: x * 2, [(tf.ones(n),) for n in range(1, 5)])
    six = graphs.tf_retracing_warnings(lambda x: x * 2, [(tf.ones(n),) for n in range(1, 7)])
    assert four == [] and len(six) >= 1 and "retracing" in six[0]


def test_strategy_counts_torch() -> None:
    counts = graphs.strategy_counts("torch", _chain_torch, [torch.ones(n) for n in (10, 20, 30)])
    assert counts == {"dynamic=False": 3, "default (automatic dynamic)": 2, "mark_dynamic(x, 0)": 1}


def test_strategy_counts_jax_pads_to_buckets() -> None:
    jnp = pytest.importorskip("jax.numpy")
    counts = graphs.strategy_counts("jax", jnp.sin, [jnp.ones(n) for n in (100, 200, 300)])
    assert counts == {"jax.jit": 3, f"padded to multiples of {graphs.BUCKET}": 2}


def test_torch_graph_breaks_counts_a_python_if_on_a_tensor() -> None:
    found = graphs.torch_graph_breaks(_branchy_torch, torch.ones(3))
    assert (found.graph_count, found.break_count, len(found.reasons)) == (2, 1, 1)
    assert "\n" not in found.reasons[0] and "1 graph break" in repr(found) and "<table>" in found._repr_html_()
    clean = graphs.torch_graph_breaks(lambda x: torch.where(x.sum() > 0, x * 2, x - 1), torch.ones(3))
    assert (clean.graph_count, clean.break_count, clean.reasons) == (1, 0, ())


def test_torch_graph_breaks_lets_the_users_error_through() -> None:
    def broken(x):
        raise RuntimeError("mine")

    with pytest.raises(RuntimeError, match="mine"):
        graphs.torch_graph_breaks(broken, torch.ones(2))


def test_torch_compile_log_shows_a_size_guard_and_the_recompile() -> None:
    log = graphs.torch_compile_log(lambda x: torch.tanh(x) * 2, [(torch.ones(8),), (torch.ones(16),)])
    assert any("TENSOR_MATCH" in g and "size=[8]" in g for g in log.guards())
    assert any("size mismatch" in r for r in log.recompiles())
    assert "recompile" in repr(log)
