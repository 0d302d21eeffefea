"""A whole training step, compiled, against the same program run eagerly, in all three frameworks (steps built by
the notebook): run, timed and compared, and read in the profiler (dispatches per call, where torch's step goes)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import calls, data, declare, display, interop, intervals, models, profile, timing, validate
from course_utils.declare import MinItems, NonEmpty, NonNegativeFloat, PositiveFloat, Range, SameLength
from course_utils.graphs.breakeven import timed_pair
from course_utils.measuring.workloads import Framework, MinTime, Pair, Rounds

StepPair = Annotated[tuple[Callable[..., Any], Callable[..., Any]], MinItems(2)]
MAX_STEPS = 10_000
EAGER_STEP, COMPILED_STEP = "torch eager step", "torch.compile step"


@declare.checked
@dataclass(frozen=True)
class LossRun:
    """Losses of the same steps, eager and compiled, and the compiled first step (trace + compile) in seconds."""

    framework: Framework
    eager: Annotated[tuple[float, ...], NonEmpty]
    compiled: Annotated[tuple[float, ...], SameLength("eager")]
    first_compiled_step: NonNegativeFloat

    @property
    def max_abs_diff(self) -> float:
        return float(np.max(np.abs(np.subtract(self.eager, self.compiled))))


@contextmanager
def _quiet_record_function() -> Iterator[None]:
    """Drop Dynamo's warning that it ignores the ``record_function`` range every optimizer's step opens: harmless."""
    logger = logging.getLogger("torch._dynamo.variables.ctx_manager")

    def dropped(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Profiler record function")

    logger.addFilter(dropped)
    try:
        yield
    finally:
        logger.removeFilter(dropped)


@declare.checked
def run_losses(framework: Framework, eager: Callable[[Any], Any], compiled: Callable[[Any], Any],
               batch: Sequence[Any], steps: Annotated[int, Range(1, MAX_STEPS)], *,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> LossRun:
    """Run ``steps`` steps of ``eager`` and of ``compiled`` (``step(batch) -> loss``) on ``batch``: the losses and
    the compiled first step's seconds. Each side runs under ``timeout`` seconds (None: the size's default)."""
    with calls.time_limit(timeout, calls.describe(compiled)):
        start = time.perf_counter()
        with _quiet_record_function():
            losses = [float(timing.sync(compiled(batch)))]
        first = time.perf_counter() - start
        losses += [float(compiled(batch)) for _ in range(steps - 1)]
    with calls.time_limit(timeout, calls.describe(eager)):
        eager_losses = [float(eager(batch)) for _ in range(steps)]
    return LossRun(framework, tuple(eager_losses), tuple(losses), first)


@declare.checked
def step_times(steps: Annotated[Mapping[str, StepPair], NonEmpty], batches: Mapping[str, Sequence[Any]], *,
               rounds: Rounds = 6, min_time: MinTime = 0.4,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, Pair]:
    """Per framework, (eager, compiled) step times on its batch, timed in ``rounds`` alternating rounds."""
    found = {}
    for fw, (eager, compiled) in steps.items():
        found[fw] = timed_pair(eager, compiled, (batches[fw],), label=fw, min_time=min_time, rounds=rounds,
                               timeout=timeout)
    return found


@declare.checked
def step_medians(batch: Annotated[int, Range(1, 2**16)], *, lr: Annotated[float, Range(1e-6, 10)] = 0.1,
                 warmup: Annotated[int, Range(1, 100)] = 3, rounds: Annotated[int, Range(2, 20)] = 2,
                 min_time: Annotated[float, Range(0.01, 60)] = 0.2,
                 threads: Annotated[int, Range(1, 1024)] | None = None) -> dict[str, float]:
    """One fresh process's measurement for ``cu.fresh.replicate``: section 8's compiled torch step (model and
    ``optimizer.step``) against the eager one, after ``warmup`` steps: {EAGER_STEP, COMPILED_STEP: median seconds}."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    eager = models.torch_sgd_step(models.torch_mlp(), lr=lr)
    compiled = models.torch_sgd_step(torch.compile(models.torch_mlp()), lr=lr)
    compiled.optimizer.step = torch.compile(compiled.optimizer.step)  # type: ignore[attr-defined]
    pair = interop.to_framework("torch", *data.classification(batch))
    with _quiet_record_function():
        for _ in range(warmup):
            timing.sync(eager(pair)), timing.sync(compiled(pair))
    e, c = timed_pair(eager, compiled, (pair,), label="step", rounds=rounds, min_time=min_time)
    return {EAGER_STEP: e.median, COMPILED_STEP: c.median}


@declare.checked
def step_table(runs: Mapping[str, LossRun], times: Annotated[Mapping[str, Pair], NonEmpty]) -> display.Table:
    """Per framework: eager and compiled step medians, the speed-up over its own eager step, the first step."""
    rows = [(fw, display.format_time(e.median), display.format_time(c.median), str(intervals.speedup(e, c)),
             display.format_time(runs[fw].first_compiled_step) if fw in runs else "-") for fw, (e, c) in times.items()]
    return display.table(["framework", "eager step (median)", "compiled step (median)", "speed-up over own eager",
                          "first compiled step (compile)"], rows, title="One SGD step of the MLP, same program",
                         note=_RATIO_NOTE)


_RATIO_NOTE = ("the speed-up is the geometric mean of the per-round ratios, not the ratio of the two medians; its "
               "interval is in this process")


def _forward_backward(model: Any, optimizer: Any) -> Callable[[Any], Any]:
    """The step without its update: zero the gradients, forward, loss, backward (as ``torch_sgd_step`` does)."""
    import torch.nn.functional as F

    def part(batch: Any) -> Any:
        x, y = batch
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss.detach()

    return part


@declare.checked
def step_parts(models: Annotated[Sequence[Any], MinItems(2)], steps: Annotated[Sequence[Callable[..., Any]],
               MinItems(2)], batch: Sequence[Any], *, rounds: Rounds = 6, min_time: MinTime = 0.2,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, Pair]:
    """PyTorch's step part by part ("forward + backward", "optimizer.step"), each eager and compiled in alternating
    rounds; ``models`` and ``steps`` are the notebook's (eager, compiled) pairs, called after the steps ran."""
    optimizers = [getattr(s, "optimizer", None) for s in steps]
    if len(models) != 2 or len(steps) != 2 or any(o is None for o in optimizers):
        raise ValueError("models and steps must be (eager, compiled) pairs, the steps from cu.models.torch_sgd_step "
                         "(they carry .optimizer)")
    found = {}
    for name, (eager, compiled, args) in {
            "forward + backward": (*(_forward_backward(m, o) for m, o in zip(models, optimizers)), (batch,)),
            "optimizer.step": (optimizers[0].step, optimizers[1].step, ())}.items():
        found[name] = timed_pair(eager, compiled, args, label=name, min_time=min_time, rounds=rounds, timeout=timeout)
    return found


@declare.checked
def parts_table(parts: Annotated[Mapping[str, Pair], NonEmpty], step: Pair) -> display.Table:
    """PyTorch's step part by part and whole: eager and compiled medians, eager over compiled with its interval."""
    rows = [(name, display.format_time(e.median), display.format_time(c.median), str(intervals.speedup(e, c)))
            for name, (e, c) in {**parts, "whole step": step}.items()]
    return display.table(["part", "eager (median)", "compiled (median)", "eager over compiled"], rows,
                         title="PyTorch's training step, part by part", note=_RATIO_NOTE)


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
    with calls.time_limit(timeout, calls.describe(compiled)):
        eager(*args)
        compiled(*args)
        traces = [profile.capture(framework, fn, *args, steps=repeats, name=f"01_chain_{kind}")
                  for kind, fn in (("eager", eager), ("compiled", compiled))]
    return TracedCalls(framework, repeats, *traces)


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
