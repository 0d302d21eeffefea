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
    if result.live_peak[0] is not None:
        assert result.live_peak[0] >= result.saved[0]  # everything saved for backward is alive at once
        assert P.predicted_peak_with_remat(result, 4, live=True) == int(
            result.live_peak[0] - result.saved[0] + result.saved[1] + result.saved[0] / 4)


def test_live_peak_counts_tensors_alive_at_once_not_all_allocated() -> None:
    torch = pytest.importorskip("torch")

    def two_in_turn():
        for _ in range(2):
            t = torch.ones(2**20)  # 4 MiB, freed before the next
            del t

    def two_at_once():
        a, b = torch.ones(2**20), torch.ones(2**20)
        return a.sum() + b.sum()

    one, both = P.torch_live_peak(two_in_turn), P.torch_live_peak(two_at_once)
    if one is None:
        pytest.skip("this torch's profiler has no memory timeline")
    assert 4 * 2**20 <= one < 6 * 2**20 and 8 * 2**20 <= both < 10 * 2**20


def test_jax_remat_adds_flops_and_cuts_residuals() -> None:
    pytest.importorskip("jax")
    result = P.jax_remat(W, 64, min_time=0.001)
    assert result.same_gradients and result.saved_ratio < 0.5
    assert result.flops[1] > result.flops[0]
    assert all(isinstance(d, int) and d > 0 for d in result.dots) and "dot ops" in repr(result)


@pytest.mark.skipif(not env.available("tensorflow"), reason="TensorFlow is not installed")
def test_tf_recompute_grad_gives_the_same_gradient() -> None:
    assert P.tf_recompute_same(W, 8) is True
