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
    model = dist.comms.fit_allreduce(sizes, noisy, n=2)
    assert model.bandwidth == pytest.approx(3e9, rel=0.05) and model.latency == pytest.approx(40e-6, rel=0.1)
    four = dist.ring_allreduce_time(sizes, 4, 3e9, 40e-6)
    assert np.allclose(dist.score(model, sizes, four, 4), 1.0, rtol=0.1)
    assert "GB/s" in repr(model)


def test_score_exposes_a_model_that_misses() -> None:
    """The out-of-sample check can fail: times that grow faster with N than the ring model score far from 1."""
    sizes = 2.0 ** np.arange(10, 20)
    model = dist.comms.fit_allreduce(sizes, dist.ring_allreduce_time(sizes, 2, 3e9, 40e-6), n=2)
    oversubscribed = 5 * dist.ring_allreduce_time(sizes, 4, 3e9, 40e-6)
    assert np.all(dist.score(model, sizes, oversubscribed, 4) > 4)


def test_fit_without_latency_falls_back_to_bandwidth_alone() -> None:
    sizes = np.array([1e6, 2e6, 4e6])
    model = dist.comms.fit_allreduce(sizes, sizes / 1e9 - 1e-4, n=2)  # a negative intercept
    assert model.latency == 0.0 and model.bandwidth == pytest.approx(1e9, rel=0.15)


def test_fit_rejects_times_that_do_not_grow() -> None:
    with pytest.raises(ValueError, match="no bandwidth"):
        dist.comms.fit_allreduce([1e3, 1e6, 1e9], [3.0, 2.0, 1.0], n=2)


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


def _sweep_records(rounds: list[tuple[float, float]], sizes=(2**12, 2**14, 2**16, 2**18, 2**20)) -> list[dict]:
    """ddp_train.py's allreduce records for rounds whose (bandwidth, latency) are given: times exact per round."""
    found = []
    for n in sizes:
        per = [dist.ring_allreduce_time(n, 2, bw, lat) for bw, lat in rounds]
        found.append({"kind": "allreduce", "nbytes": n, "times": per, "rounds": per})
    return found


def test_fit_rounds_gives_one_model_per_round_and_an_interval_that_holds_them() -> None:
    truth = [(1e9, 50e-6), (1.2e9, 60e-6), (0.9e9, 40e-6), (1.1e9, 55e-6)]
    fits, sweep = dist.comms.fit_rounds(_sweep_records(truth), 2)
    assert len(fits) == 4 and sweep[0] == [2**12, 2**14, 2**16, 2**18, 2**20]
    for fit, (bw, lat) in zip(fits, truth):
        assert fit.bandwidth == pytest.approx(bw, rel=1e-6) and fit.latency == pytest.approx(lat, rel=1e-6)
    cost = dist.comms.AllReduceCost(dist.comms.combine(fits), tuple(fits), (tuple(sweep[0]), tuple(sweep[1])), 2, "now",
                              "measured", "k")
    low, high = cost.latency_interval
    assert low < cost.model.latency < high and low < 40e-6 < 60e-6 < high * 1.5
    lo_bw, hi_bw = cost.bandwidth_interval
    assert lo_bw < cost.model.bandwidth < hi_bw
    mean, low_t, high_t = cost.predict(2**20, 2)
    assert low_t < mean < high_t and mean == pytest.approx(cost.model.time(2**20, 2), rel=1e-9)
    assert "95% interval" in repr(cost) and "measured by this notebook" in cost.how


def test_an_interval_over_identical_rounds_is_a_point() -> None:
    fits, sweep = dist.comms.fit_rounds(_sweep_records([(1e9, 50e-6)] * 3), 2)
    cost = dist.comms.AllReduceCost(dist.comms.combine(fits), tuple(fits), (tuple(sweep[0]), tuple(sweep[1])), 2, "now",
                              "read", "k")
    assert cost.predict(1e6, 2)[1] == pytest.approx(cost.predict(1e6, 2)[2])
    assert "read from this run's build/machine/" in cost.how


def test_fit_rounds_refuses_records_without_rounds() -> None:
    with pytest.raises(ValueError, match="rounds"):
        dist.comms.fit_rounds([{"kind": "allreduce", "nbytes": 1024, "times": [1e-4]},
                               {"kind": "allreduce", "nbytes": 4096, "times": [2e-4]}], 2)
    flat = _sweep_records([(1e9, 5e-5), (1e9, 5e-5)])
    for i, r in enumerate(flat):
        r["rounds"] = [1e-3 / (i + 1)] * 2  # times that fall with the size: no round can be fitted
    with pytest.raises(ValueError, match="could be fitted"):
        dist.comms.fit_rounds(flat, 2)


def test_the_cost_is_measured_once_then_read_by_the_next_notebook(monkeypatch, tmp_path) -> None:
    """allreduce_cost launches one job the first time, writes build/machine/, and a fresh process reads it."""
    from course_utils import env
    from course_utils.distributed import launcher

    monkeypatch.setenv(env.BUILD_ENV, str(tmp_path))
    launches = []

    def fake_launch(script, nprocs, **kwargs):
        launches.append((script, nprocs, kwargs["args"]))
        return launcher.LaunchResult(script, nprocs, [], 1.0, [],
                                     records={0: _sweep_records([(1e9, 5e-5), (1.1e9, 6e-5), (0.9e9, 4e-5)])})

    monkeypatch.setattr(launcher, "launch", fake_launch)
    monkeypatch.setattr(dist.comms, "_COSTS", {})
    sweep = {"rounds": 3, "repeats": 6, "max_bytes": 2**20}  # what a notebook's sizes table passes
    first = dist.allreduce_cost(2, **sweep)
    assert first.source == "measured" and len(launches) == 1 and "--phases" in launches[0][2]
    assert launches[0][2][-1] == 2**20 and launches[0][2][launches[0][2].index("--rounds") + 1] == 3
    assert dist.allreduce_cost(2, **sweep) is first and len(launches) == 1  # this process: the same object
    monkeypatch.setattr(dist.comms, "_COSTS", {})  # another notebook of the same run
    again = dist.allreduce_cost(2, **sweep)
    assert again.source == "read" and len(launches) == 1
    assert again.model.latency == pytest.approx(first.model.latency) and again.per_round == first.per_round
    fresh = dist.allreduce_cost(2, refresh=True, **sweep)
    assert fresh.source == "measured" and len(launches) == 2
    path = next(tmp_path.rglob("allreduce-*.json"))
    path.write_text("{not json")
    monkeypatch.setattr(dist.comms, "_COSTS", {})
    assert dist.allreduce_cost(2, **sweep).source == "measured"  # an unreadable file is measured again, not trusted


def test_sweep_sizes_are_powers_of_two_a_factor_4_apart() -> None:
    assert dist.comms.sweep_sizes(2**12, 2**18) == [2**12, 2**14, 2**16, 2**18]
    assert dist.comms.sweep_sizes(4096, 4096) == [4096]
    with pytest.raises(ValueError, match="max_bytes"):
        dist.comms.sweep_sizes(2**12, 2**10)


def test_a_bandwidth_the_rounds_do_not_bound_from_above_is_said_in_words() -> None:
    fits = tuple(dist.comms.AllReduceModel(bw, 5e-5, 2) for bw in (1e9, 1e11, 1e12))  # seconds per byte near 0 in two
    cost = dist.comms.AllReduceCost(dist.comms.combine(fits), fits, ((4096,), (1e-4,)), 2, "now", "measured", "k")
    assert cost.bandwidth_interval[1] == float("inf")
    assert "and above" in cost.bandwidth_text and "and above" in repr(cost)
