"""Eager vs compiled, seen by the profiler: the host's dispatches per call of the chain (the op counts the overhead
model assumes), and where PyTorch's training step spends its time: ops, graph calls, graphs' code, wrappers."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from course_utils import calls, declare, display, profile, timing, validate
from course_utils.declare import NonEmpty, PositiveFloat, Range

# The trace event that marks one dispatched unit of work, eager and compiled, per framework.
DISPATCH_EVENTS = {
    "torch": (r"^aten::(add|mul|tanh|sub|div)$", r"^Torch-Compiled Region"),
    "jax": (r"ExecuteHelper(OnSingleDevice)?$", r"ExecuteHelper(OnSingleDevice)?$"),
    "tensorflow": (r"^EagerKernelExecute$", r"^EagerKernelExecute$"),
}


@declare.checked
@dataclass(frozen=True, repr=False)
class TracedCalls:
    """Dispatches per call counted from an eager and a compiled trace of the same function."""

    framework: str
    calls: int
    eager: profile.Trace
    compiled: profile.Trace

    @property
    def eager_per_call(self) -> float:
        return self.eager.count(DISPATCH_EVENTS[self.framework][0]) / self.calls

    @property
    def compiled_per_call(self) -> float:
        return self.compiled.count(DISPATCH_EVENTS[self.framework][1]) / self.calls

    def table_row(self) -> tuple[str, ...]:
        eager_pattern, compiled_pattern = DISPATCH_EVENTS[self.framework]
        return (self.framework, f"{self.eager_per_call:g}", f"{self.compiled_per_call:g}",
                _per_call(len(self.eager.events) / self.calls), _per_call(len(self.compiled.events) / self.calls),
                f"{eager_pattern} / {compiled_pattern}")


def _per_call(value: float) -> str:
    """A count per call: whole numbers as they are, others to one decimal (27.6667 -> '27.7')."""
    return f"{value:g}" if value == round(value) else f"{value:.1f}"


@declare.checked
def trace_calls(framework: Literal["torch", "jax", "tensorflow"], eager: Callable[..., Any],
                compiled: Callable[..., Any], args: Sequence[Any], *, repeats: Annotated[int, Range(1, 100)] = 3,
                timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> TracedCalls:
    """Profile ``repeats`` calls of ``eager(*args)`` and of ``compiled(*args)`` (both run once before, so no
    compilation is traced); traces are saved under ``build/traces/``."""
    name = framework
    with calls.time_limit(timeout, calls.describe(compiled)):
        eager(*args)
        compiled(*args)
        traces = [profile.capture(name, fn, *args, steps=repeats, name=f"01_chain_{kind}")
                  for kind, fn in (("eager", eager), ("compiled", compiled))]
    return TracedCalls(name, repeats, *traces)


@declare.checked
def traced_table(traced: Annotated[Sequence[TracedCalls], NonEmpty]) -> display.Table:
    """Per framework: dispatches per call eager and compiled (counted from the traces), all events per call."""
    return display.table(["framework", "eager dispatches / call", "compiled dispatches / call",
                          "eager trace events / call", "compiled trace events / call", "dispatch event counted"],
                         [t.table_row() for t in traced], title="Counted from profiler traces")


GRAPH_CALL = r"^## Call CompiledFxGraph"  # one call of Inductor's generated code
COMPILED_PART = (r"^(Torch-Compiled Region|TorchDynamo Cache Lookup|"  # a compiled call with all its wrappers
                 r"autograd::engine::evaluate_function: CompiledFunctionBackward)")
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


@declare.checked
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

    def span(self, kind: str) -> float:
        """Seconds from the first to the last event, per step, ``kind`` "eager" or "compiled"."""
        validate.choice("kind", kind, ("eager", "compiled"))
        return getattr(self, kind).span / self.steps


    @declare.checked
    def table(self, step: tuple[timing.Measurement, timing.Measurement], *, eager_per_op: PositiveFloat,
              compiled_per_call: PositiveFloat) -> display.Table:
        """The step accounted from the traces, per step, beside the timed ``step`` (eager, compiled); the two fixed
        costs (section 4's eager op, the run's compiled call) times the counts, computed."""
        t, ops = display.format_time, self.outside[0]
        rows = [("step, timed without the profiler", t(step[0].median), t(step[1].median)),
                ("step under the profiler (first to last event)", t(self.span("eager")), t(self.span("compiled"))),
                ("host ops dispatched (outside compiled calls)", f"{self.eager_ops:g}", f"{ops:g}"),
                ("compiled graphs called", "-", f"{self.graph_calls:g}"),
                ("inside the graphs' generated code", "-", t(self.graph_time)),
                ("in the wrappers around them (guards, runtime, autograd)", "-", t(self.wrapper_time)),
                ("ops x section 4's eager op cost (computed)", t(self.eager_ops * eager_per_op), "-"),
                ("graph calls x the run's call cost (computed)", "-", t(self.graph_calls * compiled_per_call))]
        return display.table(["per step", "eager", "compiled"], rows, title="PyTorch's training step in the profiler",
                             note="the profiler's own cost is inside its times; a trace naming no graph call means "
                                  "this PyTorch labels its generated code otherwise")


def _matches(pattern: str, name: str) -> bool:
    return re.search(pattern, name) is not None


@declare.checked
def trace_step(framework: Literal["torch", "jax", "tensorflow"], eager: Callable[[Any], Any],
               compiled: Callable[[Any], Any], batch: Sequence[Any], *, steps: Annotated[int, Range(1, 100)] = 5,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> StepTrace:
    """Profile ``steps`` calls of the learner's ``eager`` and ``compiled`` training steps on ``batch`` (each run
    once before, so no compilation is traced); traces are saved under ``build/traces/``."""
    traces = []
    for kind, step in (("eager", eager), ("compiled", compiled)):
        with calls.time_limit(timeout, calls.describe(step)):
            timing.sync(step(batch))
            traces.append(profile.capture(framework, step, batch, steps=steps, name=f"01_step_{kind}"))
    return StepTrace(*traces, steps)
