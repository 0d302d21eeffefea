"""course_utils.graphs.findings: notebook 01's predictions, scored as its cells score them; every outcome told in
paragraphs of at most 120 words, the known wrong sentences gone (a faster ``mark_dynamic`` is told as faster)."""

from __future__ import annotations

import pytest
from rendered import render_all

from course_utils import display, findings, graphs, intervals
from course_utils.graphs import findings as g
from course_utils.graphs.compile_time import Run

FIXED = (g.CACHE_MECHANISM, g.CACHE_ADVICE, g.CONTROL_ADVICE, g.SEED_CAVEAT, g.TRACE_LIMIT, g.PRINT_TOOLS,
         g.TLPARSE_HOW)
TEMPLATES = [t for key, t in findings.templates().items() if key.startswith("graphs.")]


def _s(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("static", "variant", ratio, low, high, 6, intervals.ROUNDS)


FAST, NOISE, SLOW = _s(1.18, 1.1, 1.26), _s(1.0, 0.9, 1.1), _s(0.8, 0.75, 0.85)


def _check(kind: str, outcome: str) -> findings.Check:
    value = {findings.HELD: 1.5, findings.ABOVE: 9.0, findings.BELOW: 0.1, findings.FAILED: False}.get(outcome)
    if kind == "true":
        return findings.true("the fact", outcome == findings.HELD)
    if kind == "equal":
        return findings.equal("the count", {findings.HELD: 1, findings.ABOVE: 3, findings.BELOW: 0}[outcome], 1)
    if outcome == findings.UNDECIDED:
        return getattr(findings, kind)("the ratio", NOISE, *((0.5, 2) if kind == "within" else (1,)))
    if kind == "within":
        return findings.within("the ratio", value, 1, 2)
    return getattr(findings, kind)("the ratio", {"above": {findings.HELD: 2.0}, "below": {findings.HELD: 0.5}}[kind]
                                   .get(outcome, value), 1)


def test_the_lesson_declares_its_eighteen_predictions() -> None:
    assert len(TEMPLATES) == 18 and "findings" in graphs.__all__


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.key)
def test_every_outcome_is_told_in_short_paragraphs(template: findings.Template) -> None:
    for outcome, sentence in render_all(template, _check).items():
        text = display.prose(sentence.replace("<", "a ").replace(">", " b"), *FIXED)
        assert text.longest_paragraph <= display.MAX_PARAGRAPH_WORDS, (template.key, outcome, text.longest_paragraph)


def test_a_faster_mark_dynamic_is_told_as_faster_and_each_variant_worded_by_the_core() -> None:
    v = g.DYNAMIC.score(findings.slower("dynamic=True over the static graph", SLOW),
                        findings.slower("mark_dynamic(x, 0) over the static graph", FAST),
                        first_size="65,536", reused_graphs=1, reused=str(NOISE))
    assert v.outcome == findings.ABOVE and v.failed
    assert "mark_dynamic(x, 0) over the static graph ran faster than the static graph beyond the noise" in v.sentence
    assert "spread" not in v.sentence and "65,536 elements" in v.sentence
    assert "dynamic=True over the static graph 0.80x" in str(v) and "slower beyond the noise" in str(v)
    assert "faster beyond the noise" in str(v)


def test_the_break_even_is_not_decided_where_an_interval_reaches_1x() -> None:
    v = g.COMPILE.score(findings.above("torch first compiled call, in steady calls", 5000, 100),
                        findings.faster("torch compiled over eager", NOISE))
    assert v.undecided and "gives no break-even" in v.sentence


def test_the_harnesses_agree_only_inside_the_margin() -> None:
    assert g.HARNESS.score(findings.same("gap", _s(1.05, 0.95, 1.15), 1.5)).held
    assert g.HARNESS.score(findings.same("gap", _s(1.3, 1.1, 1.7), 1.5)).undecided


def test_the_op_count_text_says_both_costs_set_the_speed_up() -> None:
    v = g.OP_COUNT.score(findings.below("torch chain speed-up at 16 elements", 30.0, 11), costs="torch: 2.7x")
    assert "both set it" in v.sentence and "not the op count" not in v.sentence


def test_the_cache_and_regional_facts_the_notebook_passes_are_complete() -> None:
    runs = {graphs.compile_time.COLD: Run(10.0, 0, 1, 0, 4), graphs.compile_time.PORTABLE: Run(4.0, 1, 0, 0, 4, 0.2),
            graphs.compile_time.LOCAL: Run(1.0, 1, 0, 4, 4)}
    v = g.CACHE.score(findings.below("portable first call, share of the cold one", 0.4, 1 / 3, unit="%"),
                      **graphs.compile_time.CacheTimes(runs, 1000).facts())
    assert v.failed and "built 4 (the cold one 4; 0 were there before it)" in v.sentence
    r = g.REGIONAL.score(findings.below("block.compile() compile, share", 0.3, 1, unit="%"),
                         findings.above("nested step", FAST, 0.8), depth=4, whole="2.8 s", cold="10.7 s",
                         block_step=str(SLOW))
    assert r.held and "the cold fresh process of section 3 took 10.7 s" in r.sentence and "lazy imports" in r.sentence
