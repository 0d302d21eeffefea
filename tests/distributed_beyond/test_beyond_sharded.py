"""ZeRO-1 / FSDP2 tables from worker records, the formula, the cost predictions, and one real 2-rank run."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils.distributed import AllReduceModel, LaunchResult, sharded

P = 1000


def _fake() -> LaunchResult:
    held = {"ddp": {"params": 4 * P, "grads": 4 * P, "optimizer": 8 * P},
            "zero1": {"params": 4 * P, "grads": 4 * P, "optimizer": 4 * P},
            "fsdp2": {"params": 2 * P, "grads": 2 * P, "optimizer": 4 * P}}
    calls = {"ddp": {"allreduce": 1}, "zero1": {"allreduce": 1, "broadcast": 2},
             "fsdp2": {"allgather": 4, "reduce_scatter": 2}}
    nbytes = {"ddp": {"allreduce": 4 * P}, "zero1": {"allreduce": 4 * P, "broadcast": 4 * P},
              "fsdp2": {"allgather": 8 * P, "reduce_scatter": 4 * P}}
    records = {r: [{"kind": k, "world": 2, "params": P, "held": held[k], "calls": calls[k], "comm_bytes": nbytes[k],
                    "step_times": [0.001 * (i + 1)] * 3} for i, k in enumerate(held)]
               + [{"kind": "collectives", "nbytes": 4 * P,
                   "times": {"allreduce": [2e-4], "allgather": [1e-4], "reducescatter": [1e-4]}}] for r in (0, 1)}
    w = np.arange(P, dtype=np.float32)
    arrays = {k: {0: {"weights": w}, 1: {"weights": w}} for k in held}
    return LaunchResult("fsdp_train.py", 2, [], 1.0, [], records, arrays)


def test_formula_is_16_12_8_bytes_per_parameter_on_two_ranks() -> None:
    assert sharded.formula_bytes(P, 2) == {"ddp": 16 * P, "zero1": 12 * P, "fsdp2": 8 * P}


def test_memory_table_sets_measured_against_formula() -> None:
    table = sharded.memory_table(_fake())
    assert table.column("measured / formula") == ["1.000", "1.000", "1.000"]
    assert "computed" in " ".join(table.header)


def test_comm_table_counts_and_ring_traffic() -> None:
    table = sharded.comm_table(_fake())
    assert table.column("collectives per step (counted)")[2] == "4 x allgather, 2 x reduce_scatter"
    sent = table.column("sent per rank (computed)")
    assert sent[0] == "3.91 KiB" and sent[2] == "5.86 KiB"  # FSDP: 1.5x DDP


def test_weight_diffs_steps_and_collectives() -> None:
    fake = _fake()
    assert sharded.weight_diffs(fake) == {"zero1 vs ddp": 0.0, "fsdp2 vs ddp": 0.0, "between ranks": 0.0}
    assert sharded.step_medians(fake)["fsdp2"] == pytest.approx(0.003)
    assert sharded.collective_medians(fake)["nbytes"] == 4 * P


def test_cost_predictions_use_the_fitted_model() -> None:
    fit = AllReduceModel(1e9, 1e-5)
    timing = {"params": P, "compute": [1e-3], "ddp": [1.1e-3]}
    rows = sharded.cost_predictions(fit, timing, _fake())
    (pred, meas), *_ = rows.values()
    assert pred == pytest.approx(1e-3 + fit.time(4 * P, 2)) and meas == pytest.approx(1.1e-3)
    ag = next(v for k, v in rows.items() if k.startswith("all-gather"))
    assert ag[0] == pytest.approx(1e-5 + 0.5 * 4 * P / 1e9)


def test_jax_sharding_keeps_the_result() -> None:
    pytest.importorskip("jax")
    out = sharded.jax_sharding(sizes=(8, 16, 4), batch=8)
    assert out["max_diff"] < 1e-6
    assert out["sharded"]["argument_bytes"] <= out["replicated"]["argument_bytes"]


@pytest.mark.integration
def test_real_run_on_two_ranks_measures_and_agrees() -> None:
    result = sharded.run(steps=2, repeats=2, echo=False, progress=False)
    ratios = sharded.memory_table(result).column("measured / formula")
    assert all(abs(float(r) - 1) < 0.05 for r in ratios)
    assert all(d < 1e-6 for d in sharded.weight_diffs(result).values())
    calls = result.record("fsdp2")["calls"]
    assert calls.get("allgather", 0) > 0 and calls.get("reduce_scatter", 0) > 0
