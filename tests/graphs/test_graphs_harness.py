"""course_utils.graphs.sweep: several harnesses of one speed-up, timed in the same rounds, each factor apart."""

from __future__ import annotations

import pytest

from course_utils import graphs, models, timing


def _m(seconds: float) -> timing.Measurement:
    return timing.Measurement("m", (seconds * 0.95, seconds, seconds * 1.05), rounds=(seconds,) * 5 + (seconds * 1.01,))


def test_factors_are_time_without_over_time_with() -> None:
    found = {graphs.SWEEP: graphs.sweep.Harness(graphs.SWEEP, _m(4e-3), _m(2e-3), 0.0, 0.0),
             graphs.GENERIC: graphs.sweep.Harness(graphs.GENERIC, _m(4e-3), _m(4e-3), 0.0, 0.0),
             graphs.OTHER: graphs.sweep.Harness(graphs.OTHER, _m(4e-3), _m(2e-3), 0.0, 0.0)}
    factors = graphs.harness_factors(found)
    assert factors["a shape-generic graph instead of a static one"].ratio == pytest.approx(0.5, rel=0.01)
    assert factors["a shape-generic graph instead of a static one"].slower  # the change costs time
    assert factors["a `bias` array instead of a scalar, compiled"].ratio == pytest.approx(1.0, rel=0.01)
    table = graphs.harness_table(found)
    assert table.column("speed-up over eager (geometric mean of per-round ratios)")[0].startswith("2.0")
    assert graphs.factor_table(factors).column("outcome") == ["within the noise", "slower", "within the noise"]


def test_gap_is_an_interval_over_the_same_rounds() -> None:
    sweep = graphs.sweep.Harness(graphs.SWEEP, _m(4e-3), _m(2e-3), 0.0, 0.0)
    other = graphs.sweep.Harness(graphs.OTHER, _m(6e-3), _m(2e-3), 0.0, 0.0)
    gap = graphs.harness_gap({graphs.SWEEP: sweep, graphs.OTHER: other})
    assert gap.ratio == pytest.approx(1.5) and gap.unit == "rounds" and gap.n == 6
    assert "over 6 paired rounds in this process" in str(gap)
    with pytest.raises(KeyError):
        graphs.harness_gap({graphs.SWEEP: sweep})


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_compare_harnesses_times_every_harness_in_the_same_rounds() -> None:
    torch = pytest.importorskip("torch")
    chain = models.chain_for("torch")
    x = torch.randn(64)
    found = graphs.compare_harnesses(chain, {
        graphs.SWEEP: torch.compile(graphs.fresh_function(chain)),
        graphs.GENERIC: torch.compile(graphs.fresh_function(chain), dynamic=True),
        graphs.OTHER: torch.compile(graphs.fresh_function(chain))}, (x, x), (x, torch.tensor(0.1)),
        min_time=0.02, rounds=2)
    assert list(found) == list(graphs.sweep.HARNESSES)
    assert all(h.speedup.n == 2 and h.faults >= 0 and h.compiled_faults >= 0 for h in found.values())
