"""Where PyTorch's training step spends its time, eager and compiled, read from profiler traces
(``course_utils.profile``): the ops dispatched per step, the compiled graphs called, the time inside the graphs'
own code and in the wrappers around them, and the ops left outside the graphs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import display, profile, timing, validate
from course_utils.graphs.training import StepPair

GRAPH_CALL = r"^## Call CompiledFxGraph"  # one call of Inductor's generated code
COMPILED_PART = (r"^(Torch-Compiled Region|TorchDynamo Cache Lookup|"  # a compiled call with all its wrappers
                 r"autograd::engine::evaluate_function: CompiledFunctionBackward)")
MATMUL = r"^aten::(mm|addmm|bmm)$"
_HOST = ("cpu_op",)  # annotations (``Optimizer.step#SGD.step``) are ranges, not ops: their ops count one by one


def _top_level(trace: profile.Trace) -> list[profile.Event]:
    """The host ops no other host op of the same thread contains: what the step dispatched."""
    found = []
    for thread in {e.thread for e in trace.events}:
        events = sorted((e for e in trace.events if e.thread == thread and e.category in _HOST),
                        key=lambda e: (e.start, -e.duration))
        end = float("-inf")
        for e in events:
            if e.start >= end:
                found.append(e)
                end = e.end
    return found


def _seconds(trace: profile.Trace, pattern: str) -> float:
    return sum(e.duration for e in trace.select(pattern).events) if trace.count(pattern) else 0.0


@dataclass(frozen=True, repr=False)
class StepTrace:
    """An eager and a compiled trace of ``steps`` training steps; every figure is per step."""

    eager: profile.Trace
    compiled: profile.Trace
    steps: int

    @property
    def eager_ops(self) -> float:
        """Host ops the eager step dispatched (top level: forward ops, backward nodes, the optimizer's)."""
        return len(_top_level(self.eager)) / self.steps

    @property
    def graph_calls(self) -> float:
        return self.compiled.count(GRAPH_CALL) / self.steps

    @property
    def graph_time(self) -> float:
        """Seconds inside the generated code of the compiled graphs."""
        return _seconds(self.compiled, GRAPH_CALL) / self.steps

    @property
    def wrapper_time(self) -> float:
        """Seconds in the compiled calls outside their generated code: Dynamo's cache lookup (guards), the
        runtime wrappers, the autograd function around the graphs."""
        parts = sum(e.duration for e in _top_level(self.compiled) if _matches(COMPILED_PART, e.name))
        return parts / self.steps - self.graph_time

    @property
    def outside(self) -> tuple[float, float]:
        """(ops, seconds) the compiled step still dispatched outside its compiled calls."""
        rest = [e for e in _top_level(self.compiled) if not _matches(COMPILED_PART, e.name)]
        return len(rest) / self.steps, sum(e.duration for e in rest) / self.steps

    def matmul_time(self, kind: str) -> float:
        """Seconds in matrix multiplications (``aten::mm``/``addmm``), ``kind`` "eager" or "compiled"."""
        validate.choice("kind", kind, ("eager", "compiled"))
        return _seconds(getattr(self, kind), MATMUL) / self.steps

    def span(self, kind: str) -> float:
        """Seconds from the first to the last event, per step, ``kind`` "eager" or "compiled"."""
        validate.choice("kind", kind, ("eager", "compiled"))
        return getattr(self, kind).span / self.steps


def _matches(pattern: str, name: str) -> bool:
    return re.search(pattern, name) is not None


def trace_step(pair: StepPair, batch: Sequence[Any], *, steps: int = 5) -> StepTrace:
    """Profile ``steps`` eager and ``steps`` compiled steps of ``pair`` (each side run once before, so no
    compilation is traced); traces are saved under ``build/traces/``."""
    validate.instance("pair", pair, StepPair)
    validate.instance("batch", batch, (tuple, list))
    validate.number("steps", steps, low=1, high=100, integer=True)
    traces = []
    for kind in ("eager", "compiled"):
        step = getattr(pair, kind)
        timing.sync(step(batch))
        traces.append(profile.capture(pair.framework, step, batch, steps=steps, name=f"01_step_{kind}"))
    return StepTrace(*traces, steps)


def step_trace_text(st: StepTrace, step: tuple[timing.Measurement, timing.Measurement], *, eager_per_op: float,
                    compiled_per_call: float) -> str:
    """The step's time accounted from the trace and section 3's two fixed costs (``eager_per_op``: an eager op on
    a tiny tensor; ``compiled_per_call``: a compiled one-op call), each product labelled computed, with what the
    trace cannot settle said as not established."""
    validate.instance("st", st, StepTrace)
    validate.positive("eager_per_op", eager_per_op)
    validate.positive("compiled_per_call", compiled_per_call)
    eager, compiled = step
    fmt = display.format_time
    dispatch = st.eager_ops * eager_per_op
    text = (f"Profiled ({st.steps} steps each, the profiler's own cost included: a step spans "
            f"{fmt(st.span('eager'))} eager and {fmt(st.span('compiled'))} compiled in the trace, against "
            f"{fmt(eager.median)} and {fmt(compiled.median)} timed without it), the eager step dispatched "
            f"{st.eager_ops:g} ops per step. At section 3's cost of one eager op on a tiny tensor, "
            f"{fmt(eager_per_op)}, that is {fmt(dispatch)} (computed), "
            f"{dispatch / eager.median:.0%} of the timed eager step: ")
    text += ("by that measure dispatch is most of it. " if dispatch >= eager.median / 2 else
             "by that measure dispatch is not most of this step (the matrix multiplications alone took "
             f"{fmt(st.matmul_time('eager'))} per step in the trace). ")
    if not st.graph_calls:
        return text + ("The compiled trace names no call of generated code (this PyTorch labels it otherwise), so the "
                       "compiled step is not broken down here. ")
    ops, seconds = st.outside
    calls_cost = st.graph_calls * compiled_per_call
    text += (f"The compiled step called {st.graph_calls:g} compiled graphs per step and still dispatched {ops:g} ops "
             f"outside them ({fmt(seconds)} in the trace). Per step in the trace, the graphs' own code took "
             f"{fmt(st.graph_time)} (matrix multiplications {fmt(st.matmul_time('compiled'))} of it, against "
             f"{fmt(st.matmul_time('eager'))} eager), and the wrappers around the graphs (Dynamo's cache lookup, "
             f"the runtime wrappers, the autograd function) {fmt(st.wrapper_time)}. Section 3's fixed cost of one "
             f"compiled call, {fmt(compiled_per_call)}, times {st.graph_calls:g} calls is {fmt(calls_cost)} "
             "(computed)")
    slower = compiled.median - eager.median
    if slower <= 0 or not timing.apart(compiled, eager):
        return text + ". "
    if calls_cost >= slower / 2:
        return text + (f", against the {fmt(slower)} by which the timed compiled step is slower: a fixed cost of that "
                       "size accounts for at least half of it. ")
    return text + (f", {calls_cost / slower:.0%} of the {fmt(slower)} by which the timed compiled step is slower: "
                   f"the one-input `x + 1` probe's fixed cost does not explain it. The training graphs' wrappers "
                   f"took {fmt(st.wrapper_time)} per step in the trace, but that is a time under the profiler, which "
                   "adds its own cost to every event it records, so how much of the timed slowdown they account for "
                   "is not established by this run. ")
