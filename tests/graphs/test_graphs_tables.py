"""Notebook 01's tables that print two times and a speed-up: the speed-up printed is the ratio of the printed
medians, or the table names the estimate it prints (issue 36 rule 1); the loss tolerance from the device plan."""

from __future__ import annotations

import pytest
from printed import divides_or_names

from course_utils import devices, graphs, timing
from course_utils.graphs import breakeven, sweep, training


def _m(median: float, rounds: tuple[float, ...] = (1.0, 1.0, 1.0)) -> timing.Measurement:
    return timing.Measurement("m", (median * 0.9, median, median * 1.1), rounds=tuple(r * median for r in rounds))


# eager rounds 2, 2, 8 against compiled 1, 1, 1: the geometric mean (3.17x) is not the ratio of the medians (4x)
SKEWED = (_m(4e-3, (0.5, 0.5, 2.0)), _m(1e-3))


def test_step_and_parts_tables_name_their_estimate() -> None:
    run = training.LossRun("torch", (1.0,), (1.0,), 0.5)
    divides_or_names(graphs.step_table({"torch": run}, {"torch": SKEWED}), 1, 2, 3)
    divides_or_names(graphs.parts_table({"forward + backward": SKEWED}, SKEWED), 1, 2, 3)


def test_harness_and_dynamic_tables_name_their_estimate() -> None:
    found = {h: sweep.Harness(h, *SKEWED, 0.0, 0.0) for h in sweep.HARNESSES}
    divides_or_names(graphs.harness_table(found), 1, 2, 3)
    variants = {"static": breakeven.Variant("static", SKEWED[1], 1),
                "dynamic": breakeven.Variant("dynamic", SKEWED[0], 1)}
    table = graphs.dynamic_table(variants, 16)
    assert "geometric mean" in table.note  # the static graph's speed over each: baseline time over the variant's
    assert table.column("speed over the static graph")[1].startswith("0.31x")


def test_overhead_table_prints_the_ratio_of_the_medians() -> None:
    model = breakeven.overhead_model("torch", n_ops=11, eager_per_op=1e-6, compiled_per_call=2e-6,
                                     eager_chain=SKEWED[0], compiled_chain=SKEWED[1])
    measured = graphs.overhead_table([model]).column("chain speed-up (measured: ratio of medians)")[0]
    assert measured == "4x"


@pytest.mark.parametrize(("name", "tolerance"), [("T4", 1e-4), ("TPU v5e-1", 5e-2)])
def test_loss_tolerance_is_the_device_plans(monkeypatch: pytest.MonkeyPatch, name: str, tolerance: float) -> None:
    monkeypatch.setenv(devices.SIMULATE, name)  # COURSE_DEVICE: the plan of a known device, not this machine's
    devices.current.cache_clear()
    try:
        assert devices.current().matmul_tolerance == tolerance  # a T4 has no TF32, a TPU multiplies in bf16 passes
    finally:
        devices.current.cache_clear()
