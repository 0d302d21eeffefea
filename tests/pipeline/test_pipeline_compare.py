"""course_utils.pipeline.compare: loops compared by an interval over paired rounds; the overlap floor; the table."""

from __future__ import annotations

import pytest
from pipeline_runs import BASE, DOUBLE, WANDER, rounds_run

from course_utils import display, intervals, pipeline, timing
from course_utils.pipeline import compare


def test_units_and_quartile_ranges() -> None:
    assert compare.ms(0.0123) == "12.3 ms" and compare.ms(2.31e-5) == "23.1 µs"
    assert compare.spread(timing.Measurement.from_times("m", [0.010, 0.011, 0.012])) == "10.5-11.5 ms"
    assert compare.spread(timing.Measurement.from_times("m", [1e-5, 2e-5])) == "12.5 µs to 17.5 µs"


def test_speedup_pairs_the_rounds_and_decides_with_the_interval() -> None:
    base, slow, wander = rounds_run("base", BASE), rounds_run("slow", DOUBLE), rounds_run("wander", WANDER)
    s = compare.speedup(slow, base, "compute")
    assert isinstance(s, intervals.Speedup) and s.n == 4 and s.unit == "rounds"
    assert s.outcome == intervals.FASTER and compare.speedup(base, slow, "compute").outcome == intervals.SLOWER
    assert compare.speedup(base, wander, "compute").outcome == intervals.WITHIN_NOISE
    assert compare.speedup(base, slow).ratio == pytest.approx(
        intervals.speedup(base.part(), slow.part()).ratio)  # the step, by default


def test_a_single_epoch_has_no_rounds_to_pair() -> None:
    one = pipeline.Timeline("one", (0.0, 1.0), (0.5, 0.1), (0.1, 0.1), (0, 0))
    assert one.part().rounds == ()
    with pytest.raises(ValueError, match="rounds"):
        compare.speedup(one, one)


def test_the_floor_is_max_of_compute_and_wait_per_round() -> None:
    waits = [0.015, 0.005, 0.015, 0.005]
    found = pipeline.floor(rounds_run("alone", BASE, waits))
    assert found.rounds == pytest.approx((0.015, 0.011, 0.015, 0.012))
    assert found.median == pytest.approx(0.0135) and "max(compute, data)" in found.label


def test_before_after_table_prints_the_interval() -> None:
    table = pipeline.before_after_table({"torch": (rounds_run("b", DOUBLE), rounds_run("a", BASE))})
    assert isinstance(table, display.Table)
    cell = table.column("speed-up of the step")[0]
    assert "95% interval" in cell and cell.endswith(": faster")  # the interval's own word: DOUBLE -> BASE
    assert table.column("busy before") == [display.percent(rounds_run("b", DOUBLE).utilisation)]


def test_later_startups_quote_every_epoch_after_the_first() -> None:
    run = rounds_run("plain", BASE, startups=[0.3, 0.053, 0.0494, 0.049])
    assert pipeline.later_startups(run) == "53, 49, 49 ms"
