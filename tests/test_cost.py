"""course_utils.cost: the seed's worked example, the arithmetic, and the bad inputs."""

from __future__ import annotations

import math

import pytest

from course_utils import cost


def test_seed_example_pays_back_in_about_two_months() -> None:
    est = cost.seed_example()
    assert est.compute_saved == pytest.approx(0.30)
    assert est.monthly_saving == pytest.approx(30_000)
    assert est.migration_cost_with_buffer == pytest.approx(48_000)
    assert est.break_even_months == pytest.approx(1.6)
    assert 1 < est.break_even_months <= 2  # the article: "about 2 months"
    assert est.net == pytest.approx(12 * 30_000 - 48_000)


def test_training_share_and_horizon() -> None:
    est = cost.estimate(10_000, 2.0, 5_000, training_share=0.5, risk_buffer=0.0, horizon_months=6)
    assert est.monthly_saving == pytest.approx(2_500)
    assert est.break_even_months == pytest.approx(2.0)
    assert est.cumulative_net()[0] == -5_000 and len(est.cumulative_net()) == 7


def test_a_slowdown_never_breaks_even() -> None:
    est = cost.estimate(10_000, 0.8, 5_000)
    assert est.monthly_saving < 0 and math.isinf(est.break_even_months) and "never" in repr(est)


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"monthly_spend": -1}, ValueError, "monthly_spend"),
        ({"speedup": 0}, ValueError, "speedup"),
        ({"speedup": -2.0}, ValueError, "speedup"),
        ({"speedup": "fast"}, TypeError, "speedup"),
        ({"migration_cost": float("nan")}, TypeError, "migration_cost"),
        ({"training_share": 1.5}, ValueError, "training_share"),
        ({"risk_buffer": -0.1}, ValueError, "risk_buffer"),
        ({"horizon_months": 0}, ValueError, "horizon_months"),
    ],
)
def test_bad_inputs_name_the_argument(kwargs: dict, error: type, name: str) -> None:
    args = {"monthly_spend": 100_000, "speedup": 1.5, "migration_cost": 40_000} | kwargs
    with pytest.raises(error, match=name):
        cost.estimate(**args)


def test_plot_and_renderings() -> None:
    fig = cost.plot(cost.seed_example(), cost.estimate(100_000, 1.1, 40_000), labels=["seed", "measured"])
    ax = fig.axes[0]
    assert len(ax.get_lines()) >= 3 and ax.get_legend() is not None
    assert "break-even" in repr(cost.seed_example()) and "<table>" in cost.seed_example()._repr_html_()
    with pytest.raises(ValueError, match="labels"):
        cost.plot(cost.seed_example(), labels=["a", "b"])


def test_explore_without_a_kernel_returns_the_estimate() -> None:
    est = cost.explore(1.5)
    assert isinstance(est, cost.CostEstimate) and est.speedup == 1.5
