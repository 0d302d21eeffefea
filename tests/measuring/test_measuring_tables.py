"""Notebook 00's tables that print two times and a speed-up: the speed-up printed is the ratio of the printed
medians, or the table names the estimate it prints (issue 36 rule 1); torch's device and threads from the plan."""

from __future__ import annotations

import os

import pytest
from printed import divides_or_names

from course_utils import devices, timing
from course_utils.measuring import speedups, workloads


def _m(median: float, rounds: tuple[float, ...]) -> timing.Measurement:
    return timing.Measurement("m", (median * 0.9, median, median * 1.1), rounds=rounds)


def test_chain_table_names_the_estimate_its_speed_ups_are() -> None:
    # per-round ratios 2, 2, 8: geometric mean 3.17x, while the medians are 4 ms and 1 ms (4x)
    runs = speedups.ChainRuns({"eager": {"torch": _m(4e-3, (2e-3, 2e-3, 8e-3))},
                               "compiled": {"torch": _m(1e-3, (1e-3, 1e-3, 1e-3))}})
    table = runs.table()
    assert table.column("speed-up (geometric mean)")[0].startswith("3.17x")
    assert "geometric mean of the 3 per-round ratios" in table.note and "not the ratio" in table.note
    divides_or_names(table, "baseline time (median)", "compiled time (median)", "speed-up (geometric mean)")


@pytest.mark.parametrize(("name", "device"), [("T4", "cpu"), ("TPU v5e-1", "cpu")])
def test_torch_setup_reads_the_device_plan(monkeypatch: pytest.MonkeyPatch, name: str, device: str) -> None:
    monkeypatch.setenv(devices.SIMULATE, name)  # COURSE_DEVICE: the plan of a known device, not this machine's
    devices.current.cache_clear()
    try:
        # a TPU runtime's torch runs on the host CPU, with its cores; a rehearsed T4 keeps torch on this machine
        assert workloads.torch_setup() == (device, os.cpu_count() or 1)
    finally:
        devices.current.cache_clear()
