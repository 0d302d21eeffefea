"""The sentences of notebook 00's "Going further": why the eager rows differ, whether the memory roof is main
memory's speed, and how the matmuls compare with the chip and with each other. One function per paragraph, each
reading stored verdicts and measurements (``story`` re-exports them)."""

from __future__ import annotations

from collections.abc import Sequence

from course_utils import display, machine, probes, validate
from course_utils.measuring.hierarchy import DRAM_MULTIPLE, DramRetime, HierarchySweep
from course_utils.measuring.kernels import KernelLibrary
from course_utils.measuring.limits import EagerGap
from course_utils.measuring.peak import PeakEstimate
from course_utils.measuring.speedups import variant_name

fmt, rate, flops, nbytes = display.format_time, display.format_rate, display.format_flops, display.format_bytes


def eager_gap(gap: EagerGap | None) -> display.Prose:
    """The slowest eager runtime against the fastest: the suspects measured apart and the budget they leave."""
    if gap is None:
        return display.prose("Only one framework is installed here: there is no other eager runtime to compare.")
    validate.instance("gap", gap, EagerGap)
    slow, fast = gap.slow, gap.fast
    measured = (f"Measured apart: tanh alone took {fmt(gap.tanh[slow].median)} in {slow} and "
                f"{fmt(gap.tanh[fast].median)} in {fast} ({gap.tanh_spread}, {gap.tanh_spread.outcome}); the chain's "
                f"page faults per call were {gap.faults[slow]:.1f} outputs' worth in {slow} and {gap.faults[fast]:.1f} "
                f"in {fast}, at {fmt(gap.fault_seconds)} per output's worth (the machine's page-fault figure).")
    spread = gap.spread
    names = f"{variant_name(slow, False)} against {variant_name(fast, False)}"
    if not spread.faster:
        return display.prose(f"In this run the eager chains are {spread.outcome} of each other ({names}: {spread}): "
                             "there is no gap to explain.", measured, _threads(gap))
    parts, total = gap.parts, gap.gap
    budget = "; ".join(f"{name} {fmt(t)} ({t / total:.0%})" for name, t in parts.items())
    left = gap.left
    if left > 0.1 * total:
        rest = f"left unexplained: {fmt(left)} ({left / total:.0%}); what that is, is not established by this run"
    elif left >= -0.1 * total:
        rest = "together they account for the gap"
    else:
        rest = ("together they add up to more than the gap: they were timed apart from the chain (the tanh alone "
                "writes its own fresh output), so they overlap; which part is overstated is not established by this "
                "run")
    return display.prose(
        f"{variant_name(slow, False)} took {spread} the time of {variant_name(fast, False)}: {fmt(total)} more per "
        "call.", measured, f"The gap's budget (computed from these measurements): {budget}; {rest}.", _threads(gap))


def _threads(gap: EagerGap) -> str:
    """torch's chain on one thread against its default count, in the same rounds: does handing each op to several
    threads cost (a busy machine deschedules one, and every op waits for it)?"""
    s = gap.one_thread
    if s is None or gap.threads is None:
        return ""
    many = max(gap.threads)
    text = (f"On one thread torch's eager chain took {fmt(gap.threads[1].median)}, on {many} threads "
            f"{fmt(gap.threads[many].median)}: one thread ran {s} as fast ({s.outcome}")
    if s.faster:
        return text + (f"): each op hands its work to {many} threads and waits for all of them, which costs more "
                       "than it gives here; this overlaps the budget's parts, so it is not added to them.")
    if s.slower:
        return text + f"): the {many} threads pay off, so they are not what makes the gap."
    return text + "): the threads make no difference this run can show."


def hierarchy(v: display.Verdict, sweep: HierarchySweep, retimed: DramRetime | None,
              figures: machine.MachineFigures, size: probes.ProbeSize, *, floor: float | None = None) -> display.Prose:
    """What the hierarchy sweep says: the speed per level, the main-memory points, and the roof against them.
    ``floor``: torch eager's per-call floor (section 4), set beside the smallest copies."""
    validate.instance("v", v, display.Verdict)
    validate.instance("sweep", sweep, HierarchySweep)
    validate.instance("figures", figures, machine.MachineFigures)
    validate.instance("size", size, probes.ProbeSize)
    plateaus = sweep.plateaus()
    levels = "Median copy bandwidth per level: " + ", ".join(f"{k} {rate(r)}" for k, r in plateaus.items()) + "."
    smallest = sweep.working_sets[0] / sweep.bandwidths[0]
    if floor is not None and smallest < 3 * validate.positive("floor", floor):
        levels += (f" The smallest copy ({nbytes(sweep.working_sets[0])}) took {fmt(smallest)}, within 3x of a torch "
                   f"call's floor ({fmt(floor)}): it measures the call more than the bytes.")
    probe_level = sweep.level_of(2 * size.array_bytes)
    if not v.tested:
        return display.prose(levels, f"Main memory was not reached: {v.why}. The probes' working set "
                                     f"({nbytes(2 * size.array_bytes)}) falls in '{probe_level}', so the memory roof "
                                     f"({rate(figures.bandwidth)}) is that level's speed, not main memory's.")
    validate.instance("retimed", retimed, DramRetime)
    plateau = retimed.plateau or 0.0
    points = ", ".join(f"{rate(retimed.rate(m, s))} ({nbytes(s)})" for s, m in retimed.points)
    drift = retimed.earlier / retimed.probe_rate
    measured = (f"At {DRAM_MULTIPLE}x the last-level cache or more, re-timed in alternating rounds, the copy ran at "
                f"{points}: a main-memory plateau of {rate(plateau)}. Torch's copy probe ran at "
                f"{rate(retimed.probe_rate)} in the same rounds and {rate(retimed.earlier)} when the roofs were "
                f"measured ({drift:.2f}x: a roof carries the moment it was measured at).")
    vs = figures.bandwidth / plateau
    if v.held:
        return display.prose(levels, measured, f"The memory roof ({rate(figures.bandwidth)}) is {vs:.2f}x that "
                                               "plateau: main memory's speed.")
    side = "higher" if vs > 1 else "lower"
    return display.prose(levels, measured, f"The memory roof ({rate(figures.bandwidth)}, {figures.bandwidth_probe}) "
                                           f"is {vs:.2f}x that plateau, {side} than main memory gave in the sweep's "
                                           "rounds; the drift of the same probe between the two moments is above, and "
                                           "what else makes the difference is not established by this run.")


def matmuls(figures: machine.MachineFigures, peak: PeakEstimate, libraries: Sequence[KernelLibrary], *,
            cpu: str = "") -> display.Prose:
    """Each framework's matmul with its library, against the others and the computed peak; MKL on a non-Intel CPU
    named as a candidate, not a finding."""
    validate.instance("figures", figures, machine.MachineFigures)
    validate.instance("peak", peak, PeakEstimate)
    validate.non_empty("libraries", libraries)
    validate.instance("cpu", cpu, str)
    names = {lib.framework: lib.library for lib in libraries}
    matmul = {fw: m.peak_flops for fw, m in figures.roofs.items()}
    fastest, slowest = max(matmul, key=matmul.get), min(matmul, key=matmul.get)
    spread = matmul[fastest] / matmul[slowest]
    text = ("Each framework's fp32 matmul probe: " + ", ".join(
        f"{fw} {flops(r)} ({names.get(fw, 'library not found')})" for fw, r in matmul.items()) + ". ")
    if len(matmul) > 1:
        text += (f"Highest over lowest probe: {spread:.2f}x (one probe each, at different moments)" + (
            ". Each framework calls its own library (the table above), the first candidate for a gap this size on the "
            "same cores. " if spread > 1.3 else ": these libraries end near the same limit here. "))
    mkl = "MKL" in names.get("torch", "") and "intel" not in cpu.lower() and cpu != "" and slowest == "torch"
    if mkl and spread > 1.3:
        text += ("A known candidate for torch's place: MKL picks its code path by CPU vendor and may not take its "
                 "fastest one on a non-Intel CPU (`MKL_VERBOSE=1` prints the path it took); not measured here. ")
    if not peak.flops or not peak.ghz:
        return display.prose(text, "No computed peak to compare with: this OS does not report the clock.")
    shares = ", ".join(f"{fw} {display.percent(r / peak.flops)}" for fw, r in matmul.items())
    over = {fw: r for fw, r in matmul.items() if r > peak.flops}
    against = f"Against the computed peak ({flops(peak.flops)}): {shares}."
    if not over:
        return display.prose(text, against + " The gap is what the formula cannot see: the clock under heavy vector "
                                             "load, the FMA units really present, the library's blocking, its threads.")
    top = max(over, key=over.get)
    needed = over[top] / (peak.flops / peak.ghz)
    return display.prose(text, against + f" {top} exceeds it: with the formula's other factors, its "
                                         f"{flops(over[top])} needs a clock of {needed:.2f} GHz (computed), above the "
                                         f"{peak.ghz:.2f} GHz taken from {peak.clock_source}; either the cores ran "
                                         f"faster (a boost clock), or the {peak.fma_units} FMA units per core the "
                                         "formula assumes is wrong. This run measures neither.")
