"""Notebook 02's sentences for its Going further section: busy time, the vector roof, the size sweep and the
max-autotune epilogue (``cu.fusion.story`` re-exports them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from course_utils import compiled, display, validate
from course_utils.display import format_time, percent
from course_utils.fusion import story_words as w
from course_utils.fusion.sweep import SizeSweep
from course_utils.fusion.traffic import PredictionTable
from course_utils.fusion.vector_roof import ChainRoof, VectorRoof


def _costs(call_cost: Any) -> dict[str, float]:
    validate.instance("call_cost", call_cost, Mapping)
    return {k: validate.non_negative(f"call_cost[{k!r}]", c) for k, c in call_cost.items()}


def busy_time(v: display.Verdict, busy: Mapping[str, float], table: PredictionTable) -> display.Prose:
    """Busy time of the compiled chain's back-to-back calls, set against its share of the memory roof."""
    v = w.verdict(v)
    validate.instance("busy", busy, Mapping)
    validate.non_empty("busy", busy)
    shares = {k: validate.fraction(f"busy[{k!r}]", s) for k, s in busy.items()}
    validate.instance("table", table, PredictionTable)
    measured = ", ".join(f"{k} {100 * s:.1f}%" for k, s in shares.items())
    bandwidth = ", ".join(f"{r.name} {percent(r.fraction_of_bandwidth)}" for r in table.rows if r.fused)
    first = (f"Busy time of three back-to-back calls: {measured}. The same default kernels moved their bytes at "
             f"{bandwidth} of the memory roof (section 2). ")
    if v.tested:
        first += f"Scored above: {v}."
    else:
        first += ("A kernel of milliseconds between calls of microseconds keeps busy time near 100% whether it runs on "
                  "its roof or far below it: busy time cannot tell those apart, a share of a roof can. So the seed's "
                  "80%+ is not testable with these kernels, and a busy-time figure alone says little about speed.")
    return display.prose(first)


def vector_roof(v: display.Verdict, vectors: Mapping[str, VectorRoof], limits: Mapping[str, ChainRoof], *,
                call_cost: Mapping[str, float]) -> display.Prose:
    """The in-cache rates, which part limits each chain, the verdict on the model, and how the fit's intercept
    relates to the machine figures' compiled call cost."""
    v = w.verdict(v)
    validate.instance("vectors", vectors, Mapping)
    validate.non_empty("vectors", vectors)
    validate.instance("limits", limits, Mapping)
    for fw, roof in vectors.items():
        validate.instance(f"vectors[{fw!r}]", roof, VectorRoof)
        validate.instance(f"limits[{fw!r}]", limits.get(fw), ChainRoof)
    costs = _costs(call_cost)
    rates = "; ".join(f"{fw} {r.tanh_per_second / 1e9:.2f} G tanh/s and {r.flops_per_second / 1e9:.0f} GFLOP/s of "
                      f"multiply-adds, so {format_time(limits[fw].arithmetic)} of arithmetic against "
                      f"{format_time(limits[fw].bytes)} of bytes: {limits[fw].limit}" for fw, r in vectors.items())
    first = f"In cache: {rates} (computed from the rates and the memory roof)."
    if any(limit.limit == "arithmetic" for limit in limits.values()):
        first += (" **With a transcendental, an elementwise chain can be compute-bound on a CPU**, and there "
                  "fusion's byte savings stop paying.")
    if v.held:
        second = "Each chain took between its roof and its parts added up: the two limits explain its time."
    elif v.failed:
        second = ("Outside the model (see the verdict): rates measured in cache at another moment do not predict "
                  "that chain within these bounds.")
    else:
        second = w.untested(v, "The vector roof")
    intercepts = ", ".join(f"{fw} {format_time(r.intercept_seconds or 0)}" for fw, r in vectors.items())
    figures = ", ".join(f"{fw} {format_time(c)}" for fw, c in costs.items())
    third = (f"The fit's intercept ({intercepts}) is what a call on those in-cache sizes costs besides its work, its "
             f"parallel loop's threads included; the machine figures' compiled call cost ({figures}) is a compiled "
             "`x + 1` on 16 elements. They time different calls; where this notebook needs the fixed cost of a "
             "compiled call, it uses the machine figures'.")
    return display.prose(first, second, third)


def size_sweep(v: display.Verdict, sweep: SizeSweep, *, lost: list[str], n_ops: int,
               call_cost: Mapping[str, float]) -> display.Prose:
    """The speed-up of fusion across sizes, and, where it gained less at the smallest size, the fused call against
    its eager ops and the machine figures' compiled call cost."""
    v = w.verdict(v)
    validate.instance("sweep", sweep, SizeSweep)
    lost = w.names("lost", lost)
    n_ops = validate.positive("n_ops", n_ops, integer=True)
    costs = _costs(call_cost)
    first = "Speed-up of fused over op-by-op, smallest size first: " + "; ".join(
        f"{fw} " + " → ".join(f"{s:.2g}x" for s in values) for fw, values in sweep.speedups.items()) + "."
    if v.held:
        first += " At the smallest size eager pays dispatch per op, the fused chain once: fusion gained most there."
        return display.prose(first)
    if not v.tested:
        return display.prose(first, w.untested(v, "The size sweep"))
    parts = [first]
    for fw in lost:
        fused, eager = sweep.fused[fw][0].median, sweep.eager[fw][0].median
        ops = fused / (eager / n_ops)
        cost = f", where the machine figures price a compiled call at {format_time(costs[fw])}" if fw in costs else ""
        text = (f"In {fw} the fused call at the smallest size took {format_time(fused)}{cost}; its {n_ops} eager ops "
                f"took {format_time(eager)}, so the one fused call cost {ops:.1f} eager ops' worth")
        if fw in costs and fused > 2 * costs[fw]:
            text += (f", {fused / costs[fw]:.0f}x what a compiled call costs on this machine: what else this call paid "
                     "is not established by this run.")
        elif ops >= 1:
            text += ": a compiled call's fixed cost is paid once, but it is larger than one eager op's."
        else:
            text += (": less than one eager op, so the call itself did not cost the gain; what did is not established "
                     "by this run.")
        parts.append(text)
    return display.prose(*parts)


def autotuned(module: compiled.InductorCode) -> display.Prose:
    """What max-autotune chose for the frozen layer: Inductor's GEMM template with the epilogue inside it, or the
    library call with the epilogue as a separate generated loop."""
    validate.instance("module", module, compiled.InductorCode)
    library = module.extern_calls + module.fallback_ops
    if not library:
        return display.prose(f"Autotuning chose Inductor's own GEMM template here: the module calls no library, and "
                             f"its generated kernels ({', '.join(module.kernels)}) hold the matmul with the epilogue "
                             "written into it: one pass over the output instead of two.")
    return display.prose(f"Autotuning kept the library call here (`{', '.join(library)}`), so the epilogue stays a "
                         f"separate generated loop ({', '.join(module.kernels) or 'none'}). On another CPU or another "
                         "size the template can win: a fused epilogue is a choice the compiler makes by measuring. "
                         "Where Inductor printed its AUTOTUNE table above, it shows the times it compared.")
