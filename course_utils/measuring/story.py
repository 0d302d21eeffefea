"""Every sentence notebook 00 tells about its run, in its main path: one function per paragraph, each reading the
stored verdicts (``v.status``) and the measurements; none decides what a verdict already decided. Sentences about
speed read an interval's ``outcome``. The "Going further" sentences are in ``story_further``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from course_utils import display, intervals, machine, probes, roofline, timing, validate
from course_utils.measuring.regimes import Bend
from course_utils.measuring.speedups import (
    COMPILED,
    COMPILED_POLY,
    EAGER,
    EAGER_POLY,
    ChainRuns,
    share_needed,
    variant_name,
)
from course_utils.measuring.story_further import eager_gap, hierarchy, matmuls

__all__ = ["dispatch", "eager_gap", "eager_rows", "first_call", "hierarchy", "machine_figures", "matmuls", "money",
           "regimes", "roofline_points", "tanh_share"]

fmt, rate, flops, nbytes = display.format_time, display.format_rate, display.format_flops, display.format_bytes
_RULE = ("**The rule:** wait for the result before reading the clock: `y.block_until_ready()` in JAX, "
         "`torch.cuda.synchronize()` on a GPU, `tf.test.experimental.sync_devices()` in TensorFlow. Copying the result "
         "to the host (`np.asarray(y)`) waits too, and adds the copy. From here on `cu.timing.benchmark` and "
         "`cu.timing.interleaved` wait for every result they time.")


def _verdict(v: display.Verdict) -> display.Verdict:
    return validate.instance("v", v, display.Verdict)


def _not_tested(v: display.Verdict) -> display.Prose:
    return display.prose(f"This prediction was not tested here: {v.why}.")


def dispatch(v: display.Verdict, trap: Mapping[str, tuple[timing.Measurement, timing.Measurement]],
             waits: Mapping[str, intervals.Speedup], early: Sequence[str]) -> display.Prose:
    """Section 2: what the two clock readings said per framework, then the rule."""
    validate.non_empty("trap", trap)
    late = [fw for fw in trap if fw not in early]
    if not _verdict(v).tested:
        return display.prose(f"{_not_tested(v).text} The two readings of each call: "
                             + ", ".join(f"{fw} {waits[fw]}" for fw in trap) + "; on JAX or a GPU the trap shows.",
                             _RULE)
    if v.held:
        text = "; ".join(f"{fw}'s call returned after {fmt(trap[fw][0].median)} while its result took "
                         f"{fmt(trap[fw][1].median)}: the clock read at return is short by a factor of {waits[fw]}"
                         for fw in early) + ". "
        if late:
            text += ("Where the call computes before it returns (" + ", ".join(late) + "), the two readings agree: "
                     + ", ".join(f"{fw} {waits[fw]}" for fw in late) + ". ")
    else:
        text = (f"The readings did not follow the dispatch model ({v.why}). Expected to return early: "
                + (", ".join(f"{fw} {waits[fw]}" for fw in early) or "none") + "; expected to compute first: "
                + (", ".join(f"{fw} {waits[fw]}" for fw in late) or "none") + ". ")
    return display.prose(text, _RULE)


def first_call(v: display.Verdict, runs: ChainRuns, cache: str) -> display.Prose:
    """Section 3: the first call apart, the torch.compile cache state, and whether compiling paid afterwards."""
    validate.instance("runs", runs, ChainRuns)
    cache = validate.choice("cache", cache, ("warm", "cold", "unknown"))
    here = runs.frameworks
    words = {"warm": "warm: every graph was found in the cache an earlier run left on disk",
             "cold": "cold: its code was generated in this run", "unknown": "in a state this run could not tell"}
    text = ("The first compiled call is reported apart, never averaged in: "
            + ", ".join(f"{variant_name(fw, True)} {fmt(runs.time(COMPILED, fw).first_call or 0.0)} "
                        f"({runs.first_call_ratio(fw):,.0f}x a steady call)" for fw in here)
            + (f". torch.compile's cache on disk was {words[cache]}; notebook 01 measures a cold cache against a "
               "warm one." if "torch" in here else "."))
    if not _verdict(v).tested:
        return display.prose(text, _not_tested(v).text)
    if v.held:
        after = ("Afterwards every compiled chain beat its own eager one: "
                 + "; ".join(f"{variant_name(fw, True)} {runs.own(fw)}" for fw in here) + ".")
    else:
        after = (f"Not every part held ({v.why}). Compiled over own eager: "
                 + "; ".join(f"{variant_name(fw, True)} {runs.own(fw)}, {runs.own(fw).outcome}" for fw in here) + ".")
    return display.prose(text, after)


def eager_rows(runs: ChainRuns) -> display.Prose:
    """Section 3: do the eager rows differ (decided by the interval), and what that does to each own ratio."""
    validate.instance("runs", runs, ChainRuns)
    spread = runs.eager_spread()
    if spread is None:
        return display.prose("Only one framework is installed here: there is no other eager runtime to compare.")
    found = runs.runs[EAGER]
    slow, fast = max(found, key=lambda fw: found[fw].median), runs.best(EAGER)
    names = f"{variant_name(slow, False)} against {variant_name(fast, False)}"
    if spread.faster:
        return display.prose(
            f"The eager rows differ: on the same eleven ops the slowest eager runtime took {spread} the time of "
            f"the fastest ({names}; Going further measures why). A framework's own speed-up is measured against "
            f"its own eager baseline, so {variant_name(slow, False)}'s slower baseline inflates its own ratio: to "
            "choose between frameworks, compare compiled with compiled, or use the best-vs-best row.")
    if spread.within_noise:
        return display.prose(
            f"The eager rows agree within the noise: the slowest eager runtime took {spread} the time of the fastest "
            f"({names}), so each framework's own speed-up starts from the same baseline.")
    return display.prose(
        f"The medians and the rounds disagree on which eager runtime is slower ({names}: {spread}): no difference "
        "between the eager rows that this run can stand behind.")


def tanh_share(runs: ChainRuns) -> display.Prose:
    """Section 3: the chain with and without tanh, per framework and best against best."""
    validate.instance("runs", runs, ChainRuns)
    if not runs.has_polynomial:
        raise ValueError("runs must hold the chain without tanh ('eager, no tanh', 'compiled, no tanh')")
    costs = {fw: runs.tanh_cost(fw) for fw in runs.frameworks}
    paced = [fw for fw, s in costs.items() if s.faster]
    text = ("Without its tanh, the compiled chain ran " + "; ".join(
        f"{s} as fast in {variant_name(fw, True)} ({s.outcome})" for fw, s in costs.items()) + ". ")
    if paced:
        text += (f"Where it ran faster ({', '.join(paced)}), the tanh (tens of vector instructions per vector of "
                 "floats) costs a measurable share of the fused loop: with the same bytes moved, that loop is not "
                 "bound by its bytes alone. ")
    else:
        text += ("No compiled chain ran measurably faster without it in this run: the intervals cannot tell the two "
                 "apart. ")
    best = (f"Best compiled over best eager: **{runs.best_vs_best()}** with tanh "
            f"({variant_name(runs.best(COMPILED), True)} against {variant_name(runs.best(EAGER), False)}), "
            f"**{runs.best_vs_best(tanh=False)}** without it ({variant_name(runs.best(COMPILED_POLY), True)} against "
            f"{variant_name(runs.best(EAGER_POLY), False)}). Each compiler brings its own tanh (XLA's CPU tanh is a "
            "cheaper rational approximation; notebook 02 measures its speed and error), so the tanh-free pair "
            "compares compilation alone.")
    return display.prose(text, best)


def machine_figures(figures: machine.MachineFigures, size: probes.ProbeSize) -> display.Prose:
    """Section 4: where the figures come from, the roofs and ridge, and what the probe size means for them."""
    validate.instance("figures", figures, machine.MachineFigures)
    validate.instance("size", size, probes.ProbeSize)
    text = (f"The best roofs here are {figures.bandwidth_probe}'s bandwidth and {figures.flops_probe}'s FLOP/s, so "
            f"the ridge point lies at {figures.ridge_intensity:.1f} FLOP/byte: on this machine a kernel doing fewer "
            "FLOPs per byte than that is memory-bound, one doing more is compute-bound.")
    if figures.best.device != "cpu":
        where = f"The probes ran on the {figures.best.device} with {nbytes(size.array_bytes)} arrays."
    elif size.capped_by:
        cap = {"ci size": "the ci size", "memory": "the free memory"}.get(size.capped_by, size.capped_by)
        where = (f"The probe arrays are {nbytes(size.array_bytes)} each, capped by {cap} (four times the "
                 f"{nbytes(size.last_level_cache)} last-level cache would be {nbytes(size.target)}). At "
                 f"{size.cache_multiple:.2g}x that cache, part of their traffic can come from it, so the memory roof "
                 "may be the cache's speed rather than main memory's; Going further sweeps the sizes.")
    else:
        where = (f"The probe arrays are {nbytes(size.array_bytes)} each, {size.cache_multiple:.2g}x the "
                 f"{nbytes(size.last_level_cache)} last-level cache: at four times it or more they stream from main "
                 "memory.")
    return display.prose(text, where)


def regimes(v: display.Verdict, bends: Mapping[str, Bend], figures: machine.MachineFigures,
            sizes: Sequence[int]) -> display.Prose:
    """Section 4: the floors, where each bent, and what the top of the sweep paid."""
    validate.instance("figures", figures, machine.MachineFigures)
    validate.non_empty("bends", bends)
    validate.non_empty("sizes", sizes)
    eager = {k: b for k, b in bends.items() if "eager" in k or "op-by-op" in k}
    floors = ("Per call, the floor is " + ", ".join(f"{k} {fmt(b.floor)}" for k, b in eager.items())
              + " eagerly and " + ", ".join(f"{k} {fmt(b.floor)}" for k, b in bends.items() if k not in eager)
              + " compiled; the dashed lines mark one compiled call's fixed cost from the machine figures. Below the "
              "bend a tensor is too small for its size to matter: only fewer calls (fusion, compiling the whole "
              "step) help there.")
    if not _verdict(v).tested:
        return display.prose(floors, _not_tested(v).text)
    if v.held:
        shape = ("Every variant bent inside the sweep, at " + ", ".join(
            f"{k} {b.size:,.0f} elements ({nbytes(4 * b.size)})" for k, b in bends.items() if b.size) + ".")
    else:
        shape = (f"Not every variant bent and climbed as predicted ({v.why}); the table above gives each one's bend "
                 "and top slope.")
    faulted: dict[int, list[str]] = {}
    for k, b in bends.items():
        if b.faulted_from:
            faulted.setdefault(b.faulted_from, []).append(k)
    if faulted:
        top = int(sizes[-1])
        shape += (" Page faults, counted at each point, begin at " + "; ".join(
            f"{s:,} elements for {', '.join(names)}" for s, names in sorted(faulted.items()))
                  + f": those outputs land on fresh memory, and at the top size one output's faults cost "
                  f"{fmt(figures.fault_seconds(4 * top))} (the machine's page-fault figure), time the slope pays on "
                  "top of the bytes.")
    return display.prose(floors, shape)


def roofline_points(v: display.Verdict, points: Sequence[roofline.Point], figures: machine.MachineFigures,
                    add_cost: intervals.Speedup, matmul_rate: float, *, cache_bytes: int = 0) -> display.Prose:
    """Section 4: the tiny add and the matmul like for like, and the points above a roof. ``cache_bytes``: the
    last-level cache, which a point whose bytes per call it holds can be served from (0: not known)."""
    validate.instance("figures", figures, machine.MachineFigures)
    validate.instance("add_cost", add_cost, intervals.Speedup)
    matmul_rate = validate.positive("matmul_rate", matmul_rate)
    cache_bytes = validate.number("cache_bytes", cache_bytes, low=0, high=2**40, integer=True)
    own = figures.roofs["torch"].peak_flops if "torch" in figures.roofs else figures.peak_flops
    text = (f"A 4,096-element add took {add_cost} the time of a 4-element add. Section 2's matmul ran at "
            f"{flops(matmul_rate)}, {display.percent(matmul_rate / own)} of torch's own probe ({flops(own)}, the same "
            f"library on a larger product), {display.percent(matmul_rate / figures.peak_flops)} of the compute roof "
            f"drawn ({figures.flops_probe}).")
    if not _verdict(v).tested:
        text += " " + _not_tested(v).text
    elif v.held:
        text += (" A thousand times the bytes cost the add under half again its time: at that size the call's "
                 "overhead dominates.")
    else:
        text += f" The prediction failed: {v.why}."
    best = figures.best
    above = [p for p in points if roofline.share_of_roof(p, best) > 1]
    memory = [(p.label, p) for p in above if p.intensity < best.ridge_intensity]
    compute = [p.label for p in above if p.intensity >= best.ridge_intensity]
    notes = []
    cached = [label for label, p in memory if p.bytes <= cache_bytes]
    if cached:
        notes.append(f"Above the memory roof: {', '.join(cached)}: their bytes per call fit in the "
                     f"{nbytes(cache_bytes)} last-level cache, which can serve them above the memory roof.")
    if len(cached) < len(memory):
        notes.append("Above the memory roof though larger than the cache: " + ", ".join(
            label for label, p in memory if p.bytes > cache_bytes) + ": the roof is the probes' speed at their own "
            "size and moment.")
    if compute:
        notes.append(f"Above the compute roof: {', '.join(compute)}: the roof is a probe's speed at its own size and "
                     "moment, not the machine's ceiling.")
    return display.prose(text, " ".join(notes))


def money(runs: ChainRuns, *, run_hours: float, monthly_bill: float, saving: float) -> display.Prose:
    """Section 5: the seed's 3 days and 30%, computed from the chain's two best-vs-best speed-ups."""
    validate.instance("runs", runs, ChainRuns)
    run_hours = validate.positive("run_hours", run_hours)
    monthly_bill = validate.positive("monthly_bill", monthly_bill)
    saving = validate.number("saving", saving, low=0, high=1, low_open=True, high_open=True)
    kernels = {"with tanh": runs.best_vs_best()}
    if runs.has_polynomial:
        kernels["without tanh"] = runs.best_vs_best(tanh=False)
    step = 1 / (1 - saving)
    needs = []
    for name, s in kernels.items():
        if s.ratio > step:
            needs.append(f"{display.percent(share_needed(step, s.ratio))} of the eager step {name}")
        else:
            needs.append(f"no share {name} (the kernel itself is not {step:.2f}x faster)")
    text = (f"The seed's {saving:.0%} is a claim about whole steps, not measured here. Computed from the chain's "
            f"best-vs-best speed-ups, a {saving:.0%} saving (a {step:.2f}x step) needs the chain to take at least "
            + " and ".join(needs) + ".")
    hours = "; ".join(f"{name}, the {run_hours / 24:g}-day run would take {run_hours / s.ratio:.1f} hours and the bill "
                      f"shrink by {monthly_bill * (1 - 1 / s.ratio) / 1000:.0f}k a month" if s.ratio > 1 else
                      f"{name}, the kernel is not faster, so nothing would shrink" for name, s in kernels.items())
    return display.prose(text, f"Only if the whole step were this kernel (computed): {hours}. Notebook 07 measures a "
                               "whole model.")
