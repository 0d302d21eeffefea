"""course_utils.pipeline: seeded data, identical batches from every loader, clean workers and threads, timed loop."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from course_utils import pipeline

N, BATCH, SIZE = 24, 4, 16


@pytest.fixture(scope="module")
def data() -> pipeline.SyntheticImages:
    return pipeline.SyntheticImages(N, size=SIZE, work=1, seed=3)


@pytest.fixture(scope="module")
def reference(data: pipeline.SyntheticImages) -> list[str]:
    return [pipeline.fingerprint(b) for b in pipeline.NumpyBatches(data, BATCH)]


# ---------------------------------------------------------------------------------------------------------
# The dataset


def test_samples_are_seeded_and_typed(data: pipeline.SyntheticImages) -> None:
    x, y = data[5]
    assert x.shape == (3, SIZE, SIZE) and x.dtype == np.float32 and x.flags.c_contiguous
    assert isinstance(y, np.int64) and 0 <= y < data.classes
    twin = pipeline.SyntheticImages(N, size=SIZE, work=1, seed=3)
    assert np.array_equal(twin[5][0], x) and twin[5][1] == y
    other = pipeline.SyntheticImages(N, size=SIZE, work=1, seed=4)
    assert not np.array_equal(other[5][0], x)
    assert not np.array_equal(data[6][0], x)


def test_decode_and_augment_compose_to_a_sample(data: pipeline.SyntheticImages) -> None:
    decoded = data.decode(2)
    assert decoded.shape == (3, SIZE, SIZE) and 0.0 <= decoded.min() and decoded.max() <= 1.0
    assert np.array_equal(data.augment(decoded, 2), data[2][0])
    assert data.stored(2).dtype == np.uint8 and data.stored(2).shape == (3, SIZE // 4, SIZE // 4)


def test_work_costs_time_but_not_shape() -> None:
    cheap = pipeline.SyntheticImages(8, size=32, work=0)
    costly = pipeline.SyntheticImages(8, size=32, work=40)
    start = time.perf_counter()
    [cheap.decode(i) for i in range(8)]
    t_cheap = time.perf_counter() - start
    start = time.perf_counter()
    [costly.decode(i) for i in range(8)]
    t_costly = time.perf_counter() - start
    assert costly.decode(0).shape == cheap.decode(0).shape
    assert t_costly > t_cheap


def test_batches_stack_in_order(data: pipeline.SyntheticImages) -> None:
    batches = list(pipeline.NumpyBatches(data, BATCH))
    assert len(batches) == N // BATCH
    x, y = batches[1]
    assert x.shape == (BATCH, 3, SIZE, SIZE) and y.dtype == np.int64
    assert np.array_equal(x[0], data[BATCH][0])
    x2, y2 = pipeline.numpy_collate([data[i] for i in range(BATCH, 2 * BATCH)])
    assert np.array_equal(x, x2) and np.array_equal(y, y2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"n": 0}, "n must"), ({"n": 4, "size": 10}, "multiple of 4"), ({"n": 4, "classes": 1}, "classes"),
     ({"n": 4, "work": -1}, "work"), ({"n": 4, "seed": -2}, "seed"), ({"n": True}, "n must")],
)
def test_bad_dataset_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pipeline.SyntheticImages(**kwargs)


def test_bad_indices_and_batch_size(data: pipeline.SyntheticImages) -> None:
    with pytest.raises(IndexError, match="index"):
        data[N]
    with pytest.raises(IndexError, match="index"):
        data[-1]
    with pytest.raises(ValueError, match="batch_size"):
        pipeline.NumpyBatches(data, 0)


def test_fingerprint_ignores_integer_width() -> None:
    x = np.arange(6, dtype=np.float32)
    assert pipeline.fingerprint((x, np.arange(3, dtype=np.int64))) == pipeline.fingerprint(
        (x, np.arange(3, dtype=np.int32)))
    assert pipeline.fingerprint((x, np.arange(3))) != pipeline.fingerprint((x + 1, np.arange(3)))


# ---------------------------------------------------------------------------------------------------------
# Workers: start method, pickling, no leftovers


def test_worker_context_never_forks() -> None:
    assert pipeline.worker_context().get_start_method() in ("forkserver", "spawn")


def test_unpickling_in_a_fresh_process(data: pipeline.SyntheticImages) -> None:
    assert pipeline.unpickles_in_fresh_process(data) == "ok"
    assert pipeline.unpickles_in_fresh_process(pipeline.numpy_collate) == "ok"


@pytest.mark.parametrize(("cores", "expected"), [(1, [0, 1, 2]), (2, [0, 1, 2, 4]), (16, [0, 1, 8, 16, 20])])
def test_worker_counts(cores: int, expected: list[int]) -> None:
    assert pipeline.worker_counts(cores) == expected


def test_dataloader_variants_yield_identical_data_and_leave_no_workers(
    data: pipeline.SyntheticImages, reference: list[str]
) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    context = pipeline.worker_context()
    before = pipeline.worker_processes(wait=0)  # e.g. a compiler's worker pool from another test: not ours
    for kwargs in ({"num_workers": 0}, {"num_workers": 2, "multiprocessing_context": context},
                   {"num_workers": 1, "prefetch_factor": 4, "multiprocessing_context": context}):
        loader = DataLoader(data, batch_size=BATCH, **kwargs)
        assert [pipeline.fingerprint(b) for b in loader] == reference
        del loader
    assert pipeline.worker_processes(ignore=before) == []
    # persistent workers stay alive while the loader lives, and end when it goes
    loader = DataLoader(data, batch_size=BATCH, num_workers=2, persistent_workers=True,
                        multiprocessing_context=context)
    timeline = pipeline.run_loop(loader, lambda b: torch.zeros(()), epochs=2)
    assert list(timeline.fingerprints) == reference * 2
    workers = pipeline.worker_processes(wait=0, ignore=before)
    assert len(workers) == 2
    memory = pipeline.worker_memory(workers)
    assert set(memory) == set(workers) and all(m > 0 for m in memory.values())
    del loader
    assert pipeline.worker_processes(ignore=before) == []


def test_an_abandoned_epoch_leaves_no_workers(data: pipeline.SyntheticImages) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    context = pipeline.worker_context()
    before = pipeline.worker_processes(wait=0)
    iterator = iter(DataLoader(data, batch_size=BATCH, num_workers=2, multiprocessing_context=context))
    next(iterator)
    assert len(pipeline.worker_processes(wait=0, ignore=before)) == 2
    del iterator
    assert pipeline.worker_processes(ignore=before) == []


def test_start_forkserver_returns_seconds() -> None:
    seconds = pipeline.start_forkserver()
    assert 0.0 <= seconds < 120


# ---------------------------------------------------------------------------------------------------------
# The prefetching iterator


def _prefetch_threads() -> int:
    return sum(t.name == "course-prefetch" for t in threading.enumerate())


def test_prefetch_yields_the_same_batches_in_order_and_stops(data: pipeline.SyntheticImages,
                                                             reference: list[str]) -> None:
    source = pipeline.NumpyBatches(data, BATCH)
    for size in (0, 1, 3):
        prefetched = pipeline.Prefetch(source, size=size, transfer=lambda b: b)
        assert len(prefetched) == len(source)
        assert [pipeline.fingerprint(b) for b in prefetched] == reference
    iterator = iter(pipeline.Prefetch(source, size=2, transfer=lambda b: b))
    items = list(iterator)
    assert len(items) == len(reference) and not iterator.alive
    with pytest.raises(StopIteration):
        next(iterator)
    assert _prefetch_threads() == 0


def test_prefetch_uses_jax_device_put_by_default(data: pipeline.SyntheticImages, reference: list[str]) -> None:
    jax = pytest.importorskip("jax")
    batches = list(pipeline.Prefetch(pipeline.NumpyBatches(data, BATCH), size=2))
    assert all(isinstance(x, jax.Array) and isinstance(y, jax.Array) for x, y in batches)
    assert [pipeline.fingerprint(b) for b in batches] == reference


def test_prefetch_close_stops_a_blocked_producer() -> None:
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    with iter(pipeline.Prefetch(endless(), size=2, transfer=lambda v: v)) as iterator:
        assert [next(iterator) for _ in range(3)] == [0, 1, 2]
    assert not iterator.alive
    assert len(produced) <= 3 + 2 + 2  # it ran at most a couple of items ahead, then stopped
    assert _prefetch_threads() == 0


def test_prefetch_raises_the_sources_error_in_the_consumer() -> None:
    def broken():
        yield 1
        raise KeyError("bad sample")

    iterator = iter(pipeline.Prefetch(broken(), size=2, transfer=lambda v: v))
    assert next(iterator) == 1
    with pytest.raises(KeyError, match="bad sample"):
        next(iterator)
    assert not iterator.alive


def test_prefetch_bad_size() -> None:
    with pytest.raises(ValueError, match="size"):
        pipeline.Prefetch([], size=-1)


# ---------------------------------------------------------------------------------------------------------
# The timed loop and its plots


class _Slow:
    """Batches that take ``delay`` seconds each to make (time.sleep releases the GIL, like a real loader)."""

    def __init__(self, count: int, delay: float) -> None:
        self.count, self.delay = count, delay

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        for i in range(self.count):
            time.sleep(self.delay)
            yield np.full(2, i, dtype=np.float32)


def test_run_loop_separates_wait_from_compute() -> None:
    slow_data = pipeline.run_loop(_Slow(6, 0.02), lambda b: time.sleep(0.005), label="slow data")
    assert slow_data.steps == 6 and len(slow_data.fingerprints) == 6
    assert slow_data.wait_time > slow_data.compute_time
    assert slow_data.utilisation < 0.5
    slow_step = pipeline.run_loop(_Slow(6, 0.0), lambda b: time.sleep(0.01), label="slow step")
    assert slow_step.utilisation > 0.8
    assert slow_step.step_time == pytest.approx(slow_step.wait_time + slow_step.compute_time)


def test_prefetching_hides_the_wait() -> None:
    plain = pipeline.run_loop(_Slow(8, 0.01), lambda b: time.sleep(0.012), label="plain")
    ahead = pipeline.run_loop(pipeline.Prefetch(_Slow(8, 0.01), size=2, transfer=lambda b: b),
                              lambda b: time.sleep(0.012), label="prefetch")
    assert ahead.fingerprints == plain.fingerprints
    assert ahead.utilisation > plain.utilisation
    assert ahead.wait_time < plain.wait_time


def test_run_loop_epochs_and_startups() -> None:
    timeline = pipeline.run_loop(_Slow(3, 0.0), lambda b: None, epochs=2)
    assert timeline.epochs == (0, 0, 0, 1, 1, 1)
    assert len(timeline.startups) == 2
    assert timeline.starts == tuple(sorted(timeline.starts))
    assert set(timeline.to_dict()) >= {"step_time", "wait_time", "compute_time", "utilisation", "startups"}
    assert "utilisation" in timeline.summary()


def test_run_loop_syncs_the_step_result() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = jnp.ones((512, 512))
    f = jax.jit(lambda a: (a @ a) @ a)
    f(x).block_until_ready()
    timeline = pipeline.run_loop([x, x, x], f)
    assert min(timeline.computes) > 0


def test_run_loop_bad_input() -> None:
    with pytest.raises(ValueError, match="epochs"):
        pipeline.run_loop([1], lambda b: b, epochs=0)
    with pytest.raises(TypeError, match="step"):
        pipeline.run_loop([1], "not callable")
    with pytest.raises(ValueError, match="no batch"):
        pipeline.run_loop([], lambda b: b)


def test_timeline_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="equal length"):
        pipeline.Timeline("x", (0.0,), (0.1, 0.2), (0.1,), (0,))


def test_plots_return_figures() -> None:
    from matplotlib.figure import Figure

    a = pipeline.run_loop(_Slow(4, 0.002), lambda b: time.sleep(0.001), label="torch before")
    b = pipeline.run_loop(_Slow(4, 0.0), lambda b: time.sleep(0.001), label="torch after")
    assert isinstance(pipeline.timeline_plot([a, b]), Figure)
    assert isinstance(pipeline.utilisation_plot({"torch": (a, b)}), Figure)
    with pytest.raises(ValueError, match="timelines"):
        pipeline.timeline_plot([])
    with pytest.raises(ValueError, match="before_after"):
        pipeline.utilisation_plot({})


# ---------------------------------------------------------------------------------------------------------
# Training steps and tf.data glue


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_train_step_lowers_the_loss(framework: str, data: pipeline.SyntheticImages) -> None:
    pytest.importorskip({"tensorflow": "tensorflow"}.get(framework, framework))
    x, y = data.batch(range(8))
    step = pipeline.make_train_step(framework, (data.features, 16, data.classes), lr=0.05)
    if framework == "torch":
        import torch

        batch = (torch.from_numpy(x), torch.from_numpy(y))
    elif framework == "tensorflow":
        import tensorflow as tf

        batch = (tf.constant(x), tf.constant(y))
    else:
        batch = (x, y)
    losses = [float(step(batch)) for _ in range(5)]
    assert losses[-1] < losses[0]


def test_train_step_bad_framework() -> None:
    with pytest.raises(ValueError, match="framework"):
        pipeline.make_train_step("mxnet", (4, 2))


def test_tf_data_yields_the_same_batches(data: pipeline.SyntheticImages, reference: list[str]) -> None:
    pytest.importorskip("tensorflow")
    from course_utils import env

    tf = env.import_tensorflow()
    ds = (tf.data.Dataset.range(N).map(pipeline.tf_decode(data), num_parallel_calls=tf.data.AUTOTUNE).cache()
          .map(pipeline.tf_augment(data), num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH).prefetch(2))
    for _ in range(2):  # the second epoch reads decoded images from the cache
        assert [pipeline.fingerprint(b) for b in ds] == reference


def test_limit_compute_threads_bad_input() -> None:
    with pytest.raises(ValueError, match="threads"):
        pipeline.limit_compute_threads(0)


def test_worker_processes_sees_children_and_honours_ignore() -> None:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in pipeline.worker_processes(wait=0)
        assert child.pid not in pipeline.worker_processes(wait=0, ignore=[child.pid])
    finally:
        child.kill()
        child.wait()
    assert child.pid not in pipeline.worker_processes(wait=0)
