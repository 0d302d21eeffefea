"""course_utils.migrate's findings at work: the core decides between two intervals (``gap``), the rule's check
agrees with the rule, the stories arrange findings in order, and a paragraph stays under 120 words."""

from __future__ import annotations

import math

import pytest
from fake_assessment import fake

from course_utils import display, findings, intervals, migrate
from course_utils.migrate import decision
from course_utils.migrate import findings as told


def _gain(ratio: float, low: float, high: float, n: int = 3) -> intervals.Speedup:
    return intervals.Speedup("eager", "compiled", ratio, low, high, n, intervals.PROCESSES)


@pytest.mark.parametrize("top, bottom, outcome", [
    ((2.0, 1.8, 2.2), (1.3, 1.1, 1.5), findings.HELD),  # disjoint, top higher
    ((1.0, 0.9, 1.1), (1.9, 1.4, 2.4), findings.BELOW),  # disjoint, top lower: the models defect's case
    ((1.6, 1.2, 2.0), (1.5, 1.3, 1.8), findings.UNDECIDED)])  # overlapping
def test_gap_lies_above_one_exactly_when_the_intervals_are_disjoint(top, bottom, outcome) -> None:
    a, b = _gain(*top), _gain(*bottom)
    g = migrate.gap(a, b)
    assert (g.low > 1, g.high < 1) == (a.low > b.high, a.high < b.low)
    assert findings.faster("the gap", g).outcome == outcome
    assert "90% interval" in str(g) and "across 6 fresh processes" in str(g)


def test_the_models_verdict_ranks_disjoint_intervals_the_other_way() -> None:
    cnn, block = _gain(1.87, 1.43, 2.44), _gain(1.01, 0.938, 1.08)
    v = told.MODELS.score(findings.faster("block over CNN", migrate.gap(block, cnn)), processes=3, block=str(block),
                          cnn=str(cnn))
    assert v.failed and "the CNN gained more, beyond the noise" in v.sentence and "cannot rank" not in v.sentence


@pytest.mark.parametrize("speedups", [(1.30, 1.32, 1.28), (1.5, 0.8, 1.1), (0.90, 0.91, 0.89)])
def test_the_rules_check_has_the_rules_outcome(speedups) -> None:
    d = fake(speedups).decision
    outcome = {decision.MIGRATE: findings.HELD, decision.DO_NOT_MIGRATE: findings.BELOW,
               decision.NOT_DECIDED: findings.UNDECIDED}[d.outcome]
    assert d.check("gain").outcome == outcome
    costly = fake(speedups).priced(migrate.typed(eager_upkeep=(10**9, "a test"))).decision
    assert math.isinf(costly.break_even) and costly.check("gain").outcome == findings.BELOW
    assert migrate.decision.speed_text(costly.break_even).startswith("never")


def test_next_step_says_how_many_processes_or_that_more_would_not_help() -> None:
    undecided = fake((1.5, 0.8, 1.1)).decision
    stuck = migrate.decision.Decision(decision.NOT_DECIDED, undecided.speedup, 1.3, None)
    assert "would likely not decide it" in stuck.next_step
    seven = migrate.decision.Decision(decision.NOT_DECIDED, undecided.speedup, 1.3, 7)
    assert seven.next_step.startswith("about 7 processes in all (4 more)")


def _finding(template, held: bool, **facts) -> findings.Finding:
    return template.score(findings.true("fact", held), **facts)


def test_stories_arrange_findings_in_order_and_blockers_keep_the_failed_ones() -> None:
    gain = _gain(1.5, 1.3, 1.7)
    cheap = told.CHEAP.score(findings.faster("gap", gain), cheap="2x", last="1.4x")
    order = told.ORDER.score(findings.faster("gap", gain), first="1.3x", last="1.4x", wait="19%", bare="1.4x")
    text = migrate.story.ladder_story(cheap, order).text
    assert text.index("Compile, first and last") < text.index("come first in any plan") and "19%" in text
    jax = told.JAX.not_tested("no JAX", ranking="PyTorch 1.19x")
    assert migrate.story.frameworks_story(jax).text.endswith(migrate.story.COMPILES)
    parity, fallback = _finding(told.PARITY, False, precision="fp32"), _finding(told.FALLBACK, True, error="E")
    assert migrate.story.blockers(parity, fallback) == [parity.sentence]
    for prose in (migrate.story.ladder_story(cheap, order), migrate.story.frameworks_story(jax)):
        assert prose.longest_paragraph <= display.MAX_PARAGRAPH_WORDS
