"""Eager vs compiled, seen by the profiler: how many times the host dispatched work per call of the chain,
counted from a trace (``course_utils.profile``), to check the op counts the overhead model assumes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from course_utils import calls, declare, display, profile
from course_utils.declare import NonEmpty, Range

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
