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
        text += (f"Beyond the noise for {' and '.join(f'`{k}`' for k in slower)}: a cost paid on every call for one "
                 "graph that serves every length (its sizes are passed in and checked on every call, a candidate "
                 "cause this run does not time apart); use it where shapes really vary (section 4), not by default. ")
    else:
        text += "Neither is slower beyond the noise: here the symbolic size costs less than the run's spread. "
    if REUSED in found:
        r = found[REUSED]
        text += (f"The function of section 2, first called at {first_size:,} elements and reused here, compiled "
                 f"{r.graphs} new graph(s) for this length and took {cost[REUSED]:.2f}x the static graph's time "
                 f"({'beyond' if timing.apart(r.measurement, base) else 'within'} the noise): after a length "
                 "changes, the default compiles a shape-generic graph (section 4 counts it), so a reused compiled "
                 "function is no static baseline. ")
    faster = [k for k in (DYNAMIC, MARKED, REUSED) if k in found and cost[k] < 1
              and timing.apart(found[k].measurement, base)]
    if faster:
        text += (f"{' and '.join(f'`{k}`' for k in faster)} ran faster than the static graph, beyond the noise "
                 f"(static: {timing.quartiles(base, display.format_time)}), which a shape-generic graph does not "
                 "explain: why is not established by this run; section 3 times the same static graph again. ")
    return text


def static_again_text(first: timing.Measurement, again: timing.Measurement, size: int) -> str:
    """The same static graph of the chain timed at two moments (section 2's variants, section 3's probe pair):
    whether the two timings agree within their quartiles."""
    validate.instance("first", first, timing.Measurement)
    validate.instance("again", again, timing.Measurement)
    validate.positive("size", size, integer=True)
    fmt = display.format_time
    text = (f"The static graph of section 2 (the same chain at {size:,} elements) took {fmt(first.median)} "
            f"(quartiles {timing.quartiles(first, fmt)}) there and {fmt(again.median)} "
            f"({timing.quartiles(again, fmt)}) here: ")
    if timing.apart(first, again):
        return text + ("the same code, timed at two moments, differs beyond its quartiles, so a difference of that "
                       "size between separate timings is not a property of the graph; why it moved is not "
                       "established by this run. ")
    return text + "within the noise of each other. "


@dataclass(frozen=True)
class ThreadCheck:
    """The static and the shape-generic graph of one chain at one size on the CPU: the OpenMP parallel regions
    in each one's generated C++, and their times with one thread, timed in turns."""

    threads: int  # torch's thread count otherwise
    static_regions: int
    generic_regions: int
    static_one: timing.Measurement
    generic_one: timing.Measurement


def thread_check(chain: Callable[..., Any], args: Sequence[Any], *, min_time: float = 0.2) -> ThreadCheck | None:
    """Compile ``chain`` afresh static and with ``dynamic=True``, count ``#pragma omp parallel`` in the C++ each
    generated, and time both with ``torch.set_num_threads(1)`` (restored after); None off the CPU (no C++ to
    read)."""
    import torch
    from torch._inductor.utils import run_and_get_code

    validate.function("chain", chain)
    validate.instance("args", args, (tuple, list))
    validate.positive("min_time", min_time)
    if not args or getattr(getattr(args[0], "device", None), "type", None) != "cpu":
        return None
    fns = {STATIC: torch.compile(fresh_function(chain), dynamic=False),
           DYNAMIC: torch.compile(fresh_function(chain), dynamic=True)}
    regions = {k: sum(code.count("#pragma omp parallel") for code in run_and_get_code(fn, *args)[1])
               for k, fn in fns.items()}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one = timing.interleaved({k: (lambda f=fn: f(*args)) for k, fn in fns.items()}, min_time=min_time)
    finally:
        torch.set_num_threads(threads)
    return ThreadCheck(threads, regions[STATIC], regions[DYNAMIC], one[STATIC], one[DYNAMIC])


def thread_text(check: ThreadCheck | None) -> str:
    """What the generated code and the one-thread timing say about a shape-generic graph's extra time; a
    sentence that says the cause is not established where ``check`` is None or does not explain it."""
    if check is None:
        return "Why the shape-generic graph is slower is not established by this run. "
    validate.instance("check", check, ThreadCheck)
    fmt = display.format_time
    one = (f"with one thread (`torch.set_num_threads(1)`, timed in turns) the static graph took "
           f"{fmt(check.static_one.median)} and the shape-generic one {fmt(check.generic_one.median)} "
           f"({check.generic_one.median / check.static_one.median:.2f}x, "
           f"{'beyond' if timing.apart(check.generic_one, check.static_one) else 'within'} the noise)")
    if check.generic_regions >= check.static_regions:
        return (f"Inductor's C++ holds {check.static_regions} OpenMP parallel region(s) in the static kernel and "
                f"{check.generic_regions} in the shape-generic one, so threads are not the difference; {one}. The "
                "cause is not established by this run. ")
    text = (f"Inductor's generated C++ shows a candidate: the static kernel holds {check.static_regions} OpenMP "
            f"parallel region(s), the shape-generic one {check.generic_regions}, so it runs its loop on fewer of the "
            f"{check.threads} threads; {one}")
    if timing.apart(check.generic_one, check.static_one):
        return text + (": they differ even on one thread, so the threads explain only part of it; the rest is not "
                       "established by this run. ")
    return text + (f": on one thread the two are within the noise, so the gap at {check.threads} threads is the "
                   "static kernel's parallel loop. ")


def dynamic_summary(found: dict[str, Variant], small: int, static_big: timing.Measurement,
                    generic_big: timing.Measurement, big: int, check: ThreadCheck | None = None) -> str:
    """What a shape-generic graph cost per call in this run, at ``small`` elements (``found``) and at ``big``
    elements (``static_big``, ``generic_big``), each beyond the noise or not, and what ``check`` says of why."""
    validate.non_empty("found", found)
    validate.instance("static_big", static_big, timing.Measurement)
    validate.instance("generic_big", generic_big, timing.Measurement)
    base = found[STATIC].measurement
    parts = [f"`dynamic=True` {found[DYNAMIC].measurement.median / base.median:.2f}x the static graph's time at "
             f"{small:,} elements ({'beyond' if timing.apart(found[DYNAMIC].measurement, base) else 'within'} the "
             f"noise)", f"{generic_big.median / static_big.median:.2f}x at {big:,} elements "
             f"({'beyond' if timing.apart(generic_big, static_big) else 'within'} the noise)"]
    costs = [m.median / b.median > 1 and timing.apart(m, b)
             for m, b in ((found[DYNAMIC].measurement, base), (generic_big, static_big))]
    text = "this run measured " + " and ".join(parts)
    if not any(costs):
        return text + ": no cost beyond the noise at either size."
    text += f": a real cost at {' and '.join(f'{n:,}' for n, c in zip((small, big), costs) if c)} elements. "
    if costs[0]:
        text += (f"Why it cost at {small:,} elements is not established by this run (sizes passed in and checked on "
                 "every call are a candidate). ")
    return text + (thread_text(check) if costs[1] else "")
