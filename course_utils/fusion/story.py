"""Every sentence notebook 02 tells after a verdict, one function per paragraph group, each reading the stored
verdict (``v.status``) and the measurements; none decides again what the verdict decided. Sections 1-5 here;
sections 6-8 in ``story_compute`` and Going further in ``story_further``, re-exported so that the notebook
calls ``cu.fusion.story.<name>`` for all of them.
"""

from __future__ import annotations

from collections.abc import Mapping

from course_utils import display, intervals, machine, probes, validate
from course_utils.display import format_bytes, format_flops, format_rate, format_time, percent
from course_utils.fusion import story_words as w
from course_utils.fusion.story_compute import attention, custom_op, epilogue, matmul_sweep
from course_utils.fusion.story_further import autotuned, busy_time, size_sweep, vector_roof
from course_utils.fusion.traffic import PredictionTable, Traffic
from course_utils.fusion.variants import FUSED, INTO

__all__ = ["allocation", "attention", "autotuned", "busy_time", "chain_gains", "custom_op", "epilogue", "kernels",
           "matmul_sweep", "on_roof", "remedies", "roofline", "size_sweep", "vector_roof"]


def roofline(v: display.Verdict, figures: machine.MachineFigures, probe: probes.ProbeSize) -> display.Prose:
    """Section 1: the two roofs and the ridge point, then what the bandwidth probes streamed against the cache."""
    v = w.verdict(v)
    validate.instance("figures", figures, machine.MachineFigures)
    validate.instance("probe", probe, probes.ProbeSize)
    ridge = figures.ridge_intensity
    head = (f"The memory roof is **{format_rate(figures.bandwidth)}** ({figures.bandwidth_probe} probe) and the "
            f"compute roof **{format_flops(figures.peak_flops)}** ({figures.flops_probe}), the best that any "
            f"framework's probe reached, so the ridge point is **{ridge:.1f} FLOP/byte**. ")
    if v.held:
        head += (f"A kernel must do about {ridge:.0f} FLOPs per byte it moves before arithmetic, not memory, limits "
                 "it: every elementwise op is memory-bound by this measure.")
    elif v.failed:
        head += "Even a low-intensity kernel can be compute-bound on this machine: measure before assuming."
    else:
        head = w.untested(v, "The ridge point")
    return display.prose(head, _probe_arrays(figures, probe))


def _probe_arrays(figures: machine.MachineFigures, probe: probes.ProbeSize) -> str:
    arrays = format_bytes(probe.array_bytes)
    if figures.best.device != "cpu":
        return f"On {figures.best.device} the bandwidth probes streamed arrays of {arrays} from device memory."
    capped = " (capped at this course size)" if probe.capped_by == "ci size" else ""
    if not probe.last_level_cache:
        return f"The bandwidth probes streamed arrays of {arrays}{capped}; this CPU reports no cache size."
    multiple = probe.cache_multiple
    text = (f"The bandwidth probes streamed arrays of {arrays} each{capped}, {multiple:.2g}x the "
            f"{format_bytes(probe.last_level_cache)} last-level cache this CPU reports")
    if multiple >= w.MAIN_MEMORY_MULTIPLE:
        return text + ": main memory."
    return (text + f", under the {w.MAIN_MEMORY_MULTIPLE}x at which this course counts a stream as main memory. Part "
            "of each pass may come from cache, so this memory roof is what these probes measured, a blend of cache "
            "and memory bandwidth, and can read high against main memory alone.")


def chain_gains(v: display.Verdict, gains: Mapping[str, intervals.Speedup], traffic: Traffic,
                table: PredictionTable, *, over_ratio: list[str], not_faster: list[str]) -> display.Prose:
    """Section 2: each framework's fusion speed-up against the bytes ratio, and the shares of the roof that explain
    where it landed."""
    v = w.verdict(v)
    gains = w.gains("gains", gains)
    validate.instance("traffic", traffic, Traffic)
    validate.instance("table", table, PredictionTable)
    over, slow = w.names("over_ratio", over_ratio), w.names("not_faster", not_faster)
    shares = ", ".join(f"{r.name} {percent(r.fraction_of_bandwidth)}" for r in table.rows)
    head = (f"Share of the memory roof reached (bytes moved / time / {format_rate(table.rows[0].bandwidth)}): "
            f"{shares}. Speed-ups of fused over eager: "
            + "; ".join(f"{FUSED[fw]} {g.ratio:.3g}x" for fw, g in gains.items())
            + f", against a bytes ratio of {traffic.ratio:.1f}x.")
    if v.held:
        return display.prose(head, "Fusion paid in every framework, and no speed-up went beyond the bytes ratio. "
                             "A speed-up under the ratio means the fused kernel reached a smaller share of the roof "
                             "than its eager version (the shares above): it did not run as much faster as its bytes "
                             "allow. Section 5 looks for what else a fused kernel pays.")
    if not v.tested:
        return display.prose(head, w.untested(v, "The fusion speed-up"))
    parts = []
    if over:
        parts.append(f"{w.listed(FUSED[fw] for fw in over)} ran faster than the {traffic.ratio:.1f}x bytes ratio "
                     "allows, beyond the noise: the eager run paid more than its bytes (a smaller share of the roof "
                     "than the fused one), so the ratio was no ceiling here. Section 3 measures what eager pays "
                     "besides bytes.")
    if slow:
        parts.append(f"{w.listed(FUSED[fw] for fw in slow)} was not faster than eager beyond the noise: "
                     + "; ".join(f"{fw} {gains[fw]}" for fw in slow) + ".")
    return display.prose(head, *parts)


def allocation(v: display.Verdict, gain: intervals.Speedup, *, extra: float, fault_cost: float,
               faults: Mapping[str, float], pages: int, n_ops: int) -> display.Prose:
    """Section 3: what a fresh output cost torch.add against the page-fault probe's price, then the page faults
    each form of the chain takes per call."""
    v = w.verdict(v)
    validate.instance("gain", gain, intervals.Speedup)
    validate.number("extra", extra)
    validate.non_negative("fault_cost", fault_cost)
    validate.instance("faults", faults, Mapping)
    pages = validate.positive("pages", pages, integer=True)
    n_ops = validate.positive("n_ops", n_ops, integer=True)
    worth = {k: validate.non_negative(f"faults[{k!r}]", faults.get(k)) / pages
             for k in ("torch eager chain", "torch.compile chain", "torch.add, out= buffer")}
    measured = (f"`out=` over a fresh output: {gain}; the fresh output added {format_time(extra)} per call, where the "
                f"machine's page-fault probe prices {pages} fresh pages at {format_time(fault_cost)} (computed), "
                f"{extra / fault_cost if fault_cost else float('inf'):.2g}x that.")
    if v.held:
        first = (measured + " Fresh pages cost at least their faults and zero-filling, paid inside the kernel; mapping "
                 "and unmapping the buffer on every call (`mmap`, `munmap`) come on top, and the probe leaves those "
                 "out: a candidate for any time above it, not timed apart here.")
    elif v.failed:
        first = (measured + " Here a fresh output cost less than the probe's price for its pages; the page counts "
                 "below show whether this call touched fresh pages at all.")
    else:
        first = w.untested(v, "The price of a fresh output")
    counts = (f"Per call of the chain: eager PyTorch {worth['torch eager chain']:.1f} outputs' worth of page faults "
              f"for its {n_ops} outputs, torch.compile {worth['torch.compile chain']:.1f} (one fresh output), "
              f"torch.add into `out=` {worth['torch.add, out= buffer']:.1f}. ")
    if worth["torch eager chain"] >= n_ops / 2:
        counts += ("So eager's time is not its bytes over the bandwidth: it pays fresh pages per op, and the bytes "
                   "ratio under-predicts what fusion saves by that much.")
    else:
        counts += "Here the eager chain mostly reused its pages, so it paid no such price per op."
    return display.prose(first, counts)


def remedies(v: display.Verdict, gains: Mapping[str, intervals.Speedup], *, faulted: list[str],
             fresh_faults: Mapping[str, float], into_faults: Mapping[str, float]) -> display.Prose:
    """Section 3's remedies: a reused buffer against a fresh output, per framework, read with its page faults."""
    v = w.verdict(v)
    gains = w.gains("gains", gains)
    faulted = w.names("faulted", faulted)
    for name, counts in (("fresh_faults", fresh_faults), ("into_faults", into_faults)):
        validate.instance(name, counts, Mapping)
        for fw in gains:
            validate.non_negative(f"{name}[{fw!r}]", counts.get(fw))
    rows = "; ".join(f"{INTO[fw]}: {w.outcome(g)}, with {fresh_faults[fw]:.1f} outputs' worth of page faults per "
                     f"fresh output and {into_faults[fw]:.1f} into the buffer" for fw, g in gains.items())
    head = f"Against the same fused kernel with a fresh output: {rows}."
    if v.held:
        clean = [fw for fw in gains if fw not in faulted]
        tail = ("The buffer paid exactly where fresh pages were being paid for"
                + (f", and {w.listed(clean)}, whose fresh outputs landed on pages already touched, had none to remove"
                   if clean else "") + ": a reused buffer removes the page faults, nothing else.")
    elif v.failed:
        tail = ("The buffer did not pay where the page counts predict in every framework (see the verdict); what "
                "else the buffered version costs there, a copy or a slower store, is not established by this run.")
    else:
        tail = w.untested(v, "The reused buffer")
    return display.prose(head, tail)


def kernels(v: display.Verdict, counts: Mapping[str, int], *, n_ops: int, first_kernel: str) -> display.Prose:
    """Section 4: how many kernels the compilers wrote for the chain, and how to see their code yourself."""
    v = w.verdict(v)
    validate.instance("counts", counts, Mapping)
    validate.non_empty("counts", counts)
    found = ", ".join(f"**{validate.non_negative(f'counts[{k!r}]', c, integer=True)}** in {k}"
                      for k, c in counts.items())
    n_ops = validate.positive("n_ops", n_ops, integer=True)
    validate.text("first_kernel", first_kernel)
    head = f"The {n_ops} eager kernels became {found}"
    if v.held:
        head += (f". Inductor's `{first_kernel}` names the op types it fused; XLA's `kLoop` is a loop fusion. The "
                 "reused-buffer version writes into `out` without allocating (the last line above).")
    elif v.failed:
        head += ": more than one somewhere; the launch code and HLO above show where the chain was split."
    else:
        head = w.untested(v, "The kernel count")
    return display.prose(head, "To see the full code yourself: `TORCH_LOGS=output_code` for Inductor, "
                         "`jax.jit(f).lower(x).compile().as_text()` for JAX, and "
                         "`f.experimental_get_compiler_ir(x)(stage='optimized_hlo')` for TensorFlow.")


def on_roof(v: display.Verdict, vs_copy: Mapping[str, intervals.Speedup], tanh_costs: Mapping[str, intervals.Speedup],
            *, table: PredictionTable, chain_gains: Mapping[str, intervals.Speedup], ratio: float, working_set: float,
            llc: float | None) -> display.Prose:
    """Section 5: the polynomial against a copy of the same bytes, what tanh adds, and how that answers section 2."""
    v = w.verdict(v)
    vs_copy, tanh_costs = w.gains("vs_copy", vs_copy), w.gains("tanh_costs", tanh_costs)
    chain_gains = w.gains("chain_gains", chain_gains)
    validate.instance("table", table, PredictionTable)
    ratio = validate.positive("ratio", ratio)
    copies = "; ".join(f"{fw} {g}" for fw, g in vs_copy.items())
    shares = ", ".join(f"{r.name.split(' copy')[0]} {percent(r.fraction_of_bandwidth)}"
                       for r in table.rows if " copy" in r.name)
    if v.held:
        first = (f"Polynomial over copy, each into a reused buffer: {copies}. **On the roof**, as far as a copy of "
                 f"the same bytes shows the roof in this run; the copies reached {shares} of the memory roof.")
    elif v.failed:
        first = (f"Polynomial over copy, each into a reused buffer: {copies}. Not every polynomial is shown within "
                 f"1.25x of its copy here; the copies reached {shares} of the memory roof.")
    else:
        first = w.untested(v, "The polynomial against its copy")
    second = ("Against the same chain with its `tanh` (same buffer, same bytes), the polynomial ran "
              + "; ".join(f"{w.outcome(g)} in {fw}" for fw, g in tanh_costs.items())
              + ". Section 2's fused chains ran " + ", ".join(f"{g.ratio:.3g}x ({fw})" for fw, g in chain_gains.items())
              + f" over eager against a bytes ratio of {ratio:.1f}x: a fresh output and the arithmetic of `tanh` are "
              "what a fused kernel pays besides its bytes. Going further measures the vector units' rates.")
    third = f"Every variant here moves {w.working_set(working_set, llc)}."
    return display.prose(first, second, third)
