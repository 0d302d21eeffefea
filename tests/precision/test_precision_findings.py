"""course_utils.precision.findings: notebook 03's predictions scored on checks built as the notebook builds them;
each sentence stays a short paragraph and quotes what the run found (the outcome words are tested for every lesson
by tests/test_findings.py)."""

from __future__ import annotations

import pytest
from rendered import render_all

from course_utils import display, findings, intervals
from course_utils import precision as P
from course_utils.precision import findings as F

TEMPLATES = [getattr(F, name) for name in dir(F) if isinstance(getattr(F, name), findings.Template)]


def sp(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("a", "b", ratio, low, high, 6, intervals.ROUNDS)


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.key for t in TEMPLATES])
def test_every_sentence_is_one_short_paragraph_per_outcome(template: findings.Template) -> None:
    def make(kind: str, outcome: str) -> findings.Check:
        if kind == "true":
            return findings.true("fact", outcome == findings.HELD)
        value = {findings.HELD: 1.5, findings.ABOVE: 3.0, findings.BELOW: 0.5, findings.UNDECIDED: 1.0}[outcome]
        if kind == "within":
            return findings.within("ratio", value, 1.0, 2.0)
        return getattr(findings, kind)("ratio", value, {"above": 1.0, "below": 2.0, "equal": 1.5}[kind])

    for outcome, sentence in render_all(template, make).items():
        assert len(sentence.split()) <= display.MAX_PARAGRAPH_WORDS, (template.key, outcome)


def test_templates_are_declared_once_and_exported() -> None:
    assert len(TEMPLATES) == 16 and all(t.key.startswith("precision.") for t in TEMPLATES)
    assert "findings" in P.__all__ and P.findings is F


def _scale(trace: P.formats.ScaleTrace) -> findings.Finding:
    return F.LOSS_SCALE.score(
        findings.true("the first step overflowed and was skipped", trace.first_skipped),
        findings.within("the ceiling's median minus the settled scale's top", trace.gap, -0.5, 1.5, unit=""),
        findings.equal("steps skipped with the scale below the ceiling's median", len(trace.skipped_below), 0),
        start=f"{trace.start:.0f}", skipped=trace.skipped, steps=trace.steps, settled_low=f"{trace.settled_low:.0f}",
        settled_high=f"{trace.settled_high:.0f}", ceiling_median=f"{trace.ceiling_median:.1f}",
        below_steps=", ".join(f"step {i}" for i in trace.skipped_below) or "none")


def test_a_skip_below_the_ceiling_fails_the_loss_scale_and_is_named() -> None:
    clean = P.scale_trace([2.0**24, 2.0**23, 2.0**21, 2.0**21], [True, True, False, False], [1e30, 1e30, 2**-6, 2**-6])
    assert _scale(clean).held and "none after the first clean step" in _scale(clean).sentence
    below = P.scale_trace([2.0**24, 2.0**21, 2.0**21, 2.0**20, 2.0**20], [True, False, True, False, False],
                          [1e30, 2**-6, 1e30, 2**-6, 2**-6])
    v = _scale(below)
    assert v.outcome == findings.ABOVE and "step 2" in v.sentence and "did not record which" in v.sentence


def test_the_matmul_finding_quotes_the_units_bound() -> None:
    none = P.bf16_bound(("avx2",))
    v = F.MATMUL.score(P.matmul_check(sp(0.05, 0.04, 0.06), none), bound=str(none), n=128, dtype="bf16",
                       fast_rate="1 GFLOP/s", fp32_rate="20 GFLOP/s")
    assert v.held and "bf16 is converted to fp32 in software" in v.sentence
    avx = P.bf16_bound(("avx512_bf16",))
    beyond = F.MATMUL.score(P.matmul_check(sp(4.0, 3.6, 4.4), avx), bound=str(avx), n=512, dtype="bf16", fast_rate="x",
                            fp32_rate="y")
    assert beyond.outcome == findings.ABOVE and "at most 2x" in beyond.sentence


def test_a_step_that_overlaps_the_matmul_is_not_decided() -> None:
    avx = P.bf16_bound(("avx512_bf16",))
    v = F.STEP.score(*P.step_checks(sp(3.9, 3.5, 4.0), sp(4.0, 3.8, 4.2), avx))
    assert v.outcome == findings.UNDECIDED and "no dilution it can resolve" in v.sentence


def test_untested_findings_say_so_without_an_outcome_word() -> None:
    for template in (F.JAX_REMAT, F.FP8_TRAINING):
        v = template.not_tested("no device here")
        assert not v.tested and "the verdict says why" in v.sentence and str(v) == "Not tested here: no device here"


def test_without_a_gpu_the_fp8_status_names_both_vendors_fp8_hardware() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this runtime has a GPU")
    why = P.gpu_fp8_status().why
    assert "8.9" in why and "MI300" in why and "float8_e4m3fnuz" in why
