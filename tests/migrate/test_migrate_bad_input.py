"""Bad calls against course_utils.migrate: each raises TypeError/ValueError naming its argument, never a wrong
answer, and never a bare StopIteration from an empty loader."""

from __future__ import annotations

import math

import numpy as np
import pytest
from badinput import rejects

from course_utils import intervals, migrate, timing
from course_utils.migrate import cost, decision, ladder, torch_rungs
from course_utils.migrate import ladder as lad

NAN, INF = float("nan"), float("inf")
GAIN = ladder.MigrationGain.claimed(1.2, "a test")
SPEEDUP = intervals.Speedup("eager", "compiled", 1.2, 1.1, 1.3, 5, intervals.PROCESSES)
BATCHES = [(np.zeros((2, 3), np.float32), np.zeros(2)) for _ in range(3)]


def _step(batch):
    return 0.0


def _rung(label="r", kind="no migration"):
    return lad.Rung(label, kind, 4, 1.0, timing.Measurement(label, (1.0, 1.0, 1.0)), 0.1, None)


LADDER = ladder.build_ladder([_rung("base"), _rung("workers"), _rung("compile", "migration")])

BAD_CALLS = [
    # the ladder
    (lambda: torch_rungs.measure_rungs([("x", [], _step, "no migration")]), "loader"),
    (lambda: torch_rungs.measure_rungs([("x", 42, _step, "no migration")]), "specs"),
    (lambda: torch_rungs.measure_rungs([("x", "abc", _step, "no migration")]), "specs"),
    (lambda: torch_rungs.measure_rungs([("x", BATCHES, 42, "no migration")]), "specs"),
    (lambda: torch_rungs.measure_rungs([("", BATCHES, _step, "no migration")]), "specs"),
    (lambda: torch_rungs.measure_rungs([(None, BATCHES, _step, "no migration")]), "specs"),
    (lambda: torch_rungs.measure_rungs([("x", BATCHES, _step, "cheap")]), "specs"),
    (lambda: torch_rungs.measure_rungs([("x", BATCHES, _step, "no migration")], rounds=0), "rounds"),
    (lambda: torch_rungs.measure_rungs([("x", BATCHES, _step, "no migration")], rounds=NAN), "rounds"),
    (lambda: torch_rungs.measure_rungs([("x", BATCHES, _step, "no migration")], peak_memory=3), "peak_memory"),
    (lambda: torch_rungs.measure_rungs([], rounds=1), "specs"),
    (lambda: torch_rungs.measure_rungs([("x", BATCHES, _step)]), "specs"),
    (lambda: torch_rungs.measure_rungs([("x", [(object(),)], _step, "no migration")]), "loader"),
    (lambda: ladder.build_ladder([]), "rungs"),
    (lambda: ladder.build_ladder([1, 2]), "rungs"),
    (lambda: ladder.build_ladder([_rung("c", "migration")]), "rungs"),
    (lambda: LADDER.migration_gain("workers"), "label"),
    (lambda: LADDER.speedup(3), "label"),
    (lambda: LADDER.interval("base"), "label"),
    (lambda: LADDER.interval("workers"), "paired"),
    (lambda: LADDER.find(""), "prefix"),
    (lambda: ladder.MigrationGain.claimed(NAN, "x"), "speedup"),
    (lambda: ladder.MigrationGain.claimed(-1.0, "x"), "speedup"),
    (lambda: ladder.MigrationGain.claimed(1.2, ""), "who"),
    (lambda: ladder.MigrationGain("g", 1.0, 1.2, 1.3, "m"), "low <= median"),
    (lambda: ladder.MigrationGain("g", INF, 1.0, INF, "m"), "median"),
    (lambda: ladder.MigrationGain("+ 2 loader workers", 2.0, 1.5, 2.5, "measured"), "MigrationGain"),
    (lambda: LADDER.interval("compile", "wait"), "part"),
    (lambda: migrate.gap(1.2, None), "top"),
    (lambda: migrate.amp_agreement(None, (), None), "make_model"),
    (lambda: migrate.amp_agreement(_step, (), None, steps=1), "steps"),
    (lambda: migrate.workers_label(0), "workers"),
    (lambda: cost.compare_estimates({}), "named"),
    (lambda: cost.compare_estimates({"x": 3}), "named"),
    (lambda: migrate.autocast_dtype("huge"), "device"),
    (lambda: migrate.autocast_dtype(None), "device"),
    (lambda: migrate.autocast_dtype(3), "device"),
    (lambda: migrate.torch_ladder({}, _step, _step, _step, compiler=_step), "setups"),
    (lambda: migrate.torch_ladder({"a": {}}, 42, _step, _step, compiler=_step), "loader"),
    (lambda: migrate.torch_ladder({"a": {}}, _step, _step, None, compiler=_step), "make_model"),
    (lambda: migrate.torch_ladder({"a": {}}, _step, _step, _step, compiler=3), "compiler"),
    (lambda: migrate.torch_ladder({"a": {}}, _step, _step, _step, compiler=_step, rounds=1), "rounds"),
    (lambda: migrate.torch_ladder({"": {}}, _step, _step, _step, compiler=_step), "setups"),
    (lambda: migrate.step_agreement(_step, (), compiler=None), "compiler"),
    # the cost model
    (lambda: migrate.estimate(1000, 2, INF), "speedup"),
    (lambda: migrate.estimate(1000, GAIN, INF), "migration_cost"),
    (lambda: migrate.estimate(1000, GAIN, -5), "migration_cost"),
    (lambda: migrate.estimate(NAN, GAIN, 10), "monthly_spend"),
    (lambda: migrate.estimate(-1, GAIN, 10), "monthly_spend"),
    (lambda: migrate.estimate("big", GAIN, 10), "monthly_spend"),
    (lambda: migrate.estimate(1000, GAIN, 10, training_share=1.5), "training_share"),
    (lambda: migrate.estimate(1000, GAIN, 10, spend_growth=-1), "spend_growth"),
    (lambda: migrate.estimate(1000, GAIN, 10, spend_growth=NAN), "spend_growth"),
    (lambda: migrate.estimate(1000, GAIN, 10, horizon_months=0), "horizon_months"),
    (lambda: migrate.estimate(1000, GAIN, 10, horizon_months="12"), "horizon_months"),
    (lambda: migrate.estimate(1000, GAIN, 10, horizon_months=2.5), "horizon_months"),
    (lambda: migrate.estimate(1000, GAIN, 10, job_hours=0), "job_hours"),
    (lambda: migrate.estimate(1000, GAIN, 10, compile_s_per_job=-1), "compile_s_per_job"),
    (lambda: migrate.estimate(1000, GAIN, 10, reserved="yes"), "reserved"),
    (lambda: migrate.estimate(1000, GAIN, engineers=-2), "engineers"),
    (lambda: migrate.estimate(1000, GAIN, 10, debugging_buffer=INF), "debugging_buffer"),
    (lambda: migrate.estimate(1000, GAIN, 10).gain("best"), "scenario"),
    (lambda: migrate.estimate(1000, GAIN, 10).monthly_saving(-1), "month"),
    (lambda: migrate.monthly_spend_for(0, 2.5), "gpus"),
    (lambda: migrate.monthly_spend_for(8, NAN), "price_per_gpu_hour"),
    (lambda: migrate.monthly_spend_for(8, 2.5, hours_per_month=1000), "hours_per_month"),
    # the checklist
    (lambda: migrate.run_checklist(42, (), compiler=_step), "make_step"),
    (lambda: migrate.run_checklist(_step, ()), "compiler"),
    (lambda: migrate.run_checklist(_step, (), compiler=_step, min_speedup=NAN), "min_speedup"),
    (lambda: migrate.run_checklist(_step, (), compiler=_step, min_speedup=0), "min_speedup"),
    (lambda: migrate.run_checklist(_step, (), compiler=_step, gain=1.3), "gain"),
    (lambda: migrate.run_checklist(_step, (), compiler=_step, compile_s=-1), "compile_s"),
    (lambda: migrate.run_checklist(_step, (), compiler=_step, compile_budget_s=INF), "compile_budget_s"),
    (lambda: migrate.run_checklist(_step, (), compiler=_step, forward=_step), "forward"),
    (lambda: migrate.run_checklist(_step, (), compiler=_step, steps=0), "steps"),
    # loaders
    (lambda: migrate.make_loader(BATCHES, 0), "batch_size"),
    (lambda: migrate.make_loader(BATCHES, 2, workers=-1), "workers"),
    (lambda: migrate.make_loader(BATCHES, 2, pin="yes"), "pin"),
    (lambda: migrate.cnn_batches(batch=10**9), "batch"),
    (lambda: migrate.transformer(dim=130, heads=4), "dim"),
    (lambda: migrate.token_batches(length=0), "length"),
    (lambda: migrate.outputs_agree(np.zeros((2, 3, 8, 8), np.float32), plan=None), "plan"),
    (lambda: migrate.skipped_rungs("huge", None), "device"),
    # frameworks, plots, exercises' helpers
    (lambda: migrate.framework_table([1, 2], np.zeros(2), torch_compiler=_step), "x_nchw"),
    (lambda: migrate.framework_table(np.zeros((2, 3)), np.zeros(2), torch_compiler=_step), "x_nchw"),
    (lambda: migrate.framework_table(np.zeros((2, 3, 8, 8)), np.zeros(2), torch_compiler=_step, frameworks=["mxnet"]),
     "frameworks"),
    (lambda: migrate.framework_table(np.zeros((2, 3, 8, 8)), np.zeros(2), torch_compiler=_step, min_time=NAN),
     "min_time"),
    (lambda: migrate.framework_table(np.zeros((2, 3, 8, 8)), np.zeros(2), torch_compiler=None), "torch_compiler"),
    (lambda: migrate.framework_table(np.zeros((2, 3, 8, 8)), np.zeros(2), torch_compiler=_step, rounds=1),
     "rounds"),
    (lambda: migrate.waterfall(None), "ladder"),
    (lambda: migrate.payback(), "estimates"),
    (lambda: migrate.payback(migrate.seed_example(), labels=["a", "b"]), "labels"),
    (lambda: migrate.explore(1.3), "speedup"),
    (lambda: migrate.assess_figure(), "found"),
    # assess's pieces (assess itself: test_migrate_assess_bad_input.py)
    (lambda: migrate.typed(training_share=0.8), "training_share"),
    (lambda: migrate.read_config(42), "config"),
    (lambda: decision.decide(1.2, 1.05), "speedup"),
    (lambda: decision.decide(SPEEDUP, NAN), "break_even"),
    (lambda: decision.decide(SPEEDUP, 0), "break_even"),
    (lambda: decision.processes_needed(SPEEDUP, -1), "break_even"),
    (lambda: decision.break_even_run(-1, 0.1, SPEEDUP), "compile_s"),
    (lambda: decision.break_even_run(1, 0, SPEEDUP), "eager_step_s"),
    (lambda: decision.break_even_speedup(migrate.typed(), job_hours=0), "job_hours"),
    (lambda: migrate.compare_assessments({}), "named"),
    (lambda: migrate.compare_pricing([]), "named"),
]


@pytest.mark.parametrize("call, argument", BAD_CALLS, ids=[f"{i:02d}-{a}" for i, (_, a) in enumerate(BAD_CALLS)])
def test_bad_call_is_refused_naming_its_argument(call, argument) -> None:
    rejects(call, argument)


def test_at_least_25_bad_calls() -> None:
    assert len(BAD_CALLS) >= 25


def test_a_users_error_in_the_step_passes_through_unchanged() -> None:
    class Mine(Exception):
        pass

    def broken(batch):
        raise Mine("the learner's bug")

    with pytest.raises(Mine, match="learner"):
        torch_rungs.measure_rungs([("x", BATCHES, broken, "no migration")])


def test_never_pays_back_is_inf_not_a_negative_number() -> None:
    slower = migrate.estimate(1000, ladder.MigrationGain.claimed(0.8, "a slowdown"), 10)
    assert math.isinf(slower.break_even_months) and slower.net() < 0
