"""Bad calls against course_utils.pipeline's public API: each raises TypeError/ValueError naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest
from badinput import rejects

from course_utils import pipeline, timing

DATA = pipeline.SyntheticImages(8, size=16, work=0)
TIMELINE = pipeline.Timeline("t", (0.0, 0.1), (0.05, 0.01), (0.05, 0.05), (0, 0))
MEASURED = timing.Measurement.from_times("m", [0.01, 0.02])
STALLS = pipeline.Stalls("s", "main", (0.01, 0.01), (0.002,))

BAD_CALLS = [
    ("n", lambda: pipeline.SyntheticImages(0)),
    ("n", lambda: pipeline.SyntheticImages(True)),
    ("n", lambda: pipeline.SyntheticImages(None)),
    ("n", lambda: pipeline.SyntheticImages(2.5)),
    ("size", lambda: pipeline.SyntheticImages(4, size=10)),
    ("size", lambda: pipeline.SyntheticImages(4, size=4)),
    ("classes", lambda: pipeline.SyntheticImages(4, classes=1)),
    ("work", lambda: pipeline.SyntheticImages(4, work=-1)),
    ("seed", lambda: pipeline.SyntheticImages(4, seed=-2)),
    ("seed", lambda: pipeline.SyntheticImages(4, seed=math.nan)),
    ("index", lambda: DATA["3"]),
    ("indices", lambda: DATA.batch([])),
    ("dataset", lambda: pipeline.NumpyBatches([1, 2, 3], 2)),
    ("batch_size", lambda: pipeline.NumpyBatches(DATA, 0)),
    ("batch_size", lambda: pipeline.NumpyBatches(DATA, 99)),
    ("samples", lambda: pipeline.numpy_collate([])),
    ("samples", lambda: pipeline.numpy_collate(None)),
    ("samples", lambda: pipeline.numpy_collate([np.zeros(3)])),
    ("batch", lambda: pipeline.fingerprint(None)),
    ("batch", lambda: pipeline.fingerprint(())),
    ("size", lambda: pipeline.Prefetch([1], size=0)),
    ("size", lambda: pipeline.Prefetch([1], size=-1)),
    ("size", lambda: pipeline.Prefetch([1], size=math.inf)),
    ("source", lambda: pipeline.Prefetch(None)),
    ("source", lambda: pipeline.Prefetch(3)),
    ("transfer", lambda: pipeline.Prefetch([1], transfer="device_put")),
    ("source", lambda: pipeline.InLoop(5)),
    ("count", lambda: iter(pipeline.Prefetch([1], size=1, transfer=lambda b: b)).wait_ahead(0)),
    ("batches", lambda: pipeline.run_loop(3, lambda b: b)),
    ("batches", lambda: pipeline.run_loop(None, lambda b: b)),
    ("batches", lambda: pipeline.run_loop([], lambda b: b)),
    ("step", lambda: pipeline.run_loop([1], "not callable")),
    ("epochs", lambda: pipeline.run_loop([1], lambda b: b, epochs=0)),
    ("epochs", lambda: pipeline.run_loop([1], lambda b: b, epochs=math.nan)),
    ("label", lambda: pipeline.run_loop([1], lambda b: b, label="")),
    ("record", lambda: pipeline.run_loop([1], lambda b: b, record="yes")),
    ("waits", lambda: pipeline.Timeline("t", (0.0,), (-1.0,), (0.1,), (0,))),
    ("computes", lambda: pipeline.Timeline("t", (0.0,), (0.1,), (math.nan,), (0,))),
    ("epoch", lambda: TIMELINE.epoch_wait(3)),
    ("epoch", lambda: TIMELINE.epoch_part(3)),
    ("name", lambda: TIMELINE.epoch_part(0, "total")),
    ("timelines", lambda: pipeline.timelines_table([])),
    ("timelines", lambda: pipeline.timelines_table(["not a timeline"])),
    ("spread", lambda: pipeline.timelines_table([TIMELINE], spread="yes")),
    ("name", lambda: TIMELINE.part("total")),
    ("a", lambda: pipeline.apart("t", TIMELINE)),
    ("b", lambda: pipeline.apart(TIMELINE, None)),
    ("thread_steps", lambda: pipeline.exercises.faster([], [0.1])),
    ("process_steps", lambda: pipeline.exercises.faster([0.1], "0.1")),
    ("process_steps", lambda: pipeline.exercises.faster([0.1], [-0.1])),
    ("timelines", lambda: pipeline.timeline_plot([])),
    ("timelines", lambda: pipeline.timeline_plot([None])),
    ("before_after", lambda: pipeline.utilisation_plot({})),
    ("before_after", lambda: pipeline.utilisation_plot({"torch": (TIMELINE,)})),
    ("runs", lambda: pipeline.workers_plot({1: TIMELINE}, free_cores=1)),
    ("free_cores", lambda: pipeline.workers_plot({0: TIMELINE}, free_cores=0)),
    ("cores", lambda: pipeline.worker_counts(cores=0)),
    ("cores", lambda: pipeline.worker_counts(cores=-4)),
    ("cores", lambda: pipeline.worker_counts(cores="2")),
    ("cores", lambda: pipeline.data_cores(0)),
    ("timeout", lambda: pipeline.unpickles_in_fresh_process(DATA, timeout=0)),
    ("timeout", lambda: pipeline.unpickles_in_fresh_process(DATA, timeout=math.nan)),
    ("wait", lambda: pipeline.worker_processes(wait=-1)),
    ("wait", lambda: pipeline.worker_processes(wait=math.inf)),
    ("ignore", lambda: pipeline.worker_processes(wait=0, ignore=5)),
    ("pids", lambda: pipeline.worker_memory(pids="123")),
    ("preload", lambda: pipeline.worker_context(preload="torch")),
    ("preload", lambda: pipeline.worker_context(preload=[""])),
    ("threads", lambda: pipeline.limit_compute_threads(0)),
    ("framework", lambda: pipeline.mlp_step("mxnet", (4, 2))),
    ("sizes", lambda: pipeline.mlp_step("torch", (4,))),
    ("lr", lambda: pipeline.mlp_step("torch", (4, 2), lr=-0.1)),
    ("lr", lambda: pipeline.mlp_step("torch", (4, 2), lr=math.nan)),
    ("steps", lambda: pipeline.capture_loop([1, 2], lambda b: b, steps=1, name="x")),
    ("batches", lambda: pipeline.capture_loop(7, lambda b: b, steps=2, name="x")),
    ("trace", lambda: pipeline.data_stalls("trace.json")),
    ("stalls", lambda: pipeline.stalls_table([])),
    ("frameworks", lambda: pipeline.warm_steps((4, 2), (np.zeros((1, 4)), np.zeros(1)), frameworks=[])),
    ("seconds", lambda: pipeline.compare.ms(math.nan)),
    ("after", lambda: pipeline.compare.same_drop(TIMELINE, "t")),
    ("before_after", lambda: pipeline.compare.busy_share_moral([TIMELINE])),
    ("m", lambda: pipeline.compare.spread(TIMELINE)),
    ("run", lambda: pipeline.compare.skewed("t")),
    ("part", lambda: pipeline.compare.median(TIMELINE, "total")),
    ("before_after", lambda: pipeline.compare.before_after_table({})),
    ("before_after", lambda: pipeline.compare.before_after_table({"torch": (TIMELINE,)})),
    ("framework", lambda: pipeline.compare.before_after_text("", TIMELINE, TIMELINE)),
    ("twin", lambda: pipeline.compare.before_after_text("torch", TIMELINE, TIMELINE, twin="t")),
    ("batch", lambda: pipeline.explain.wait_vs_batch(TIMELINE, 0.1)),
    ("run", lambda: pipeline.explain.compute_vs_wait(None)),
    ("load", lambda: pipeline.explain.trace_worker(MEASURED, STALLS, STALLS, "")),
    ("before", lambda: pipeline.explain.trace_worker(MEASURED, "s", STALLS, "load")),
    ("befores", lambda: pipeline.explain.seed_text({}, True, 0.5, 0.9)),
    ("befores", lambda: pipeline.explain.seed_text({"a": 1.5}, True, 0.5, 0.9)),
    ("held", lambda: pipeline.explain.seed_text({"a": 0.5}, "yes", 0.5, 0.9)),
    ("u", lambda: pipeline.explain.share(1.5)),
    ("fastest", lambda: pipeline.explain.tf_ranking({"a": MEASURED}, slow="a", reference="a", fastest="b")),
    ("parts", lambda: pipeline.explain.tf_ranking({"a": 0.1}, slow="a", reference="a", fastest="a")),
    ("again", lambda: pipeline.explain.spawn_compute(TIMELINE, TIMELINE, None, "load")),
    ("bound", lambda: pipeline.explain.jax_why(TIMELINE, TIMELINE, 0.0)),
    ("cores", lambda: pipeline.explain.jax_prefetch(TIMELINE, TIMELINE, held=True, bound=0.1, cores=0)),
    ("held", lambda: pipeline.explain.jax_prefetch(TIMELINE, TIMELINE, held=1, bound=0.1, cores=2)),
]


@pytest.mark.parametrize(("argument", "call"), BAD_CALLS, ids=[f"{i:02d}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_call_names_its_argument(argument: str, call) -> None:
    rejects(call, argument)


TF_BAD_CALLS = [
    ("ops", lambda: pipeline.tf_pipeline(DATA, 4, ops="jax")),
    ("batch_size", lambda: pipeline.tf_pipeline(DATA, 0)),
    ("dataset", lambda: pipeline.tf_pipeline([1, 2], 1)),
    ("prefetch", lambda: pipeline.tf_pipeline(DATA, 4, prefetch=1)),
    ("vectorized", lambda: pipeline.tf_pipeline(DATA, 4, ops="numpy", vectorized=True)),
]


@pytest.mark.parametrize(("argument", "call"), TF_BAD_CALLS, ids=[a for a, _ in TF_BAD_CALLS])
def test_bad_tf_pipeline_call_names_its_argument(argument: str, call) -> None:
    pytest.importorskip("tensorflow")
    rejects(call, argument)


def test_the_learners_own_error_passes_through_unchanged() -> None:
    def step(batch):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        pipeline.run_loop([1], step)
    with pytest.raises(KeyError, match="mine"):
        list(pipeline.Prefetch([1], size=1, transfer=step))
