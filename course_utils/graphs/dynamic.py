"""What a shape-generic graph costs per call, against a static graph of the same function, like for like.

The learner compiles each variant in the notebook (``torch.compile(f, dynamic=False)``, ``dynamic=True``, a
``mark_dynamic`` input, and a function compiled earlier at another size and reused); ``dynamic_costs`` calls each
once at the size it is timed at (counting the graphs Dynamo compiles on that call), then times all of them in
alternating rounds, so ``cu.intervals.speedup`` can set each against the static graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import calls, display, intervals, timing, validate

STATIC = "static (dynamic=False)"
DYNAMIC = "dynamic=True"
MARKED = "mark_dynamic(x, 0)"
REUSED = "reused from another size (default)"


def torch_graph_count() -> int:
    """Graphs Dynamo has compiled in this process so far (its ``unique_graphs`` counter): count before and
    after a call to see how many that call compiled."""
    import torch._dynamo.utils

    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


@dataclass(frozen=True)
class Variant:
    """One way of compiling the function: its time per call and the graphs its first call here compiled."""

    name: str
    measurement: timing.Measurement
    graphs: int


def dynamic_costs(variants: Mapping[str, tuple[Callable[..., Any], Sequence[Any]]], *, min_time: float = 0.2,
                  rounds: int = 6, timeout: float = 600.0) -> dict[str, Variant]:
    """``variants`` maps a name to (the learner's compiled function, its arguments); the first name is the
    baseline (the static graph). Each is called once (graphs counted), then all are timed in ``rounds``
    alternating rounds of ``min_time`` seconds in all, under ``timeout`` seconds."""
    validate.instance("variants", variants, Mapping)
    validate.non_empty("variants", variants)
    for name, pair in variants.items():
        validate.instance(f"variants[{name!r}]", pair, tuple)
        if len(pair) != 2:
            raise ValueError(f"variants[{name!r}] must be (compiled function, arguments); got {len(pair)} items")
        validate.function(f"variants[{name!r}][0]", pair[0])
        validate.instance(f"variants[{name!r}][1]", pair[1], (tuple, list))
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    timeout = validate.seconds("timeout", timeout)
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


def against_baseline(found: Mapping[str, Variant]) -> dict[str, intervals.Speedup]:
    """Each variant but the first against the first (the static graph): the variant's speed over it (baseline time
    over the variant's), with its interval (below 1: the variant is slower per call)."""
    validate.instance("found", found, Mapping)
    validate.non_empty("found", found)
    base = next(iter(found.values()))
    return {name: intervals.speedup(base.measurement, v.measurement) for name, v in list(found.items())[1:]}


def dynamic_table(found: Mapping[str, Variant], size: int) -> display.Table:
    """Per variant: median per call, the static graph's speed over it with its interval, graphs compiled."""
    validate.instance("found", found, Mapping)
    validate.non_empty("found", found)
    for key, variant in found.items():
        validate.instance(f"found[{key!r}]", variant, Variant)
    size = validate.number("size", size, low=1, high=2**40, integer=True)
    speeds = against_baseline(found)
    rows = [(v.name, display.format_time(v.measurement.median),
             str(speeds[v.name]) if v.name in speeds else "baseline", str(v.graphs)) for v in found.values()]
    return display.table(["torch.compile", f"per call ({size:,} elements)", "speed over the static graph",
                          "graphs compiled at this size"], rows,
                         note="timed in alternating rounds; below 1x: slower per call than the static graph")
