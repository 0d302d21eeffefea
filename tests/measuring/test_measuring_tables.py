"""Notebook 00's tables that print two times and a speed-up: the speed-up printed is the ratio of the printed
medians, or the table names the estimate it prints (issue 36 rule 1); torch's device and threads from the plan."""

from __future__ import annotations

from printed import divides_or_names

from course_utils import timing
from course_utils.measuring import speedups


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
