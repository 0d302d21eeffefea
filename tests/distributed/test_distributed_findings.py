"""Notebook 05's findings as its cells score them: every outcome told in paragraphs of at most 120 words, a
no-difference prediction decided only inside its margin, and warm-up recommended only where it measured better."""

from __future__ import annotations

from pathlib import Path

import pytest
from rendered import render_all

from course_utils import display, findings, intervals
from course_utils.distributed import findings as f05

TEMPLATES = {name: t for name, t in vars(f05).items() if isinstance(t, findings.Template)}


def interval(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("compute + all-reduce", "DDP step", ratio, low, high, 4, intervals.ROUNDS)


def test_every_template_is_scored_by_the_notebook_and_named_by_its_key() -> None:
    notebook = (Path(__file__).resolve().parents[2] / "notebooks" / "05_data_parallel.py").read_text()
    assert [name for name in TEMPLATES if f"cu.distributed.findings.{name}." not in notebook] == []
    assert "cu.display.verdict(" not in notebook and "cu.display.not_tested(" not in notebook
    assert all(t.key == f"distributed.{name.lower()}" for name, t in TEMPLATES.items())


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_outcome_is_told_in_short_paragraphs(name: str) -> None:
    template = TEMPLATES[name]

    def make(kind: str, outcome: str) -> findings.Check:
        value = {findings.HELD: 1.5, findings.ABOVE: 3.0, findings.BELOW: 0.5, findings.FAILED: False}.get(outcome)
        if kind == "true":
            return findings.true("a fact", outcome == findings.HELD)
        if kind == "equal":
            return findings.equal("a count", {findings.HELD: 2, findings.ABOVE: 3, findings.BELOW: 1}[outcome], 2)
        if outcome == findings.UNDECIDED:
            value = interval(1.0, 0.5, 2.5)
        return findings.within("a ratio", value, 1.0, 2.0) if kind == "within" else \
            getattr(findings, kind)("a ratio", value, 1.0)

    for outcome, sentence in render_all(template, make).items():
        assert display.prose(sentence).longest_paragraph <= display.MAX_PARAGRAPH_WORDS, (name, outcome)


def test_the_remainder_straddling_its_margin_is_not_decided() -> None:
    """The run that printed 'step over the parts 1.18x (0.856x to 1.63x)' once read as 'within the noise'."""
    v = f05.REST.score(findings.same("tiny: DDP step over compute + all-reduce", interval(1.18, 0.856, 1.63), 1.25),
                       findings.same("wide: DDP step over compute + all-reduce", interval(1.05, 0.95, 1.15), 1.25))
    assert v.outcome == findings.UNDECIDED and v.sentence.startswith("tiny: DDP step")
    assert f05.REST.score(findings.same("wide", interval(1.05, 0.95, 1.15), 1.25)).held
    outlasts = f05.REST.score(findings.same("wide", interval(1.5, 1.3, 1.7), 1.25))
    assert outlasts.outcome == findings.ABOVE and "time neither measurement contains" in outlasts.sentence


def test_each_model_that_misses_tells_its_own_direction() -> None:
    v = f05.COMM.score(findings.slower("tiny", interval(1.5, 1.2, 1.8)),
                       findings.faster("wide", interval(0.5, 0.4, 0.6)))
    assert v.failed and "The all-reduce was the shorter of the two beyond the noise (tiny)" in v.sentence
    assert "The all-reduce was the longer of the two beyond the noise (wide)" in v.sentence


def test_warm_up_is_recommended_only_where_it_measured_better() -> None:
    better = f05.WARMUP.score(*[findings.below(f"seed {s}", w, 0.76, unit="") for s, w in ((1, 0.75), (2, 0.74))])
    worse = f05.WARMUP.score(findings.below("seed 1", 0.775, 0.750, unit=""),
                             findings.below("seed 2", 0.74, 0.76, unit=""))
    assert better.held and "ramp the learning rate up" in better.sentence
    assert worse.failed and worse.sentence.startswith("Warm-up ended higher than the linear rule alone for seed 1:")
    assert "Do not add warm-up by default" in worse.sentence and "ramp" not in worse.sentence


def test_the_proof_quotes_the_launch_and_a_missing_gpu_says_why() -> None:
    v = f05.PROOF.score(findings.equal("ranks", 0.0, 0.0, unit="", source="measured"),
                        findings.below("one process", 6e-8, 1e-5, unit=""),
                        steps=20, launch_s=9.3, phases_s=4.0, startup_s=2.5)
    assert v.held and "After 20 steps" in v.sentence and "**9.3 s**" in v.sentence and "2.5 s to join" in v.sentence
    sync = f05.SYNC.not_tested("this torch runs SyncBatchNorm only on GPUs")
    assert str(sync) == "Not tested here: this torch runs SyncBatchNorm only on GPUs" and "GPUs" in sync.sentence
