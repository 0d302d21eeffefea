"""06's generated findings: gloo's traffic, profiled steps, collective time against the model, unexplained rests."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils.beyond import findings as beyond_findings
from course_utils.distributed import AllReduceModel, LaunchResult

P = 1000


def _fake(trace: tuple[str, ...] = ("c10d::_reduce_scatter_base_", "gloo:all_reduce")) -> LaunchResult:
    calls = {"ddp": {"allreduce": 1}, "fsdp2": {"allgather": 4, "reduce_scatter": 2}}
    nbytes = {"ddp": {"allreduce": 4 * P}, "fsdp2": {"allgather": 8 * P, "reduce_scatter": 4 * P}}
    records = [{"kind": k, "world": 2, "calls": calls[k], "comm_bytes": nbytes[k]} for k in calls]
    records.append({"kind": "collectives", "reduce_scatter_trace": list(trace)})
    return LaunchResult("fsdp_train.py", 2, [], 1.0, [], {0: records, 1: records}, {})


def test_traffic_with_ring_factors_and_as_gloo_runs_it() -> None:
    moved = beyond_findings.traffic(_fake())
    assert moved["ring"] == pytest.approx(1.5) and moved["gloo"] == pytest.approx(2.0) and moved["inside"]
    plain = beyond_findings.traffic(_fake(("c10d::_reduce_scatter_base_",)))
    assert plain["gloo"] == pytest.approx(1.5) and not plain["inside"]


def test_profiled_step_shorter_than_plain_is_no_slowdown() -> None:
    text = beyond_findings.profiled_finding({"ddp": {"slowdown": 0.7}, "fsdp2": {"slowdown": 0.8}})
    assert "DDP 0.70x" in text and "no slowdown" in text and "not established" in text
    assert "no slowdown" not in beyond_findings.profiled_finding({"ddp": {"slowdown": 1.2}})


def test_collective_time_against_the_models_ratio() -> None:
    fit = AllReduceModel(bandwidth=1e9, latency=1e-4)
    high = beyond_findings.collective_time_finding(11.5, 1.5, fit, _fake())
    assert "11.5x" in high and "(computed" in high and "not established" in high and "gloo runs" in high
    assert "consistent with the model" in beyond_findings.collective_time_finding(2.0, 1.5, fit, _fake())
    assert "bytes, not the count" in beyond_findings.collective_time_finding(1.2, 1.5, fit, _fake())


def test_unexplained_rest_beyond_the_models_communication() -> None:
    rows = {"wide": {"compute": 13.41e-3, "comm model": 4.82e-3, "predicted": 18.23e-3, "measured": 33.38e-3,
                     "comm measured": 3.77e-3},
            "zero1": {"compute": 1.09e-3, "comm model": 4.18e-3, "predicted": 5.27e-3, "measured": 8.5e-3,
                      "comm measured": 6.64e-3},
            "jax": {"compute": 1e-3, "comm model": 1e-3, "predicted": 2e-3, "measured": 9e-3,
                    "comm measured": float("nan")}}
    assert set(beyond_findings.unexplained(rows)) == {"wide"}
    assert beyond_findings.unexplained(rows)["wide"] == pytest.approx(16.2e-3)
    text = beyond_findings.unexplained_finding(rows)
    assert "16.20 ms" in text and "not established" in text and "not an explanation" in text
    assert beyond_findings.unexplained_finding({"zero1": rows["zero1"]}) == ""
    assert np.isnan(rows["jax"]["comm measured"])  # rows without a measured collective time are skipped


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="result"):
        beyond_findings.traffic({})
    with pytest.raises(ValueError, match="slower"):
        beyond_findings.collective_time_finding(0, 1.5, AllReduceModel(1e9, 1e-4), _fake())
    with pytest.raises(TypeError, match="fit"):
        beyond_findings.collective_time_finding(2.0, 1.5, None, _fake())
    with pytest.raises(ValueError, match="rows"):
        beyond_findings.unexplained({})
