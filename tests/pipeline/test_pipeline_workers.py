"""course_utils.pipeline.workers: start method, pickling in a fresh process, no leftover workers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from course_utils import pipeline
from course_utils.pipeline import dataset

N, BATCH, SIZE = 24, 4, 16


@pytest.fixture(scope="module")
def data() -> pipeline.SyntheticImages:
    return pipeline.SyntheticImages(N, size=SIZE, work=1, seed=3)


def _defined_here():  # a module-level function of a test module the child cannot import by this name
    return 1


def test_worker_context_never_forks() -> None:
    assert pipeline.worker_context().get_start_method() in ("forkserver", "spawn")


def test_unpickling_in_a_fresh_process_returns_a_name(data: pipeline.SyntheticImages) -> None:
    assert pipeline.unpickles_in_fresh_process(data) == "ok"
    assert pipeline.unpickles_in_fresh_process(pipeline.numpy_collate) == "ok"
    # cannot be pickled at all: the name of the error raised here, as the docstring says (not an exception)
    assert pipeline.unpickles_in_fresh_process(lambda: 0) in ("PicklingError", "AttributeError")
    # pickled by reference to a module the fresh process does not have on its path
    assert pipeline.unpickles_in_fresh_process(_defined_here) == "ModuleNotFoundError"


@pytest.mark.parametrize(("cores", "expected"), [(1, [0, 1, 2]), (2, [0, 1, 2]), (16, [0, 1, 8, 15, 16])])
def test_worker_counts(cores: int, expected: list[int]) -> None:
    assert pipeline.worker_counts(cores) == expected


@pytest.mark.parametrize(("cores", "expected"), [(1, 1), (2, 1), (8, 7)])
def test_data_cores_keep_one_for_the_training_process(cores: int, expected: int) -> None:
    assert pipeline.data_cores(cores) == expected


@pytest.mark.parametrize(("cores", "ranks", "expected"), [(16, 1, 15), (16, 4, 3), (16, 8, 1), (8, 3, 1), (4, 4, 1)])
def test_data_cores_per_rank_with_several_ranks_per_node(cores: int, ranks: int, expected: int) -> None:
    assert pipeline.data_cores(cores, ranks=ranks) == expected  # (cores - k) / k per rank: each rank keeps a core


def test_dataloader_variants_yield_identical_data_and_leave_no_workers(data: pipeline.SyntheticImages) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    reference = [dataset.fingerprint(b) for b in pipeline.NumpyBatches(data, BATCH)]
    context = pipeline.worker_context()
    before = pipeline.worker_processes(wait=0)  # e.g. a compiler's worker pool from another test: not ours
    for kwargs in ({"num_workers": 0}, {"num_workers": 2, "multiprocessing_context": context},
                   {"num_workers": 1, "prefetch_factor": 4, "multiprocessing_context": context}):
        loader = DataLoader(data, batch_size=BATCH, **kwargs)
        assert [dataset.fingerprint(b) for b in loader] == reference
        del loader
    assert set(pipeline.worker_processes()) <= set(before)
    loader = DataLoader(data, batch_size=BATCH, num_workers=2, persistent_workers=True,
                        multiprocessing_context=context)
    timeline = pipeline.run_loop(loader, lambda b: torch.zeros(()), epochs=2)
    assert list(timeline.fingerprints) == reference * 2
    workers = sorted(set(pipeline.worker_processes(wait=0)) - set(before))
    assert len(workers) == 2
    memory = {pid: uss for pid, uss in pipeline.worker_memory().items() if pid in workers}
    assert set(memory) == set(workers) and all(m > 0 for m in memory.values())
    del loader
    assert set(pipeline.worker_processes()) <= set(before)


def test_an_abandoned_epoch_leaves_no_workers(data: pipeline.SyntheticImages) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    context = pipeline.worker_context()
    before = pipeline.worker_processes(wait=0)
    iterator = iter(DataLoader(data, batch_size=BATCH, num_workers=2, multiprocessing_context=context))
    next(iterator)
    assert len(set(pipeline.worker_processes(wait=0)) - set(before)) == 2
    del iterator
    assert set(pipeline.worker_processes()) <= set(before)


def test_start_forkserver_returns_seconds() -> None:
    seconds = pipeline.start_forkserver()
    assert isinstance(seconds, float) and seconds >= 0.0


def test_worker_processes_sees_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in pipeline.worker_processes(wait=0)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in pipeline.worker_processes(wait=0)


def test_oversubscribing_silences_only_the_worker_count_warning() -> None:
    import warnings

    from course_utils import pipeline

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pipeline.oversubscribing():
            warnings.warn("This DataLoader will create 4 worker processes in total. Our ...", UserWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)
        warnings.warn("This DataLoader will create 4 worker processes in total.", UserWarning, stacklevel=1)
    assert [str(w.message)[:14] for w in seen] == ["something else", "This DataLoade"]


JAX_ON_ONE_CORE = """
import os, time
from course_utils import pipeline
everything = os.sched_getaffinity(0)
done = pipeline.limit_compute_threads(1)
import jax, jax.numpy as jnp
x = jnp.ones((1024, 1024))
f = jax.jit(lambda a: a @ a)
f(x).block_until_ready()
wall, cpu = time.perf_counter(), time.process_time()
for _ in range(20):
    f(x).block_until_ready()
print(done["jax"], (time.process_time() - cpu) / (time.perf_counter() - wall), os.sched_getaffinity(0) == everything)
"""


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs sched_setaffinity and two cores")
def test_limit_compute_threads_keeps_jax_on_one_core() -> None:
    """XLA ignores its thread flags; the helper's affinity trick must leave JAX one core's worth of CPU time."""
    pytest.importorskip("jax")
    out = subprocess.run([sys.executable, "-c", JAX_ON_ONE_CORE], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"}, check=True).stdout.split()
    threads, busy_cores, restored = int(out[-3]), float(out[-2]), out[-1] == "True"
    assert threads == 1
    assert busy_cores < 1.3  # CPU seconds per wall second: one core's worth (load can only lower it)
    assert restored  # the calling thread gets every core back for the loader
