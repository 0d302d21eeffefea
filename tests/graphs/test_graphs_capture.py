"""course_utils.graphs.capture: the graph each framework captures, op counts, side-by-side display."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import env, graphs, interop, models
from course_utils.graphs.capture import GraphRecorder

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tf():
    pytest.importorskip("tensorflow")
    return env.import_tensorflow()


def _chain_torch(x):
    return models.gelu_chain(x, 0.1, torch.tanh)


def test_capture_torch_counts_the_eleven_ops_of_gelu_chain() -> None:
    x = interop.to_framework("torch", np.ones(8, np.float32))
    captured = graphs.capture("pytorch", models.chain_for("torch"), x, x)
    assert captured.count == 11 and sum(captured.counts().values()) == 11
    assert captured.framework == "torch" and "11 ops" in repr(captured) and "<pre>" in captured._repr_html_()


def test_capture_jax_counts_the_eleven_ops() -> None:
    pytest.importorskip("jax")
    x = interop.to_framework("jax", np.ones(8, np.float32))
    assert graphs.capture("jax", models.chain_for("jax"), x, x).count == 11


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_capture_tf_leaves_out_bookkeeping_ops(tf) -> None:
    captured = graphs.capture("tf", lambda x: x * 2.0 + 1.0, tf.ones(3))
    assert captured.ops == ("Mul", "AddV2")
    assert "Placeholder" in captured.text and "Const" in captured.text
    x = tf.ones(8)
    assert graphs.capture("TensorFlow", models.chain_for("tensorflow"), x, x).count == 11


def test_capture_lets_the_users_own_error_through() -> None:
    def broken(x):
        raise KeyError("the learner's own bug")

    with pytest.raises(KeyError, match="own bug"):
        graphs.capture("torch", broken, torch.ones(2))


def test_capture_of_a_function_that_computes_nothing() -> None:
    assert graphs.capture("torch", lambda x: x, torch.ones(2)).count == 0


def test_side_by_side_shows_every_capture_and_a_table() -> None:
    a = graphs.capture("torch", lambda x: x + 1, torch.ones(2))
    b = graphs.capture("torch", lambda x: torch.sin(x) * 2, torch.ones(2))
    shown = graphs.side_by_side([a, b])
    assert shown._repr_html_().count("<td") == 2 and "sin" in shown._repr_html_()
    table = shown.table()
    assert table.column("compute ops") == ["1", "2"] and "<table>" in table._repr_html_()


def test_graph_recorder_counts_graphs_and_names_ops() -> None:
    recorder = GraphRecorder()
    with pytest.raises(ValueError, match="no graph recorded"):
        recorder.ops()
    compiled = torch.compile(graphs.fresh_function(_chain_torch), backend=recorder, dynamic=False)
    compiled(torch.ones(4))
    compiled(torch.ones(4))  # same shape: no recompilation
    assert recorder.count == 1 and recorder.ops().count("tanh") == 1 and len(recorder.ops()) == 11
    with pytest.raises(IndexError):
        recorder.ops(5)


def test_fresh_function_is_an_equal_function_with_a_new_code_object() -> None:
    copy = graphs.fresh_function(_chain_torch)
    assert copy.__code__ is not _chain_torch.__code__ and copy.__name__ == _chain_torch.__name__
    x = torch.randn(5)
    assert torch.equal(copy(x), _chain_torch(x))


def test_to_framework_round_trips(tf) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for fw in ("torch", "jax", "tensorflow"):
        if env.available(fw):
            assert graphs.max_abs_diff(a, interop.to_framework(fw, a)) == 0.0
