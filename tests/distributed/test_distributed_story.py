"""Notebook 05's story: every branch of every function, told from verdicts, with no paragraph over 120 words."""

from __future__ import annotations

import pytest

from course_utils import display, intervals, timing
from course_utils.distributed import AllReduceCost, AllReduceModel, LaunchResult, comms, story
from course_utils.distributed.devices import ThreadRun

HELD = display.Verdict("held", "numbers")
FAILED = display.Verdict("failed", "numbers", "what happened instead")
NOT_TESTED = display.Verdict("not tested", "", "JAX is not installed in this runtime")
FASTER = intervals.Speedup("a", "b", 1.5, 1.2, 1.8, 4, "rounds")
SLOWER = intervals.Speedup("a", "b", 0.5, 0.4, 0.6, 4, "rounds")
SAME = intervals.Speedup("a", "b", 1.02, 0.9, 1.1, 4, "rounds")


def short(prose: display.Prose) -> str:
    assert isinstance(prose, display.Prose)
    assert prose.longest_paragraph <= display.MAX_PARAGRAPH_WORDS, prose.text
    return prose.text


def m(ms: float) -> timing.Measurement:
    values = tuple(ms * f * 1e-3 for f in (1.0, 1.05, 0.95, 1.02))
    return timing.Measurement("m", values, rounds=values)


def run() -> LaunchResult:
    records = {0: [{"kind": "startup", "seconds": 2.5}, {"kind": "phases", "seconds": {"proof": 1.0, "timing": 3.0}}]}
    return LaunchResult("ddp_train.py", 2, [], 8.0, [], records)


def test_proof() -> None:
    rank, one = {"step5": 0.0, "step10": 0.0}, {"step5": 3e-8, "step10": 6e-8}
    told = short(story.proof(HELD, rank, one, run()))
    assert "bit-identical" in told and "50%" in told
    assert "did not compute large-batch SGD" in short(story.proof(FAILED, rank, one, run()))
    with pytest.raises(ValueError, match="not tested"):
        story.proof(NOT_TESTED, rank, one, run())


def timed() -> dict:
    return {"tiny": {"ddp": m(1.2), "compute": m(0.4), "allreduce": m(0.5)},
            "wide": {"ddp": m(20.0), "compute": m(11.0), "allreduce": m(3.6)}}


COMM = {"tiny": SLOWER, "wide": FASTER}


@pytest.mark.parametrize(("rest", "said"), [(FASTER, "outlasts compute plus all-reduce"),
                                            (SLOWER, "outlast the step itself"), (SAME, "account for the step")])
def test_breakdown_reads_the_rest_from_its_interval(rest, said) -> None:
    text = short(story.breakdown(HELD, timed(), COMM, {"tiny": rest, "wide": rest}, {"tiny": SLOWER, "wide": SAME}))
    assert said in text and "As predicted" in text and "**slower**" in text and "beyond the noise" in text
    assert "the all-reduce longer" in text and "the all-reduce shorter" in text
    failed = short(story.breakdown(FAILED, timed(), {"tiny": SAME, "wide": SAME}, {"tiny": rest, "wide": rest},
                                   {"tiny": FASTER, "wide": FASTER}))
    assert "The prediction failed: what happened instead" in failed and "faster" in failed


def test_chain_names_the_links_that_added_time() -> None:
    links = {"tiny": {"halving the batch": FASTER, "DDP's bookkeeping": SLOWER, "the partner": SAME},
             "wide": {"halving the batch": SAME}}
    text = short(story.chain(FAILED, links, 2))
    assert "DDP's bookkeeping (2.00x" in text and "halving the batch (0.67x) took time off" in text
    assert "No link added time beyond the noise" in text and "do not assume it is 1/N" in text
    assert "visible new cost" in short(story.chain(HELD, links, 2))


def test_buckets() -> None:
    held = short(story.buckets(HELD, [0.1, 1.0, 25.0], [9, 3, 1], 1.0, {0.1: FASTER, 25.0: FASTER}))
    assert "stood out" in held and "1 MB over 0.1 MB" in held
    failed = short(story.buckets(FAILED, [0.1, 1.0, 25.0], [9, 3, 1], 25.0, {0.1: SAME}))
    assert "No optimum in between" in failed and "within the noise" in failed
    assert "at 25 MB." in short(story.buckets(FAILED, [0.1, 25.0], [9, 1], 25.0, {}))
    with pytest.raises(ValueError, match="same length"):
        story.buckets(HELD, [0.1, 25.0], [9], 25.0, {})


def saving() -> dict:
    parts = {"every": m(11.0), "no_sync": m(1.7), "local": m(1.2), "allreduces": m(1.5)}
    return {"k": 4, "parts": parts, "saved": 9.4e-3, "back_to_back": 1.5e-3, "inside": 2.9e-3, "one": 0.5e-3,
            "per_sync": 2.45e-3}


def test_accumulation_both_verdicts_both_ways() -> None:
    text = short(story.accumulation(HELD, HELD, FASTER, saving()))
    assert "seed's suggestion holds" in text and "accounts for it" in text and "6.3 times" in text
    assert "waits for its partner" in text and "2.90 ms" in text and "2.45 ms" in text
    text = short(story.accumulation(FAILED, FAILED, SAME, saving()))
    assert "The prediction failed" in text and "does not account for it" in text
    with pytest.raises(ValueError, match="not tested"):
        story.accumulation(NOT_TESTED, HELD, FASTER, saving())


def cost() -> AllReduceCost:
    fits = tuple(AllReduceModel(bw, lat, 2) for bw, lat in ((1e9, 5e-5), (1.2e9, 7e-5), (0.8e9, 3e-5)))
    return AllReduceCost(comms.combine(fits), fits, ((4096, 65536), (1e-4, 2e-4)), 2, "2026-12-05", "read", "k")


def test_cost_model() -> None:
    assert "holds this machine's all-reduce" in short(story.cost_model(HELD, cost(), [0.8, 1.3], m(3.6),
                                                                      (3.3e-3, 2.9e-3, 3.7e-3)))
    text = short(story.cost_model(FAILED, cost(), [0.5, 2.6], m(3.6), (3.3e-3, 2.9e-3, 3.7e-3)))
    assert "misses by more than 2x" in text and "read from this run's build/machine/" in text and "95% interval" in text


def test_links_table() -> None:
    text = short(story.links(4.4e6, 1e-3, {"10 GbE": (1.25e9, 20e-6)}))
    assert "| 10 GbE | 6.44 ms | 9.45 ms | 27.47 ms |" in text


def test_jax_steps() -> None:
    times = {"one device": m(0.4), "NamedSharding": m(0.7), "shard_map": m(0.7)}
    assert "stay replicated" in short(story.jax_steps(HELD, times, 4, 2))
    assert "The prediction failed" in short(story.jax_steps(FAILED, times, 4, 2))
    assert "PyTorch" in short(story.jax_steps(NOT_TESTED, None, 4, 2))


def test_mirrored() -> None:
    times = {"no strategy": m(8.0), "x1": m(135.0), "x2": m(250.0)}
    text = short(story.mirrored(HELD, times, 2))
    assert "Same weights" in text and "machinery" in text and "adds cost of its own" in text and "TPUStrategy" in text
    assert "The prediction failed" in short(story.mirrored(FAILED, times, 2))
    assert "JAX" in short(story.mirrored(NOT_TESTED, None, 2))


def test_learning_rate() -> None:
    losses = {"a": 0.73, "b": 1.27, "c": 0.83, "d": 0.74}
    assert "multiply the learning rate" in short(story.learning_rate(HELD, losses))
    assert "critical batch size" in short(story.learning_rate(FAILED, losses))
    with pytest.raises(ValueError, match="four runs"):
        story.learning_rate(HELD, {"a": 1.0})


@pytest.mark.parametrize(("sync", "said"), [(NOT_TESTED, "that is what `SyncBatchNorm` all-reduces"),
                                            (HELD, "every rank normalised with the global"),
                                            (FAILED, "were not the global batch's")])
def test_batchnorm(sync, said) -> None:
    assert said in short(story.batchnorm(HELD, sync, 0.17))
    assert "The prediction failed" in short(story.batchnorm(FAILED, sync, 0.0))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_ddp(backend) -> None:
    record = {"graphs": 3, "buckets": 3, "graphs_sequential": 0, "first_call": 6.5, "backend": backend}
    text = short(story.compiled_ddp(HELD, record, SAME))
    assert "**3** graphs for DDP's **3** buckets" in text and ("generates no code" in text) == (backend == "aot_eager")
    assert "TORCH_LOGS=ddp_graphs" in short(story.compiled_ddp(FAILED, record, SLOWER))


def test_failure() -> None:
    assert "named rank 1" in short(story.failure(HELD, 30.0)) and "30 s" in story.failure(HELD, 30.0).text
    assert "a bug to report" in short(story.failure(FAILED, 30.0))


def test_threads() -> None:
    runs = {"tiny": {1: ThreadRun(1, m(0.33), 1.0, 1.0), 2: ThreadRun(2, m(0.45), 1.98, 0.99)}}
    fresh = {"default": {"tiny": {2: ThreadRun(2, m(0.46), 1.98, 1.0)}},
             "passive": {"tiny": {2: ThreadRun(2, m(1.49), 0.87, 0.63)}}}
    text = short(story.threads(FAILED, runs, fresh, {"tiny": SLOWER}))
    assert "**slower**" in text and "passive wait" in text and "spins before it sleeps" in text
    assert "did not make a step slower" in short(story.threads(HELD, runs, {}, {"tiny": SAME}))
    both = {**runs, "wide": runs["tiny"]}  # one paragraph per model: each stays readable
    told = story.threads(FAILED, both, fresh, {"tiny": SLOWER, "wide": SLOWER}).text.split("\n\n")
    assert told[0].startswith("**Tiny model**") and told[1].startswith("**Wide model**")


def test_bad_verdicts_are_refused() -> None:
    with pytest.raises(TypeError, match="v must be"):
        story.proof("held", {"a": 0.0}, {"a": 0.0}, run())
    with pytest.raises(TypeError, match="rest"):
        story.breakdown(HELD, timed(), COMM, {"tiny": 1.0, "wide": 1.0}, {})


@pytest.mark.parametrize(("times", "said"), [((250.0, 135.0, 8.0), "slower"), ((8.0, 8.0, 8.0), "within the noise")])
def test_mirrored_other_outcomes(times, said) -> None:
    values = [tuple(t * f * 1e-3 for f in (1.0, 1.3, 0.8, 1.1)) for t in times]
    rounds = {k: timing.Measurement(k, v, rounds=v) for k, v in zip(("plain", "one", "two"), values)}
    if said == "within the noise":  # the same times, jittered differently: no interval excludes 1
        jitter = (8.8e-3, 7.2e-3, 8.1e-3, 8.0e-3)
        rounds["one"] = timing.Measurement("one", jitter, rounds=jitter)
    assert said in short(story.mirrored(HELD, rounds, 2))
