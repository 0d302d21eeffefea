"""What a shape-generic graph costs per call, against a static graph of the same function, like for like: the
learner compiles each variant (``dynamic=False``, ``dynamic=True``, a ``mark_dynamic`` input, a function compiled
earlier at another size); ``dynamic_costs`` calls each once (counting the graphs Dynamo compiles), then times all of
them in alternating rounds."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from course_utils import calls, declare, display, intervals, timing
from course_utils.declare import MinItems, NonEmpty, Range

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
    """Each variant but the first against the first (the static graph): baseline time over the variant's, with its
    interval (below 1: the variant is slower per call)."""
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
