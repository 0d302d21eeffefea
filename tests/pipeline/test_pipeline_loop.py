"""course_utils.pipeline.loop: wait and compute booked apart (with a fake clock: no timing asserted)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from course_utils import calls, display, pipeline
from course_utils.pipeline import loop


class _FakeClock:
    """A clock that only moves when told: the loader advances it by ``data``, the step by ``compute``."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Batches:
    def __init__(self, clock: _FakeClock, count: int, data: float, startup: float = 0.0) -> None:
        self.clock, self.count, self.data, self.startup = clock, count, data, startup

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        self.clock.now += self.startup
        for i in range(self.count):
            self.clock.now += self.data
            yield np.full(2, i, dtype=np.float32)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _FakeClock:
    fake = _FakeClock()
    monkeypatch.setattr(loop, "_clock", fake)
    return fake


def _step(clock: _FakeClock, compute: float):
    def step(batch):
        clock.now += compute
        return batch
    return step


def test_wait_and_compute_are_booked_apart(clock: _FakeClock) -> None:
    t = pipeline.run_loop(_Batches(clock, 6, data=0.03, startup=0.5), _step(clock, 0.01), label="slow data")
    assert len(t.waits) == 6 and len(t.fingerprints) == 6
    assert t.waits[0] == pytest.approx(0.53) and t.startups == pytest.approx((0.53,))
    assert t.wait_time == pytest.approx(0.03) and t.compute_time == pytest.approx(0.01)
    assert t.utilisation == pytest.approx(0.25)
    assert t.step_time == pytest.approx(t.wait_time + t.compute_time)


def test_epochs_and_startups(clock: _FakeClock) -> None:
    t = pipeline.run_loop(_Batches(clock, 3, data=0.0, startup=1.0), _step(clock, 0.02), epochs=2)
    assert t.epochs == (0, 0, 0, 1, 1, 1)
    assert t.startups == pytest.approx((1.0, 1.0))
    assert t.utilisation == pytest.approx(1.0)
    assert t.starts == tuple(sorted(t.starts))
    second = t.epoch_part(1, "compute")  # the epoch's steady steps only: its first step left out
    assert second.times == pytest.approx((0.02, 0.02)) and t.epoch_part(0).median == pytest.approx(0.0)


def test_timeline_renders_as_a_table(clock: _FakeClock) -> None:
    t = pipeline.run_loop(_Batches(clock, 4, data=0.002), _step(clock, 0.006), label="torch, 0 workers")
    table = pipeline.timelines_table([t])
    assert isinstance(table, display.Table) and table.column("utilisation") == ["75%"]
    assert "torch, 0 workers" in repr(t) and "<table>" in t._repr_html_()
    both = pipeline.timelines_table([t, t], title="two")
    assert len(both.rows) == 2 and both.title == "two"


def test_the_steps_error_passes_through(clock: _FakeClock) -> None:
    def failing(batch):
        raise ZeroDivisionError("learner's bug")

    with pytest.raises(ZeroDivisionError, match="learner's bug"):
        pipeline.run_loop(_Batches(clock, 2, data=0.0), failing)


def test_run_loop_syncs_the_step_result() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    seen = []
    x = jnp.ones((64, 64))
    f = jax.jit(lambda a: a @ a)

    def step(batch):
        out = f(batch)
        seen.append(out)
        return out

    pipeline.run_loop([x, x], step)
    assert all(o.is_ready() for o in seen)  # sync waited for each result before booking the step


def test_timeline_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        pipeline.Timeline("x", (0.0,), (0.1, 0.2), (0.1,), (0,))


def _timeline(label: str, computes: tuple[float, ...], wait: float = 0.002) -> pipeline.Timeline:
    n = len(computes)
    return pipeline.Timeline(label, tuple(float(i) for i in range(n)), (0.5, *[wait] * (n - 1)), computes, (0,) * n)


def test_parts_leave_out_the_startup() -> None:
    quick = _timeline("quick", (9.0, 0.010, 0.011, 0.010, 0.012, 0.011))
    assert quick.part("compute").n == 5 and max(quick.part("compute").times) == 0.012  # first step left out
    assert np.allclose(quick.part("step").times, np.add(quick.part("wait").times, quick.part("compute").times))
    table = pipeline.timelines_table([quick], spread=True)
    assert "step quartiles" in str(table) and "compute quartiles" in str(table)
    assert "quartiles" not in str(pipeline.timelines_table([quick]))
    assert len(pipeline.timelines_table({"q": quick, "again": quick}).rows) == 2  # a mapping of runs too


def test_run_loops_alternates_and_keeps_one_round_per_epoch(clock: _FakeClock) -> None:
    order = []

    class Loader(_Batches):
        def __init__(self, name: str, data: float) -> None:
            super().__init__(clock, 3, data=data, startup=0.2)
            self.name = name

        def __iter__(self):
            order.append(self.name)
            return super().__iter__()

    runs = pipeline.run_loops({"a": (Loader("a", 0.01), _step(clock, 0.02)),
                               "b": (Loader("b", 0.03), _step(clock, 0.02))}, rounds=3)
    assert order == ["a", "b", "b", "a", "a", "b"]  # the order rotates each round
    a, b = runs["a"], runs["b"]
    assert a.epochs == (0, 0, 0, 1, 1, 1, 2, 2, 2)
    assert a.startups == pytest.approx((0.21, 0.21, 0.21))
    assert a.part("wait").rounds == pytest.approx((0.01, 0.01, 0.01))  # each round's median: a paired replicate
    assert b.part().rounds == pytest.approx((0.05, 0.05, 0.05))
    assert a.starts == tuple(sorted(a.starts)) and a.starts[3] == pytest.approx(3 * 0.01 + 3 * 0.02 + 0.2)
    assert a.epoch(1).epochs == (0, 0, 0) and a.epoch(1).starts[0] == 0.0 and a.epoch(1).waits == a.waits[3:6]


def test_startups_of_later_epochs_pair_across_loops(clock: _FakeClock) -> None:
    t = pipeline.run_loop(_Batches(clock, 2, data=0.0, startup=0.3), _step(clock, 0.01), epochs=4)
    later = t.startup_part()
    assert later.rounds == pytest.approx((0.3, 0.3, 0.3)) and later.n == 3


def test_a_round_below_the_clock_resolution_still_gives_a_ratio() -> None:
    instant = pipeline.Timeline("t", (0.0, 0.1, 0.2, 0.3), (0.5, 0.0, 0.5, 0.0), (0.1,) * 4, (0, 0, 1, 1))
    assert instant.part("wait").rounds == (loop.CLOCK_FLOOR, loop.CLOCK_FLOOR)


def test_epochs_of_one_long_iterator() -> None:
    view = pipeline.EpochsOf(iter(range(7)), 3)
    assert [list(view) for _ in range(3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(view) == []
    with pytest.raises(ValueError, match="yielded no batch"):
        pipeline.run_loop(view, lambda b: b)


def test_numpy_integers_are_counts() -> None:
    t = pipeline.run_loop([1, 2], lambda b: b, epochs=np.int64(2))
    assert t.epochs == (0, 0, 1, 1)
    assert pipeline.EpochsOf(iter([1]), np.int32(1)).steps == 1


def test_a_hung_loader_or_step_raises_and_names_it() -> None:
    def hang(batch):
        time.sleep(30)

    def forever():
        while True:
            time.sleep(0.01)
        yield  # pragma: no cover

    class Stuck:
        def __iter__(self):
            return forever()

    start = time.monotonic()
    with pytest.raises(calls.LearnerTimeout, match="the step hang"):
        pipeline.run_loop([1], hang, timeout=0.3)
    with pytest.raises(calls.LearnerTimeout, match="the loader"):
        pipeline.run_loops({"stuck": (Stuck(), lambda b: b)}, rounds=2, timeout=0.3)
    assert time.monotonic() - start < 10
    assert len(pipeline.run_loop([1], lambda b: b, timeout=0.3).waits) == 1  # the alarm is gone afterwards
    time.sleep(0.4)


def test_the_default_limit_is_the_sizes_and_applies_per_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calls, "default_timeout", lambda: 0.3)
    def slow(batch):
        time.sleep(5)

    with pytest.raises(calls.LearnerTimeout, match="the step slow .*the default at size"):
        pipeline.run_loop([1], slow)
    t = pipeline.run_loop([1, 2], lambda b: time.sleep(0.1), epochs=4)  # 0.8 s in all, 0.2 s per epoch
    assert len(t.waits) == 8


def test_an_outer_alarm_is_given_back() -> None:
    import signal

    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        pipeline.run_loop([1, 2], lambda b: b, timeout=60)
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < left <= 5.0 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_an_outer_alarm_due_first_reaches_its_own_handler() -> None:
    import signal

    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        pipeline.run_loop([1, 2], lambda b: time.sleep(0.15), timeout=60)
        assert fired == [True] and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
