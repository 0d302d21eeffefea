"""Bad calls against course_utils.graphs' public API: each raises TypeError or ValueError naming its argument."""

from __future__ import annotations

import numpy as np
import pytest
from badinput import rejects

from course_utils import graphs, interop, timing

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
X = torch.ones(3)
ARR = np.ones(3, np.float32)
M = timing.Measurement("m", (1e-3,), first_call=1.0)
M_NO_FIRST = timing.Measurement("m", (1e-3,))
RUN = graphs.LossRun("torch", (1.0,), (1.0,), 1.0)
PAIR = graphs.StepPair("torch", lambda b: X.sum(), lambda b: X.sum(), "test")
MODEL = graphs.overhead_model("torch", n_ops=11, eager_per_op=1e-5, compiled_per_call=1e-5, measured=1.0)


def _f(x):
    return x * 2


def _make(fw, n):
    return (interop.to_framework(fw, np.ones(n, np.float32)),)


def _times(**changes):
    kwargs = {"first_call": 1.0, "per_call": 1e-3, "eager_per_call": 2e-3, **changes}
    return lambda: graphs.break_even_calls(**kwargs)


def _model(**changes):
    kwargs = {"n_ops": 11, "eager_per_op": 1e-5, "compiled_per_call": 1e-5, "measured": 1.0, **changes}
    return lambda: graphs.overhead_model("torch", **kwargs)


BAD_CALLS = [
    # capture
    ("framework", lambda: graphs.capture("mxnet", _f, X)),
    ("framework", lambda: graphs.capture(None, _f, X)),
    ("fn", lambda: graphs.capture("torch", 3, X)),
    ("fn", lambda: graphs.capture_torch(None)),
    ("captures", lambda: graphs.side_by_side([])),
    ("captures", lambda: graphs.side_by_side([1])),
    ("captures", lambda: graphs.side_by_side(None)),
    ("fn", lambda: graphs.fresh_function(torch.sin)),
    ("index", lambda: graphs.GraphRecorder().ops("last")),
    # recompiles
    ("inputs", lambda: graphs.count_compiles("torch", _f, [])),
    ("inputs", lambda: graphs.count_compiles("torch", _f, [X])),
    ("inputs", lambda: graphs.count_compiles("torch", _f, None)),
    ("framework", lambda: graphs.count_compiles("numpy", _f, [(X,)])),
    ("fn", lambda: graphs.count_compiles("torch", "f", [(X,)])),
    ("fn", lambda: graphs.torch_graph_breaks(None, X)),
    ("inputs", lambda: graphs.torch_compile_log(_f, [])),
    ("fn", lambda: graphs.tf_retracing_warnings(None, [(X,)])),
    ("xs", lambda: graphs.strategy_counts("torch", _f, [])),
    ("framework", lambda: graphs.strategy_counts("theano", _f, [X])),
    # fallback
    ("sample_args", lambda: graphs.compile_or_fallback(_f, X, framework="torch")),
    ("framework", lambda: graphs.compile_or_fallback(_f, (X,), framework="numpy")),
    ("rtol", lambda: graphs.compile_or_fallback(_f, (X,), framework="torch", rtol=-1.0)),
    ("atol", lambda: graphs.compile_or_fallback(_f, (X,), framework="torch", atol=NAN)),
    ("fn", lambda: graphs.compile_or_fallback(None, (X,), framework="torch")),
    ("expected", lambda: graphs.max_abs_diff(None, ARR)),
    ("framework", lambda: graphs.eager_mode("numpy").__enter__()),
    ("decisions", lambda: graphs.decisions_table({})),
    ("framework", lambda: graphs.ran_compiled("x")),
    # break-even
    ("first_call", _times(first_call=-1.0)),
    ("first_call", _times(first_call=NAN)),
    ("first_call", _times(first_call="1")),
    ("first_call", _times(first_call=True)),
    ("per_call", _times(per_call=INF)),
    ("eager_per_call", _times(eager_per_call=-2.0)),
    ("eager_first_call", _times(eager_first_call=NAN)),
    ("eager", lambda: graphs.break_even(None, M)),
    ("compiled", lambda: graphs.break_even(M, M_NO_FIRST)),
    ("calls", lambda: graphs.cumulative_time(1.0, 1.0, [0])),
    ("calls", lambda: graphs.cumulative_time(1.0, 1.0, [])),
    ("calls", lambda: graphs.cumulative_time(1.0, 1.0, None)),
    ("calls", lambda: graphs.cumulative_time(1.0, 1.0, [INF])),
    ("first_call", lambda: graphs.cumulative_time(NAN, 1.0, [1])),
    ("elements", lambda: graphs.compile_cache_times(0)),
    ("elements", lambda: graphs.compile_cache_times(1.5)),
    ("timeout", lambda: graphs.compile_cache_times(2**8, timeout=NAN)),
    ("n_ops", _model(n_ops=0)),
    ("eager_per_op", _model(eager_per_op=NAN)),
    ("compiled_per_call", _model(compiled_per_call=-1.0)),
    ("measured", _model(measured=INF)),
    ("framework", lambda: graphs.overhead_model("keras", n_ops=1, eager_per_op=1.0, compiled_per_call=1.0,
                                                measured=1.0)),
    ("models", lambda: graphs.overhead_table([])),
    ("factor", lambda: MODEL.within(0.5)),
    ("size", lambda: graphs.call_costs("torch", size=0)),
    ("min_time", lambda: graphs.call_costs("torch", min_time=INF)),
    ("costs", lambda: graphs.eager_op_cost(None)),
    ("costs", lambda: graphs.eager_op_cost({"eager add": M})),
    ("mix", lambda: graphs.eager_op_cost({"eager add": M}, {})),
    ("eager", lambda: graphs.size_sweep({}, _f, [4], _make)),
    ("compile_fresh", lambda: graphs.size_sweep({"torch": _f}, None, [4], _make)),
    ("sizes", lambda: graphs.size_sweep({"torch": _f}, _f, [], _make)),
    ("sizes", lambda: graphs.size_sweep({"torch": _f}, _f, [0], _make)),
    ("make_inputs", lambda: graphs.size_sweep({"torch": _f}, _f, [4], None)),
    ("chain", lambda: graphs.dynamic_costs(None, ())),
    ("framework", lambda: graphs.probe_beside_chain("keras", _f, ())),
    ("chain", lambda: graphs.probe_beside_chain("torch", None, ())),
    ("min_time", lambda: graphs.dynamic_costs(_f, (), min_time=0)),
    ("found", lambda: graphs.dynamic_table({}, 16)),
    ("found", lambda: graphs.dynamic_text({}, 16)),
    # training
    ("lr", lambda: graphs.step_pair("torch", lr=0)),
    ("lr", lambda: graphs.step_pair("torch", lr=NAN)),
    ("framework", lambda: graphs.step_pair("mxnet")),
    ("x", lambda: graphs.batch_for("torch", ARR, np.ones(2))),
    ("x", lambda: graphs.batch_for("torch", [1.0], ARR)),
    ("pair", lambda: graphs.run_losses(None, (X, X), 3)),
    ("steps", lambda: graphs.run_losses(PAIR, (X, X), 0)),
    ("batch", lambda: graphs.run_losses(PAIR, X, 3)),
    ("times", lambda: graphs.step_table({"torch": RUN}, {})),
    # plots
    ("pairs", lambda: graphs.crossover_plot({})),
    ("pairs", lambda: graphs.crossover_plot(None)),
    ("pairs", lambda: graphs.crossover_plot({"torch": (M,)})),
    ("counts", lambda: graphs.compile_count_bars({"torch": {}})),
    ("counts", lambda: graphs.compile_count_bars({"torch": {"a": -1}})),
    ("calls", lambda: graphs.compile_count_bars({"torch": {"a": 1}}, calls=0)),
    ("runs", lambda: graphs.loss_difference_plot([])),
    ("models", lambda: graphs.overhead_plot([1])),
    # exercises
    ("calls", lambda: graphs.exercises.seconds_saved(M, M, 0)),
]


@pytest.mark.parametrize(("argument", "call"), BAD_CALLS, ids=[f"{i}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_call_is_refused_naming_the_argument(argument, call) -> None:
    rejects(call, argument)


def test_there_are_at_least_25_bad_calls() -> None:
    assert len(BAD_CALLS) >= 25


TRACED_BAD_CALLS = [
    ("framework", lambda: graphs.trace_calls("caffe", _f, _f, (X,))),
    ("eager", lambda: graphs.trace_calls("torch", None, _f, (X,))),
    ("compiled", lambda: graphs.trace_calls("torch", _f, 1, (X,))),
    ("args", lambda: graphs.trace_calls("torch", _f, _f, X)),
    ("calls", lambda: graphs.trace_calls("torch", _f, _f, (X,), calls=0)),
    ("traced", lambda: graphs.traced_table([])),
    ("traced", lambda: graphs.traced_table([1])),
]


@pytest.mark.parametrize(("argument", "call"), TRACED_BAD_CALLS, ids=[a for a, _ in TRACED_BAD_CALLS])
def test_bad_trace_call_is_refused_naming_the_argument(argument, call) -> None:
    rejects(call, argument)
