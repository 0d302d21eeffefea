"""course_utils.migrate.cost: only what the migration buys feeds the model; band, growth, reserved capacity."""

from __future__ import annotations

import math

import pytest

from course_utils import migrate, timing
from course_utils.migrate import cost, ladder
from course_utils.migrate import ladder as lad


def _ladder():
    def rung(label, kind, median, batch=4):
        return lad.Rung(label, kind, batch, median, timing.Measurement(label, (median * 0.9, median, median * 1.1)),
                        0.1, None, round_medians=(median * 0.99, median, median * (1 + len(label) / 100)), group=1)

    return ladder.build_ladder([rung("eager", "no migration", 10.0), rung("+ 2 loader workers", "no migration", 4.0),
                           rung("+ torch.compile", "migration", 3.6)])


def test_seed_example_reproduces_the_article() -> None:
    seed = migrate.seed_example()
    assert seed.one_off_cost == pytest.approx(48_000)
    assert seed.monthly_saving() == pytest.approx(30_000)
    assert seed.break_even_months == pytest.approx(1.6)
    assert seed.net() == pytest.approx(12 * 30_000 - 48_000)


def test_a_no_migration_rung_cannot_feed_the_cost_model() -> None:
    result = _ladder()
    with pytest.raises(TypeError, match="speedup"):
        migrate.estimate(100_000, result.speedup("+ 2 loader workers"), 40_000)
    with pytest.raises(ValueError, match="no-migration"):
        migrate.estimate(100_000, result.migration_gain("+ 2 loader workers"), 40_000)
    fed = migrate.estimate(100_000, result.migration_gain(), 40_000)
    assert fed.speedup.median == pytest.approx(4.0 / 3.6, rel=0.02)  # over the loader rung, not over eager


def test_band_orders_break_even() -> None:
    est = migrate.estimate(100_000, _ladder().migration_gain(), 40_000)
    soon, late = est.break_even_range
    assert soon <= est.break_even_months <= late
    assert est.net("low") <= est.net() <= est.net("high")


def test_growth_shortens_break_even_and_reserved_capacity_saves_no_money() -> None:
    gain = ladder.MigrationGain.claimed(1.1, "a test")
    flat = migrate.estimate(100_000, gain, 100_000)
    growing = migrate.estimate(100_000, gain, 100_000, spend_growth=0.5)
    assert growing.break_even_months < flat.break_even_months
    reserved = migrate.estimate(100_000, gain, 100_000, reserved=True, job_hours=72)
    assert math.isinf(reserved.break_even_months) and reserved.time_to_result() == pytest.approx(72 / 1.1)


def test_compile_time_and_upkeep_reduce_the_return() -> None:
    gain = ladder.MigrationGain.claimed(1.5, "a test")
    plain = migrate.estimate(100_000, gain, 40_000, job_hours=1)
    paid = migrate.estimate(100_000, gain, 40_000, job_hours=1, compile_s_per_job=600, eager_upkeep=5_000)
    assert paid.gain() < plain.gain() and paid.break_even_months > plain.break_even_months
    assert migrate.estimate(100_000, ladder.MigrationGain.claimed(1.0, "x"), 1).break_even_months == math.inf


def test_engineer_weeks_and_spend_helper() -> None:
    est = migrate.estimate(50_000, ladder.MigrationGain.claimed(1.2, "x"), engineers=3, weeks=3,
                           engineer_week_cost=10_000)
    assert est.migration_cost == 90_000
    assert migrate.monthly_spend_for(32, 2.5) == pytest.approx(58_400)
    assert "computed" in repr(est) and "<table>" in est._repr_html_()


def test_the_table_formats_compile_time_and_the_cases_sit_side_by_side() -> None:
    gain = ladder.MigrationGain.claimed(1.5, "a test")
    est = migrate.estimate(100_000, gain, job_hours=72, compile_s_per_job=0.25, eager_upkeep=2_000,
                           training_share=0.8)
    text = repr(est)
    assert "250 ms of compile per 72 h job" in text and "(0 s per" not in text
    growing = migrate.estimate(100_000, gain, job_hours=72, spend_growth=0.5)
    cases = repr(cost.compare_estimates({"flat": est, "+50% a month": growing}))
    assert "+50%" in cases and "flat" in cases and "break-even" in cases
    assert cost.months_text(math.inf) == "never (within 10 years)" and cost.months_text(1.25) == "1.2 months"
    assert cost.SEED_JOB_HOURS / migrate.SEED_COMPETITOR_HOURS == 24


def test_savings_start_when_the_migration_ends_hand_computed() -> None:
    gain = ladder.MigrationGain.claimed(1.25, "a test")  # saves 20% of the bill: 20,000 a month on 100,000
    # 1 engineer x 52/12 weeks = one month on the calendar; 52,000 with no buffer; nothing saved in month 0
    month = migrate.estimate(100_000, gain, engineers=1, weeks=52 / 12, engineer_week_cost=12_000,
                             debugging_buffer=0)
    assert month.migration_months == pytest.approx(1.0) and month.monthly_saving(0) == 0
    assert month.break_even_months == pytest.approx(1 + 52_000 / 20_000)  # 3.6
    # the seed's inputs: 2 weeks = 0.4615 months, then 30,000 a month repay 48,000 in 1.6 months: 2.06, not 1.6
    seed = migrate.estimate(100_000, ladder.MigrationGain.claimed(1 / 0.7, "the seed"), engineers=2, weeks=2,
                            engineer_week_cost=10_000, debugging_buffer=0.2)
    assert seed.monthly_saving(0) == pytest.approx(30_000 * (1 - 2 * 12 / 52))
    assert seed.break_even_months == pytest.approx(2 * 12 / 52 + 1.6)
    # a growing bill: +10% a month, one month of migration; month 1 saves 22,000, month 2 24,200, month 3 26,620
    growing = migrate.estimate(100_000, gain, engineers=1, weeks=52 / 12, engineer_week_cost=12_000,
                               debugging_buffer=0, spend_growth=0.1)
    assert growing.break_even_months == pytest.approx(3 + (52_000 - 22_000 - 24_200) / 26_620)
    assert growing.net() == pytest.approx(sum(20_000 * 1.1 ** m for m in range(1, 12)) - 52_000)


def test_removed_fields_are_refused_with_why(tmp_path) -> None:
    config = tmp_path / "costs.toml"
    for name in ("jobs_per_month", "edits_per_day"):
        config.write_text(f"{name} = 10\n")
        with pytest.raises(ValueError, match=f"field '{name}' was removed"):
            migrate.read_config(config)
    assert set(migrate.inputs.FIELDS) == set(migrate.read_config(None).values)
