"""course_utils.intervals: the interval on a speed ratio that decides faster, slower or within the noise."""

from __future__ import annotations

import math

import pytest

from course_utils import intervals, timing

scipy_stats = pytest.importorskip("scipy.stats")  # installed with jax; the course itself does not need it


@pytest.mark.parametrize("df", [1, 2, 3, 5, 10, 30, 1000])
@pytest.mark.parametrize("p", [0.9, 0.975, 0.995])
def test_t_quantile_matches_scipy(df: int, p: float) -> None:
    assert intervals.t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-6)


def test_paired_rounds_give_the_hand_computed_t_interval() -> None:
    base, cand = [2.0, 2.2, 1.9, 2.1], [1.0, 1.0, 1.0, 1.0]
    logs = [math.log(b / c) for b, c in zip(base, cand)]
    mean = sum(logs) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 3)
    half = scipy_stats.t.ppf(0.975, 3) * sd / 2
    s = intervals.speedup(base, cand)
    assert s.ratio == pytest.approx(math.exp(mean))
    assert (s.low, s.high) == (pytest.approx(math.exp(mean - half)), pytest.approx(math.exp(mean + half)))
    assert s.outcome == "faster" and s.unit == "processes" and s.n == 4
    assert "95% interval" in str(s) and "across 4 fresh processes" in str(s)


@pytest.mark.parametrize(("base", "cand", "outcome"), [
    ([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], "slower"),
    ([1.0, 1.3, 0.8], [1.0, 0.8, 1.3], "within the noise"),
    ([2.0, 2.1, 1.9], [1.0, 1.05, 0.95], "faster"),
])
def test_outcome_is_decided_by_where_the_interval_lies(base, cand, outcome) -> None:
    s = intervals.speedup(base, cand)
    assert s.outcome == outcome
    assert (s.faster, s.slower) == (outcome == "faster", outcome == "slower")


def test_threshold_tests_need_the_whole_interval() -> None:
    s = intervals.speedup([2.0, 2.1, 1.9], [1.0, 1.05, 0.95])
    assert s.above(1.5) and not s.above(s.ratio) and s.below(3.0) and not s.below(s.ratio)


def test_measurements_from_interleaved_are_paired_by_round() -> None:
    found = timing.interleaved({"slow": lambda: sum(range(3000)), "fast": lambda: sum(range(300))}, rounds=4,
                               min_time=0.04)
    assert len(found["slow"].rounds) == 4 == len(found["fast"].rounds)
    s = intervals.speedup(found["slow"], found["fast"])
    assert s.unit == "rounds" and s.n == 4 and s.baseline == "slow" and s.candidate == "fast" and s.ratio > 1


def test_bad_input_is_named() -> None:
    one = timing.Measurement.from_times("one", [1.0, 1.0])
    with pytest.raises(ValueError, match="rounds"):
        intervals.speedup(one, one)
    with pytest.raises(ValueError, match="paired"):
        intervals.speedup([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at least 2"):
        intervals.speedup([1.0], [1.0])
    with pytest.raises(ValueError, match=r"baseline\[1\]"):
        intervals.speedup([1.0, 0.0], [1.0, 1.0])
    with pytest.raises(TypeError, match="candidate"):
        intervals.speedup([1.0, 1.0], "ab")
    with pytest.raises(ValueError, match="confidence"):
        intervals.speedup([1.0, 1.0], [1.0, 1.0], confidence=1.5)
    with pytest.raises(ValueError, match="threshold"):
        intervals.speedup([1.0, 1.1], [1.0, 1.0]).above(float("nan"))


def test_t_quantile_refuses_a_tail_it_cannot_integrate_instead_of_looping() -> None:
    # p = 1 - 1e-16 with one degree of freedom doubled its bracket forever
    with pytest.raises(ValueError, match="p must be"):
        intervals.t_quantile(1 - 1e-16, 1)
    assert intervals.t_quantile(intervals.MAX_P, 1) == pytest.approx(31830.99, rel=1e-4)


def test_a_speedup_holds_its_ratio_inside_its_interval() -> None:
    with pytest.raises(ValueError, match="ratio"):
        intervals.Speedup("a", "b", math.nan, 1.0, 1.0, 4, "rounds")
    with pytest.raises(ValueError, match="ratio must lie within"):
        intervals.Speedup("a", "b", 2.0, 1.0, 1.5, 4, "rounds")
    with pytest.raises(ValueError, match="unit"):
        intervals.Speedup("a", "b", 1.0, 1.0, 1.0, 4, "runs")
