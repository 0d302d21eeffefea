"""course_utils.pipeline.prefetch: same batches in order, the producer runs ahead (counted), clean stops."""

from __future__ import annotations

import threading

import pytest

from course_utils import calls, pipeline


def test_prefetch_and_in_loop_yield_the_same_items_in_order() -> None:
    source = list(range(10))
    for size in (1, 3):
        prefetched = pipeline.Prefetch(source, size=size, transfer=lambda b: b * 2)
        assert list(prefetched) == [2 * i for i in source]
    assert list(pipeline.InLoop(source, transfer=lambda b: b * 2)) == [2 * i for i in source]
    iterator = iter(pipeline.Prefetch(source, size=2, transfer=lambda b: b))
    assert list(iterator) == source and not iterator._thread.is_alive()
    with pytest.raises(StopIteration):
        next(iterator)
    assert pipeline.prefetch_threads() == 0


def test_the_producer_runs_ahead_of_the_consumer() -> None:
    """What hides the wait: while the step runs, the thread has already transferred the next batches."""
    with iter(pipeline.Prefetch(range(100), size=3, transfer=lambda b: b)) as iterator:
        assert next(iterator) == 0
        assert iterator.wait_ahead(1 + 3)  # the queue filled behind the consumer's back
        assert not iterator.wait_ahead(1 + 3 + 2, timeout=0.2)  # bounded: the queue plus the one it holds
    in_loop_calls = []
    for _ in pipeline.InLoop(range(3), transfer=in_loop_calls.append):
        assert len(in_loop_calls) == len(in_loop_calls)  # nothing ahead: one transfer per item asked for
    assert len(in_loop_calls) == 3


def test_prefetch_uses_jax_device_put_by_default() -> None:
    jax = pytest.importorskip("jax")
    import numpy as np

    items = [(np.ones(3, np.float32), np.arange(2))]
    for wrapper in (pipeline.Prefetch(items, size=1), pipeline.InLoop(items)):
        (x, y), = list(wrapper)
        assert isinstance(x, jax.Array) and isinstance(y, jax.Array)


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
    assert not iterator._thread.is_alive()
    assert len(produced) <= 3 + 2 + 2  # it ran at most a couple of items ahead, then stopped
    assert pipeline.prefetch_threads() == 0


def test_prefetch_raises_the_sources_error_unchanged() -> None:
    def broken():
        yield 1
        raise KeyError("bad sample")

    iterator = iter(pipeline.Prefetch(broken(), size=2, transfer=lambda v: v))
    assert next(iterator) == 1
    with pytest.raises(KeyError, match="bad sample"):
        next(iterator)
    assert not iterator._thread.is_alive()
    assert not any(t.name == "course-prefetch" for t in threading.enumerate())


def test_an_abandoned_iterator_stops_its_thread() -> None:
    import gc

    iterator = iter(pipeline.Prefetch(range(100), size=1, transfer=lambda b: b))
    assert iterator.wait_ahead(2)
    thread = iterator._thread
    del iterator
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()


def test_a_hung_transfer_raises_instead_of_waiting_forever() -> None:
    import time

    release = threading.Event()

    def stuck(batch):
        release.wait(30)
        return batch

    iterator = iter(pipeline.Prefetch([1, 2], size=1, transfer=stuck, timeout=0.2))
    with pytest.raises(calls.LearnerTimeout, match="stuck"):
        next(iterator)
    release.set()
    deadline = time.monotonic() + 5
    while pipeline.prefetch_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pipeline.prefetch_threads() == 0


def test_grain_available_needs_jax_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from course_utils import env

    monkeypatch.setattr(env, "available", lambda name: False)
    assert pipeline.grain_available() is False
