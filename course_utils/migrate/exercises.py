"""Checkers of notebook 07's exercises; each computes the expected answer from this run's measurements."""

from __future__ import annotations

import math
from typing import Any

from course_utils import exercises, validate
from course_utils.migrate import cost
from course_utils.migrate.ladder import MigrationGain

# Exercise 07.1's team, stated once so that the notebook's task and the checker agree.
TEAM = {"gpus": 32, "price_per_gpu_hour": 2.50, "training_share": 0.6, "engineers": 3, "weeks": 3,
        "engineer_week_cost": 10_000}


def team_estimate(gain: MigrationGain) -> cost.CostEstimate:
    """Exercise 07.1's reference: the TEAM's bill (GPUs x price x 730 h) fed with ``gain``."""
    spend = cost.monthly_spend_for(TEAM["gpus"], TEAM["price_per_gpu_hour"])
    return cost.estimate(spend, gain, engineers=TEAM["engineers"], weeks=TEAM["weeks"],
                         engineer_week_cost=TEAM["engineer_week_cost"], training_share=TEAM["training_share"])


@exercises.register("07.1", hint="cu.migrate.estimate(cu.migrate.monthly_spend_for(32, 2.5), gain, engineers=3, "
                                 "weeks=3, training_share=0.6).break_even_months (math.inf if it never pays back)")
def _break_even(answer: Any, *, gain: MigrationGain) -> str | None:
    validate.instance("gain", gain, MigrationGain)
    expected = team_estimate(gain).break_even_months
    if math.isinf(expected):
        return None if answer == math.inf else "with this run's gain it never pays back within ten years: math.inf"
    return exercises.close(answer, expected, rel=0.05)


@exercises.register("07.2", hint="cu.migrate.estimate(..., reserved=True, job_hours=72, "
                                 "compile_s_per_job=compile_s).time_to_result()")
def _time_to_result(answer: Any, *, gain: MigrationGain, compile_s: float) -> str | None:
    validate.instance("gain", gain, MigrationGain)
    validate.non_negative("compile_s", compile_s)
    expected = cost.estimate(100_000, gain, reserved=True, job_hours=72, compile_s_per_job=compile_s).time_to_result()
    return exercises.close(answer, expected, rel=0.02)


@exercises.register("07.3", hint="with static shapes Dynamo builds one graph per distinct batch shape; count the "
                                 "distinct batch sizes of one epoch")
def _graph_count(answer: Any, *, measured: int) -> str | None:
    validate.non_negative("measured", measured, integer=True)
    return exercises.exact(answer, measured)
