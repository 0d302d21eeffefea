"""Every branch of every sentence notebook 06 generates: told from the verdict it follows, true to the numbers it
is given, and no paragraph over 120 words."""

from __future__ import annotations

import numpy as np
import pytest
from beyond_fakes import fake

from course_utils.beyond import story, story_further
from course_utils.beyond.elastic import ElasticRun
from course_utils.display import FAILED, HELD, MAX_PARAGRAPH_WORDS, NOT_TESTED, Prose, Verdict
from course_utils.distributed import AllReduceModel, LaunchResult
from course_utils.intervals import Speedup

# Verdicts built directly, not issued: the summary counts of this process stay as they were.
HELD_V, FAILED_V, UNTESTED_V = Verdict(HELD, "n"), Verdict(FAILED, "n", "why"), Verdict(NOT_TESTED, "", "no JAX")


def short(prose: Prose | None) -> str:
    assert isinstance(prose, Prose)
    assert prose.longest_paragraph <= MAX_PARAGRAPH_WORDS, prose.paragraphs
    return prose.text


def speedup(low: float, high: float) -> Speedup:
    return Speedup("a", "b", float(np.sqrt(low * high)), low, high, 6, "rounds")


SPLIT = {"wall": 10.0, "phases": 4.0, "startup": 2.5, "outside": 6.0}


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
@pytest.mark.parametrize("warning", [None, (1, "node_rank is only used for static rendezvous")])
@pytest.mark.parametrize("backend", ["gloo", "nccl"])
def test_two_nodes(v: Verdict, warning, backend: str) -> None:
    text = short(story.two_nodes(v, {0: [1], 1: [0]}, SPLIT, warning, backend))
    assert "Node 0 ran rank(s) 1, node 1 rank(s) 0" in text and "60%" in text
    assert ("NOT" in text) == v.failed
    assert ("node_rank is only used" in text) == (warning is not None)
    assert ("no GPU was visible" in text) == (backend == "gloo") and f"ran {backend}" in text


def _jax_run(operands: list[int]) -> LaunchResult:
    record = {"kind": "jax", "device_ids": [0, 1, 2, 3], "devices": 4, "allreduce_count": 1,
              "allreduce_operands": operands}
    lines = [f"[default{r // 2}]:[Gloo] Rank {r} is connected to 3 peer ranks" for r in range(4)]
    return LaunchResult("jax_multiprocess.py", 2, [], 1.0, lines, {0: [record]},
                        {"jax": {0: {f"p{i}": np.zeros(1) for i in range(6)}}})


def test_jax_processes_not_tested_says_nothing_more() -> None:
    assert story.jax_processes(UNTESTED_V, None) is None


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
@pytest.mark.parametrize(("operands", "loss"), [([64] * 6 + [1], True), ([64] * 6, False)])
def test_jax_processes(v: Verdict, operands: list[int], loss: bool) -> None:
    text = short(story.jax_processes(v, _jax_run(operands)))
    assert ("NOT" in text) == v.failed and ("the loss" in text) == loss
    assert f"{len(operands)} operands" in text and "4 gloo ranks" in text and "6 gradients" in text


def test_tf_workers_branches() -> None:
    assert story.tf_workers(UNTESTED_V, None, None) is None
    records = {r: [{"kind": "timeline", "import_seconds": 3.0, "joined_seconds": 5.0, "work_seconds": 2.0}]
               for r in (0, 1)}
    run = LaunchResult("tf_multiworker.py", 2, [], 10.0, [], records)
    held = short(story.tf_workers(HELD_V, {"workers": 0.0, "single": 2e-8}, run))
    failed = short(story.tf_workers(FAILED_V, {"workers": 1e-3, "single": 2e-8}, run))
    assert "bit for bit" in held and "bit for bit" not in failed and "1.0e-03" in failed
    assert "3.0 s went to importing TensorFlow" in held and "3.0 s to torchrun" in held


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
@pytest.mark.parametrize("even", [True, False])
@pytest.mark.parametrize("gathered", [None, {"layers": 2, "bytes": 2048, "names": ["2", "4"], "all": 4096}])
def test_memory(v: Verdict, even: bool, gathered) -> None:
    ratios = {"ddp": 1.0, "ddp_default": 1.0, "zero1": 1.011, "fsdp2": 1.0}
    per_rank = {"zero1": [1700, 1600], "fsdp2": [1000, 1000] if even else [1000, 900]}
    text = short(story.memory(v, ratios, per_rank, gathered, 4096))
    assert ("Every kind held its formula" in text) == v.held and "zero1 1.011x" in text
    assert ("divides by the ranks" in text) == even and "4 KiB of buckets" in text and "so its ranks differ" in text
    assert ("at most 2 layer(s)" in text) == (gathered is not None)
    assert ("not measured here" in text) == (gathered is None)


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
def test_elastic(v: Verdict) -> None:
    timeline = {"startup 0": 2.0, "startup 1": 2.5, "training 0": 0.5, "training 1": 0.7, "outside": 4.3}
    crash = ElasticRun(12, 3, 8, 6, {0: list(range(8)), 1: list(range(6, 12))}, {}, 10.0, None, timeline)
    text = short(story.elastic(v, crash, 1e-7))
    assert ("resumed at step 6" in text) == v.held and ("2 lost" in text) == v.failed
    assert "1.2 s in all" in text


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
def test_reshard(v: Verdict) -> None:
    same = {"tensors": 32, "same names": True, "max diff": 0.0}
    files = {".metadata": 10, "__0_0.distcp": 100, "__1_0.distcp": 100}
    text = short(story.reshard(v, same, {**same, "max diff": 0.5 * v.failed}, files))
    assert ("came back exactly" in text) == v.held and ("did not come back" in text) == v.failed
    assert "wrote 2 shard files" in text and "every node reads" in text


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
@pytest.mark.parametrize("unexplained", [{}, {"wide DDP step": 0.016}])
def test_cost_model(v: Verdict, unexplained: dict) -> None:
    rows = {"wide DDP step": {"comm model": 0.004}, "FSDP2 step": {"comm model": 0.001}}
    ratios = {"wide DDP step": 1.8, "FSDP2 step": 0.3}
    text = short(story.cost_model(v, AllReduceModel(1.5e9, 2.2e-4), np.array([0.8, 1.3]), rows, ratios, unexplained))
    assert "α = 220.0 µs" in text and "0.80x to 1.30x" in text
    assert "worst: *FSDP2 step*, 0.30x" in text  # 1/0.3 is further from 1 than 1.8
    assert ("Every step landed" in text) == v.held and ("Not every step" in text) == v.failed
    assert ("16.00 ms" in text) == bool(unexplained) and ("No step left" in text) == (not unexplained)
    assert ("not an explanation" in text) == (v.held and bool(unexplained))


MOVED = {"ring": 1.5, "gloo": 2.0, "inside": True}
CALLS = {"ddp": {"allreduce": 1}, "fsdp2": {"allgather": 8, "reduce_scatter": 4}}
BUSY = {"ddp": 0.002, "fsdp2": 0.023}


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
@pytest.mark.parametrize("moved", [MOVED, {**MOVED, "inside": False}])
@pytest.mark.parametrize(("low", "high", "said"), [(0.2, 0.4, "slower than DDP's"), (1.2, 1.4, "faster than DDP's"),
                                                   (0.8, 1.2, "within the noise of DDP's")])
def test_traffic(v: Verdict, moved: dict, low: float, high: float, said: str) -> None:
    model = {"model": 2.3, "as gloo": 3.1, "calls": 12.0}
    text = short(story_further.traffic(v, moved, CALLS, BUSY, model, speedup(low, high)))
    assert said in text and "8 all-gathers and 4 reduce-scatters" in text and "11.5x" in text
    assert ("as predicted" in text) == v.held and ("not the formula's" in text) == v.failed
    assert ("2.00x" in text) == moved["inside"] and ("3.1x as gloo" in text) == moved["inside"]


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
@pytest.mark.parametrize("inside", [True, False])
def test_reduce_scatter(v: Verdict, inside: bool) -> None:
    trace = ["c10d::_reduce_scatter_base_", "gloo:all_reduce"] if inside else ["c10d::_reduce_scatter_base_"]
    text = short(story_further.reduce_scatter(v, speedup(0.9, 1.1), inside, trace))
    assert ("cannot cost half" in text) == inside and ("No all-reduce runs inside" in text) == (not inside)
    assert ("as the ring model's 2x says" in text) == v.held and ("not the ring model's 2x" in text) == v.failed
    assert "95% interval" in text
    assert "no c10d" in short(story_further.reduce_scatter(v, speedup(0.9, 1.1), False, []))


@pytest.mark.parametrize(("low", "high", "said"), [(1.5, 2.5, "pays per operand"),
                                                   (0.3, 0.5, "the single array was slower"),
                                                   (0.8, 1.3, "within the noise")])
def test_jax_operands(low: float, high: float, said: str) -> None:
    record = {"allreduce_operands": [10, 20, 1],
              "allreduce_alone": {"one float": [[1e-3]] * 2, "one array": [[2e-3]] * 2, "operands": [[6e-3]] * 2}}
    text = short(story_further.jax_operands(speedup(low, high), record))
    assert said in text and "3 operands" in text and "95% interval" in text
    assert ("2.00 ms for each" in text) == (said == "pays per operand")
    assert story_further.jax_operands(None, None) is None


@pytest.mark.parametrize("v", [HELD_V, FAILED_V])
@pytest.mark.parametrize("scatters", [0, 2])
def test_jax_sharding(v: Verdict, scatters: int) -> None:
    found = {"replicated": {"argument_bytes": 400, "temp_bytes": 100, "collectives": {"reduce-scatter": 0}},
             "sharded": {"argument_bytes": 100, "temp_bytes": 150, "collectives": {"reduce-scatter": scatters}}}
    text = short(story_further.jax_sharding(v, found))
    assert "0.25x the replicated" in text and "1.50x" in text
    assert ("formed no reduce-scatter" in text) == (scatters == 0) and ("did not shrink" in text) == v.failed
    assert story_further.jax_sharding(UNTESTED_V, None) is None


def test_the_fake_run_feeds_the_stories_it_is_made_for() -> None:
    assert fake().record("ddp")["default_bucket_bytes"] == 4000
