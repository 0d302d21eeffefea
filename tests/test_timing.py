"""course_utils.timing: measurements, synchronisation, comparison, and the bad inputs."""

from __future__ import annotations

import math
import time

import pytest
from badinput import rejects

from course_utils import timing


def _sleep_1ms() -> None:
    time.sleep(1e-3)


def test_benchmark_measures_a_known_duration() -> None:
    m = timing.benchmark(_sleep_1ms, min_time=0.05, label="sleep")
    assert m.min >= 1e-3  # sleep never returns early; no upper bound: a busy machine may be slow
    assert m.label == "sleep" and m.n >= 5 and m.first_call is not None
    assert m.p25 <= m.median <= m.p75 and m.min <= m.median
    assert m.calls == m.n * m.number


def test_first_call_is_timed_apart_from_the_steady_state() -> None:
    calls = []

    def slow_first() -> None:
        calls.append(1)
        time.sleep(0.05 if len(calls) == 1 else 0.0)

    m = timing.benchmark(slow_first, min_time=0.02)
    assert m.first_call >= 0.05
    assert m.calls < len(calls)  # the first call is not among the timed ones


def test_fast_calls_are_grouped_into_blocks() -> None:
    m = timing.benchmark(lambda: None, min_time=0.02)
    assert m.number > 100  # a 100 ns call timed one by one would measure the clock


def test_arguments_are_passed_through() -> None:
    seen = []
    timing.benchmark(lambda a, b=0: seen.append((a, b)), 3, b=4, min_time=0.01, warmup=0)
    assert set(seen) == {(3, 4)}


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"fn": 3}, TypeError),
        ({"min_time": 0}, ValueError),
        ({"min_time": -1.0}, ValueError),
        ({"warmup": -1}, ValueError),
        ({"warmup": 1.5}, TypeError),
        ({"max_repeats": 0}, ValueError),
        ({"sync": "always"}, ValueError),
    ],
)
def test_benchmark_rejects_bad_input(kwargs: dict, error: type) -> None:
    fn = kwargs.pop("fn", _sleep_1ms)
    with pytest.raises(error) as excinfo:
        timing.benchmark(fn, **kwargs)
    name = "fn" if fn == 3 else next(iter(kwargs))
    assert name in str(excinfo.value)


def test_measurement_statistics_and_repr() -> None:
    m = timing.Measurement("x", (1.0, 2.0, 3.0, 4.0, 100.0), number=2, first_call=7.0)
    assert m.median == 3.0 and m.p25 == 2.0 and m.p75 == 4.0 and m.min == 1.0
    assert "median 3 s" in repr(m) and "first call 7 s" in repr(m)
    assert "<table>" in m._repr_html_()
    assert m.to_dict()["median"] == 3.0
    with pytest.raises(ValueError, match="times"):
        timing.Measurement("empty", ())


def test_format_time_units() -> None:
    assert timing.format_time(1.5) == "1.5 s"
    assert timing.format_time(0.0123) == "12.3 ms"
    assert timing.format_time(4.56e-6) == "4.56 µs"
    assert timing.format_time(8e-9) == "8 ns"
    with pytest.raises(TypeError, match="seconds"):
        timing.format_time("1 s")


def test_timer_measures_a_section() -> None:
    with timing.Timer("nap") as t:
        time.sleep(0.01)
    assert t.elapsed >= 0.01 and "nap" in repr(t)


def test_sync_returns_its_argument_for_plain_values() -> None:
    value = {"a": [1, 2], "b": None}
    assert timing.sync(value) is value


def test_sync_returns_only_after_a_jax_result_is_ready() -> None:
    """JAX returns before a large matmul is computed; sync returns only once the result is ready."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = jnp.ones((1500, 1500), jnp.float32)
    matmul = jax.jit(lambda a: (a @ a) @ a)
    out = timing.sync([matmul(x)])
    assert out[0].is_ready()


class _Async:
    """A fake asynchronous result that logs when it is waited for."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def block_until_ready(self) -> _Async:
        self.events.append("wait")
        return self


def _logged(monkeypatch, events: list[str]):
    real = timing.time.perf_counter

    def clock() -> float:
        events.append("clock")
        return real()

    monkeypatch.setattr(timing.time, "perf_counter", clock)

    def fn() -> _Async:
        events.append("call")
        return _Async(events)

    return fn


def test_benchmark_waits_before_reading_the_clock(monkeypatch) -> None:
    events: list[str] = []
    m = timing.benchmark(_logged(monkeypatch, events), min_time=0.001, max_repeats=5)
    assert m.synced
    last_wait = len(events) - 1 - events[::-1].index("wait")
    assert events[last_wait - 1: last_wait + 2] == ["call", "wait", "clock"]  # wait first, then read the clock


def test_sync_handles_torch_and_tensorflow_values() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import env

    tf = env.import_tensorflow()
    values = (torch.ones(3), {"tf": tf.ones((4, 4)), "var": tf.Variable([1.0, 2.0])})
    assert timing.sync(values) is values


def test_block_sizes_follow_the_1_2_5_series() -> None:
    assert [timing._round_up_125(v) for v in (0.5, 1, 1.5, 3, 7, 11, 4000)] == [1, 1, 2, 5, 10, 20, 5000]


def test_interleaved_takes_turns_rotates_the_order_and_pools_rounds() -> None:
    order: list[str] = []
    found = timing.interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, rounds=3,
                               min_time=0.006)
    assert set(found) == {"a", "b"} and all(m.n >= 9 and m.first_call is not None for m in found.values())
    assert order[0] == "a" and order[order.index("b") - 1] == "a"  # round 0 in the given order
    last_a = len(order) - 1 - order[::-1].index("a")
    assert order.index("b") < last_a  # b ran before a's last round: they took turns
    assert timing.quartiles(found["a"], lambda v: "x") == "x to x"


def _never_returns() -> None:
    while True:
        time.sleep(0.01)


@pytest.mark.parametrize("run", [
    lambda t: timing.benchmark(_never_returns, timeout=t),
    lambda t: timing.interleaved({"hung": _never_returns}, timeout=t),
], ids=["benchmark", "interleaved"])
def test_a_function_that_never_returns_stops_the_timing_and_is_named(run) -> None:
    from course_utils import calls

    start = time.perf_counter()
    with pytest.raises(calls.LearnerTimeout, match="_never_returns") as caught:
        run(0.3)
    assert time.perf_counter() - start < 3 and "timeout=0.3" in str(caught.value)


# time_split: a launch's wall time split into the parts its processes measured and the rest
def test_outside_is_the_wall_minus_the_parts() -> None:
    assert timing.time_split(10.0, {"a": 2.0, "b": 3.0}) == {"wall": 10.0, "a": 2.0, "b": 3.0, "outside": 5.0}


def test_nested_parts_say_what_they_cover() -> None:
    split = timing.time_split(10, {"joined": 6.0, "work": 2.0, "import": 3.0}, inside=8.0)
    assert split["outside"] == 2.0 and list(split) == ["wall", "joined", "work", "import", "outside"]


def test_a_part_not_reported_leaves_outside_unknown() -> None:
    assert math.isnan(timing.time_split(10.0, {"startup": float("nan"), "work": 1.0})["outside"])


@pytest.mark.parametrize(("call", "argument"), [
    (lambda: timing.time_split(-1.0, {}), "wall"),
    (lambda: timing.time_split("10", {}), "wall"),
    (lambda: timing.time_split(10.0, [1.0]), "parts"),
    (lambda: timing.time_split(10.0, {"a": "1"}), "parts['a']"),
    (lambda: timing.time_split(10.0, {"wall": 1.0}), "parts"),
    (lambda: timing.time_split(10.0, {"": 1.0}), "parts key"),
    (lambda: timing.time_split(10.0, {"a": 1.0}, inside=float("inf")), "inside"),
])
def test_bad_input_is_refused_naming_the_argument(call, argument: str) -> None:
    rejects(call, argument)
