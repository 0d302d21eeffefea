"""Every table of migrate that prints two times and a speed-up: the speed-up divides the printed medians, or the cell
names the estimate it prints (geometric mean); the device plan gives outputs_agree its tolerance; no framework row
mixes devices under one label; an undecided row says how many processes would decide it (computed)."""

from __future__ import annotations

import math

import pytest
from fake_assessment import fake
from printed import seconds

from course_utils import devices, env, migrate, timing
from course_utils.migrate import frameworks
from course_utils.migrate import ladder as lad


def _rung(label, kind, median, batch, group=1):
    times = (median * 0.9, median, median * 1.1)
    return lad.Rung(label, kind, batch, median, timing.Measurement(label, times), 0.1, None,
                    round_medians=(median, median * 1.01, median * 0.99), group=group)


def test_the_ladder_speedup_is_the_ratio_of_the_printed_medians_per_sample() -> None:
    ladder = lad.build_ladder([_rung("base", "no migration", 0.0123, 32), _rung("workers", "no migration", 0.00871, 32),
                               _rung("batch", "no migration", 0.0151, 64)])
    table = ladder.table()
    assert "ratio of the printed medians" in table.note
    base = table.rows[0]
    for row in table.rows:
        printed = float(row[7].rstrip("x"))
        computed = seconds(base[4]) / int(base[2]) / (seconds(row[4]) / int(row[2]))
        assert printed == pytest.approx(computed, abs=0.006)


def _row(name, eager, compiled, device="cpu"):
    return frameworks.FrameworkRow(name, timing.Measurement("e", eager, rounds=eager),
                                   timing.Measurement("c", compiled, rounds=compiled, first_call=1.0), None, None,
                                   device)


def test_the_framework_table_divides_the_printed_medians_and_names_each_rows_device() -> None:
    table = frameworks.FrameworkTable((_row("torch", (0.02, 0.021, 0.019), (0.015, 0.016, 0.0155)),
                                       _row("jax", (0.03, 0.031, 0.029), (0.011, 0.012, 0.0115), "tpu")), (), 32)
    shown = table.table()
    torch_eager = seconds(shown.rows[0][1])
    for row in shown.rows:
        assert float(row[4].rstrip("x")) == pytest.approx(torch_eager / seconds(row[2]), abs=0.006)
        assert "geometric mean" in row[5]  # the 'vs its own eager' cell names its estimate
    assert shown.rows[0][0] == "PyTorch (on CPU)" and shown.rows[1][0] == "JAX (on TPU)"
    assert "different devices (CPU, TPU)" in shown.note and "host CPU" in shown.note
    assert table.where() == "PyTorch on CPU, JAX on TPU"


def test_the_assess_tables_name_the_geometric_mean_and_an_undecided_row_its_processes() -> None:
    decided, undecided = fake((1.30, 1.32, 1.28)), fake((0.95, 1.3, 1.1))
    table = migrate.compare_assessments({"decided": decided, "undecided": undecided})
    assert all("geometric mean" in row[1] for row in table.rows)
    assert undecided.decision.outcome == "not decided: measure more"
    assert "computed:" in table.rows[1][7] and "processes in all" in table.rows[1][7]
    assert "computed:" not in table.rows[0][7]
    assert "set-up: batch" in table.note and "not measured" in table.note


@pytest.mark.parametrize("name, tolerance", [("TPU v5e-1", 5e-2), ("T4", 1e-4), ("H100 SXM", 1e-2)])
def test_outputs_agree_takes_its_tolerance_from_the_device_plan(monkeypatch, name, tolerance) -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("torch")
    spec = devices.KNOWN[name]
    plan = devices.plan(devices.Device(spec.kind, spec.name, spec.memory, spec.chips, 2, spec.capability),
                        host_memory=2**34)
    monkeypatch.setattr(env, "available", lambda framework: framework == "torch")  # no JAX/TF call: fast
    agree = migrate.outputs_agree(np.zeros((2, 3, 8, 8), np.float32), plan=plan, classes=3)
    assert agree.tolerance == tolerance and agree.close and agree.diffs == {"torch": 0.0}
    assert agree.device == spec.name


def test_the_tpu_plan_runs_torch_on_the_host_cpu() -> None:
    spec = devices.KNOWN["TPU v5e-1"]
    plan = devices.plan(devices.Device("tpu", spec.name, spec.memory), host_memory=2**34)
    assert plan.torch_device == "cpu"
    skipped = migrate.skipped_rungs(plan.torch_device, None)
    assert any(s.startswith("pinned memory") for s in skipped) and any(s.startswith("mixed") for s in skipped)


def test_compile_gains_states_every_set_up_and_reconciles_in_one_sentence() -> None:
    a = [_rung("eager fp32", "no migration", 0.010, 32), _rung("torch.compile on the baseline", "migration", 0.008, 32)]
    a = [lad.Rung(**{**r.__dict__, "setup": {"batch": 32, "workers": 0, "pin": False, "amp": None, "threads": 1,
                                              "device": "cpu"},
                     "computes": timing.Measurement("c", (0.009,) * 3), "round_computes": (0.009, 0.0091, 0.0089)})
         for r in a]
    twin = lad.Rung(**{**_rung("workers (eager, beside compile)", "no migration", 0.009, 32, 2).__dict__,
                       "note": lad.TWIN, "over": "eager fp32", "setup": {**a[0].setup, "workers": 1}})
    last = lad.Rung(**{**_rung("+ torch.compile", "migration", 0.007, 32, 2).__dict__, "over": twin.label,
                       "setup": twin.setup})
    ladder = lad.build_ladder([a[0], last], extra=[a[1], twin])
    table = migrate.compile_gains(ladder, fake())
    assert [r[0] for r in table.rows] == ["compile first (ladder)", "compile first, compute alone (ladder)",
                                          "compile last (ladder, waterfall)", "assess: the decision's figure"]
    assert all(("thread" in r[2] and "batch" in r[2]) for r in table.rows)
    assert table.note.startswith("One gain, four figures.") and "1 loader worker(s)" in table.note
    assert not math.isnan(float(table.rows[3][1].split("x")[0]))


def test_an_even_number_of_processes_gives_whole_byte_counts() -> None:
    found = fake((1.2, 1.3))  # the median of two peaks is their mean: still a whole number of bytes
    assert isinstance(found.eager_peak_bytes, int) and isinstance(found.deciding.peak_bytes, int)


def test_the_examples_sizes_travel_as_arguments_on_the_command_line() -> None:
    from course_utils.migrate import __main__ as cli

    assert cli._args("--model-arg", ["dim=64", "lr=0.5", "name=x"]) == {"dim": 64, "lr": 0.5, "name": "x"}
    with pytest.raises(ValueError, match="--batches-arg"):
        cli._args("--batches-arg", ["batch"])
    line = migrate.command_line("course_utils.migrate.examples:transformer",
                                "course_utils.migrate.examples:token_batches", model_args={"dim": 64, "heads": 4},
                                batches_args={"batch": 16}, threads=1)
    assert "--model-arg dim=64 --model-arg heads=4 --batches-arg batch=16" in line and "--threads 1" in line
    with pytest.raises(ValueError, match="model_args"):
        migrate.command_line("a.b:c", "a.b:d", model_args={"not a name": 1})
