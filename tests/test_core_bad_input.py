"""Bad input to the core modules: each call raises TypeError or ValueError naming its argument, never a wrong
answer, a raw error from deep inside numpy or matplotlib, or a hang (issue 16). Lesson packages have their own
``tests/<package>/test_<package>_bad_input.py``.
"""

from __future__ import annotations

import math

import pytest
from badinput import rejects

from course_utils import (
    display,
    env,
    exercises,
    models,
    notebook,
    plotting,
    profile,
    roofline,
    timing,
    validate,
)

NAN, INF = math.nan, math.inf


def _noop() -> None:
    return None


_M = timing.Measurement("m", (1e-3, 2e-3))
_MACHINE = roofline.Machine("torch", "cpu", {"triad": 20e9}, {"matmul": 100e9})

BAD_CALLS = [
    # timing
    (lambda: timing.benchmark(None), "fn"),
    (lambda: timing.interleaved({}), "calls"),
    (lambda: timing.interleaved({"a": None}), "calls"),
    (lambda: timing.interleaved({"a": abs}, rounds=0), "rounds"),
    (lambda: timing.interleaved({"a": abs}, min_time=NAN), "min_time"),
    (lambda: timing.quartiles(3.0, str), "m"),
    (lambda: timing.benchmark(_noop, min_time=INF), "min_time"),
    (lambda: timing.benchmark(_noop, min_time=NAN), "min_time"),
    (lambda: timing.benchmark(_noop, min_time=-1), "min_time"),
    (lambda: timing.benchmark(_noop, min_time=1e9), "min_time"),
    (lambda: timing.benchmark(_noop, warmup=-1), "warmup"),
    (lambda: timing.benchmark(_noop, warmup=1.5), "warmup"),
    (lambda: timing.benchmark(_noop, max_repeats=0), "max_repeats"),
    (lambda: timing.benchmark(_noop, min_repeats=0), "min_repeats"),
    (lambda: timing.benchmark(_noop, min_repeats=10, max_repeats=5), "min_repeats"),
    (lambda: timing.benchmark(_noop, sync="yes"), "sync"),
    (lambda: timing.benchmark(_noop, label=3), "label"),
    (lambda: timing.Measurement("m", ()), "times"),
    (lambda: timing.Measurement("m", (NAN,)), "times"),
    (lambda: timing.Measurement("m", (-1.0,)), "times"),
    (lambda: timing.Measurement("m", (1.0,), number=0), "number"),
    (lambda: timing.Measurement(None, (1.0,)), "label"),
    (lambda: timing.Measurement.from_times("m", []), "times"),
    (lambda: timing.Measurement.from_times("m", [INF]), "times"),
    (lambda: timing.Timer(label=None), "label"),
    # display
    (lambda: display.format_time(NAN), "seconds"),
    (lambda: display.format_time("1 s"), "seconds"),
    (lambda: display.format_time(None), "seconds"),
    (lambda: display.format_bytes(INF), "nbytes"),
    (lambda: display.format_bytes("1 MB"), "nbytes"),
    (lambda: display.format_rate(-1e9), "bytes_per_second"),
    (lambda: display.format_flops(NAN), "flops_per_second"),
    (lambda: display.percent(NAN), "value"),
    (lambda: display.ratio(None), "value"),
    (lambda: display.table([], []), "header"),
    (lambda: display.table(["a"], [("1", "2")]), "rows"),
    # env, notebook
    (lambda: env.available(None), "framework"),
    (lambda: env.available("mxnet"), "framework"),
    (lambda: notebook.seed_everything(-1), "seed"),
    (lambda: notebook.setup(seed=-1), "seed"),
    (lambda: notebook.setup(seed=1.5), "seed"),
    (lambda: notebook.needs(), "frameworks"),
    (lambda: notebook.needs(None), "framework"),
    (lambda: notebook.present(["caffe"]), "framework"),
    (lambda: notebook.badge(None), "notebook"),
    (lambda: notebook.badge("x.py"), "notebook"),
    (lambda: notebook.summary_table("", [("a", 1.0)]), "notebook"),
    (lambda: notebook.summary_table("x", []), "rows"),
    (lambda: notebook.Row("q", "notnumber"), "value"),
    (lambda: notebook.Row("q", None), "value"),
    (lambda: notebook.Row("q", 1.0, unit=None), "unit"),
    # plotting
    (lambda: plotting.color_for(None), "label"),
    (lambda: plotting.color_for("jax", index=-1), "index"),
    (lambda: plotting.figure(ncols=0), "ncols"),
    (lambda: plotting.figure(width=NAN), "width"),
    (lambda: plotting.time_bars([]), "measurements"),
    (lambda: plotting.time_bars(None), "measurements"),
    (lambda: plotting.time_bars([3]), "measurements"),
    (lambda: plotting.sweep_plot([], {"a": []}), "sizes"),
    (lambda: plotting.sweep_plot([1, 2], {}), "series"),
    (lambda: plotting.sweep_plot([0, 2], {"a": [_M, _M]}), "sizes"),
    (lambda: plotting.waterfall([("a", 1.0)]), "steps"),
    (lambda: plotting.waterfall([("a", 1.0), ("b", NAN)]), "steps"),
    (lambda: plotting.waterfall([("a", 1.0), ("b", 2.0)], unit="h"), "unit"),
    (lambda: plotting.roofline_plot(None), "machine"),
    (lambda: plotting.roofline_plot(_MACHINE, [None]), "points[0]"),
    (lambda: plotting.roofline_plot(_MACHINE, 3), "points"),
    # display and env
    (lambda: display.table(["a"], None), "rows"),
    (lambda: display.table(["a"], [None]), "rows[0]"),
    (lambda: display.table(["a", "b"], [(1,)]), "rows[0]"),
    (lambda: env.report(devices="x"), "devices"),
    (lambda: env.build_dir(None), "parts"),
    # models
    (lambda: models.chain_for("mxnet"), "framework"),
    (lambda: models.chain_for(None), "framework"),
    (lambda: models.mlp_weights(None), "sizes"),
    (lambda: models.mlp_weights((4, 0)), "sizes"),
    (lambda: models.mlp_weights((4, 2), seed=-1), "seed"),
    (lambda: models.cnn_weights(classes=0), "classes"),
    # exercises
    (lambda: exercises.check("nope", 1), "exercise_id"),
    (lambda: exercises.register("01.1", hint=None), "hint"),
    (lambda: exercises.close(1.0, NAN), "expected"),
    (lambda: exercises.close(1.0, 2.0, rel=0), "rel"),
    (lambda: exercises.within(1.0, 3.0, 2.0), "high"),
    (lambda: exercises.same_function(None, abs, lambda s: (1,)), "candidate"),
    # validate itself refuses a non-list for choices-like containers
    (lambda: validate.non_empty("xs", None), "xs"),
    # roofline: past any machine (the memory check is tested below)
    (lambda: roofline.measure_machine("numpy", array_bytes=2**20, matmul_n=10**6), "matmul_n"),
    # profile
    (lambda: profile.load(None), "path"),
    (lambda: profile.capture("torch", _noop, steps=INF), "steps"),
    (lambda: profile.capture("torch", _noop, folder=3), "folder"),
]


@pytest.mark.parametrize(("call", "argument"), BAD_CALLS, ids=[f"{i:02d}-{a}" for i, (_, a) in enumerate(BAD_CALLS)])
def test_bad_call_is_refused_naming_its_argument(call, argument) -> None:
    rejects(call, argument)


def test_user_errors_pass_through_unchanged() -> None:
    def broken() -> None:
        raise KeyError("the learner's own bug")

    with pytest.raises(KeyError, match="learner's own bug"):
        timing.benchmark(broken)


@pytest.mark.parametrize(("call", "argument"), [
    (lambda: roofline.measure_machine("numpy", array_bytes=2**30), "array_bytes"),
    (lambda: roofline.measure_machine("numpy", array_bytes=2**20, matmul_n=20_000), "matmul_n"),
], ids=["array_bytes", "matmul_n"])
def test_sizes_are_checked_against_the_memory_free_now(call, argument, monkeypatch) -> None:
    # "Unable to allocate 116. TiB" named nothing; a size that the machine cannot hold is refused by name
    free = type("Memory", (), {"available": 2**30})()
    monkeypatch.setattr(validate.psutil, "virtual_memory", lambda: free)
    rejects(call, argument)


def test_the_last_core_wrong_answers_are_refused_by_name() -> None:  # issue 40
    from course_utils import intervals, timing
    with pytest.raises(ValueError, match="label must be a non-empty string"):
        timing.benchmark(lambda: 1, label="")
    with pytest.raises(ValueError, match=r"baseline\[0\] must be in \[1e-12"):
        intervals.speedup([1e-300, 1e300], [1e300, 1e-300])
    looped: list = [1]
    looped.append(looped)
    with pytest.raises(ValueError, match="value holds itself"):
        timing.sync(looped)
