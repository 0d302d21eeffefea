"""course_utils.graphs.training: a training step's time accounted from an eager and a compiled trace."""

from __future__ import annotations

import pytest

from course_utils import graphs, interop, profile, timing

US = 1e-6


def _ev(name: str, start: float, duration: float, category: str = "cpu_op") -> profile.Event:
    return profile.Event(name, category, "main", start * US, duration * US)


def _traces() -> graphs.training.StepTrace:
    """One step each: eager dispatches 4 ops (one nested op and one annotation's op inside); compiled calls 2 graphs
    (forward region, backward function), with 1 op outside them."""
    eager = profile.Trace("torch", None, (
        _ev("aten::linear", 0, 50), _ev("aten::addmm", 5, 40),  # nested: one dispatch
        _ev("aten::relu", 60, 10),
        _ev("Optimizer.step#SGD.step", 80, 30, "user_annotation"), _ev("aten::add_", 85, 5), _ev("aten::add_", 95, 5),
    ))
    compiled = profile.Trace("torch", None, (
        _ev("TorchDynamo Cache Lookup", 0, 10),
        _ev("Torch-Compiled Region: 0/0", 12, 60), _ev("## Call CompiledFxGraph abc ##", 30, 30),
        _ev("aten::addmm", 35, 20),
        _ev("aten::ones_like", 80, 5),
        _ev("autograd::engine::evaluate_function: CompiledFunctionBackward", 90, 50),
        _ev("## Call CompiledFxGraph def ##", 100, 30), _ev("aten::mm", 105, 20),
    ))
    return graphs.training.StepTrace(eager, compiled, 1)


def test_step_trace_counts_dispatches_graphs_and_wrappers() -> None:
    st = _traces()
    assert st.eager_ops == 4 and st.graph_calls == 2
    assert st.graph_time == pytest.approx(60 * US) and st.wrapper_time == pytest.approx((10 + 60 + 50 - 60) * US)
    assert st.outside == (1, pytest.approx(5 * US))
    assert st.span("eager") == pytest.approx(110 * US)


def _m(seconds: float) -> timing.Measurement:
    return timing.Measurement("m", (seconds * 0.95, seconds, seconds * 1.05), rounds=(seconds, seconds * 1.02))


def test_step_table_sets_the_counts_beside_the_two_fixed_costs_computed() -> None:
    table = _traces().table((_m(100 * US), _m(200 * US)), eager_per_op=5 * US, compiled_per_call=10 * US)
    rows = {row[0]: row[1:] for row in table.rows}
    assert rows["step, timed without the profiler"] == ("100 µs", "200 µs")
    assert rows["host ops dispatched (outside compiled calls)"] == ("4", "1")
    assert rows["ops x section 4's eager op cost (computed)"] == ("20 µs", "-")
    assert rows["graph calls x the run's call cost (computed)"] == ("-", "20 µs")


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_trace_step_profiles_the_learners_torch_steps() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import data, models

    x, y = data.classification(32)
    steps = (models.torch_sgd_step(models.torch_mlp(), lr=0.1),
             models.torch_sgd_step(torch.compile(models.torch_mlp()), lr=0.1))
    st = graphs.trace_step("torch", *steps, interop.to_framework("torch", x, y), steps=2)
    assert st.eager_ops > 10 and st.graph_calls >= 2 and st.graph_time > 0


@pytest.mark.parametrize(("call", "name"), [
    (lambda: graphs.trace_step("torch", None, abs, ()), "eager"),
    (lambda: _traces().table((None, _m(1.0)), eager_per_op=1, compiled_per_call=1), "step"),
    (lambda: _traces().table((_m(1.0), _m(1.0)), eager_per_op=0, compiled_per_call=1), "eager_per_op"),
    (lambda: _traces().span("both"), "kind"),
])
def test_bad_input_names_the_argument(call, name: str) -> None:
    with pytest.raises((TypeError, ValueError), match=name):
        call()
