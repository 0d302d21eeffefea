"""course_utils.pipeline.findings: notebook 04's predictions scored as its cells score them, on timelines with
chosen numbers; every outcome's sentence within the paragraph limit (the property test covers their words)."""

from __future__ import annotations

import pytest
from pipeline_runs import BASE, DOUBLE, WANDER, rounds_run
from rendered import render_all

from course_utils import display, findings, intervals, pipeline
from course_utils.pipeline import findings as found

NEAR = intervals.Speedup("a", "b", 1.02, 0.95, 1.09, 4, intervals.ROUNDS)
WIDE = intervals.Speedup("a", "b", 1.22, 0.853, 1.75, 4, intervals.ROUNDS)  # issue 36's "held" on a wide interval
WORKER_FACTS = dict(free=1, cores=2, best=1)


def _check(kind: str, outcome: str) -> findings.Check:
    value = {findings.HELD: 1.5, findings.ABOVE: 3.0, findings.BELOW: 0.5}.get(outcome)
    if kind == "true":
        return findings.true("the fact", outcome == findings.HELD)
    if outcome == findings.UNDECIDED:
        return findings.Check("the ratio", kind, intervals.Speedup("a", "b", 1.0, 0.5, 2.0, 4, "rounds"),
                              1.0, 2.0 if kind == "within" else None)
    if kind == "equal":
        return findings.equal("the ratio", value, 1.5, tolerance=0.1, unit="x")
    return findings.Check("the ratio", kind, value, 1.0, 2.0 if kind == "within" else None)


@pytest.mark.parametrize("template", [t for k, t in findings.templates().items() if k.startswith("pipeline.")],
                         ids=lambda t: t.key)
def test_every_outcome_fits_the_paragraph_limit(template: findings.Template) -> None:
    for outcome, sentence in render_all(template, _check).items():
        assert display.prose(sentence).longest_paragraph <= display.MAX_PARAGRAPH_WORDS, (outcome, sentence)


def test_no_difference_on_a_wide_interval_is_not_decided() -> None:
    v = found.WORKERS.score(findings.same("3 workers against 1", NEAR, 1.2),
                            findings.same("2 workers against 1", WIDE, 1.2), **WORKER_FACTS)
    assert v.outcome == findings.UNDECIDED and "For 2 workers against 1 the interval" in v.sentence
    assert found.WORKERS.score(findings.same("2 workers against 1", NEAR, 1.2), **WORKER_FACTS).held
    depth = found.QUEUE_DEPTH.score(findings.same("prefetch_factor=8 against 2", WIDE, 1.2), workers=1,
                                    in_flight=8, steps=12)
    assert depth.undecided and "may hold 8 batches of the 12" in depth.sentence


def _compute(a, b, part: str = "compute") -> intervals.Speedup:
    return intervals.speedup(a.part(part), b.part(part))


def test_workers_past_the_free_cores_that_slow_the_step_fail_below() -> None:
    base, slow = rounds_run("1 worker", BASE), rounds_run("2 workers", DOUBLE)
    v = found.WORKERS.score(findings.same("2 workers against 1", _compute(base, slow, "step"), 1.2), **WORKER_FACTS)
    assert v.outcome == findings.BELOW and "With 2 workers against 1 the step took more than 1.2x" in v.sentence


def test_the_jax_floor_is_scored_from_the_loop_alone() -> None:
    alone = rounds_run("jax, in the loop", BASE, [0.015, 0.005, 0.015, 0.005])
    at_floor = rounds_run("jax, thread", [0.0151, 0.0112, 0.0151, 0.0122], 0.0001)
    beat = intervals.speedup(pipeline.floor(alone), at_floor.part())
    v = found.JAX_FLOOR.score(findings.within("floor / step with the thread", beat, 1 / 1.2, 1))
    assert v.held and "came within 20% of its floor" in v.sentence
    slow = rounds_run("jax, thread", [0.030, 0.022, 0.031, 0.024], 0.0001)  # twice the floor in every round
    beat = intervals.speedup(pipeline.floor(alone), slow.part())
    assert found.JAX_FLOOR.score(findings.within("floor / step", beat, 1 / 1.2, 1)).outcome == findings.BELOW


def test_the_slow_path_tells_each_way_it_failed() -> None:
    direct, crossing = rounds_run("direct", DOUBLE), rounds_run("crossing", BASE)
    faster_crossing = _compute(direct, crossing)
    v = found.SLOW_PATH.score(findings.slower("numpy_function against NumPy called directly", faster_crossing),
                              findings.faster("TF ops against NumPy called directly",
                                              _compute(crossing, direct)))
    assert v.outcome == findings.FAILED
    assert "Through `numpy_function` the batches came faster" in v.sentence and "In TF ops" in v.sentence
    wander = rounds_run("w", WANDER)
    tie = found.SLOW_PATH.score(findings.slower("numpy_function", _compute(crossing, direct)),
                                findings.faster("TF ops", _compute(crossing, wander)))
    assert tie.undecided and tie.sentence.startswith("This run cannot rank TF ops: within the noise")


def test_persistent_workers_quote_each_later_start() -> None:
    plain = rounds_run("plain", BASE, startups=[0.3, 0.2, 0.25, 0.22])
    kept = rounds_run("kept", BASE, startups=[0.3, 0.01, 0.012, 0.011])
    v = found.PERSISTENT.score(
        findings.faster("later rounds' first batch", intervals.speedup(plain.startup_part(), kept.startup_part())),
        plain=pipeline.later_startups(plain), kept=pipeline.later_startups(kept),
        worker_mem=display.format_bytes(48.6 * 2**20), most=2, in_flight=display.format_bytes(2 * 2 * 32 * 49152))
    assert v.held and "200, 250, 220 ms" in v.sentence and "10, 12, 11 ms" in v.sentence
    assert "48.6 MiB" in v.prose().paragraphs[1] and "6 MiB of batches" in v.prose().paragraphs[1]


def test_sections_a_runtime_lacks_say_why_once() -> None:
    for template in (found.TF_PREFETCH, found.JAX_FLOOR, found.GRAIN, found.SLOW_PATH):
        v = template.not_tested("TensorFlow is not installed in this runtime")
        assert str(v) == "Not tested here: TensorFlow is not installed in this runtime" and v.prose().text
    seed = found.SEED.not_tested("real jobs", hidden=512, wide_hidden=1024, busy="46%", wide_busy="63%",
                                 compute="10.5 ms", wide_compute="21.1 ms")
    assert "width 1024, the same loader, 63%" in seed.sentence and "measure the wait" in seed.sentence
    with pytest.raises(ValueError, match="needs the facts"):
        found.SEED.not_tested("real jobs", hidden=512)
