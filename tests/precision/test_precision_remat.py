"""course_utils.precision.remat: checkpointing keeps gradients, saves bytes, and the peak formula."""

from __future__ import annotations

import pytest

from course_utils import env
from course_utils import precision as P

W = P.block_weights(16, 4, seed=0)


def test_block_weights_shapes() -> None:
    assert len(W) == 4 and W[0][0].shape == (16, 64) and W[0][1].shape == (64, 16)


def test_torch_remat_saves_less_with_the_same_gradients() -> None:
    pytest.importorskip("torch")
    result = P.torch_remat(W, 64, min_time=0.001)
    assert result.same_gradients and result.saved_ratio < 0.5
    assert "saved for backward" in repr(result) and "<table>" in result._repr_html_()
    grouped = P.torch_grouped_saved(W, 64, 2)
    assert result.saved[1] > grouped > 0
    assert P.torch_grouped_saved(W, 64, 1) == result.saved[1]
    if result.peak[0] is not None:
        assert P.predicted_peak_with_remat(result, 4) == int(
            result.peak[0] - result.saved[0] + result.saved[1] + result.saved[0] / 4)


def test_jax_remat_adds_flops_and_cuts_residuals() -> None:
    pytest.importorskip("jax")
    result = P.jax_remat(W, 64, min_time=0.001)
    assert result.same_gradients and result.saved_ratio < 0.5
    assert result.flops[1] > result.flops[0]
    assert all(isinstance(d, int) and d > 0 for d in result.dots) and "dot ops" in repr(result)


@pytest.mark.skipif(not env.available("tensorflow"), reason="TensorFlow is not installed")
def test_tf_recompute_grad_gives_the_same_gradient() -> None:
    assert P.tf_recompute_same(W, 8) is True
