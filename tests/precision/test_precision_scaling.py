"""course_utils.precision.formats: flushed and overflowed counts, the overflow exponent, torch fp16 gradients."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import precision as P


def test_underflow_stats_counts_flushed_and_overflowed() -> None:
    ref = np.array([0.0, 1e-9, 1.0, 2.0, 1e6])
    low = np.array([0.0, 0.0, 1.0, np.inf, np.inf])
    stats = P.underflow_stats(ref, low)
    assert (stats.nonzero, stats.flushed, stats.overflowed) == (4, 1, 2)
    assert stats.flushed_fraction == 0.25
    assert P.underflow_stats([0.0], [0.0]).flushed_fraction == 0.0


def test_simulate_cast_and_loss_scaling() -> None:
    grads = np.array([1e-9, 1e-8, 1e-3, 1.0])
    assert P.simulate_cast(grads, "float16").flushed == 2
    assert P.simulate_cast(grads, "float16", scale=2.0**14).flushed == 0
    assert P.simulate_cast(grads, "float16", scale=2.0**17).overflowed == 1
    assert P.simulate_cast(grads, "bfloat16").flushed == 0


def test_overflow_exponent_is_the_first_power_that_overflows() -> None:
    values = np.array([1e-3, -0.5, 0.25])
    k = P.overflow_exponent(values)
    assert P.simulate_cast(values, "float16", scale=2.0**k).overflowed >= 1
    assert P.simulate_cast(values, "float16", scale=2.0 ** (k - 1)).overflowed == 0


def test_torch_activation_grads_and_fp16_overflow() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    model = models.torch_mlp((8, 16, 4), seed=0)
    x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
    g32 = P.torch_activation_grads(model, x, y)
    assert g32.dtype == torch.float32 and g32.numel() == 32 * (16 + 4)
    assert all(p.grad is None for p in model.parameters())  # leaves the model clean
    k = P.overflow_exponent(g32)
    over = P.torch_fp16_overflows(model, x, y, [k - 4, k + 2])
    assert over == {k - 4: False, k + 2: True}
    with pytest.raises(ValueError, match="Linear"):
        P.torch_activation_grads(torch.nn.ReLU(), x, y)


def test_weight_grads_flush_in_fp16_once_the_loss_is_small() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    model = models.torch_mlp((8, 16, 4), seed=0)
    x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
    g32 = P.torch_weight_grads(model, x, y)
    assert g32.numel() == sum(p.numel() for p in model.parameters()) and g32.dtype == torch.float32
    assert torch.allclose(P.torch_weight_grads(model, x, y, multiplier=2.0), 2 * g32)
    tiny = 2.0**-30  # every gradient times 2^-30 lies below fp16's smallest subnormal
    lost = P.underflow_stats(P.torch_weight_grads(model, x, y, multiplier=tiny),
                             P.torch_weight_grads(model, x, y, dtype=torch.float16, multiplier=tiny))
    assert lost.flushed_fraction > 0.5
    assert all(p.grad is None for p in model.parameters())  # left as it was found


def test_adam_eps_share_is_one_for_large_gradients_and_small_near_eps() -> None:
    assert P.adam_eps_share([1e-3, -2e-3, 0.0]) == pytest.approx(1.0, abs=1e-4)
    assert P.adam_eps_share([1e-8]) == pytest.approx(0.5)
    assert P.adam_eps_share([1e-10], eps=1e-8) < 0.02


def test_scale_trace_summarises_a_dynamic_scale() -> None:
    scales = [2.0**24, 2.0**23, 2.0**22, 2.0**22, 2.0**23]
    skipped = [True, True, False, False, False]
    grads = [np.inf, np.inf, 2.0**-6, 2.0**-6, 2.0**-5]  # ceiling log2(65504 / g): ~22, ~22, ~21
    trace = P.scale_trace(scales, skipped, grads)
    assert (trace.steps, trace.skipped, trace.first_skipped, trace.start) == (5, 2, True, 24.0)
    assert (trace.settled_low, trace.settled_high) == (22.0, 23.0)
    assert trace.ceiling_median == pytest.approx(np.log2(65504 / 2.0**-6))
    assert trace.gap == pytest.approx(trace.ceiling_median - 23.0)
    assert trace.skipped_below == ()  # both skips were above the ceiling: overflows it predicts


def test_scale_trace_names_the_steps_skipped_below_the_ceiling() -> None:
    scales = [2.0**24, 2.0**20, 2.0**20, 2.0**19, 2.0**19]
    skipped = [True, False, True, False, False]  # step 2 overflowed at 2^20, under the ceiling (~22)
    trace = P.scale_trace(scales, skipped, [np.inf, 2.0**-6, np.inf, 2.0**-6, 2.0**-6])
    assert trace.skipped_below == (2,) and trace.skipped == 2
    descent = P.scale_trace([2.0**24, 2.0**20, 2.0**19], [True, True, False], [np.inf, np.inf, 2.0**-6])
    assert descent.skipped_below == ()  # skips before the first clean step are the descent the prediction expects


def test_scale_trace_refuses_what_it_cannot_summarise() -> None:
    with pytest.raises(ValueError, match="every step"):
        P.scale_trace([2.0, 1.0], [True, True], [np.inf, np.inf])
    with pytest.raises(ValueError, match="same length"):
        P.scale_trace([2.0, 1.0], [True], [1.0, 1.0])
    with pytest.raises(ValueError, match="scales"):
        P.scale_trace([0.0], [False], [1.0])
    with pytest.raises(TypeError, match="skipped"):
        P.scale_trace([1.0], "no", [1.0])
