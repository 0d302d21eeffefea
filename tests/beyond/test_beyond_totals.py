"""06's numbers that several measurements add up to: gloo's traffic, the model's collective ratio, unexplained rests."""

from __future__ import annotations

import numpy as np
import pytest
from beyond_fakes import fake

from course_utils.beyond import predict
from course_utils.distributed.comms import AllReduceModel

P = 1000
INSIDE = ("c10d::_reduce_scatter_base_", "gloo:all_reduce")


def test_traffic_with_ring_factors_and_as_gloo_runs_it() -> None:
    moved = predict.traffic(fake(trace=INSIDE))
    assert moved["ring"] == pytest.approx(1.5) and moved["gloo"] == pytest.approx(2.0) and moved["inside"]
    plain = predict.traffic(fake())
    assert plain["gloo"] == pytest.approx(1.5) and not plain["inside"]
    assert predict.gloo_inside(fake(trace=INSIDE)) and not predict.gloo_inside(fake())


def test_collective_ratios_price_latency_and_gloo() -> None:
    fit = AllReduceModel(bandwidth=1e9, latency=1e-4)
    ddp = 2 * 1e-4 + 4 * P / 1e9  # one all-reduce on 2 ranks: 2 latency steps, the full buffer
    fsdp = 6 * 1e-4 + 0.5 * 12 * P / 1e9  # 4 gathers + 2 reduce-scatters, 1 step each, half the buffer
    ratios = predict.collective_ratios(fit, fake())
    assert ratios["model"] == pytest.approx(fsdp / ddp) and ratios["as gloo"] == ratios["model"]
    assert ratios["calls"] == 6
    as_gloo = 4 * 1e-4 + 0.5 * 8 * P / 1e9 + 2 * 2 * 1e-4 + 4 * P / 1e9  # the reduce-scatters as all-reduces
    assert predict.collective_ratios(fit, fake(trace=INSIDE))["as gloo"] == pytest.approx(as_gloo / ddp)


def test_unexplained_rest_beyond_the_models_communication() -> None:
    rows = {"wide": {"compute": 13.41e-3, "comm model": 4.82e-3, "predicted": 18.23e-3, "measured": 33.38e-3,
                     "comm measured": 3.77e-3},
            "zero1": {"compute": 1.09e-3, "comm model": 4.18e-3, "predicted": 5.27e-3, "measured": 8.5e-3,
                      "comm measured": 6.64e-3},
            "jax": {"compute": 1e-3, "comm model": 1e-3, "predicted": 2e-3, "measured": 9e-3,
                    "comm measured": float("nan")}}
    assert predict.unexplained(rows) == pytest.approx({"wide": 16.2e-3})
    assert np.isnan(rows["jax"]["comm measured"])  # rows without a measured collective time are skipped


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="result"):
        predict.traffic({})
    with pytest.raises(TypeError, match="fit"):
        predict.collective_ratios(None, fake())
    with pytest.raises(ValueError, match="rows"):
        predict.unexplained({})


def test_prediction_table_prints_the_ratio_of_the_two_times_it_prints() -> None:
    """Issue 36 rule 1: the "measured / predicted" column divides the table's own two columns (to rounding)."""
    from course_utils.beyond import predict

    rows = {"a": {"compute": 1e-3, "comm model": 2.345e-3, "predicted": 3.345e-3, "measured": 7.891e-3,
                  "comm measured": float("nan"), "optimizer": float("nan")},
            "b": {"compute": 4e-4, "comm model": 1e-4, "predicted": 5e-4, "measured": 4.5e-4,
                  "comm measured": 1e-4, "optimizer": 0.0}}
    table = predict.prediction_table(rows)
    for predicted, measured, ratio in zip(table.column("predicted"), table.column("measured"),
                                          table.column("measured / predicted")):
        assert abs(float(measured) / float(predicted) - float(ratio)) <= 0.01, (predicted, measured, ratio)
