"""course_utils.fusion.traffic (attention), guard and readers: attention's bytes from shapes and a block mask, the
time limit around the learner's code, and a compiler's refusal told apart from the learner's own error."""

from __future__ import annotations

import time

import pytest

from course_utils import calls, fusion

torch = pytest.importorskip("torch")


def test_attention_bytes_count_one_score_matrix_and_the_ideal_fused_kernel() -> None:
    q = k = v = torch.empty(2, 4, 256, 32, device="meta")
    found = fusion.attention_bytes(q, k, v)
    assert found.scores == 2 * 4 * 256 * 256 * 4
    assert found.ideal == found.blocked == 4 * (2 * 4 * 256 * 32 * 4)  # q, k, v read once, output written once
    assert found.visited_share == 1.0 and "score matrix" in repr(found)


def test_a_causal_block_mask_visits_about_half_the_block_pairs() -> None:
    from torch.nn.attention.flex_attention import create_block_mask

    length = 512
    mask = create_block_mask(lambda b, h, q, kv: q >= kv, B=None, H=None, Q_LEN=length, KV_LEN=length, device="cpu")
    q = torch.empty(1, 2, length, 16)
    found = fusion.attention_bytes(q, q, q, mask)
    assert found.blocks == 2 * 4 * 4 and found.visited == 2 * (4 * 5 // 2)  # the lower triangle and the diagonal
    tile = 128 * (16 + 16) * 4
    assert found.blocked == 2 * (1 * 2 * length * 16 * 4) + found.visited * tile


def test_attention_bytes_refuse_shapes_that_do_not_fit() -> None:
    q = torch.empty(1, 2, 64, 16, device="meta")
    with pytest.raises(TypeError, match="q"):
        fusion.attention_bytes(torch.empty(64, 16), q, q)
    with pytest.raises(ValueError, match="agree"):
        fusion.attention_bytes(q, torch.empty(1, 3, 64, 16, device="meta"), q)
    with pytest.raises(TypeError, match="block_mask"):
        fusion.attention_bytes(q, q, q, "causal")


def test_a_learner_function_that_never_returns_is_stopped_and_named() -> None:
    def forever(x):
        while True:
            time.sleep(0.01)

    start = time.monotonic()
    with pytest.raises(calls.LearnerTimeout, match="forever"):
        fusion.trace_traffic(forever, ((2,), "float32"), timeout=1)
    assert time.monotonic() - start < 5


def test_an_op_that_only_aliases_its_input_moves_no_bytes() -> None:
    traffic = fusion.trace_traffic(lambda a, b: a @ b, ((2, 3, 4, 8), "float32"), ((2, 3, 8, 4), "float32"))
    assert [op.name for op in traffic.ops] == ["bmm"]  # matmul's _unsafe_view back to 4-d is not counted


def test_compile_error_names_the_compilers_refusal_but_passes_the_learners_own_error() -> None:
    def learner_bug(x):
        raise KeyError("the learner's own bug")

    with pytest.raises(KeyError, match="own bug"):
        fusion.compile_error(learner_bug, 1)

    framework = {"__name__": "tensorflow.python.eager.execute"}  # a function that lives in a framework's module
    exec("def refuse(x):\n    raise RuntimeError('XLA cannot compile numpy_function')", framework)
    assert fusion.compile_error(lambda x: framework["refuse"](x), 1) == "RuntimeError"
    assert fusion.compile_error(lambda x: x, 1) is None
