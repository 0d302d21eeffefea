"""Bad calls against course_utils.graphs' public API: each raises TypeError or ValueError naming its argument."""

from __future__ import annotations

import numpy as np
import pytest
from badinput import rejects

from course_utils import calls, graphs, interop, timing

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
X = torch.ones(3)
ARR = np.ones(3, np.float32)
M = timing.Measurement("m", (1e-3,), first_call=1.0)
M_NO_FIRST = timing.Measurement("m", (1e-3,))
M6 = timing.Measurement("m", (1e-3,) * 6, first_call=1.0, rounds=(1e-3,) * 6)
RUN = graphs.training.LossRun("torch", (1.0,), (1.0,), 1.0)


def _f(x):
    return x * 2


def _make(fw, n):
    return (interop.to_framework(fw, np.ones(n, np.float32)),)


def _times(**changes):
    kwargs = {"first_call": 1.0, "per_call": 1e-3, "eager_per_call": 2e-3, **changes}
    return lambda: graphs.breakeven.break_even_calls(**kwargs)


def _model(**changes):
    kwargs = {"n_ops": 11, "eager_per_op": 1e-5, "compiled_per_call": 1e-5, "eager_chain": M, "compiled_chain": M,
              **changes}
    return lambda: graphs.overhead_model("torch", **kwargs)


def _step(batch):
    return X.sum()


BAD_CALLS = [
    # capture
    ("framework", lambda: graphs.capture("mxnet", _f, X)),
    ("framework", lambda: graphs.capture(None, _f, X)),
    ("fn", lambda: graphs.capture("torch", 3, X)),
    ("fn", lambda: graphs.capture("torch", None)),
    ("captures", lambda: graphs.side_by_side([])),
    ("captures", lambda: graphs.side_by_side([1])),
    ("captures", lambda: graphs.side_by_side(None)),
    ("fn", lambda: graphs.fresh_function(torch.sin)),
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
    ("sample_args", lambda: graphs.compile_or_fallback(_f, X, compiler=_f, framework="torch")),
    ("framework", lambda: graphs.compile_or_fallback(_f, (X,), compiler=_f, framework="numpy")),
    ("rtol", lambda: graphs.compile_or_fallback(_f, (X,), compiler=_f, framework="torch", rtol=-1.0)),
    ("atol", lambda: graphs.compile_or_fallback(_f, (X,), compiler=_f, framework="torch", atol=NAN)),
    ("fn", lambda: graphs.compile_or_fallback(None, (X,), compiler=_f, framework="torch")),
    ("compiler", lambda: graphs.compile_or_fallback(_f, (X,), compiler="torch.compile", framework="torch")),
    ("timeout", lambda: graphs.compile_or_fallback(_f, (X,), compiler=_f, framework="torch", timeout=0)),
    ("framework", lambda: graphs.eagerly("numpy", _f)),
    ("fn", lambda: graphs.eagerly("torch", None)),
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
    ("calls", lambda: graphs.cumulative_time(1.0, 1.0, [0])),
    ("calls", lambda: graphs.cumulative_time(1.0, 1.0, None)),
    ("calls", lambda: graphs.cumulative_time(1.0, 1.0, "123")),
    ("calls", lambda: graphs.cumulative_time(1.0, 1.0, [INF])),
    ("first_call", lambda: graphs.cumulative_time(NAN, 1.0, [1])),
    ("eager", lambda: graphs.timed_pair(None, _f, (X,), label="x")),
    ("compiled", lambda: graphs.timed_pair(_f, 3, (X,), label="x")),
    ("args", lambda: graphs.timed_pair(_f, _f, X, label="x")),
    ("label", lambda: graphs.timed_pair(_f, _f, (X,), label="")),
    ("rounds", lambda: graphs.timed_pair(_f, _f, (X,), label="x", rounds=1)),
    ("rounds", lambda: graphs.timed_pair(_f, _f, (X,), label="x", rounds=10**6)),
    ("timeout", lambda: graphs.timed_pair(_f, _f, (X,), label="x", timeout=INF)),
    ("n_ops", _model(n_ops=0)),
    ("n_ops", _model(n_ops=10**9)),
    ("eager_per_op", _model(eager_per_op=NAN)),
    ("compiled_per_call", _model(compiled_per_call=-1.0)),
    ("eager_chain", _model(eager_chain=1.0)),
    ("compiled_chain", _model(compiled_chain=None)),
    ("framework", lambda: graphs.overhead_model("keras", n_ops=1, eager_per_op=1.0, compiled_per_call=1.0,
                                                eager_chain=M, compiled_chain=M)),
    ("models", lambda: graphs.overhead_table([])),
    ("size", lambda: graphs.eager_op_costs("torch", size=0)),
    ("size", lambda: graphs.eager_op_costs("torch", size=2**40)),
    ("min_time", lambda: graphs.eager_op_costs("torch", min_time=INF)),
    ("framework", lambda: graphs.eager_op_costs("numpy")),
    ("costs", lambda: graphs.eager_op_cost(None)),
    ("costs", lambda: graphs.eager_op_cost({"eager add": M})),
    ("eager", lambda: graphs.size_sweep({}, _f, [4], _make)),
    ("eager", lambda: graphs.size_sweep({"keras": _f}, _f, [4], _make)),
    ("compile", lambda: graphs.size_sweep({"torch": _f}, None, [4], _make)),
    ("sizes", lambda: graphs.size_sweep({"torch": _f}, _f, [], _make)),
    ("sizes[0]", lambda: graphs.size_sweep({"torch": _f}, _f, [0], _make)),
    ("sizes[0]", lambda: graphs.size_sweep({"torch": _f}, _f, [2**40], _make)),
    ("sizes", lambda: graphs.size_sweep({"torch": _f}, _f, list(range(1, 100)), _make)),
    ("eager['torch']", lambda: graphs.size_sweep({"torch": 3}, _f, [4], _make)),
    ("min_time", lambda: graphs.size_sweep({"torch": _f}, _f, [4], _make, min_time=float("nan"))),
    ("sizes", lambda: graphs.size_sweep({"torch": _f}, _f, "16", _make)),
    ("make_inputs", lambda: graphs.size_sweep({"torch": _f}, _f, [4], None)),
    ("timeout", lambda: graphs.size_sweep({"torch": _f}, _f, [4], _make, timeout=-1)),
    # dynamic
    ("variants", lambda: graphs.dynamic_costs(None)),
    ("variants", lambda: graphs.dynamic_costs({})),
    ("variants", lambda: graphs.dynamic_costs({"static": _f})),
    ("variants", lambda: graphs.dynamic_costs({"static": (_f,)})),
    ("variants", lambda: graphs.dynamic_costs({"static": (None, (X,))})),
    ("variants", lambda: graphs.dynamic_costs({"static": (_f, X)})),
    ("min_time", lambda: graphs.dynamic_costs({"static": (_f, (X,))}, min_time=0)),
    ("rounds", lambda: graphs.dynamic_costs({"static": (_f, (X,))}, rounds=np.int64(1))),
    ("found", lambda: graphs.dynamic_table({}, 16)),
    ("size", lambda: graphs.dynamic_table({"s": graphs.breakeven.Variant("s", M6, 1)}, 0)),
    ("found", lambda: graphs.against_baseline({})),
    # harness
    ("chain", lambda: graphs.compare_harnesses(None, {}, (X,), (X,))),
    ("compiled", lambda: graphs.compare_harnesses(_f, None, (X,), (X,))),
    ("found", lambda: graphs.harness_table({})),
    # regional and the compile cache
    ("depth", lambda: graphs.stack(0)),
    ("depth", lambda: graphs.stack(10**6)),
    ("width", lambda: graphs.stack(2, 1.5)),
    ("width", lambda: graphs.stack(2, 10**9)),
    ("block_call", lambda: graphs.stack(2, 8, block_call="nested")),
    ("seed", lambda: graphs.stack(2, 8, seed=-1)),
    ("fn", lambda: graphs.first_call_seconds(None)),
    ("timeout", lambda: graphs.first_call_seconds(_f, X, timeout=NAN)),
    ("model", lambda: graphs.forward_step(3)),
    ("steps", lambda: graphs.call_times({}, X)),
    ("rounds", lambda: graphs.call_times({"a": _f}, X, rounds=1)),
    ("depth", lambda: graphs.compile_cache_times(0)),
    ("depth", lambda: graphs.compile_cache_times(1.5)),
    ("width", lambda: graphs.compile_cache_times(2, 10**9)),
    ("timeout", lambda: graphs.compile_cache_times(2, 8, timeout=NAN)),
    # limits
    # training
    ("framework", lambda: graphs.run_losses("mxnet", _step, _step, (X, X), 3)),
    ("eager", lambda: graphs.run_losses("torch", None, _step, (X, X), 3)),
    ("steps", lambda: graphs.run_losses("torch", _step, _step, (X, X), 0)),
    ("steps", lambda: graphs.run_losses("torch", _step, _step, (X, X), 10**9)),
    ("batch", lambda: graphs.run_losses("torch", _step, _step, X, 3)),
    ("eager", lambda: graphs.training.LossRun("torch", (1.0,), (1.0, 2.0), 1.0)),
    ("eager", lambda: graphs.training.LossRun("torch", 1.0, (1.0,), 1.0)),
    ("compiled", lambda: graphs.training.LossRun("torch", (1.0,), None, 1.0)),
    ("times", lambda: graphs.step_table({"torch": RUN}, {})),
    ("steps", lambda: graphs.step_times({}, {})),
    ("steps", lambda: graphs.step_times({"torch": (_step,)}, {"torch": (X, X)})),
    ("models", lambda: graphs.step_parts((1,), (_step, _step), (X, X))),
    ("steps", lambda: graphs.step_parts((1, 2), (_step, _step), (X, X))),
    ("parts", lambda: graphs.parts_table({}, (M6, M6))),
    ("framework", lambda: graphs.trace_step("caffe", _step, _step, (X, X))),
    ("steps", lambda: graphs.trace_step("torch", _step, _step, (X, X), steps=0)),
    # plots
    ("pairs", lambda: graphs.crossover_plot({}, {})),
    ("pairs", lambda: graphs.crossover_plot(None, {})),
    ("pairs", lambda: graphs.crossover_plot({"torch": (M,)}, {})),
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
    ("repeats", lambda: graphs.trace_calls("torch", _f, _f, (X,), repeats=0)),
    ("traced", lambda: graphs.traced_table([])),
    ("traced", lambda: graphs.traced_table([1])),
]


@pytest.mark.parametrize(("argument", "call"), TRACED_BAD_CALLS, ids=[a for a, _ in TRACED_BAD_CALLS])
def test_bad_trace_call_is_refused_naming_the_argument(argument, call) -> None:
    rejects(call, argument)


def test_numpy_integers_are_counts_too() -> None:
    model = graphs.overhead_model("torch", n_ops=np.int64(11), eager_per_op=1e-5, compiled_per_call=1e-5,
                                  eager_chain=M, compiled_chain=M)
    assert model.n_ops == 11
    assert float(graphs.cumulative_time(1.0, 0.5, np.int32(3))) == 2.0


def test_a_learner_function_that_never_returns_is_stopped_and_named() -> None:
    import time

    def hangs(x):
        while True:
            time.sleep(0.01)

    with pytest.raises(calls.LearnerTimeout, match="hangs"):
        graphs.timed_pair(_f, hangs, (X,), label="x", timeout=0.5)
    with pytest.raises(calls.LearnerTimeout, match="hangs"):
        graphs.compile_or_fallback(hangs, (X,), compiler=_f, framework="torch", timeout=0.5)
    with pytest.raises(calls.LearnerTimeout, match="hangs"):
        graphs.run_losses("torch", _step, hangs, (X, X), 2, timeout=0.5)
    with pytest.raises(calls.LearnerTimeout, match="hangs"):
        graphs.dynamic_costs({"static": (hangs, (X,))}, timeout=0.5)
