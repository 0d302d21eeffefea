"""course_utils.pipeline.explain: each explanation in each branch of the numbers (fixed numbers, no timing)."""

from __future__ import annotations

from course_utils import pipeline, timing
from course_utils.pipeline import explain

STEADY = [0.010, 0.011, 0.010, 0.012, 0.011, 0.010, 0.011, 0.012]
SPIKY = [0.010, 0.011, 0.010, 0.012, 0.011, 0.010, 0.011, 0.150]


def _run(label: str, computes: list[float], wait: float = 0.002) -> pipeline.Timeline:
    n = len(computes) + 1
    return pipeline.Timeline(label, tuple(float(i) for i in range(n)), (0.5, *[wait] * (n - 1)), (9.0, *computes),
                             (0,) * n)


def _m(times: list[float]) -> timing.Measurement:
    return timing.Measurement.from_times("m", times)


def test_wait_vs_batch_states_the_gap_or_the_match() -> None:
    batch = _m([0.0020, 0.0021, 0.0019, 0.0020])
    assert "so the wait is the data time" in explain.wait_vs_batch(_run("r", STEADY, wait=0.002), batch)
    text = explain.wait_vs_batch(_run("r", STEADY, wait=0.003), batch)
    assert "+50%, beyond the quartiles" in text and "not established by this run" in text


def test_compute_vs_wait_follows_the_ratio() -> None:
    assert "about as long" in explain.compute_vs_wait(_run("r", STEADY, wait=0.011))
    assert "compute takes 5.4x the wait" in explain.compute_vs_wait(_run("r", STEADY, wait=0.002))
    assert "the wait takes 2.0x the compute" in explain.compute_vs_wait(_run("r", [0.01] * 4, wait=0.02))
    assert "never waited" in explain.compute_vs_wait(_run("r", STEADY, wait=0.0))


def test_trace_worker_says_the_margin_and_no_presumption() -> None:
    before = pipeline.Stalls("before", "main", (0.010,) * 5, (0.008,) * 4)
    after = pipeline.Stalls("after", "main", (0.020,) * 5, (0.002,) * 4)
    text = explain.trace_worker(_m([0.005] * 4), before, after, "load average 1.0")
    assert "keeps up with a 4.0x margin" in text and "longer beside the worker" in text
    assert "presumably" not in text and "not established by this run" in text
    assert "cannot keep up" in explain.trace_worker(_m([0.05] * 4), before, after, "load")
    assert "only just keeps up" in explain.trace_worker(_m([0.019] * 4), before, after, "load")


def test_seed_text_lists_ratios_in_both_outcomes() -> None:
    befores = {"torch": 0.62, "tf": 0.43, "jax": 0.45, "wide": 0.90}
    held = explain.seed_text(befores, True, 0.62, 0.90)
    assert "Inside: tf 43% (0.75x), jax 45% (0.82x); outside: torch 62% (1.63x), wide 90% (9.00x)" in held
    assert "The count matches" in held and "0.67-1.50x the wait" in held
    assert "does not refute" in explain.seed_text({"a": 0.9}, False, 0.9, 0.95)


def test_a_share_on_the_edge_keeps_its_decimals() -> None:
    assert explain.share(0.3996) == "39.96%" and explain.share(0.5997) == "59.97%" and explain.share(0.43) == "43%"


def test_tf_ranking_calls_overlapping_quartiles_a_tie() -> None:
    parts = {"direct": _m([9.4e-3, 9.45e-3, 10.3e-3, 10.0e-3]), "nf": _m([0.022] * 4), "per": _m([0.0156] * 4),
             "vec": _m([9.4e-3, 9.39e-3, 9.55e-3, 9.5e-3])}
    held, numbers, why = explain.tf_ranking(parts, slow="nf", reference="direct", fastest="vec")
    assert not held and "vec tied with direct" in why and "medians, quartiles" in numbers
    parts["vec"] = _m([0.005] * 4)
    assert explain.tf_ranking(parts, slow="nf", reference="direct", fastest="vec")[0]
    parts["nf"] = parts["direct"]
    assert "nf was within the noise of direct" in explain.tf_ranking(parts, slow="nf", reference="direct",
                                                                    fastest="vec")[2]


def test_spawn_compute_separates_the_method_from_the_moment() -> None:
    slow, fast = _run("spawn", [4 * c for c in STEADY]), _run("forkserver", STEADY)
    assert "follows the start method" in explain.spawn_compute(slow, fast, slow, "load")
    assert "followed the moment" in explain.spawn_compute(slow, fast, _run("again", STEADY), "load")
    assert "no effect of the start method" in explain.spawn_compute(fast, _run("f2", STEADY), slow, "load")


def test_jax_prefetch_never_claims_no_slowdown_when_the_verdict_failed() -> None:
    alone, spiky = _run("alone", STEADY, wait=0.012), _run("prefetch", SPIKY, wait=0.0)
    failed = explain.jax_prefetch(alone, spiky, held=False, bound=0.012, cores=2)
    assert "without a slowdown" not in failed and "above max(compute, data)" in failed
    assert "a few slow steps" in failed
    assert "without a slowdown" in explain.jax_prefetch(alone, _run("p", STEADY, 0.0), held=True, bound=0.012,
                                                        cores=2)
    grown = explain.jax_prefetch(alone, _run("p", [2 * c for c in STEADY], 0.0), held=False, bound=0.012, cores=2)
    assert "grew beyond the quartiles" in grown
    assert "what slowed the compute is not established" in explain.jax_why(alone, spiky, 0.012)
    assert "delivered batches more slowly" in explain.jax_why(alone, _run("p", STEADY, 0.01), 0.012)
