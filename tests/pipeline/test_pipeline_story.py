"""course_utils.pipeline.story: every branch of every paragraph notebook 04 tells, each within 120 words."""

from __future__ import annotations

import pytest
from pipeline_runs import BASE, DOUBLE, WANDER, rounds_run

from course_utils import display, intervals, pipeline, timing
from course_utils.pipeline import story

HELD = display.Verdict("held", "numbers")
FAILED = display.Verdict("failed", "numbers", "why")
SKIPPED = display.Verdict("not tested", "", "JAX is not installed")
FAST = intervals.Speedup("a", "b", 2.0, 1.8, 2.2, 4, "rounds")
SLOW = intervals.Speedup("a", "b", 0.5, 0.45, 0.55, 4, "rounds")
NOISE = intervals.Speedup("a", "b", 1.02, 0.9, 1.1, 4, "rounds")


def _m(label: str, value: float) -> timing.Measurement:
    return timing.Measurement.from_times(label, [value * 0.9, value, value * 1.1])


def _short(prose: display.Prose | None) -> str:
    assert isinstance(prose, display.Prose)
    assert prose.longest_paragraph <= display.MAX_PARAGRAPH_WORDS, prose.text
    return prose.text


COST = {"one sample": _m("one", 0.0005), "decode only": _m("decode", 0.0003), "one batch": _m("batch", 0.016)}
RUN = rounds_run("torch, 0 workers", BASE, 0.015)
STALLS = [pipeline.Stalls("num_workers=0", "main", (0.01, 0.01, 0.01), (0.015, 0.014)),
          pipeline.Stalls("1 worker", "main", (0.01, 0.01, 0.01), (0.002, 0.001))]


def test_every_paragraph_of_a_section_that_always_runs_refuses_a_not_tested_verdict() -> None:
    calls = [lambda v: story.sample_cost(v, COST, FAST, 32), lambda v: story.busy_share(v, RUN, COST["one batch"]),
             lambda v: story.trace_stall(v, STALLS, RUN), lambda v: story.start_methods(v, RUN, RUN, 0.4),
             lambda v: story.workers_sweep(v, RUN, {1: FAST}, {2: NOISE}, 1),
             lambda v: story.queue_depth(v, NOISE, NOISE, 1, 8, 16)]
    for call in calls:
        with pytest.raises(ValueError, match="tested verdict"):
            call(SKIPPED)
        assert _short(call(HELD)) != _short(call(FAILED))


def test_sample_cost() -> None:
    assert "The cost is per sample" in _short(story.sample_cost(HELD, COST, FAST, 32))
    assert "outside 24-40 samples" in _short(story.sample_cost(FAILED, COST, FAST, 32))


def test_busy_share() -> None:
    assert "predicts the busy share" in _short(story.busy_share(HELD, RUN, COST["one batch"]))
    assert "not measured apart" in _short(story.busy_share(FAILED, RUN, COST["one batch"]))


def test_trace_stall() -> None:
    assert "a trace is enough" in _short(story.trace_stall(HELD, STALLS, RUN))
    failed = _short(story.trace_stall(FAILED, STALLS, RUN))
    assert "compare gaps within one trace" in failed and "decided in section 4" in failed
    with pytest.raises(TypeError, match="stalls"):
        story.trace_stall(HELD, STALLS[:1], RUN)


def test_start_methods() -> None:
    assert "forks" in _short(story.start_methods(HELD, RUN, RUN, 0.4))
    assert "under 5x" in _short(story.start_methods(FAILED, RUN, RUN, 0.4))


def test_workers_sweep_names_the_counts_that_beat_the_free_cores() -> None:
    gains = {1: FAST, 2: FAST, 4: NOISE}
    assert "waits for a core" in _short(story.workers_sweep(HELD, RUN, gains, {2: NOISE, 4: SLOW}, 1))
    failed = _short(story.workers_sweep(FAILED, RUN, gains, {2: FAST, 4: SLOW}, 1))
    assert "Yet 2 workers 2x" in failed and "4 workers" not in failed.split("Yet")[1]


def test_workers_compute_in_each_case() -> None:
    assert "paid partly in compute" in _short(story.workers_compute({1: NOISE, 2: SLOW}, 2))
    assert "every interval contains 1" in _short(story.workers_compute({1: NOISE, 2: NOISE}, 2))
    assert "ran shorter" in _short(story.workers_compute({1: NOISE, 2: FAST}, 2))
    with pytest.raises(ValueError, match="compute"):
        story.workers_compute({}, 2)


def test_queue_depth_and_persistent_workers() -> None:
    assert "absorbs jitter" in _short(story.queue_depth(HELD, NOISE, SLOW, 1, 8, 16))
    assert "why is not established" in _short(story.queue_depth(FAILED, FAST, NOISE, 1, 8, 16))
    plain = rounds_run("plain", BASE, startups=[0.3, 0.2, 0.25, 0.22])
    kept = rounds_run("kept", BASE, startups=[0.3, 0.01, 0.012, 0.011])
    said = _short(story.persistent(FAST, plain, kept, 48.6))
    assert "200, 250, 220 ms" in said and "10, 12, 11 ms" in said and "49 MiB" in said and ": faster." in said


def test_cores_rule_with_and_without_a_gpu() -> None:
    assert "no GPU" in _short(story.cores_rule(1, 2, 48.0, 4, 32 * 49152, False))
    assert "measured on this GPU machine" in _short(story.cores_rule(7, 8, 48.0, 12, 32 * 49152, True))
    with pytest.raises(TypeError, match="gpu"):
        story.cores_rule(1, 2, 48.0, 4, 1, "no")


def test_framework_sections_say_nothing_more_when_not_tested() -> None:
    runs = {"before": rounds_run("before", BASE, 0.02), "after": rounds_run("after", BASE, 0.001),
            "third": rounds_run("third", WANDER, 0.001)}
    for call in (story.tf_prefetch, story.jax_prefetch, story.tf_slow_path):
        assert call(SKIPPED, {}) is None
        assert _short(call(HELD, runs)) != _short(call(FAILED, runs))
    assert story.grain(SKIPPED, {}, 1) is None
    assert "checkpoint" in _short(story.grain(HELD, runs, 1))
    assert "did not make the step faster" in _short(story.grain(FAILED, runs, 2))
    with pytest.raises(ValueError, match="at least 3"):
        story.grain(HELD, dict(list(runs.items())[:2]), 1)


def test_tf_and_jax_paragraphs_follow_the_verdict() -> None:
    runs = {"before": rounds_run("before", BASE, 0.02), "after": rounds_run("after", DOUBLE, 0.001)}
    assert "without the GIL" in _short(story.tf_prefetch(HELD, runs))
    assert "cannot be hidden" in _short(story.tf_prefetch(FAILED, runs))
    jax = _short(story.jax_prefetch(HELD, runs))
    assert ": longer." in jax and "releases the GIL" in jax  # DOUBLE computes longer than BASE in every round
    assert "slowed each other" in _short(story.jax_prefetch(FAILED, runs))
    three = {**runs, "numpy_function": rounds_run("nf", BASE, 0.04)}
    assert "stays in C++" in _short(story.tf_slow_path(HELD, three))
    assert "did not hold" in _short(story.tf_slow_path(FAILED, three))
    assert "while TF ops can" in _short(story.tf_slow_path(FAILED, three))


def test_before_after_one_paragraph_per_framework() -> None:
    pairs = {"torch": (rounds_run("b", BASE, 0.02), rounds_run("a", BASE, 0.001)),
             "jax": (rounds_run("b", BASE, 0.02), rounds_run("a", DOUBLE, 0.001))}
    said = story.before_after(pairs)
    assert len(said.paragraphs) == 3 and said.paragraphs[0].startswith("**torch**")
    assert ": faster." in said.paragraphs[0] and "compute per step" in said.paragraphs[1]
    _short(said)
    with pytest.raises(TypeError, match="pairs"):
        story.before_after({"torch": (RUN,)})


def test_the_seed_claim_is_never_scored() -> None:
    said = _short(story.seed(SKIPPED, RUN, rounds_run("wide", DOUBLE, 0.015), 512, 1024))
    assert "width 1024" in said and "measure the wait" in said
    with pytest.raises(ValueError, match="not tested"):
        story.seed(HELD, RUN, RUN, 512, 1024)
