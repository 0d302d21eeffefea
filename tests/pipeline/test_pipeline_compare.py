"""course_utils.pipeline.compare: loops compared by medians and quartiles, outlier steps flagged (fixed numbers)."""

from __future__ import annotations

import pytest

from course_utils import display, pipeline
from course_utils.pipeline import compare


def _run(label: str, computes: list[float], waits: list[float] | float = 0.002) -> pipeline.Timeline:
    n = len(computes) + 1  # a first step (the start-up) that the steady numbers leave out
    waits = [waits] * (n - 1) if isinstance(waits, float) else waits
    return pipeline.Timeline(label, tuple(float(i) for i in range(n)), (0.5, *waits), (9.0, *computes), (0,) * n)


STEADY = [0.010, 0.011, 0.010, 0.012, 0.011, 0.010, 0.011, 0.012]
SPIKY = [0.010, 0.011, 0.010, 0.012, 0.011, 0.010, 0.011, 0.150]  # one outlier step pulls the mean out


def test_units_and_quartile_ranges() -> None:
    assert compare.ms(0.0123) == "12.3 ms" and compare.ms(2.31e-5) == "23.1 µs"
    assert compare.spread(_run("a", STEADY).part("compute")) == "10.0-11.2 ms"


def test_a_mean_outside_its_quartiles_is_flagged() -> None:
    spiky, steady = _run("spiky", SPIKY), _run("steady", STEADY)
    assert compare.skewed(spiky, "compute") and not compare.skewed(steady, "compute")
    assert "lies above its quartiles: a few outlier steps" in compare.median(spiky, "compute")
    assert compare.outliers(steady, "compute") == "" and "outlier" not in compare.median(steady, "compute")


def test_change_says_within_the_noise_or_beyond_the_quartiles() -> None:
    base, spiky, slow = _run("base", STEADY), _run("spiky", SPIKY), _run("slow", [2 * c for c in STEADY])
    assert "within the noise" in compare.change(base, spiky)
    assert "(a mean outside its quartiles, a few outlier steps: spiky, 28.1 ms)" in compare.change(base, spiky)
    assert "up, beyond the quartiles" in compare.change(base, slow) and compare.grew(base, slow)
    assert "down, beyond the quartiles" in compare.change(slow, base) and not compare.grew(slow, base)
    assert not compare.grew(base, spiky)  # the mean grew, the typical step did not


def test_speedup_uses_medians_and_says_when_it_is_noise() -> None:
    before, after = _run("before", STEADY, waits=0.010), _run("after", STEADY)
    assert compare.speedup(before, after) == pytest.approx((0.010 + 0.011) / (0.002 + 0.011))
    assert "quartiles apart" in compare.speedup_text(before, after)
    assert "within the noise" in compare.speedup_text(after, _run("twin", STEADY))


def test_twins_report_identical_loops_apart_or_not() -> None:
    a, b = _run("a", STEADY), _run("b", STEADY)
    assert "within the noise" in compare.twins(a, b)
    assert "not established by this run" in compare.twins(a, _run("c", [2 * c for c in STEADY]))


def test_before_after_text_when_the_step_fell_by_the_wait() -> None:
    text = compare.before_after_text("torch", _run("before", STEADY, waits=0.010), _run("after", STEADY))
    assert "the speed-up is the wait removed" in text and "would suggest" not in text
    assert compare.same_drop(_run("before", STEADY, waits=0.010), _run("after", STEADY))
    assert not compare.same_drop(_run("before", STEADY, waits=0.010), _run("after", SPIKY))


def test_before_after_text_when_compute_grew_with_outliers() -> None:
    before, after = _run("before", STEADY, waits=0.010), _run("after", SPIKY)
    text = compare.before_after_text("torch", before, after, twin=_run("twin", STEADY))
    assert "the difference is compute" in text and "within the noise of each other" in text
    assert "a few outlier steps, not the typical step" in text and "would suggest" in text
    assert "`after` and `twin` are the same configuration" in text
    assert "did not fall" in compare.before_after_text("jax", after, before)
    rose = compare.before_after_text("tf", before, _run("after", [3 * c for c in STEADY]))
    assert "while the step rose by" in rose and "up, beyond the quartiles" in rose


def test_the_busy_share_moral_appears_only_when_compute_changed() -> None:
    fell_by_wait = (_run("b", STEADY, waits=0.010), _run("a", STEADY))
    assert compare.busy_share_moral({"torch": fell_by_wait}) == ""
    grown = compare.busy_share_moral({"torch": fell_by_wait, "jax": (_run("b", STEADY, waits=0.01), _run("a", SPIKY))})
    assert grown.startswith("The busy share rewards") and "judge a pipeline fix by its step time" in grown
    fell = compare.busy_share_moral({"jax": (_run("b", SPIKY, waits=0.01), _run("a", STEADY))})
    assert fell.startswith("Where the compute changed")


def test_before_after_table_flags_outlier_rows() -> None:
    table = compare.before_after_table({"torch": (_run("b", STEADY, waits=0.01), _run("a", SPIKY)),
                                        "jax": (_run("b", STEADY, waits=0.01), _run("a", STEADY))})
    assert isinstance(table, display.Table) and table.column("framework") == ["torch *", "jax"]
    assert "outlier steps" in table.note and table.column("speed-up")[1].endswith("x")


def test_spread_table_shows_medians_and_flags_outliers() -> None:
    table = pipeline.timelines_table([_run("spiky", SPIKY), _run("steady", STEADY)], spread=True)
    assert table.column("loop") == ["spiky *", "steady"] and "medians" in table.note
    assert table.column("compute") == ["11 ms", "11 ms"]
