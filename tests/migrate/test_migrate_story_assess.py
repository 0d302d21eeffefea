"""course_utils.migrate.story_assess and report: every branch of every sentence assess writes, and the report's
files (decision first, plots embedded, JSON without inf)."""

from __future__ import annotations

import json
import math

import pytest
from fake_assessment import fake

from course_utils import migrate
from course_utils.migrate import report, story_assess

MIGRATING = fake((1.30, 1.32, 1.28))  # well above the seed's 1.04x break-even
NOT_DECIDED = fake((1.5, 0.8, 1.1))
LOSING = fake((0.90, 0.91, 0.89))


def test_the_headline_has_the_rules_three_branches() -> None:
    assert MIGRATING.decision.outcome == migrate.MIGRATE
    assert "**Decision: migrate.**" in story_assess.headline(MIGRATING) and "lies above" in \
        story_assess.headline(MIGRATING)
    assert LOSING.decision.outcome == migrate.DO_NOT_MIGRATE and "lies below" in story_assess.headline(LOSING)
    undecided = story_assess.headline(NOT_DECIDED)
    assert NOT_DECIDED.decision.outcome == migrate.NOT_DECIDED and "processes in all" in undecided


def test_the_headline_when_no_gain_pays_back_and_when_no_number_of_processes_decides() -> None:
    costly = MIGRATING.priced(migrate.typed(eager_upkeep=(10**9, "a test")))
    assert math.isinf(costly.pricing.break_even) and "no speed-up pays the migration back" in \
        story_assess.headline(costly)
    on_the_bar = fake((1.1, 0.9, 1.0))
    seated = on_the_bar.priced(migrate.typed(engineers=(0, "a test")))  # break-even 1.0x
    assert seated.decision.outcome in migrate.decision.DECISIONS
    stuck = migrate.decision.Decision(migrate.NOT_DECIDED, MIGRATING.deciding.speedup, 1.3, None)
    from dataclasses import replace

    text = story_assess.headline(replace(MIGRATING, pricing=replace(MIGRATING.pricing, decision=stuck)))
    assert "would likely not decide it" in text


def test_blockers_name_parity_and_the_fallback() -> None:
    assert story_assess.blockers(MIGRATING) == []
    drifting = fake(drift=0.05)
    found = story_assess.blockers(drifting)
    assert any("parity failed" in b for b in found) and any("did not reproduce" in b for b in found)
    never = story_assess.blockers(fake(fallback_error=None))
    assert any("did not fail" in b for b in never)


def test_device_speed_mfu_compile_and_parity_sentences() -> None:
    assert "decides nothing for a GPU fleet" in story_assess.device_sentence(MIGRATING)
    gpu = fake(device="cuda", device_name="NVIDIA H100 80GB HBM3")
    assert "this GPU model" in story_assess.device_sentence(gpu) and "datasheet" in gpu.peak_source
    assert "do not decide anything" in story_assess.speed_sentence(MIGRATING)
    assert "MFU (model FLOP/s over the peak)" in story_assess.mfu_sentence(MIGRATING)
    bf16 = migrate.assessment.device_peak("cpu", "Test CPU", "bfloat16", 1e11)[1]
    assert "MFU overstates" in bf16 and "overstates" not in MIGRATING.peak_source
    unknown = fake(device="cuda", device_name="Some GPU")
    assert "MFU not computed" in story_assess.mfu_sentence(unknown)
    assert "no graph break" in story_assess.compile_sentence(MIGRATING)
    broken = fake(breaks=["f.py:3 Data-dependent branching"], recompiles=["size mismatch"])
    text = story_assess.compile_sentence(broken)
    assert "1 graph break(s): f.py:3" in text and "1 recompile(s): size mismatch" in text
    assert "within the tolerance" in story_assess.parity_sentence(MIGRATING)
    assert "**beyond**" in story_assess.parity_sentence(fake(drift=0.05))
    assert "was not exercised" in story_assess.parity_sentence(fake(fallback_error=None))
    assert "fails the check" in story_assess.parity_sentence(fake(fallback_shift=0.1))


def test_money_and_run_length_sentences() -> None:
    assert "break-even speed-up" in story_assess.money_sentence(MIGRATING)
    production = story_assess.run_length_sentence(MIGRATING)
    assert "compile it" in production and "explore in eager" in production
    short = MIGRATING.priced(migrate.typed(steps_per_job=(10, "a test")))
    assert "runs sooner eager" in story_assess.run_length_sentence(short)
    assert "compiling never pays for itself" in story_assess.run_length_sentence(LOSING)
    assert "does not pay back within ten years" in story_assess.money_sentence(LOSING)
    assert "pays back after" in story_assess.money_sentence(MIGRATING)


def test_tables_and_the_report_markdown() -> None:
    assert "decision" in repr(MIGRATING) and "<table>" in MIGRATING._repr_html_()
    both = repr(migrate.compare_assessments({"a": MIGRATING, "b": LOSING}))
    assert "across fresh processes" in both and "95% interval" in both
    priced = repr(migrate.compare_pricing({"seed": MIGRATING, "lead": MIGRATING.priced(migrate.typed(
        training_share=(0.8, "the lead")))}))
    assert "80% (the lead)" in priced and "seed article" in priced
    cases = repr(migrate.pricing_cases(MIGRATING, growth=0.5))
    assert "+50% a month" in cases and "reserved" in cases
    text = story_assess.report_markdown(MIGRATING)
    assert text.startswith("# Should we migrate mypkg.models:make_model?") and text.index("Decision") < text.index(
        "## Speed")
    assert "| monthly_spend | 100,000 | seed article |" in text


def test_the_report_files(tmp_path) -> None:
    paths = report.write(LOSING.priced(migrate.typed(eager_upkeep=(10**9, "a test"))), tmp_path)
    data = json.loads(paths["json"].read_text())
    assert data["break_even_speedup"] == "inf" and data["decision"] == migrate.DO_NOT_MIGRATE
    page = paths["html"].read_text()
    assert page.index("Decision: do not migrate") < page.index("data:image/png;base64,") < page.index("Money")
    assert "<script" not in page and "http" not in page.split("<body>")[1]


def test_an_undecided_case_says_how_many_processes_would_likely_decide_it() -> None:
    d = NOT_DECIDED.decision
    assert d.processes_needed is None or d.processes_needed > NOT_DECIDED.processes
    assert d.more_processes is None or d.more_processes == d.processes_needed - NOT_DECIDED.processes


@pytest.mark.parametrize("found", [MIGRATING, NOT_DECIDED, LOSING])
def test_the_figure_draws_every_process(found) -> None:
    fig = migrate.assess_figure(found, MIGRATING, labels=["x", "y"])
    assert len(fig.axes[0].collections) >= 2
    with pytest.raises(ValueError, match="labels"):
        migrate.assess_figure(found, labels=["a", "b"])
