"""What compiling costs and saves: the break-even call count, eager against compiled in turns, the small-tensor
overhead model, and a shape-generic graph's cost per call against a static one's (each variant the learner's)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from course_utils import calls, declare, display, interop, intervals, timing
from course_utils.declare import MinItems, NonEmpty, NonNegativeFloat, PositiveFloat, Range
from course_utils.measuring.workloads import Framework, array_ops

MAX_CURVE_POINTS = 10**6  # points of a cost curve: range(10**12) ended in a bare MemoryError


@declare.checked
def break_even_calls(*, first_call: NonNegativeFloat, per_call: NonNegativeFloat, eager_per_call: NonNegativeFloat,
                     eager_first_call: NonNegativeFloat | None = None) -> float:
    """Smallest number of calls after which the compiled total (``first_call + (n - 1) * per_call``) is below eager's
    (``eager_first_call``, default ``eager_per_call``, then ``eager_per_call`` each); inf if never."""
    e0 = eager_per_call if eager_first_call is None else eager_first_call
    if first_call <= e0:
        return 1
    if per_call >= eager_per_call:
        return math.inf
    return 1 + math.ceil((first_call - e0) / (eager_per_call - per_call))


@declare.checked
def break_even_range(eager: timing.Measurement, compiled: timing.Measurement,
                     speedup: intervals.Speedup) -> tuple[float, float] | None:
    """The break-even call counts at the two ends of the speed-up's interval (high end first), or None where the
    interval does not lie above 1x: a range the run supports, never one count the noise could move."""
    if compiled.first_call is None:
        raise ValueError("compiled must carry first_call (benchmark() records it)")
    if not speedup.faster:
        return None
    ends = [break_even_calls(first_call=compiled.first_call, per_call=eager.median / s, eager_per_call=eager.median,
                             eager_first_call=eager.first_call) for s in (speedup.high, speedup.low)]
    return ends[0], ends[1]


@declare.checked
def cumulative_time(first_call: NonNegativeFloat, per_call: NonNegativeFloat,
                    calls: Annotated[Any, declare.MaxItems(MAX_CURVE_POINTS)]) -> np.ndarray:
    """Total seconds after each number of calls in ``calls``: the first call plus the steady-state ones."""
    if calls is None or isinstance(calls, (str, bytes)):
        raise TypeError(f"calls must be a number or an array of numbers of calls; got {type(calls).__name__}")
    values = np.asarray(calls, dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 1):
        raise ValueError("calls must be one or more finite numbers of calls, each >= 1")
    return first_call + (values - 1) * per_call


@declare.checked
def timed_pair(eager: Callable[..., Any], compiled: Callable[..., Any], args: Sequence[Any], *, label: declare.Text,
               min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.2, rounds: Annotated[int, Range(2, 100)] = 6,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> tuple[timing.Measurement, timing.Measurement]:
    """(eager, compiled) Measurements of ``fn(*args)`` ("<label> eager", "<label> compiled") in ``rounds`` alternating
    rounds; the compiled first call is the compile when it had not been called before (None timeout: size default)."""
    names = (f"{label} eager", f"{label} compiled")
    with calls.time_limit(timeout, calls.describe(compiled)):
        found = timing.interleaved({names[0]: lambda: eager(*args), names[1]: lambda: compiled(*args)},
                                   rounds=rounds, min_time=min_time)
    return found[names[0]], found[names[1]]


@declare.checked
@dataclass(frozen=True, repr=False)
class OverheadModel:
    """Small-size speed-up computed as ``n_ops x eager_per_op / compiled_per_call`` (the run's call-cost figure),
    against the ``measured`` eager over compiled chain time; ``chain_call``: the compiled chain's own call."""

    framework: Framework
    n_ops: Annotated[int, Range(1, 10**6)]
    eager_per_op: PositiveFloat
    compiled_per_call: PositiveFloat
    measured: PositiveFloat
    chain_call: PositiveFloat

    @property
    def predicted(self) -> float:
        """The computed speed-up (formula, not a measurement)."""
        return self.n_ops * self.eager_per_op / self.compiled_per_call

    @property
    def ratio(self) -> float:
        """measured / predicted: 1 when the model explains the data."""
        return self.measured / self.predicted


@declare.checked
def overhead_model(framework: Framework, *, n_ops: Annotated[int, Range(1, 10**6)], eager_per_op: PositiveFloat,
                   compiled_per_call: PositiveFloat, eager_chain: timing.Measurement,
                   compiled_chain: timing.Measurement) -> OverheadModel:
    """An ``OverheadModel`` from this run's numbers (seconds; the two chain Measurements at the model's size)."""
    return OverheadModel(framework, n_ops, eager_per_op, compiled_per_call,
                         eager_chain.median / compiled_chain.median, compiled_chain.median)


@declare.checked
def overhead_table(models: Annotated[Sequence[OverheadModel], NonEmpty]) -> display.Table:
    """The overhead model per framework: inputs (measured), predicted (computed) and measured speed-up."""
    rows = [(m.framework, str(m.n_ops), display.format_time(m.eager_per_op), display.format_time(m.compiled_per_call),
             f"{m.predicted:.2g}x", f"{m.measured:.2g}x", f"{m.ratio:.2g}",
             f"{m.measured * m.chain_call / m.n_ops / m.eager_per_op:.2g}x",
             f"{m.chain_call / m.compiled_per_call:.2g}x")
            for m in models]
    return display.table(
        ["framework", "ops", "eager op, chain's mix (measured)", "compiled call, the run's figure (measured)",
         "predicted speed-up (computed)", "chain speed-up (measured: ratio of medians)", "measured / predicted",
         "eager chain's average op / op mix (computed)", "compiled chain's call / figure (computed)"], rows,
        title="Small tensors: speed-up = ops x eager per-op cost / compiled per-call cost",
        note="predicted is computed (ops x eager per op / compiled call) from two measured costs: the eager ops "
             "here, the compiled call from cu.machine.figures(); measured is eager chain median / compiled chain "
             "median at the smallest size of the sweep. The last two columns set each input beside what the chain "
             "itself took (its eager time over n_ops; its compiled time per call): where the model missed, the "
             "input further from 1x is further off.")


# The chain's op mix, read off its graph (section 1 of notebook 01): 6 array-array ops, 4 with a Python number, 1 tanh.
CHAIN_MIX = {"eager add": 6, "eager scalar mul": 4, "eager tanh": 1}


@declare.checked
def eager_op_costs(framework: Framework, *, size: Annotated[int, Range(1, 2**20)] = 16,
                   min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.05) -> dict[str, timing.Measurement]:
    """One eager op of each kind in the chain on ``size``-element float32 inputs ("eager add" of two arrays, "eager
    scalar mul" by a Python number, "eager tanh"): the eager side of the overhead model."""
    a, b = (interop.to_framework(framework, np.full(size, v, np.float32)) for v in (1.0, 2.0))
    ops = array_ops(framework)
    return {"eager add": timing.benchmark(ops.add, a, b, min_time=min_time, label=f"{framework} eager add"),
            "eager scalar mul": timing.benchmark(ops.multiply, a, 0.5, min_time=min_time,
                                                 label=f"{framework} eager scalar mul"),
            "eager tanh": timing.benchmark(ops.tanh, a, min_time=min_time, label=f"{framework} eager tanh")}


@declare.checked
def eager_op_cost(costs: Mapping[str, timing.Measurement]) -> float:
    """The average eager op of the chain (seconds): ``eager_op_costs`` medians weighted by ``CHAIN_MIX``."""
    if not set(CHAIN_MIX) <= set(costs):
        raise ValueError(f"costs must hold {', '.join(CHAIN_MIX)} (eager_op_costs); got {sorted(costs)}")
    return sum(costs[k].median * n for k, n in CHAIN_MIX.items()) / sum(CHAIN_MIX.values())


STATIC = "static (dynamic=False)"
DYNAMIC = "dynamic=True"
MARKED = "mark_dynamic(x, 0)"
REUSED = "reused from another size (default)"


@declare.checked
def torch_graph_count() -> int:
    """Graphs Dynamo has compiled in this process so far (its ``unique_graphs`` counter)."""
    import torch._dynamo.utils

    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


@declare.checked
@dataclass(frozen=True)
class Variant:
    """One way of compiling the function: its time per call and the graphs its first call here compiled."""

    name: declare.Text
    measurement: timing.Measurement
    graphs: Annotated[int, Range(0)]


@declare.checked
def dynamic_costs(variants: Annotated[Mapping[str, Annotated[tuple[Callable[..., Any], Sequence[Any]], MinItems(2)]],
                                      NonEmpty], *,
                  min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.2,
                  rounds: Annotated[int, Range(2, 100)] = 6,
                  timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, Variant]:
    """``variants`` maps a name to (the learner's compiled function, its arguments), the first the baseline (the
    static graph): each called once (graphs counted), then all timed in ``rounds`` alternating rounds."""
    graphs = {}
    for name, (fn, args) in variants.items():
        before = torch_graph_count()
        with calls.time_limit(timeout, calls.describe(fn)):
            fn(*args)
        graphs[name] = torch_graph_count() - before
    with calls.time_limit(timeout, calls.describe(next(iter(variants.values()))[0])):
        timed = timing.interleaved({name: (lambda f=fn, a=args: f(*a)) for name, (fn, args) in variants.items()},
                                   rounds=rounds, min_time=min_time)
    return {name: Variant(name, timed[name], graphs[name]) for name in variants}


@declare.checked
def against_baseline(found: Annotated[Mapping[str, Variant], NonEmpty]) -> dict[str, intervals.Speedup]:
    """Each variant but the first against the first (the static graph), with its interval (below 1: slower)."""
    base = next(iter(found.values()))
    return {name: intervals.speedup(base.measurement, v.measurement) for name, v in list(found.items())[1:]}


@declare.checked
def dynamic_table(found: Annotated[Mapping[str, Variant], NonEmpty],
                  size: Annotated[int, Range(1, 2**40)]) -> display.Table:
    """Per variant: median per call, the static graph's speed over it with its interval, graphs compiled."""
    speeds = against_baseline(found)
    rows = [(v.name, display.format_time(v.measurement.median),
             str(speeds[v.name]) if v.name in speeds else "baseline", str(v.graphs)) for v in found.values()]
    return display.table(["torch.compile", f"per call ({size:,} elements, median)", "speed over the static graph",
                          "graphs compiled at this size"], rows,
                         note="timed in alternating rounds; the speed is the geometric mean of the per-round ratios "
                              "(not the ratio of the medians); below 1x: slower per call than the static graph")
