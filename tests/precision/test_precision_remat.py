"""course_utils.precision.remat: checkpointing the learner's loss keeps gradients, saves bytes, and the peak formula."""

from __future__ import annotations

import pytest

from course_utils import env
from course_utils import precision as P

W = P.block_weights(16, 4, seed=0)


def _torch_loss():
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    blocks = [(torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)) for a, b in W]
    x = torch.ones(64, 16)

    def block(h, w1, w2):
        return h + F.gelu(h @ w1) @ w2

    def loss(remat):
        h = x
        for w1, w2 in blocks:
            h = checkpoint(block, h, w1, w2, use_reentrant=False) if remat else block(h, w1, w2)
        return (h**2).mean()

    return loss, [p for pair in blocks for p in pair]


def test_block_weights_shapes() -> None:
    assert len(W) == 4 and W[0][0].shape == (16, 64) and W[0][1].shape == (64, 16)


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_torch_remat_saves_less_with_the_same_gradients() -> None:
    pytest.importorskip("torch")
    loss, params = _torch_loss()
    result = P.torch_remat(loss, params, rounds=2, min_time=0.01)
    assert result.same_gradients and result.saved_ratio < 0.5
    assert result.cost.n == 2 and result.cost.ratio > 0
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

    one, both = P.remat.torch_live_peak(two_in_turn), P.remat.torch_live_peak(two_at_once)
    if one is None:
        pytest.skip("this torch's profiler has no memory timeline")
    assert 4 * 2**20 <= one < 6 * 2**20 and 8 * 2**20 <= both < 10 * 2**20


def test_jax_remat_adds_flops_and_cuts_residuals() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def block(p, h):
        return h + jax.nn.gelu(h @ p[0], approximate=False) @ p[1]

    def loss(ps, h, remat):
        f = jax.checkpoint(block) if remat else block
        for p in ps:
            h = f(p, h)
        return jnp.mean(h**2)

    result = P.jax_remat(loss, [(jnp.asarray(a), jnp.asarray(b)) for a, b in W], jnp.ones((64, 16)), rounds=2,
                         min_time=0.01)
    assert result.same_gradients and result.saved_ratio < 0.5
    assert result.flops[1] > result.flops[0]
    assert all(isinstance(d, int) and d > 0 for d in result.dots) and "dot ops" in repr(result)


@pytest.mark.skipif(not env.available("tensorflow"), reason="TensorFlow is not installed")
def test_tf_recompute_grad_gives_the_same_gradient() -> None:
    assert P.tf_recompute_same(W, 8) is True


def test_the_remat_table_prints_the_ratio_of_its_printed_medians() -> None:
    from course_utils import display, timing

    without = timing.Measurement.from_times("without", [2e-3, 2.2e-3, 2.1e-3, 2.4e-3])
    with_ = timing.Measurement.from_times("with", [3.1e-3, 3.0e-3, 3.3e-3, 3.6e-3])
    result = P.remat.Remat("torch", (1000, 200), time=(without, with_))
    lines = repr(result).splitlines()
    times = next(line for line in lines if line.startswith("step time (median)")).split()[-4:]
    printed = [float(times[0]) * (1e-3 if times[1] == "ms" else 1), float(times[2]) * (1e-3 if times[3] == "ms" else 1)]
    ratio = float(next(line for line in lines if "ratio of the medians" in line).split()[-1].rstrip("x"))
    assert [display.format_time(m.median) for m in (without, with_)] == [" ".join(times[:2]), " ".join(times[2:])]
    assert ratio == pytest.approx(printed[1] / printed[0], abs=0.01)  # what the two printed times divide to
