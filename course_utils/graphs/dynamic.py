"""What a shape-generic graph costs per call, against a static graph of the same function, like for like.

Every variant is compiled afresh (``fresh_function``), called once at the size it is timed at (the graphs
Dynamo compiles on that call are counted), then all are timed in alternating rounds. One more row is a function
compiled earlier at another size and reused: by Dynamo's "automatic dynamic" rule (section 4 of notebook 01)
the new length makes it compile a shape-generic graph, so a reused function is not a static baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import display, timing, validate
from course_utils.graphs.capture import fresh_function

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


def dynamic_costs(chain: Callable[..., Any], args: Sequence[Any], reused: Callable[..., Any] | None = None, *,
                  min_time: float = 0.2, rounds: int = 4) -> dict[str, Variant]:
    """``chain(*args)`` compiled static, with ``dynamic=True`` and with ``mark_dynamic`` on every input's first
    dimension (all inputs share it: ``x + bias`` would pin an unmarked one), each fresh, plus ``reused`` (a
    compiled function first called at another size) where given; graphs counted per first call, then timed in
    ``rounds`` alternating rounds of ``min_time`` seconds in all."""
    import torch

    validate.function("chain", chain)
    validate.instance("args", args, (tuple, list))
    validate.positive("min_time", min_time)
    marked = [torch.clone(a) for a in args]
    for a in marked:
        torch._dynamo.mark_dynamic(a, 0)
    calls: dict[str, tuple[Callable[..., Any], Sequence[Any]]] = {
        STATIC: (torch.compile(fresh_function(chain), dynamic=False), args),
        DYNAMIC: (torch.compile(fresh_function(chain), dynamic=True), args),
        MARKED: (torch.compile(fresh_function(chain)), marked),
    }
    if reused is not None:
        calls[REUSED] = (validate.function("reused", reused), args)
    graphs = {}
    for name, (fn, a) in calls.items():
        before = torch_graph_count()
        fn(*a)
        graphs[name] = torch_graph_count() - before
    timed = timing.interleaved({name: (lambda f=fn, a=a: f(*a)) for name, (fn, a) in calls.items()}, rounds=rounds,
                        min_time=min_time)
    return {name: Variant(name, timed[name], graphs[name]) for name in calls}


def dynamic_table(found: dict[str, Variant], size: int) -> display.Table:
    """Per variant: median and quartiles per call, against the static graph, and the graphs it compiled."""
    validate.non_empty("found", found)
    base = found[STATIC].measurement
    fmt = display.format_time
    rows = [(v.name, fmt(v.measurement.median), f"{fmt(v.measurement.p25)} to {fmt(v.measurement.p75)}",
             f"{v.measurement.median / base.median:.2f}x", "yes" if timing.apart(v.measurement, base) else "no",
             str(v.graphs)) for v in found.values()]
    return display.table(["torch.compile", f"per call ({size:,} elements)", "quartiles", "vs static",
                          "apart from static", "graphs compiled at this size"], rows,
                         note="timed in alternating rounds; 'apart' = quartile ranges that do not overlap")


def dynamic_text(found: dict[str, Variant], first_size: int) -> str:
    """What the variants cost per call against the static graph, beyond the noise or not, and what the reused
    function (first called at ``first_size`` elements) compiled."""
    validate.non_empty("found", found)
    base = found[STATIC].measurement
    cost = {k: v.measurement.median / base.median for k, v in found.items()}
    slower = [k for k in (DYNAMIC, MARKED) if cost[k] > 1 and timing.apart(found[k].measurement, base)]
    text = (f"Per call, `dynamic=True` took {cost[DYNAMIC]:.2f}x and `mark_dynamic` {cost[MARKED]:.2f}x the static "
            f"graph's time, both compiled afresh at this size and timed in turns with it. ")
    if slower:
        text += (f"Beyond the noise for {' and '.join(f'`{k}`' for k in slower)}: that is the price of one graph for "
                 "every length, paid on every call (symbolic sizes passed in and checked); use it where shapes "
                 "really vary (section 4), not by default. ")
    else:
        text += "Neither is slower beyond the noise: here the symbolic size costs less than the run's spread. "
    faster = [k for k in (DYNAMIC, MARKED) if cost[k] < 1 and timing.apart(found[k].measurement, base)]
    if faster:
        text += (f"{' and '.join(f'`{k}`' for k in faster)} ran faster than the static graph, beyond the noise, which "
                 "a symbolic size does not explain: why is not established by this run. ")
    if REUSED in found:
        r = found[REUSED]
        text += (f"The function of section 2, first called at {first_size:,} elements and reused here, compiled "
                 f"{r.graphs} new graph(s) for this length and took {cost[REUSED]:.2f}x the static graph's time: "
                 "after a length changes, the default compiles a shape-generic graph (section 4 counts it), so a "
                 "reused compiled function is no static baseline. ")
    return text
