"""Bad calls against course_utils.pipeline's public API: each raises TypeError/ValueError naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest
from badinput import rejects

from course_utils import pipeline
from course_utils.pipeline import dataset, stall

DATA = pipeline.SyntheticImages(8, size=16, work=0)
TIMELINE = pipeline.Timeline("t", (0.0, 0.1), (0.05, 0.01), (0.05, 0.05), (0, 0))
BATCH = (np.zeros((1, 4), dtype=np.float32), np.zeros(1, dtype=np.int64))
STALLS = stall.Stalls("s", "main", (0.01, 0.01), (0.002,))

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
    ("batch", lambda: dataset.fingerprint(None)),
    ("batch", lambda: dataset.fingerprint(())),
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
    ("waits", lambda: pipeline.Timeline("t", (0.0,), (-1.0,), (0.1,), (0,))),
    ("computes", lambda: pipeline.Timeline("t", (0.0,), (0.1,), (math.nan,), (0,))),
    ("epoch", lambda: TIMELINE.epoch_part(3)),
    ("epoch", lambda: TIMELINE.epoch(3)),
    ("name", lambda: TIMELINE.epoch_part(0, "total")),
    ("timelines", lambda: pipeline.timelines_table([])),
    ("timelines", lambda: pipeline.timelines_table(["not a timeline"])),
    ("spread", lambda: pipeline.timelines_table([TIMELINE], spread="yes")),
    ("name", lambda: TIMELINE.part("total")),
    ("epochs", lambda: pipeline.Timeline("t", (0.0, 0.1), (0.1, 0.1), (0.1, 0.1), (1, 0))),
    ("epochs", lambda: pipeline.Timeline("t", (0.0,), (0.1,), (0.1,), (-1,))),
    ("epoch(s)", lambda: TIMELINE.startup_part()),
    ("batches", lambda: pipeline.run_loop(iter([1, 2]), lambda b: b, epochs=2)),
    ("epochs", lambda: pipeline.run_loop([1], lambda b: b, epochs=10**6)),
    ("timeout", lambda: pipeline.run_loop([1], lambda b: b, timeout=0)),
    ("timeout", lambda: pipeline.run_loop([1], lambda b: b, timeout=math.inf)),
    ("loops", lambda: pipeline.run_loops({}, rounds=2)),
    ("loops", lambda: pipeline.run_loops([([1], lambda b: b)], rounds=2)),
    ("loops", lambda: pipeline.run_loops({"a": [1]}, rounds=2)),
    ("loops", lambda: pipeline.run_loops({"": ([1], lambda b: b)}, rounds=2)),
    ("loops", lambda: pipeline.run_loops({"a": ([1], None)}, rounds=2)),
    ("batches", lambda: pipeline.run_loops({"a": (iter([1, 2]), lambda b: b)}, rounds=2)),
    ("rounds", lambda: pipeline.run_loops({"a": ([1], lambda b: b)}, rounds=1)),
    ("rounds", lambda: pipeline.run_loops({"a": ([1], lambda b: b)}, rounds=10**6)),
    ("rounds", lambda: pipeline.run_loops({"a": ([1], lambda b: b)}, rounds=np.float64(2.5))),
    ("iterator", lambda: pipeline.EpochsOf([1, 2], 2)),
    ("steps", lambda: pipeline.EpochsOf(iter([1]), 0)),
    ("steps", lambda: pipeline.EpochsOf(iter([1]), 10**9)),
    ("timelines", lambda: pipeline.timeline_plot([])),
    ("timelines", lambda: pipeline.timeline_plot([None])),
    ("epoch", lambda: pipeline.timeline_plot([TIMELINE], epoch=5)),
    ("width", lambda: pipeline.timeline_plot([TIMELINE], width=math.nan)),
    ("before_after", lambda: pipeline.utilisation_plot({})),
    ("before_after", lambda: pipeline.utilisation_plot({"torch": (TIMELINE,)})),
    ("runs", lambda: pipeline.workers_plot({1: TIMELINE}, free_cores=1)),
    ("free_cores", lambda: pipeline.workers_plot({0: TIMELINE}, free_cores=0)),
    ("dataset", lambda: pipeline.samples_plot([1, 2])),
    ("count", lambda: pipeline.samples_plot(DATA, count=0)),
    ("count", lambda: pipeline.samples_plot(DATA, count=100)),
    ("trace", lambda: pipeline.trace_plot("trace.json", STALLS)),
    ("cores", lambda: pipeline.worker_counts(cores=0)),
    ("cores", lambda: pipeline.worker_counts(cores=-4)),
    ("cores", lambda: pipeline.worker_counts(cores="2")),
    ("cores", lambda: pipeline.worker_counts(cores=10**9)),
    ("cores", lambda: pipeline.data_cores(0)),
    ("timeout", lambda: pipeline.unpickles_in_fresh_process(DATA, timeout=0)),
    ("timeout", lambda: pipeline.unpickles_in_fresh_process(DATA, timeout=math.nan)),
    ("timeout", lambda: pipeline.unpickles_in_fresh_process(DATA, timeout=10**9)),
    ("wait", lambda: pipeline.worker_processes(wait=-1)),
    ("wait", lambda: pipeline.worker_processes(wait=math.inf)),
    ("preload", lambda: pipeline.worker_context(preload="torch")),
    ("preload", lambda: pipeline.worker_context(preload=[""])),
    ("threads", lambda: pipeline.limit_compute_threads(0)),
    ("threads", lambda: pipeline.limit_compute_threads(10**6)),
    ("frameworks", lambda: pipeline.warm_steps((4, 2), BATCH, frameworks=["mxnet"])),
    ("frameworks", lambda: pipeline.warm_steps((4, 2), BATCH, frameworks=["torch", "torch"])),
    ("sizes", lambda: pipeline.warm_steps((4,), BATCH)),
    ("sizes", lambda: pipeline.warm_steps((4, 10**9), BATCH)),
    ("batch", lambda: pipeline.warm_steps((4, 2), np.zeros((1, 4)))),
    ("lr", lambda: pipeline.warm_steps((4, 2), BATCH, lr=-0.1)),
    ("lr", lambda: pipeline.warm_steps((4, 2), BATCH, lr=math.nan)),
    ("ranks", lambda: pipeline.data_cores(4, ranks=5)),
    ("ranks", lambda: pipeline.data_cores(4, ranks=0)),
    ("steps", lambda: pipeline.capture_loop([1, 2], lambda b: b, steps=1, name="x")),
    ("batches", lambda: pipeline.capture_loop(7, lambda b: b, steps=2, name="x")),
    ("name", lambda: pipeline.capture_loop([1, 2], lambda b: b, steps=2, name="")),
    ("trace", lambda: pipeline.data_stalls("trace.json")),
    ("stalls", lambda: pipeline.stalls_table([])),
    ("steps", lambda: stall.Stalls("s", "main", (0.01, 0.01), (0.002, 0.003))),
    ("gaps", lambda: stall.Stalls("s", "main", (0.01, 0.01), (-0.002,))),
    ("steps", lambda: stall.Stalls("s", "main", (0.01, math.nan), (0.002,))),
    ("frameworks", lambda: pipeline.warm_steps((4, 2), (np.zeros((1, 4)), np.zeros(1)), frameworks=[])),
    ("seconds", lambda: pipeline.ms(math.nan)),
    ("run", lambda: pipeline.later_startups("t")),
    ("run", lambda: pipeline.later_startups(TIMELINE)),
    ("alone", lambda: pipeline.floor(None)),
    ("alone", lambda: pipeline.floor(TIMELINE)),
    ("before_after", lambda: pipeline.before_after_table({})),
    ("before_after", lambda: pipeline.before_after_table({"torch": (TIMELINE,)})),
    ("indices", lambda: DATA.batch("0123")),
    ("batch", lambda: dataset.fingerprint("abc")),
    ("n", lambda: pipeline.SyntheticImages(10**9)),
    ("size", lambda: pipeline.SyntheticImages(4, size=4096)),
    ("work", lambda: pipeline.SyntheticImages(4, work=10**6)),
    ("batch_size", lambda: pipeline.NumpyBatches(pipeline.SyntheticImages(10**6, size=512), 4096)),
    ("timeout", lambda: pipeline.Prefetch([1], timeout=0)),
    ("size", lambda: pipeline.Prefetch([1], size=10**9)),
]


@pytest.mark.parametrize(("argument", "call"), BAD_CALLS, ids=[f"{i:02d}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_call_names_its_argument(argument: str, call) -> None:
    rejects(call, argument)


TF_BAD_CALLS = [
    ("batch_size", lambda: pipeline.numpy_function_pipeline(DATA, 0)),
    ("batch_size", lambda: pipeline.numpy_function_pipeline(DATA, 9)),
    ("dataset", lambda: pipeline.numpy_function_pipeline([1, 2], 1)),
    ("dataset", lambda: pipeline.tf_decode_augment("data")),
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
