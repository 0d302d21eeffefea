"""course_utils.pipeline.loop: loops compared by an interval over paired rounds; the overlap floor; the table."""

from __future__ import annotations

import pytest
from pipeline_runs import BASE, DOUBLE, WANDER, rounds_run
from printed import seconds

from course_utils import display, intervals, pipeline


def test_units() -> None:
    assert pipeline.ms(0.0123) == "12.3 ms" and pipeline.ms(2.31e-5) == "23.1 µs"


def test_a_single_epoch_has_no_rounds_to_pair() -> None:
    one = pipeline.Timeline("one", (0.0, 1.0), (0.5, 0.1), (0.1, 0.1), (0, 0))
    assert one.part().rounds == ()
    with pytest.raises(ValueError, match="round"):
        pipeline.floor(one)


def test_the_floor_is_max_of_compute_and_wait_per_round() -> None:
    waits = [0.015, 0.005, 0.015, 0.005]
    found = pipeline.floor(rounds_run("alone", BASE, waits))
    assert found.rounds == pytest.approx((0.015, 0.011, 0.015, 0.012))
    assert found.median == pytest.approx(0.0135) and "max(compute, data)" in found.label


@pytest.mark.parametrize(("before", "after"), [(DOUBLE, BASE), (BASE, WANDER), (WANDER, DOUBLE)])
def test_before_after_table_names_the_speed_up_it_prints(before, after) -> None:
    """Issue 36 rule 1 on the table's own output: the printed speed-up is the ratio of the printed step medians, or
    the header names the estimate it is (the geometric mean of the per-round ratios) and the note says it differs."""
    b, a = rounds_run("b", before), rounds_run("a", after)
    table = pipeline.before_after_table({"torch": (b, a)})
    assert isinstance(table, display.Table)
    header = table.header[-1]
    cell = table.column(header)[0]
    gain = intervals.speedup(b.part(), a.part())
    assert cell == f"{gain.printed()[0]} ({gain.interval}): {gain.outcome}"
    printed = float(cell.split("x")[0])
    of_medians = seconds(table.column("step before")[0]) / seconds(table.column("step after")[0])
    if abs(printed - of_medians) > 0.01 * of_medians:
        assert header == "step speed-up: geometric mean of 4 per-round ratios"
        assert "not the ratio of the two medians" in table.note
    assert table.column("busy before") == [display.percent(b.utilisation)]


def test_later_startups_quote_every_epoch_after_the_first() -> None:
    run = rounds_run("plain", BASE, startups=[0.3, 0.053, 0.0494, 0.049])
    assert pipeline.later_startups(run) == "53, 49, 49 ms"
