"""ZeRO-1 / FSDP2 tables from worker records, the formula, the cost predictions, and one real 2-rank run."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils.beyond import sharded
from course_utils.distributed import AllReduceModel, LaunchResult

P = 1000


def _fake(uneven: bool = False) -> LaunchResult:
    held = {"ddp": {"params": 4 * P, "grads": 4 * P, "optimizer": 8 * P},
            "zero1": {"params": 4 * P, "grads": 4 * P, "optimizer": 4 * P},
            "fsdp2": {"params": 2 * P, "grads": 2 * P, "optimizer": 4 * P}}
    calls = {"ddp": {"allreduce": 1}, "zero1": {"allreduce": 1, "broadcast": 2},
             "fsdp2": {"allgather": 4, "reduce_scatter": 2}}
    nbytes = {"ddp": {"allreduce": 4 * P}, "zero1": {"allreduce": 4 * P, "broadcast": 4 * P},
              "fsdp2": {"allgather": 8 * P, "reduce_scatter": 4 * P}}
    comm = {"ddp": {"busy": 2e-4, "step": 1e-3, "events": {"gloo:all_reduce": 1.0}},
            "zero1": {"busy": 3e-4, "step": 2e-3, "events": {"gloo:all_reduce": 1.0, "gloo:broadcast": 2.0}},
            "fsdp2": {"busy": 6e-4, "step": 3e-3, "events": {"gloo:all_gather": 4.0, "gloo:all_reduce": 2.0}}}
    records = {r: [{"kind": k, "world": 2, "params": P, "held": held[k], "calls": calls[k], "comm_bytes": nbytes[k],
                    "step_times": [0.001 * (i + 1)] * 3, "comm_seconds": comm[k],
                    "phase_times": {"zero_grad": [1e-5] * 3, "forward_backward": [5e-4] * 3,
                                    "optimizer_step": [1e-4] * 3}} for i, k in enumerate(held)]
               + [{"kind": "compute", "step_times": [5e-4, 5e-4]},
                  {"kind": "collectives", "nbytes": 4 * P, "reduce_scatter_trace": ["c10d::_reduce_scatter_base_"],
                   "times": {"allreduce": [2e-4], "allgather": [1e-4], "reducescatter": [1e-4]}}] for r in (0, 1)}
    if uneven:
        records[1][2]["held"] = {"params": 2 * P, "grads": 2 * P, "optimizer": 2 * P}
    w = np.arange(P, dtype=np.float32)
    arrays = {k: {0: {"weights": w}, 1: {"weights": w}} for k in held}
    return LaunchResult("fsdp_train.py", 2, [], 1.0, [], records, arrays)


def test_formula_is_16_12_8_bytes_per_parameter_on_two_ranks() -> None:
    assert sharded.formula_bytes(P, 2) == {"ddp": 16 * P, "zero1": 12 * P, "fsdp2": 8 * P}


def test_memory_table_sets_measured_against_formula() -> None:
    table = sharded.memory_table(_fake())
    assert table.column("measured / formula") == ["1.000", "1.000", "1.000"]
    assert "computed" in " ".join(table.header)


def test_comm_table_counts_times_and_ring_traffic() -> None:
    table = sharded.comm_table(_fake())
    assert table.column("collectives per step (counted)")[2] == "4 x allgather, 2 x reduce_scatter"
    sent = table.column("sent per rank (computed)")
    assert sent[0] == "3.91 KiB" and sent[2] == "5.86 KiB"  # FSDP: 1.5x DDP
    assert sharded.comm_seconds(_fake()) == pytest.approx({"ddp": 2e-4, "zero1": 3e-4, "fsdp2": 6e-4})
    assert table.column("in collectives, of a profiled step (measured)")[1] == "300 µs of 2 ms (15%)"
    assert sharded.backend_events(_fake())["fsdp2"] == {"gloo:all_gather": 4.0, "gloo:all_reduce": 2.0}
    assert sharded.phase_medians(_fake())["ddp"]["optimizer_step"] == pytest.approx(1e-4)


def test_rank_table_shows_every_rank() -> None:
    assert sharded.rank_table(_fake()).column("largest / smallest") == ["1.000", "1.000", "1.000"]
    assert sharded.rank_table(_fake(uneven=True)).column("largest / smallest")[2] == "1.333"


def test_weight_diffs_steps_and_collectives() -> None:
    fake = _fake()
    assert sharded.weight_diffs(fake) == {"zero1 vs ddp": 0.0, "fsdp2 vs ddp": 0.0, "between ranks": 0.0}
    assert sharded.step_medians(fake)["fsdp2"] == pytest.approx(0.003)
    assert sharded.collective_medians(fake)["nbytes"] == 4 * P
    assert sharded.compute_median(fake) == pytest.approx(5e-4)
    assert sharded.reduce_scatter_trace(fake) == ["c10d::_reduce_scatter_base_"]


def test_ring_costs_per_collective() -> None:
    assert sharded.ring_cost("allreduce", 4) == (6, 1.5)
    assert sharded.ring_cost("allgather", 4) == (3, 0.75) == sharded.ring_cost("reduce_scatter", 4)
    assert sharded.ring_cost("broadcast", 2) == (1, 1.0)
    fit = AllReduceModel(1e9, 1e-5)
    # one all-reduce reproduces 05's model; an all-gather + reduce-scatter of the same bytes costs the same
    assert sharded.model_comm_seconds(fit, {"allreduce": 1}, {"allreduce": 4e6}, 2) == pytest.approx(fit.time(4e6, 2))
    both = sharded.model_comm_seconds(fit, {"allgather": 1, "reduce_scatter": 1},
                                      {"allgather": 4e6, "reduce_scatter": 4e6}, 2)
    assert both == pytest.approx(fit.time(4e6, 2))


def test_step_predictions_add_compute_and_the_ring_model() -> None:
    fit = AllReduceModel(1e9, 1e-5)
    timing = {"params": P, "compute": [1e-3], "ddp": [1.1e-3], "allreduce": [5e-5]}
    jax_rec = {"processes": 2, "devices": 4, "compute_times": [2e-3], "allreduces": ["x"], "param_bytes": 4 * P,
               "step_times": [3e-3]}
    rows = sharded.step_predictions(fit, _fake(), ddp_timing=timing, jax_record=jax_rec)
    fsdp = rows["FSDP2 (ZeRO-3) step"]
    assert fsdp["compute"] == pytest.approx(5e-4) and fsdp["measured"] == pytest.approx(0.003)
    assert fsdp["comm model"] == pytest.approx(6 * 1e-5 + 0.5 * 12 * P / 1e9)
    assert fsdp["comm measured"] == pytest.approx(0.2 * 0.003)  # the profiled share times the step
    wide = rows[f"wide DDP step, {P:,} params"]
    assert wide["predicted"] == pytest.approx(1e-3 + fit.time(4 * P, 2))
    jax = rows["JAX step, 2 processes"]
    assert jax["predicted"] == pytest.approx(2e-3 + fit.time(4 * P, 4)) and np.isnan(jax["comm measured"])
    assert sharded.prediction_table(rows).column("measured / predicted")[2] == f"{0.003 / fsdp['predicted']:.2f}"
    why = sharded.prediction_why("FSDP2", fsdp)
    assert "neither compute" in why and "optimizer" in why
    assert "overlapped" in sharded.prediction_why("X", {**fsdp, "comm measured": 0.01})
    assert "beyond its compute" in sharded.prediction_why("JAX", jax)


def test_jax_row_uses_its_allreduce_alone() -> None:
    fit = AllReduceModel(1e9, 1e-5)
    jax_rec = {"processes": 2, "devices": 4, "compute_times": [2e-3], "allreduces": ["x"], "param_bytes": 4 * P,
               "step_times": [9e-3], "allreduce_operands": [P - 1, 1],
               "allreduce_alone": {"one float": [1e-4], "one array": [2e-3], "operands": [5e-3]}}
    jax = sharded.step_predictions(fit, _fake(), jax_record=jax_rec)["JAX step, 2 processes"]
    assert jax["comm measured"] == pytest.approx(5e-3) and jax["operands"] == 2
    why = sharded.prediction_why("JAX", jax)
    assert "2 operands" in why and "2.00 ms" in why and "not established" in why  # 9 - 2 - 5 ms left over


def test_profiled_steps_name_the_profiler_slowdown() -> None:
    prof = sharded.profiled_steps(_fake())
    assert prof["ddp"]["share"] == pytest.approx(0.2) and prof["ddp"]["profiled"] == pytest.approx(1e-3)
    assert prof["ddp"]["slowdown"] == pytest.approx(1.0) and prof["fsdp2"]["slowdown"] == pytest.approx(1.0)
    assert prof["fsdp2"]["scaled"] == pytest.approx(0.2 * 0.003)


def test_collectives_alone_are_measurements() -> None:
    alone = sharded.collectives_alone(_fake())
    assert set(alone) == {"allreduce", "allgather", "reducescatter"} and alone["allreduce"].median == 2e-4
    assert sharded.gathered(_fake()) is None  # no FSDP2 labels in the fake trace


def _collectives(fake: LaunchResult, allreduce: list[float], reducescatter: list[float], trace: list[str]) -> None:
    rec = fake.records[0][-1]
    rec["times"] = {"allreduce": allreduce, "allgather": [1e-4], "reducescatter": reducescatter}
    rec["reduce_scatter_trace"] = trace


def test_reduce_scatter_finding_judges_by_the_quartiles() -> None:
    fake = _fake()  # points: 0.1 ms vs 0.2 ms, apart
    said = sharded.reduce_scatter_finding(fake, 0.5)
    assert "0.50x an all-reduce, beyond the noise" in said and "as the ring model's 0.50x says" in said
    _collectives(fake, [1e-4, 2e-4, 3e-4, 4e-4], [1.5e-4, 2.5e-4, 3.5e-4], ["c10d::x", "gloo:all_reduce"])
    said = sharded.reduce_scatter_finding(fake, 0.5)
    assert "all-reduce inside" in said and "within this run's noise" in said and "beyond" not in said
    _collectives(fake, [1e-4] * 3, [3e-4] * 3, ["gloo:all_reduce"])
    assert "is not reached on gloo, as an all-reduce inside explains" in sharded.reduce_scatter_finding(fake, 0.5)


def test_operand_finding_both_branches() -> None:
    from course_utils.beyond import jaxmulti

    rec = {"allreduce_operands": [10, 20, 1],
           "allreduce_alone": {"one float": [1e-3] * 3, "one array": [2e-3] * 3, "operands": [6e-3] * 3}}
    said = jaxmulti.operand_finding(rec, {"measured": 1e-2, "compute": 1e-3})
    assert "pays per operand, about 2.00 ms" in said and "3.00 ms more" in said and "not established" in said
    rec["allreduce_alone"]["operands"] = [1e-3, 2e-3, 3e-3]
    said = jaxmulti.operand_finding(rec, {"measured": 2e-3, "compute": 1e-3})
    assert "not established by this run" in said and "account for the whole step" in said


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
    fake = _fake()
    fake.records[0][2]["comm_seconds"] = {**fake.records[0][2]["comm_seconds"], "gathered": peak}
    fake.records[0][2]["layer_bytes"] = {"0": 10, "2": 30}
    assert sharded.gathered(fake) == {**peak, "largest": 30, "all": 40}


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
    assert all(t > 0 for t in sharded.comm_seconds(result).values()) and sharded.compute_median(result) > 0
    assert "c10d::_reduce_scatter_base_" in sharded.reduce_scatter_trace(result)
    peak = sharded.gathered(result)
    assert peak is not None and 1 <= peak["layers"] <= 4 and peak["bytes"] >= peak["largest"]


def test_prediction_plot_takes_step_prediction_rows() -> None:
    from course_utils.beyond import plots as beyond_plots

    rows = sharded.step_predictions(AllReduceModel(1e9, 1e-5), _fake())
    fig = beyond_plots.prediction_plot(rows)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(rows)


def test_fsdp1_runs_on_a_cpu_only_when_given_device_id() -> None:
    """Notebook 06 says so: FSDP1 refuses a machine without an accelerator unless device_id is the CPU."""
    import subprocess
    import sys

    from course_utils.distributed import launcher

    code = f"""
import os, warnings, torch, torch.distributed as dist
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="{launcher.free_port()}", RANK="0", WORLD_SIZE="1")
dist.init_process_group("gloo")
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
warnings.simplefilter("ignore")
for kw in ({{}}, {{"device_id": torch.device("cpu")}}):
    try:
        FSDP(torch.nn.Linear(4, 4), **kw)(torch.ones(2, 4)).sum().backward()
        print(sorted(kw), "runs")
    except RuntimeError as e:
        print(sorted(kw), "refused", "accelerator" in str(e))
dist.destroy_process_group()
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines() == ["[] refused True", "['device_id'] runs"], out.stdout + out.stderr[-2000:]
