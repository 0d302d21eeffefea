"""One speed-up, two harnesses: notebook 01's size sweep against notebook 00's measurement of the same chain.

The sweep passes ``bias`` as a full array and reuses one compiled function over many lengths (so Dynamo has
compiled a shape-generic graph by then); notebook 00 passes a scalar ``bias`` and compiles a fresh function for
its one size. Both time the same eleven ops; ``compare_harnesses`` times both, back to back, with the eager
chain's page faults per call (fresh memory for its outputs), so a difference can be traced to one side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import display, memory, timing, validate
from course_utils.graphs.capture import fresh_function

PAGE = 4096


@dataclass(frozen=True)
class Harness:
    """Eager and compiled times of the chain under one harness, and the eager chain's page faults per call
    in outputs' worth (nan where not measured)."""

    label: str
    eager: timing.Measurement
    compiled: timing.Measurement
    faults: float = math.nan

    @property
    def speedup(self) -> float:
        return self.eager.median / self.compiled.median

    def row(self) -> tuple[str, ...]:
        return (self.label, display.format_time(self.eager.median), display.format_time(self.compiled.median),
                f"{self.speedup:.1f}x", "-" if math.isnan(self.faults) else f"{self.faults:.1f}")


def _pages(args: Sequence[Any]) -> int:
    return max(1, math.ceil(int(math.prod(args[0].shape)) * 4 / PAGE))


def measure_harness(label: str, chain: Callable[..., Any], compiled: Callable[..., Any], args: Sequence[Any], *,
                    min_time: float) -> Harness:
    """Time ``chain(*args)`` and ``compiled(*args)`` (``min_time`` seconds each) and count the eager chain's
    page faults per call, in outputs' worth."""
    validate.text("label", label)
    validate.function("chain", chain)
    validate.function("compiled", compiled)
    validate.instance("args", args, (tuple, list))
    validate.positive("min_time", min_time)
    eager = timing.benchmark(chain, *args, min_time=min_time, label=f"{label} eager")
    faults = memory.page_faults(chain, *args) / _pages(args)
    return Harness(label, eager, timing.benchmark(compiled, *args, min_time=min_time, label=f"{label} compiled"),
                   faults)


def compare_harnesses(chain: Callable[..., Any], compiled: Callable[..., Any], sweep_args: Sequence[Any],
                      other_args: Sequence[Any], *, sweep_min_time: float, other_min_time: float = 0.2,
                      ) -> tuple[Harness, Harness]:
    """(the sweep's harness, notebook 00's), timed now, back to back: the sweep's ``compiled`` function on its
    ``sweep_args``, and a freshly compiled copy of ``chain`` (static shapes: its first call) on ``other_args``
    (00's inputs: a scalar bias), at 00's ``min_time``."""
    import torch

    validate.function("compiled", compiled)
    validate.positive("other_min_time", other_min_time)
    fresh = torch.compile(fresh_function(chain))
    return (measure_harness("this sweep's harness, timed again", chain, compiled, sweep_args,
                            min_time=sweep_min_time),
            measure_harness("notebook 00's harness", chain, fresh, other_args, min_time=other_min_time))


def harness_table(rows: Sequence[Harness]) -> display.Table:
    """One row per harness: eager and compiled medians, the speed-up, the eager chain's page faults."""
    validate.non_empty("rows", rows)
    for r in rows:
        validate.instance("rows", r, Harness)
    return display.table(["harness", "eager chain", "compiled chain", "speed-up over eager",
                          "eager page faults / call (outputs' worth)"], [r.row() for r in rows],
                         title="The same chain at one size, measured two ways in this run",
                         note="page faults from getrusage around 3 eager calls; one output's worth = the chain's "
                              "output size in 4 KiB pages")


def harness_why(now: Harness, other: Harness) -> str:
    """Which side of the speed-up differs between two harnesses timed back to back, with its numbers."""
    validate.instance("now", now, Harness)
    validate.instance("other", other, Harness)
    fmt = display.format_time
    eager_r, compiled_r = other.eager.median / now.eager.median, now.compiled.median / other.compiled.median
    if abs(math.log(eager_r)) >= abs(math.log(compiled_r)):
        return (f"the eager side differs most: {fmt(other.eager.median)} with 00's harness against "
                f"{fmt(now.eager.median)} ({eager_r:.2f}x), with {other.faults:.1f} against {now.faults:.1f} outputs' "
                "worth of page faults per call")
    return (f"the compiled side differs most: {fmt(other.compiled.median)} for 00's static graph with a scalar "
            f"`bias` against {fmt(now.compiled.median)} for the sweep's shape-generic graph with a `bias` array "
            f"({compiled_r:.2f}x)")


def harness_text(sweep: Harness, now: Harness, other: Harness) -> str:
    """What differs between the harnesses, from the numbers: the eager side, the compiled side, or the moment."""
    for name, h in (("sweep", sweep), ("now", now), ("other", other)):
        validate.instance(name, h, Harness)
    fmt = display.format_time
    ratio = other.speedup / now.speedup
    text = (f"Timed back to back, notebook 00's harness gives **{other.speedup:.1f}x** and this sweep's "
            f"**{now.speedup:.1f}x** ({ratio:.2f}x apart); the sweep's own point, timed earlier, gave "
            f"{sweep.speedup:.1f}x. ")
    if 1 / 1.5 <= ratio <= 1.5:
        text += ("Within 1.5x: the two harnesses measure the same thing; a scalar or an array `bias`, and a static or "
                 "a shape-generic graph, change little. ")
    else:
        why = harness_why(now, other)
        text += why[0].upper() + why[1:]
        if why.startswith("the eager side"):
            text += (": an eager chain's time follows how much fresh memory its outputs get, which depends on the "
                     "allocator's state (the C library hands freed memory back to the OS past a threshold, and each "
                     "page touched again faults). ")
        else:
            compiled_r = now.compiled.median / other.compiled.median
            text += (": the sweep's graph reads one more input array. " if compiled_r > 1 else
                     ": 00's graph, which reads less, was the slower one, so the inputs do not explain it; its "
                     f"quartiles ran from {fmt(other.compiled.p25)} to {fmt(other.compiled.p75)}. ")
    if not 1 / 1.5 <= now.speedup / sweep.speedup <= 1.5:
        text += (f"The sweep's point moved from {sweep.speedup:.1f}x to {now.speedup:.1f}x between two timings of "
                 f"the same code (eager {fmt(sweep.eager.median)} then {fmt(now.eager.median)}): at this size the "
                 "ratio depends on the moment as much as on the harness. ")
    return text
