"""Bad calls against course_utils.migrate: each raises TypeError/ValueError naming its argument, never a wrong
answer, and never a bare StopIteration from an empty loader."""

from __future__ import annotations

import math

import numpy as np
import pytest
from badinput import rejects

from course_utils import migrate, timing
from course_utils.migrate import ladder as lad

NAN, INF = float("nan"), float("inf")
GAIN = migrate.MigrationGain.claimed(1.2, "a test")
BATCHES = [(np.zeros((2, 3), np.float32), np.zeros(2)) for _ in range(3)]


def _step(batch):
    return 0.0


def _rung(label="r", kind="no migration"):
    return lad.Rung(label, kind, 4, 1.0, timing.Measurement(label, (1.0, 1.0, 1.0)), 0.1, None)


LADDER = migrate.build_ladder([_rung("base"), _rung("workers"), _rung("compile", "migration")])

BAD_CALLS = [
    # the ladder
    (lambda: migrate.measure_rung("x", [], _step), "loader"),
    (lambda: migrate.measure_rung("x", 42, _step), "loader"),
    (lambda: migrate.measure_rung("x", "abc", _step), "loader"),
    (lambda: migrate.measure_rung("x", BATCHES, 42), "step"),
    (lambda: migrate.measure_rung("", BATCHES, _step), "label"),
    (lambda: migrate.measure_rung(None, BATCHES, _step), "label"),
    (lambda: migrate.measure_rung("x", BATCHES, _step, kind="cheap"), "kind"),
    (lambda: migrate.measure_rung("x", BATCHES, _step, epochs=0), "rounds"),
    (lambda: migrate.measure_rung("x", BATCHES, _step, epochs=NAN), "rounds"),
    (lambda: migrate.measure_rung("x", BATCHES, _step, peak_memory=3), "peak_memory"),
    (lambda: migrate.measure_rungs([], rounds=1), "specs"),
    (lambda: migrate.measure_rungs([("x", BATCHES, _step)]), "specs"),
    (lambda: migrate.measure_rung("x", [(object(),)], _step), "loader"),
    (lambda: migrate.build_ladder([]), "rungs"),
    (lambda: migrate.build_ladder([1, 2]), "rungs"),
    (lambda: migrate.build_ladder([_rung("c", "migration")]), "rungs"),
    (lambda: LADDER.migration_gain("workers"), "label"),
    (lambda: LADDER.speedup(3), "label"),
    (lambda: LADDER.over_previous("base"), "label"),
    (lambda: migrate.MigrationGain.claimed(NAN, "x"), "speedup"),
    (lambda: migrate.MigrationGain.claimed(-1.0, "x"), "speedup"),
    (lambda: migrate.MigrationGain.claimed(1.2, ""), "who"),
    (lambda: migrate.MigrationGain("g", 1.0, 1.2, 1.3, "m"), "low <= median"),
    (lambda: migrate.MigrationGain("g", INF, 1.0, INF, "m"), "median"),
    (lambda: migrate.MigrationGain("+ 2 loader workers", 2.0, 1.5, 2.5, "measured"), "MigrationGain"),
    (lambda: LADDER.over_previous_band("compile", "wait"), "part"),
    (lambda: migrate.rung_sentence(LADDER, "workers", cores=0), "cores"),
    (lambda: migrate.rung_sentence(LADDER, "base", cores=2), "label"),
    (lambda: migrate.outcomes(None), "ladder"),
    (lambda: migrate.compile_account(None, None, None), "ladder"),
    (lambda: migrate.fixed_batch(None, None, ()), "make_model"),
    (lambda: migrate.fixed_batch(_step, None, (), min_time=0), "min_time"),
    (lambda: migrate.amp_agreement(None, (), None), "make_model"),
    (lambda: migrate.amp_agreement(_step, (), None, steps=1), "steps"),
    (lambda: migrate.workers_label(0), "workers"),
    (lambda: migrate.compare_estimates({}), "named"),
    (lambda: migrate.compare_estimates({"x": 3}), "named"),
    (lambda: migrate.autocast_dtype("huge"), "device"),
    (lambda: migrate.autocast_dtype(None), "device"),
    (lambda: migrate.autocast_dtype(3), "device"),
    (lambda: migrate.torch_ladder([], 0, _step), "batch_size"),
    (lambda: migrate.torch_ladder(list(range(100)), 8, 42), "make_model"),
    (lambda: migrate.torch_ladder(list(range(100)), 8, _step, workers=0), "workers"),
    (lambda: migrate.torch_ladder(list(range(100)), 8, _step, compiler=3), "compiler"),
    (lambda: migrate.torch_ladder(list(range(10)), 8, _step), "dataset"),
    (lambda: migrate.step_factory(None), "make_model"),
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
    (lambda: migrate.run_checklist(42, ()), "make_step"),
    (lambda: migrate.run_checklist(_step, (), framework="mxnet"), "framework"),
    (lambda: migrate.run_checklist(_step, (), framework="tensorflow"), "framework"),
    (lambda: migrate.run_checklist(_step, (), min_speedup=NAN), "min_speedup"),
    (lambda: migrate.run_checklist(_step, (), min_speedup=0), "min_speedup"),
    (lambda: migrate.run_checklist(_step, (), gain=1.3), "gain"),
    (lambda: migrate.run_checklist(_step, (), utilisation=2.0), "utilisation"),
    (lambda: migrate.run_checklist(_step, (), min_utilisation=NAN), "min_utilisation"),
    (lambda: migrate.run_checklist(_step, (), compile_s=-1), "compile_s"),
    (lambda: migrate.run_checklist(_step, (), compile_budget_s=INF), "compile_budget_s"),
    (lambda: migrate.run_checklist(_step, (), forward=_step), "forward"),
    (lambda: migrate.run_checklist(_step, (), steps=0), "steps"),
    (lambda: migrate.compile_or_eager(None, _step, ()), "make_step"),
    (lambda: migrate.compile_or_eager(_step, None, ()), "compiler"),
    (lambda: migrate.compilers("keras"), "framework"),
    # monitoring and loaders
    (lambda: migrate.monitor(None, BATCHES), "make_compiled_step"),
    (lambda: migrate.monitor(lambda: _step, 42), "loader"),
    (lambda: migrate.monitor(lambda: _step, BATCHES, steps=0), "steps"),
    (lambda: migrate.monitor(lambda: _step, BATCHES, steps=1), "loader"),
    (lambda: migrate.monitor(lambda: _step, BATCHES, name="a/b"), "name"),
    (lambda: migrate.compile_seconds([]), "trace"),
    (lambda: migrate.busy_share(None), "trace"),
    (lambda: migrate.make_loader(BATCHES, 0), "batch_size"),
    (lambda: migrate.make_loader(BATCHES, 2, workers=-1), "workers"),
    (lambda: migrate.make_loader(BATCHES, 2, pin="yes"), "pin"),
    # frameworks, plots, exercises' helpers
    (lambda: migrate.xla_cpu_kernels(""), "hlo_text"),
    (lambda: migrate.xla_cpu_kernels(None), "hlo_text"),
    (lambda: migrate.framework_table([1, 2], np.zeros(2)), "x_nchw"),
    (lambda: migrate.framework_table(np.zeros((2, 3)), np.zeros(2)), "x_nchw"),
    (lambda: migrate.framework_table(np.zeros((2, 3, 8, 8)), np.zeros(2), frameworks=["mxnet"]), "frameworks"),
    (lambda: migrate.framework_table(np.zeros((2, 3, 8, 8)), np.zeros(2), min_time=NAN), "min_time"),
    (lambda: migrate.jax_step_factory(0), "classes"),
    (lambda: migrate.waterfall(None), "ladder"),
    (lambda: migrate.payback(), "estimates"),
    (lambda: migrate.payback(migrate.seed_example(), labels=["a", "b"]), "labels"),
    (lambda: migrate.explore(1.3), "speedup"),
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
        migrate.measure_rung("x", BATCHES, broken)


def test_never_pays_back_is_inf_not_a_negative_number() -> None:
    slower = migrate.estimate(1000, migrate.MigrationGain.claimed(0.8, "a slowdown"), 10)
    assert math.isinf(slower.break_even_months) and slower.net() < 0
