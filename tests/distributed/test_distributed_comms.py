"""course_utils.distributed.comms: the ring formula, the fit on message size, scoring out of sample, ZeRO traffic."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import distributed as dist


def test_ring_model_formula() -> None:
    assert dist.ring_allreduce_time(1e9, 1, 1e9, 1e-3) == 0.0
    assert dist.ring_allreduce_time(1e9, 2, 1e9, 0.0) == pytest.approx(1.0)  # 2(1)/2 x 1 s
    assert dist.ring_allreduce_time(0, 5, 1e9, 1e-6) == pytest.approx(8e-6)
    t = dist.ring_allreduce_time(1e8, np.array([2, 8, 512]), 1e10, 0.0)
    assert t.shape == (3,) and t[-1] < 2 * 1e8 / 1e10


def test_fit_recovers_the_model_from_noisy_times_and_predicts_other_process_counts() -> None:
    sizes = 2.0 ** np.arange(10, 25)
    true = dist.ring_allreduce_time(sizes, 2, 3e9, 40e-6)
    noisy = true * np.random.default_rng(0).uniform(0.97, 1.03, sizes.size)
    model = dist.fit_allreduce(sizes, noisy, n=2)
    assert model.bandwidth == pytest.approx(3e9, rel=0.05) and model.latency == pytest.approx(40e-6, rel=0.1)
    four = dist.ring_allreduce_time(sizes, 4, 3e9, 40e-6)
    assert np.allclose(dist.score(model, sizes, four, 4), 1.0, rtol=0.1)
    assert "GB/s" in repr(model) and "<table>" in model._repr_html_()


def test_score_exposes_a_model_that_misses() -> None:
    """The out-of-sample check can fail: times that grow faster with N than the ring model score far from 1."""
    sizes = 2.0 ** np.arange(10, 20)
    model = dist.fit_allreduce(sizes, dist.ring_allreduce_time(sizes, 2, 3e9, 40e-6), n=2)
    oversubscribed = 5 * dist.ring_allreduce_time(sizes, 4, 3e9, 40e-6)
    assert np.all(dist.score(model, sizes, oversubscribed, 4) > 4)


def test_fit_without_latency_falls_back_to_bandwidth_alone() -> None:
    sizes = np.array([1e6, 2e6, 4e6])
    model = dist.fit_allreduce(sizes, sizes / 1e9 - 1e-4, n=2)  # a negative intercept
    assert model.latency == 0.0 and model.bandwidth == pytest.approx(1e9, rel=0.15)


def test_fit_rejects_times_that_do_not_grow() -> None:
    with pytest.raises(ValueError, match="no bandwidth"):
        dist.fit_allreduce([1e3, 1e6, 1e9], [3.0, 2.0, 1.0], n=2)


def test_zero_stages_1_and_2_move_what_ddp_moves_stage_3_half_again() -> None:
    ddp = dist.zero_traffic(1e9, 8, 0)
    assert ddp == pytest.approx(2 * 7 / 8 * 1e9)
    assert dist.zero_traffic(1e9, 8, 1) == ddp == dist.zero_traffic(1e9, 8, 2)
    assert dist.zero_traffic(1e9, 8, 3) == pytest.approx(1.5 * ddp)
    assert dist.zero_traffic(1e9, 1, 3) == 0.0


def test_allreduce_sweep_takes_one_statistic_per_size_for_fit_and_score() -> None:
    records = [{"kind": "startup", "seconds": 1.0},
               {"kind": "allreduce", "nbytes": 1024, "times": [3.0, 1.0, 2.0]},
               {"kind": "allreduce", "nbytes": 4096, "times": [4.0, 6.0, 5.0, 100.0]}]
    assert dist.comms.allreduce_sweep(records) == ([1024, 4096], [2.0, 5.5])  # the median by default
    assert dist.comms.allreduce_sweep(records, q=0) == ([1024, 4096], [1.0, 4.0])
    with pytest.raises(ValueError, match="allreduce"):
        dist.comms.allreduce_sweep(records[:1])
    with pytest.raises(TypeError, match="records"):
        dist.comms.allreduce_sweep("allreduce")
