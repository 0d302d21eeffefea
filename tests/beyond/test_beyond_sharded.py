"""ZeRO-1 / FSDP2 tables from worker records, the formula, the cost predictions, and one real 2-rank run."""

from __future__ import annotations

import numpy as np
import pytest
from beyond_fakes import fake

from course_utils.beyond import plots, predict, sharded
from course_utils.distributed.comms import AllReduceModel

P = 1000


def test_formula_is_16_20_12_8_bytes_per_parameter_on_two_ranks() -> None:
    assert sharded.formula_bytes(P, 2) == {"ddp": 16 * P, "zero1": 12 * P, "fsdp2": 8 * P,
                                           sharded.DEFAULT_DDP: 20 * P}
    assert sharded.formula_bytes(np.int64(P), np.int64(2))["fsdp2"] == 8 * P  # numpy integers are counts too


def test_memory_table_sets_measured_against_formula_default_ddp_included() -> None:
    table = sharded.memory_table(fake())
    assert table.column("measured / formula") == ["1.000"] * 4
    assert table.column("extra buckets")[1] == "3.91 KiB" and table.column("extra buckets")[0] == "0 B"
    assert "computed" in " ".join(table.header)
    assert sharded.memory_ratios(fake()) == pytest.approx({"ddp": 1, "zero1": 1, "fsdp2": 1, sharded.DEFAULT_DDP: 1})
    assert sharded.largest_rank(fake(uneven=True))["fsdp2"] == 8 * P  # the largest of the two ranks


def test_comm_table_counts_times_and_ring_traffic() -> None:
    table = sharded.comm_table(fake())
    assert table.column("collectives per step (counted)")[2] == "4 x allgather, 2 x reduce_scatter"
    sent = table.column("sent per rank (computed)")
    assert sent[0] == "3.91 KiB" and sent[2] == "5.86 KiB"  # FSDP: 1.5x DDP
    assert sharded.comm_seconds(fake()) == pytest.approx({"ddp": 2e-4, "zero1": 3e-4, "fsdp2": 6e-4})
    assert table.column("in collectives, of a profiled step (measured)")[1] == "300 µs of 2 ms (15%)"
    assert sharded.phase_medians(fake())["ddp"]["optimizer_step"] == pytest.approx(1e-4)


def test_steps_are_measurements_in_rounds() -> None:
    found = sharded.steps(fake())
    assert set(found) == {"ddp", "zero1", "fsdp2", "compute"}
    assert len(found["fsdp2"].rounds) == 3 and found["fsdp2"].median == pytest.approx(0.003)
    assert sharded.step_medians(fake())["compute"] == pytest.approx(5e-4)
    # a share of the profiled step, times the plain step: 20% of 1 ms for DDP
    assert sharded.in_collectives(fake())["ddp"] == pytest.approx(2e-4)


def test_weight_diffs_and_collectives_alone() -> None:
    result = fake()
    assert sharded.weight_diffs(result) == {"zero1 vs ddp": 0.0, "fsdp2 vs ddp": 0.0, "between ranks": 0.0}
    alone = sharded.collectives_alone(result)
    assert set(alone) == {"allreduce", "allgather", "reducescatter"} and len(alone["allreduce"].rounds) == 2
    assert sharded.reduce_scatter_trace(result) == ["c10d::_reduce_scatter_base_"]
    assert sharded.gathered(result) is None  # no FSDP2 labels in the fake trace


def test_ring_costs_per_collective() -> None:
    assert predict.ring_cost("allreduce", 4) == (6, 1.5)
    assert predict.ring_cost("allgather", 4) == (3, 0.75) == predict.ring_cost("reduce_scatter", 4)
    assert predict.ring_cost("broadcast", 2) == (1, 1.0)
    fit = AllReduceModel(1e9, 1e-5)
    # one all-reduce reproduces 05's model; an all-gather + reduce-scatter of the same bytes costs the same
    assert predict.model_comm_seconds(fit, {"allreduce": 1}, {"allreduce": 4e6}, 2) == pytest.approx(fit.time(4e6, 2))
    both = predict.model_comm_seconds(fit, {"allgather": 1, "reduce_scatter": 1},
                                      {"allgather": 4e6, "reduce_scatter": 4e6}, 2)
    assert both == pytest.approx(fit.time(4e6, 2))


def test_step_predictions_add_compute_and_the_ring_model() -> None:
    fit = AllReduceModel(1e9, 1e-5)
    timing = {"params": P, "compute": [1e-3], "ddp": [1.1e-3], "allreduce": [5e-5]}
    jax_rec = {"processes": 2, "devices": 4, "compute_times": [2e-3], "allreduces": ["x"], "param_bytes": 4 * P,
               "step_times": [3e-3]}
    rows = predict.step_predictions(fit, fake(), ddp_timing=timing, jax_record=jax_rec)
    fsdp = rows["FSDP2 (ZeRO-3) step"]
    assert fsdp["compute"] == pytest.approx(5e-4) and fsdp["measured"] == pytest.approx(0.003)
    assert fsdp["comm model"] == pytest.approx(6 * 1e-5 + 0.5 * 12 * P / 1e9)
    assert fsdp["comm measured"] == pytest.approx(0.2 * 0.003)  # the profiled share times the step
    wide = rows[f"wide DDP step, {P:,} params"]
    assert wide["predicted"] == pytest.approx(1e-3 + fit.time(4 * P, 2))
    jax = rows["JAX step, 2 processes"]
    assert jax["predicted"] == pytest.approx(2e-3 + fit.time(4 * P, 4)) and np.isnan(jax["comm measured"])
    assert predict.prediction_table(rows).column("measured / predicted")[2] == f"{0.003 / fsdp['predicted']:.2f}"
    assert predict.ratios(rows)["FSDP2 (ZeRO-3) step"] == pytest.approx(0.003 / fsdp["predicted"])


def test_jax_row_uses_its_allreduce_alone() -> None:
    fit = AllReduceModel(1e9, 1e-5)
    jax_rec = {"processes": 2, "devices": 4, "compute_times": [2e-3], "allreduces": ["x"], "param_bytes": 4 * P,
               "step_times": [9e-3], "allreduce_operands": [P - 1, 1],
               "allreduce_alone": {"one float": [[1e-4]], "one array": [[2e-3]], "operands": [[5e-3], [5e-3]]}}
    jax = predict.step_predictions(fit, fake(), jax_record=jax_rec)["JAX step, 2 processes"]
    assert jax["comm measured"] == pytest.approx(5e-3) and jax["operands"] == 2


def test_prediction_plot_takes_step_prediction_rows() -> None:
    rows = predict.step_predictions(AllReduceModel(1e9, 1e-5), fake())
    fig = plots.prediction_plot(rows)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(rows)


def test_memory_plot_draws_four_kinds() -> None:
    fig = plots.memory_plot(fake())
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [sharded.LABELS[k] for k in
                                                                     ("ddp", sharded.DEFAULT_DDP, "zero1", "fsdp2")]


def test_gathered_peak_counts_layers_from_gather_to_reshard() -> None:
    import importlib.util
    from pathlib import Path
    from types import SimpleNamespace as E

    import course_utils

    path = Path(course_utils.__file__).parent / "workers" / "fsdp_train.py"
    spec = importlib.util.spec_from_file_location("fsdp_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    events = [E(name="FSDP::all_gather (0)", start=0, end=1), E(name="FSDP::post_forward (0)", start=2, end=3),
              E(name="FSDP::all_gather (2)", start=4, end=5),  # backward: 2 gathered, 0 prefetched before 2 frees
              E(name="FSDP::all_gather (0)", start=6, end=7), E(name="FSDP::post_backward_reshard (2)", start=8, end=9),
              E(name="FSDP::all_gather_copy_out (0)", start=9, end=10),
              E(name="FSDP::post_backward_reshard (0)", start=11, end=12)]
    peak = module.gathered_peak(events, {"0": 10, "2": 30})
    assert peak == {"layers": 2, "bytes": 40, "names": ["0", "2"]}
    assert module.gathered_peak([], {"0": 1}) is None
    result = fake()
    result.records[0][2]["comm_seconds"] = {**result.records[0][2]["comm_seconds"], "gathered": peak}
    result.records[0][2]["layer_bytes"] = {"0": 10, "2": 30}
    assert sharded.gathered(result) == {**peak, "largest": 30, "all": 40}
    assert sharded.facts(result)["peak"] == ("its own profiler labels show at most 2 layer(s) held whole at once "
                                             "(modules 0, 2: 40 B, against 40 B for all weights)")


@pytest.mark.integration
def test_real_run_on_two_ranks_measures_and_agrees() -> None:
    result = sharded.run(steps=2, rounds=2, per_round=1, echo=False, progress=False)
    assert all(abs(r - 1) < 0.05 for r in sharded.memory_ratios(result).values())
    assert all(d < 1e-6 for d in sharded.weight_diffs(result).values())
    calls = sharded.calls(result)["fsdp2"]
    assert calls.get("allgather", 0) > 0 and calls.get("reduce_scatter", 0) > 0
    assert all(t > 0 for t in sharded.comm_seconds(result).values())
    assert {k: len(m.rounds) for k, m in sharded.steps(result).items()} == dict.fromkeys(
        ("ddp", "zero1", "fsdp2", "compute"), 2)
    assert "c10d::_reduce_scatter_base_" in sharded.reduce_scatter_trace(result)
    peak = sharded.gathered(result)
    assert peak is not None and 1 <= peak["layers"] <= 4 and peak["bytes"] >= peak["largest"]

