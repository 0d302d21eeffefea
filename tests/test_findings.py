"""A finding is written once: the core decides each outcome and writes its direction words and numbers; every
lesson's templates are rendered for every outcome over generated numbers on both sides of their bounds, and their
sentences must not contradict the outcome they tell."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rendered import render_all

import course_utils
from course_utils import display, findings, intervals

LESSONS = [m.name for m in pkgutil.iter_modules(course_utils.__path__) if m.ispkg and m.name != "workers"]
NUMBER = re.compile(r"(\d+(?:\.\d+)?)x")
# words that tell an outcome: a sentence must not carry the words of an outcome it does not tell
TELLS = {
    findings.HELD: re.compile(r"\b(?<!not )(held|as predicted)\b", re.I),
    "failure": re.compile(r"\b(failed|contrary to the prediction|not as predicted)\b", re.I),
    findings.UNDECIDED: re.compile(r"\b(not decided|undecided|cannot (?:yet )?(?:tell|rank|decide))\b", re.I),
}
FORBIDDEN = {  # outcome -> the tells its sentence must not carry
    findings.HELD: ("failure", findings.UNDECIDED),
    findings.ABOVE: (findings.HELD, findings.UNDECIDED),
    findings.BELOW: (findings.HELD, findings.UNDECIDED),
    findings.FAILED: (findings.HELD, findings.UNDECIDED),
    findings.UNDECIDED: (findings.HELD, "failure"),
    findings.NOT_TESTED: (findings.HELD, "failure", findings.UNDECIDED),
}
FASTER = re.compile(r"\b(?<!not )(?<!no )faster beyond the noise\b")
SLOWER = re.compile(r"\b(?<!not )slower beyond the noise\b")


def _lesson_templates() -> dict[str, findings.Template]:
    for lesson in LESSONS:
        try:
            importlib.import_module(f"course_utils.{lesson}.findings")
        except ModuleNotFoundError as err:
            if err.name != f"course_utils.{lesson}.findings":
                raise
    return findings.templates()


def _interval(ratio: float, spread: float, n: int = 4) -> intervals.Speedup:
    return intervals.Speedup("eager", "compiled", ratio, ratio / spread, ratio * spread, n, intervals.ROUNDS)


def _check(kind: str, outcome: str, bound: float, gap: float, spread: float, interval: bool) -> findings.Check:
    """A check of ``kind`` that reaches ``outcome``: a value ``gap`` times off its bound, as an interval of
    ``spread`` (straddling the bound when not decided) or a plain number."""
    low, high = bound, bound * 2
    if kind == "true":
        return findings.true("the fact", outcome == findings.HELD)
    if kind == "equal":
        value = {findings.HELD: bound, findings.ABOVE: bound * gap, findings.BELOW: bound / gap}[outcome]
        return findings.equal("the count", value, bound, unit="")
    top = high if kind == "within" else bound
    if outcome == findings.UNDECIDED:
        centre = bound if kind in ("above", "within") else top
        value = _interval(centre, spread)
    else:
        centre = {findings.HELD: {"above": bound * gap * spread, "below": bound / gap / spread,
                                  "within": (low * high) ** 0.5}[kind],
                  findings.ABOVE: top * gap * spread, findings.BELOW: bound / gap / spread}[outcome]
        value = _interval(centre, spread if kind != "within" or outcome != findings.HELD else 1.0001) if interval \
            else centre
    if kind == "within":
        return findings.within("the ratio", value, low, high)
    return getattr(findings, kind)("the ratio", value, bound)


def _printed_inside(text: str) -> bool:
    """In '2.1x (geometric mean; 95% interval 1.9x to 2.4x ...)' the printed point lies inside the printed bounds."""
    match = re.search(r"([\d.]+)x \(geometric mean; \d+% interval ([\d.]+)x to ([\d.]+|unbounded)x?", text)
    if not match:
        return True
    point, low, high = match.groups()
    return float(low) <= float(point) <= (float("inf") if high == "unbounded" else float(high))


bounds = st.floats(0.05, 50)
gaps = st.floats(1.01, 20)
spreads = st.floats(1.001, 3)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(kind=st.sampled_from(findings.KINDS), bound=bounds, gap=gaps, spread=spreads, interval=st.booleans(),
       pick=st.integers(0, 3))
def test_the_core_decides_and_words_every_check_from_its_interval(kind, bound, gap, spread, interval, pick) -> None:
    reach = [o for o in findings.REACHES[kind] if interval or o != findings.UNDECIDED or kind in ("true", "equal")]
    reach = [o for o in reach if interval or o != findings.UNDECIDED]
    outcome = reach[pick % len(reach)]
    check = _check(kind, outcome, 1.0 if kind in ("above", "below") and pick % 2 else bound, gap, spread, interval)
    assert check.outcome == outcome, str(check)
    text = str(check)
    assert _printed_inside(text), text
    if isinstance(check.value, intervals.Speedup):
        assert bool(FASTER.search(text)) == (check.value.low > 1 and check.bound == 1 and kind != "within"), text
        assert bool(SLOWER.search(text)) == (check.value.high < 1 and check.bound == 1 and kind != "within"), text
        assert ("not decided" in text) == (outcome == findings.UNDECIDED), text


@pytest.mark.parametrize("key", sorted(_lesson_templates()))
@settings(max_examples=8, deadline=None, derandomize=True)
@given(bound=bounds, gap=gaps, spread=spreads, interval=st.booleans())
def test_every_template_tells_every_outcome_without_contradicting_it(key, bound, gap, spread, interval) -> None:
    template = findings.templates()[key]
    def make(kind: str, outcome: str) -> findings.Check:
        return _check(kind, outcome, bound, gap, spread, interval or outcome == findings.UNDECIDED)
    rendered = render_all(template, make)
    assert set(rendered) == set(template.outcomes)
    for outcome, sentence in rendered.items():
        assert sentence.strip(), (key, outcome)
        for tell in FORBIDDEN[outcome]:
            assert not TELLS[tell].search(sentence), f"{key}: the {outcome!r} sentence tells {tell!r}: {sentence}"
        assert _printed_inside(sentence), sentence
        if outcome == findings.HELD:
            assert not re.search(r"\b(?<!not )slower\b", sentence) or "below" not in template.kinds, sentence


def test_an_inverted_template_fails_the_rules() -> None:
    inverted = findings.Template("test.inverted", ("above",), held="{failed} failed: not faster.",
                                 below="The prediction held: {evidence}.", undecided="Held, roughly.")
    rendered = render_all(inverted, lambda kind, outcome: _check(kind, outcome, 1.0, 2.0, 1.2, True))
    broken = [o for o, s in rendered.items() if any(TELLS[t].search(s) for t in FORBIDDEN[o])]
    assert broken == [findings.HELD, findings.BELOW, findings.UNDECIDED]
    del findings._TEMPLATES["test.inverted"]


def test_a_template_needs_a_text_for_every_outcome_its_checks_reach() -> None:
    with pytest.raises(ValueError, match="needs a text for 'not decided'"):
        findings.Template("test.short", ("above",), held="ok", below="no")
    with pytest.raises(ValueError, match="cannot reach"):
        findings.Template("test.extra", ("true",), held="ok", failed="no", below="never")


def test_facts_are_named_and_complete() -> None:
    t = findings.Template("test.facts", ("true",), held="ok at {size}", failed="not at {size}")
    assert t.facts == ("size",)
    with pytest.raises(ValueError, match="needs the facts size"):
        t.score(findings.true("fact", True))
    with pytest.raises(ValueError, match="no fact named other"):
        t.score(findings.true("fact", True), size=1, other=2)
    f = t.score(findings.true("fact", False), size="4 KiB")
    assert (f.outcome, f.status, f.sentence, bool(f)) == ("failed", "failed", "not at 4 KiB", False)
    assert str(f) == "Prediction failed: fact: false"
    del findings._TEMPLATES["test.facts"]


def test_mixed_failures_tell_each_direction_and_count_once() -> None:
    t = findings.Template("test.mixed", ("within",), held="inside", above="{failed} ran past the margin",
                          below="{failed} fell short", undecided="{undecided} not decided yet")
    before = display.verdict_counts()[display.FAILED]
    f = t.score(findings.within("a", 3.0, 1.0, 2.0), findings.within("b", 0.5, 1.0, 2.0))
    assert f.outcome == findings.FAILED
    assert f.sentence == "a ran past the margin b fell short"
    assert display.verdict_counts()[display.FAILED] == before + 1
    del findings._TEMPLATES["test.mixed"]


def test_no_difference_holds_only_inside_the_margin() -> None:
    t = findings.Template("test.same", ("within",), held="same", above="faster", below="slower",
                          undecided="{undecided}: not decided")
    inside, straddle = _interval(1.02, 1.03), _interval(1.1, 1.6)
    assert t.score(findings.same("x", inside, 1.1)).held
    assert t.score(findings.same("x", straddle, 1.1)).outcome == findings.UNDECIDED
    del findings._TEMPLATES["test.same"]


def test_the_printed_interval_is_rounded_outward_to_the_digits_it_supports() -> None:
    assert str(_interval(1.041, 1.0008)).startswith("1.041x (geometric mean; 95% interval 1.040x to 1.042x")
    wide = intervals.Speedup("a", "b", 0.64, 0.546, 0.755, 4, intervals.ROUNDS)
    assert str(wide) == "0.64x (geometric mean; 95% interval 0.54x to 0.76x over 4 paired rounds in this process)"
    fresh = intervals.Speedup("a", "b", 1.87, 1.43, 2.44, 3, intervals.PROCESSES)
    assert fresh.interval == "95% interval 1.4x to 2.5x across 3 fresh processes"


def test_not_tested_needs_only_the_facts_its_own_text_quotes() -> None:
    t = findings.Template("test.untested", ("true",), held="ok at {busy:.0%}", failed="not at {busy:.0%}",
                          untested="{why}, so nothing at {size}")
    assert t.not_tested("no GPU here", size="4 KiB").sentence == "no GPU here, so nothing at 4 KiB"
    assert render_all(t, lambda kind, outcome: findings.true("x", outcome == findings.HELD))[
        findings.HELD] == "ok at <busy>"  # a format spec on a stand-in fact prints its name
    del findings._TEMPLATES["test.untested"]


def test_a_plain_number_on_its_bound_fails_and_says_so() -> None:
    check = findings.above("slope", 0.7, 0.7, unit="")
    assert check.outcome == findings.BELOW and str(check) == "slope 0.7: on 0.7, not above it"


def test_a_failure_beside_an_undecided_check_tells_both() -> None:
    t = findings.Template("test.both", ("above",), held="ok", below="{failed} fell short.",
                          undecided="{undecided} cannot be told apart.")
    f = t.score(findings.above("a", 0.5, 1.0), findings.faster("b", _interval(1.0, 1.2)))
    assert f.outcome == findings.BELOW and f.sentence == "a fell short. b cannot be told apart."
    del findings._TEMPLATES["test.both"]


def test_a_wide_interval_keeps_its_point_at_the_interval_digits() -> None:
    wide = intervals.Speedup("a", "b", 12.3456, 0.003, 250.0, 2, intervals.ROUNDS)
    assert wide.printed() == ("12.3x", "0.0030x", "250.0x")
    tiny = intervals.Speedup("a", "b", 0.0151, 0.0149, 0.5, 2, intervals.ROUNDS)
    assert _printed_inside(str(tiny)), str(tiny)
