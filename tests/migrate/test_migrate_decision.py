"""course_utils.migrate.decision and .inputs: the break-even speed-up against hand-computed values, the rule's three
branches, the processes that would likely decide, the break-even run length, and every input with its source."""

from __future__ import annotations

import math

import pytest

from course_utils import intervals, migrate
from course_utils.migrate import decision, inputs


def _speedup(ratio: float, low: float, high: float, n: int = 5) -> intervals.Speedup:
    return intervals.Speedup("eager", "compiled", ratio, low, high, n, intervals.PROCESSES)


SAVING_MONTHS = 12 - 2 * 12 / 52  # the savings start when the 2-week migration ends (52 weeks = 12 months)


def test_break_even_speedup_on_the_seeds_own_terms() -> None:
    # 100k a month, all of it training, 2 x 2 weeks x 10k + 20% = 48k repaid in the 11.54 months left of 12 once
    # the migration ends: 48k / 11.54 = 4.16k a month must be saved, so 1 - 1/g = 0.0416.
    found = decision.break_even_speedup(inputs.defaults(), job_hours=72)
    assert found == pytest.approx(1 / (1 - 48_000 / SAVING_MONTHS / 100_000), rel=1e-5)


def test_break_even_speedup_at_the_leads_inputs() -> None:
    # Issue 29: training share 0.8 and 2k a month of eager upkeep: (4.16k + 2k) / 80k = 0.077 -> g = 1.083.
    share = (48_000 / SAVING_MONTHS + 2_000) / 80_000
    lead = migrate.typed(training_share=(0.8, "the lead's estimate"), eager_upkeep=(2_000, "the lead's estimate"))
    assert decision.break_even_speedup(lead, job_hours=72) == pytest.approx(1 / (1 - share), rel=1e-5)
    # With 1 h of compile per 72 h job the raw gain must be higher: 72 / (72 / g - 1).
    with_compile = decision.break_even_speedup(lead, job_hours=72, compile_s_per_job=3600)
    assert with_compile == pytest.approx(72 / (72 * (1 - share) - 1), rel=1e-5)


def test_break_even_speedup_is_infinite_when_the_upkeep_eats_every_saving() -> None:
    costly = migrate.typed(eager_upkeep=(200_000, "a test"))
    assert math.isinf(decision.break_even_speedup(costly, job_hours=72))
    free = migrate.typed(engineers=(0, "a test"))
    assert decision.break_even_speedup(free, job_hours=72) == 1.0


@pytest.mark.parametrize("interval, outcome", [((1.3, 1.2, 1.4), decision.MIGRATE),
                                               ((1.0, 0.95, 1.03), decision.DO_NOT_MIGRATE),
                                               ((1.1, 1.0, 1.2), decision.NOT_DECIDED)])
def test_the_rule_has_three_branches(interval, outcome) -> None:
    found = decision.decide(_speedup(*interval), 1.05)
    assert found.outcome == outcome
    assert (found.processes_needed is not None) == (outcome == decision.NOT_DECIDED)


def test_an_infinite_break_even_is_do_not_migrate() -> None:
    assert decision.decide(_speedup(3.0, 2.5, 3.5), math.inf).outcome == decision.DO_NOT_MIGRATE


def test_processes_needed_follows_the_t_interval() -> None:
    # mean 1.1, half-width (log) from n = 5; the break-even at 1.05 needs the half-width below log(1.1/1.05).
    s = _speedup(1.1, 1.1 * math.exp(-0.1), 1.1 * math.exp(0.1), n=5)
    need = decision.processes_needed(s, 1.05)
    spread = 0.1 * math.sqrt(5) / intervals.t_quantile(0.975, 4)
    assert intervals.t_quantile(0.975, need - 1) * spread / math.sqrt(need) < math.log(1.1 / 1.05)
    assert intervals.t_quantile(0.975, need - 2) * spread / math.sqrt(need - 1) >= math.log(1.1 / 1.05)
    assert decision.decide(s, 1.05).more_processes == need - 5
    assert decision.processes_needed(s, 1.1) is None  # the mean sits on the break-even: no n decides it


def test_break_even_run_length() -> None:
    run = decision.break_even_run(10.0, 0.1, _speedup(2.0, 1.0, 4.0))
    assert run.steps == pytest.approx(10.0 / 0.05)  # a step saves 0.1 * (1 - 1/2) s
    assert run.steps_low == pytest.approx(10.0 / 0.075)
    assert math.isinf(run.steps_high)  # at 1.0x nothing is saved
    assert run.seconds() == pytest.approx(20.0)


def test_every_input_has_a_source() -> None:
    found = migrate.typed(training_share=(0.8, "the lead's estimate"))
    assert found["training_share"] == inputs.Input(0.8, "the lead's estimate")
    assert found["monthly_spend"].source == inputs.SEED
    assert set(found.values) == set(inputs.FIELDS)
    with pytest.raises(TypeError, match="training_share must be a \\(value, source\\) pair"):
        migrate.typed(training_share=0.8)
    with pytest.raises(ValueError, match="source"):
        migrate.typed(training_share=(0.8, " "))
    with pytest.raises(ValueError, match="training_share"):
        migrate.typed(training_share=(1.5, "a typo"))


def test_a_config_is_read_with_its_source(tmp_path) -> None:
    path = tmp_path / "costs.toml"
    path.write_text("monthly_spend = 250_000\ntraining_share = 0.6\noptimizer = 'AdamW'\n")
    found = migrate.read_config(path)
    assert found["monthly_spend"] == inputs.Input(250_000.0, inputs.YOUR_CONFIG)
    assert found.value("optimizer") == "adamw"
    assert found["engineers"].source == inputs.SEED
    assert "your config" in repr(found)


def test_the_example_config_reads_back_as_the_defaults(tmp_path) -> None:
    path = tmp_path / "costs.toml"
    path.write_text(inputs.example_toml())
    read = migrate.read_config(path)
    assert {k: v.value for k, v in read.values.items()} == {k: v.value for k, v in inputs.defaults().values.items()}


@pytest.mark.parametrize("text, match", [
    ("monthly_spnd = 1\n", "unknown field 'monthly_spnd'"),
    ("eager_upkeep = -5\n", "field 'eager_upkeep'"),
    ("training_share = 1.2\n", "field 'training_share'"),
    ("engineers = 'two'\n", "field 'engineers' must be a finite number"),
    ("horizon_months = 0\n", "field 'horizon_months'"),
    ("optimizer = 'lbfgs'\n", "field 'optimizer'"),
    ("compile_cache_persists = 1\n", "field 'compile_cache_persists'"),
    ("[money]\nmonthly_spend = 1\n", "found a table"),
    ("monthly_spend = \n", "not valid TOML"),
])
def test_a_bad_config_names_the_file_and_the_field(tmp_path, text, match) -> None:
    path = tmp_path / "costs.toml"
    path.write_text(text)
    with pytest.raises((TypeError, ValueError), match=match):
        migrate.read_config(path)


def test_a_missing_config_is_named(tmp_path) -> None:
    with pytest.raises(ValueError, match="config path: no file"):
        migrate.read_config(tmp_path / "nope.toml")
