"""One speed-up, several harnesses: notebook 01's size sweep against notebook 00's measurement of the same chain.

The sweep passes ``bias`` as a full array and compiles a fresh static graph per size; notebook 00 passes a
scalar ``bias``, compiles a fresh function for its one size, and warms the C allocator first. ``compare_harnesses``
times, in alternating rounds, the sweep's harness, the same with a shape-generic graph (``dynamic=True``),
00's harness, and 00's harness with every call's freed memory handed back to the OS first (fresh pages), each
with both chains' page faults per call: each factor is then measured on its own, like for like.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import display, timing, validate
from course_utils.graphs.capture import fresh_function
from course_utils.graphs.dynamic import ThreadCheck, thread_text
from course_utils.measuring.allocator import on_fresh_pages, outputs_worth, tensor_bytes, warm_allocator


@dataclass(frozen=True)
class Harness:
    """Eager and compiled times of the chain under one harness, and the eager and the compiled chain's page
    faults per call in outputs' worth (nan where not measured)."""

    label: str
    eager: timing.Measurement
    compiled: timing.Measurement
    faults: float = math.nan
    compiled_faults: float = math.nan

    @property
    def speedup(self) -> float:
        return self.eager.median / self.compiled.median

    def row(self) -> tuple[str, ...]:
        return (self.label, display.format_time(self.eager.median), display.format_time(self.compiled.median),
                f"{self.speedup:.1f}x", _faults(self.faults), _faults(self.compiled_faults))


def _faults(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


@dataclass(frozen=True)
class Harnesses:
    """The harnesses ``compare_harnesses`` timed together; ``fresh`` is None without glibc's ``malloc_trim``."""

    sweep: Harness  # static graph, bias array (this sweep's)
    generic: Harness  # shape-generic graph (dynamic=True), bias array
    other: Harness  # notebook 00's: static graph, scalar bias, warm allocator
    fresh: Harness | None = None  # 00's harness on fresh pages

    def rows(self) -> list[Harness]:
        return [h for h in (self.sweep, self.generic, self.other, self.fresh) if h is not None]


def measure_harness(label: str, chain: Callable[..., Any], compiled: Callable[..., Any], args: Sequence[Any], *,
                    min_time: float) -> Harness:
    """Time ``chain(*args)`` and ``compiled(*args)`` (``min_time`` seconds each) and count each one's page faults
    per call, in outputs' worth."""
    validate.text("label", label)
    validate.function("chain", chain)
    validate.function("compiled", compiled)
    validate.instance("args", args, (tuple, list))
    validate.positive("min_time", min_time)
    eager = timing.benchmark(chain, *args, min_time=min_time, label=f"{label} eager")
    faults = outputs_worth(chain, *args, output_bytes=tensor_bytes(args[0]))
    return Harness(label, eager, timing.benchmark(compiled, *args, min_time=min_time, label=f"{label} compiled"),
                   faults, outputs_worth(compiled, *args, output_bytes=tensor_bytes(args[0])))


SWEEP = "this sweep's harness: static graph, `bias` array"
GENERIC = "shape-generic graph (dynamic=True), `bias` array"
OTHER = "notebook 00's harness: static graph, scalar `bias`"
FRESH = "notebook 00's harness on fresh pages"


def compare_harnesses(chain: Callable[..., Any], sweep_args: Sequence[Any], other_args: Sequence[Any], *,
                      min_time: float = 0.4, rounds: int = 4) -> Harnesses:
    """The harnesses of the module docstring, after warming the allocator as notebook 00 does: the eager chains in
    alternating rounds, then the compiled ones (``min_time`` seconds each in all), then 00's harness on fresh
    pages on its own; each compiled function is fresh and first called here (static unless ``dynamic=True``)."""
    import torch

    validate.function("chain", chain)
    validate.instance("sweep_args", sweep_args, (tuple, list))
    validate.instance("other_args", other_args, (tuple, list))
    warm_allocator()
    static, generic = torch.compile(fresh_function(chain)), torch.compile(fresh_function(chain), dynamic=True)
    other = torch.compile(fresh_function(chain))
    pairs = {SWEEP: (chain, static, sweep_args), GENERIC: (chain, generic, sweep_args),
             OTHER: (chain, other, other_args)}
    for _, fn, a in pairs.values():
        fn(*a)  # compile outside the clock
    eager = timing.interleaved({k: (lambda f=e, a=a: f(*a)) for k, (e, _, a) in pairs.items()}, rounds=rounds,
                        min_time=min_time)
    compiled = timing.interleaved({k: (lambda f=c, a=a: f(*a)) for k, (_, c, a) in pairs.items()}, rounds=rounds,
                           min_time=min_time)
    found = {k: Harness(k, eager[k], compiled[k], outputs_worth(e, *a, output_bytes=tensor_bytes(a[0])),
                        outputs_worth(c, *a, output_bytes=tensor_bytes(a[0]))) for k, (e, c, a) in pairs.items()}
    # fresh pages last and on their own: its malloc_trim would hand the other rows' memory back to the OS too
    eager_fresh, compiled_fresh = on_fresh_pages(chain), on_fresh_pages(other)
    fresh = None
    if eager_fresh is not None and compiled_fresh is not None and other_args[0].device.type == "cpu":
        fresh = Harness(FRESH, timing.benchmark(eager_fresh, *other_args, min_time=min_time, label=f"{FRESH} eager"),
                        timing.benchmark(compiled_fresh, *other_args, min_time=min_time, label=f"{FRESH} compiled"),
                        outputs_worth(eager_fresh, *other_args, output_bytes=tensor_bytes(other_args[0])),
                        outputs_worth(compiled_fresh, *other_args, output_bytes=tensor_bytes(other_args[0])))
    return Harnesses(found[SWEEP], found[GENERIC], found[OTHER], fresh)


def harness_table(rows: Sequence[Harness]) -> display.Table:
    """One row per harness: eager and compiled medians, the speed-up, both chains' page faults."""
    validate.non_empty("rows", rows)
    for r in rows:
        validate.instance("rows", r, Harness)
    return display.table(["harness", "eager chain", "compiled chain", "speed-up over eager",
                          "eager page faults / call (outputs' worth)", "compiled page faults / call"],
                         [r.row() for r in rows],
                         title="The same chain at one size, measured several ways in this run",
                         note="page faults from getrusage around 3 calls; one output's worth = the chain's "
                              "output size in 4 KiB pages; fresh pages: malloc_trim before each call")


def harness_why(h: Harnesses) -> str:
    """Each factor measured apart, with its ratio and whether it is beyond the noise; then which one it is."""
    validate.instance("h", h, Harnesses)
    fmt = display.format_time
    factors = [("a `bias` array instead of a scalar (one more input array read per call)",
                h.sweep.compiled, h.other.compiled),
               ("a shape-generic graph instead of a static one", h.generic.compiled, h.sweep.compiled),
               ("the eager side (`bias` array against scalar)", h.other.eager, h.sweep.eager)]
    found = [(name, a, b, a.median / b.median, timing.apart(a, b)) for name, a, b in factors]
    text = "; ".join(f"{name}: {r:.2f}x ({'beyond' if apart else 'within'} the noise)"
                     for name, _, _, r, apart in found)
    real = [f for f in found if f[4] and abs(math.log(f[3])) > math.log(1.1)]
    ratio = h.other.speedup / h.sweep.speedup
    if 1 / 1.5 <= ratio <= 1.5:
        return text
    if not real:
        return (text + f"; none of these is beyond the noise, so what separates {h.other.speedup:.1f}x from "
                f"{h.sweep.speedup:.1f}x is not established by this run")
    name, a, b, r, _ = max(real, key=lambda f: abs(math.log(f[3])))
    return (text + f"; the largest beyond the noise is {name.split(' (')[0]} ({r:.2f}x: {fmt(a.median)} against "
            f"{fmt(b.median)})")


def harness_text(earlier: Harness, h: Harnesses, check: ThreadCheck | None = None) -> str:
    """What differs between the harnesses, from the numbers; what the shape-generic graph cost and what
    ``check`` says of why; and what fresh pages do to each side (both page-fault counts)."""
    validate.instance("earlier", earlier, Harness)
    validate.instance("h", h, Harnesses)
    fmt, now, other = display.format_time, h.sweep, h.other
    ratio = other.speedup / now.speedup
    text = (f"Timed in alternating rounds, notebook 00's harness gives **{other.speedup:.1f}x** and this sweep's "
            f"**{now.speedup:.1f}x** ({ratio:.2f}x apart); the sweep's own point, timed earlier, gave "
            f"{earlier.speedup:.1f}x. Measured apart: {harness_why(h)}. ")
    if 1 / 1.5 <= ratio <= 1.5:
        text += "Within 1.5x: the two harnesses measure the same thing. "
    generic, static = h.generic.compiled, h.sweep.compiled
    if generic.median > static.median and timing.apart(generic, static):
        text += (f"The shape-generic graph's call took {generic.median / static.median:.2f}x the static graph's "
                 f"({fmt(generic.median)} against {fmt(static.median)}), beyond the noise. " + thread_text(check))
    if h.fresh is not None:
        text += _fresh_text(h.fresh, other)
    if not 1 / 1.5 <= now.speedup / earlier.speedup <= 1.5:
        text += (f"The sweep's point moved from {earlier.speedup:.1f}x to {now.speedup:.1f}x between two timings of "
                 f"the same code (eager {fmt(earlier.eager.median)} then {fmt(now.eager.median)}): at this size the "
                 "ratio depends on the moment as much as on the harness. ")
    return text


def _fresh_text(fresh: Harness, warm: Harness) -> str:
    """Each side on fresh pages against the warmed allocator: times, ratio, noise, both fault counts."""
    fmt = display.format_time
    sides = {side: (getattr(fresh, side), getattr(warm, side), getattr(fresh, attr), getattr(warm, attr))
             for side, attr in (("eager", "faults"), ("compiled", "compiled_faults"))}
    text = "On fresh pages (every call's freed memory handed back to the OS first), against the allocator warmed: " + \
        "; ".join(f"the {side} chain took {fmt(f.median)} against {fmt(w.median)} ({f.median / w.median:.2f}x, "
                  f"{'beyond' if timing.apart(f, w) else 'within'} the noise) with {_faults(ff)} against "
                  f"{_faults(wf)} outputs' worth of page faults per call"
                  for side, (f, w, ff, wf) in sides.items()) + ". "
    moved = [side for side, (f, w, _, _) in sides.items() if f.median > 1.1 * w.median and timing.apart(f, w)]
    if not moved:
        return text + "Neither side slowed beyond the noise: here fresh pages cost little. "
    ratio = {side: f.median / w.median for side, (f, w, _, _) in sides.items()}
    more = max(ratio, key=lambda side: ratio[side])
    text += ((f"Both sides slowed, the {more} side more ({ratio[more]:.2f}x against "
              f"{ratio['eager' if more == 'compiled' else 'compiled']:.2f}x)" if len(moved) == 2 else
              f"Only the {moved[0]} side slowed beyond the noise")
             + f", so the speed-up went from {warm.speedup:.1f}x to {fresh.speedup:.1f}x. Notebook 00 warms its "
             "allocator before timing the chain, so that its table is this steady state; the page faults it prints "
             "beside each speed-up say whether it was. ")
    return text
