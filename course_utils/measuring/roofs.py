"""The roofs each framework measured, side by side, and the costs that explain a kernel below its roof."""

from __future__ import annotations

import os
from collections.abc import Mapping

from course_utils import display, env, notebook, probes, roofline, timing, validate


def present_frameworks() -> list[str]:
    """The frameworks this runtime has, torch first; one sentence for each missing one (its part is skipped)."""
    return [name for name in validate.FRAMEWORKS if notebook.needs(name)]


def roofs_table(machines: Mapping[str, roofline.Machine]) -> display.Table:
    """One row per framework: best in-place bandwidth, the fresh-output triad (not a bandwidth), matmul, ridge."""
    validate.non_empty("machines", machines)
    rows = []
    for name, machine in machines.items():
        validate.instance(f"machines[{name!r}]", machine, roofline.Machine)
        best = max(machine.bandwidth_probes, key=machine.bandwidth_probes.get)
        fresh = machine.fresh_output_probes.get("triad, fresh output")
        rows.append((name, f"{display.format_rate(machine.bandwidth)} ({best})",
                     display.format_rate(fresh) if fresh else "not measured",
                     display.format_flops(machine.peak_flops), f"{machine.ridge_intensity:.0f} FLOP/byte"))
    return display.table(
        ["framework", "bandwidth (best in-place probe)", "triad into a fresh output", "matmul fp32", "ridge point"],
        rows, title="The roofs, as each framework measured them",
        note="The fresh-output column times allocation and page faults as well: it is not a bandwidth and sets no "
             "roof. GB/s decimal, read + write counted.")


def probe_size_text(size: probes.ProbeSize) -> str:
    """One sentence: how big the probe arrays are, against the last-level cache, and why."""
    validate.instance("size", size, probes.ProbeSize)
    llc = env.cache_sizes()
    level = max(llc, key=llc.get) if llc else "last-level cache (size not reported; 32 MiB assumed)"
    text = (f"Probe arrays: {display.format_bytes(size.array_bytes)} each, {size.cache_multiple:.2g}x the "
            f"{level} ({display.format_bytes(size.last_level_cache)})")
    if size.capped_by == "ci size":
        return text + (f", capped by the ci size (4x would be {display.format_bytes(size.target)}; run at the "
                       "default size for that).")
    if size.capped_by == "memory":
        return text + f", capped by free memory (4x would be {display.format_bytes(size.target)})."
    return text + ": at least 4x, so the probes stream from main memory."


def load_note() -> str:
    """A sentence when the machine was busier than its cores during this run (timings then spread), else ''."""
    cores = os.cpu_count() or 1
    if not hasattr(os, "getloadavg") or os.getloadavg()[0] <= cores:
        return ""
    return (f" The load average was {os.getloadavg()[0]:.1f} on {cores} cores during this run: other processes "
            "shared the cores, so each probe measured its share of them.")


def above_roof_text(points: list[roofline.Point], machine: roofline.Machine) -> str:
    """A sentence for the points above their roof, saying why for each side of the ridge, or ''."""
    validate.instance("machine", machine, roofline.Machine)
    above = [p for p in points if roofline.share_of_roof(p, machine) > 1]
    memory = [p.label for p in above if p.intensity < machine.ridge_intensity]
    compute = [p.label for p in above if p.intensity >= machine.ridge_intensity]
    text = ""
    if memory:
        text += (f" Above the memory roof: {', '.join(memory)}: their arrays fit in the caches, which are "
                 "faster than the memory roof drawn from main-memory probes.")
    if compute:
        text += (" Above the compute roof: " + ", ".join(
            f"{p.label} at {display.format_flops(p.flops / p.seconds)} against the best matmul probe's "
            f"{display.format_flops(machine.peak_flops)}" for p in above if p.intensity >= machine.ridge_intensity)
                 + ": the roof is the probe's speed, at its own size and moment, not the machine's ceiling (the "
                 "computed peak above sets each beside the formula)." + load_note())
    return text


def best_roof(machines: Mapping[str, roofline.Machine]) -> roofline.Machine:
    """One machine whose roofs are the best any framework reached: every in-place bandwidth probe and every
    matmul probe, named by framework (what the hardware allows, whichever framework got there)."""
    validate.non_empty("machines", machines)
    for name, machine in machines.items():
        validate.instance(f"machines[{name!r}]", machine, roofline.Machine)
    first = next(iter(machines.values()))
    return roofline.Machine(
        "best of " + ", ".join(machines), first.device,
        {f"{name} {k}": v for name, m in machines.items() for k, v in m.bandwidth_probes.items()},
        {f"{name} {k}": v for name, m in machines.items() for k, v in m.flops_probes.items()},
        {f"{name} {k}": v for name, m in machines.items() for k, v in m.fresh_output_probes.items()},
        first.array_bytes,
    )


def matmul_point_text(n: int, rate: float, machines: Mapping[str, roofline.Machine], libraries: Mapping[str, str],
                      peak_flops: float | None = None, *, again: timing.Measurement | None = None) -> str:
    """Torch's n x n matmul (``rate`` FLOP/s) judged like for like against torch's own matmul probe (same
    library, larger n), then the library gap between that probe and the compute roof drawn (the best probe of
    any framework, ``libraries``: framework -> library name), then the computed peak where there is one.
    ``again``: the same matmul timed at another moment, which tells a slowed timing from the size."""
    n = validate.positive("n", n, integer=True)
    rate = validate.positive("rate", rate)
    validate.non_empty("machines", machines)
    if "torch" not in machines:
        raise ValueError(f"machines must hold 'torch' (the matmul is torch's); got {sorted(machines)}")
    if again is not None:
        validate.instance("again", again, timing.Measurement)
    own, probe_n = machines["torch"].peak_flops, roofline.default_matmul_n()
    share, lib = rate / own, libraries.get("torch", "its library")
    text = (f"The {n}x{n} torch matmul ran at {display.format_flops(rate)}: {display.percent(share)} of torch's own "
            f"n = {probe_n} probe ({display.format_flops(own)}, {lib}), the same library on a larger product. ")
    if share > 1:
        text += ("It beat the larger probe, which was timed at another moment; one median each, so how much of that "
                 "is the moment is not established by this run. ")
    elif share >= 0.8:
        cost = display.percent(1 - share) if 1 - share >= 0.01 else "under 1%"
        text += (f"Like for like the two are close: the smaller size (and the other moment it was timed at) cost it "
                 f"{cost}. ")
    elif again is not None and 2 * n**3 / again.median / own >= 0.8:
        text += (f"Like for like it is {1 / share:.2f}x slower than its probe, but the same matmul timed again in "
                 f"section 2's alternating rounds took {display.format_time(again.median)} "
                 f"({display.format_flops(2 * n**3 / again.median)}, {display.percent(2 * n**3 / again.median / own)} "
                 "of the probe): the first timing was slowed at its moment, not by the size; by what, this run does "
                 "not establish." + load_note() + " ")
    else:
        text += (f"Like for like it is {1 / share:.2f}x slower than its probe: a smaller product keeps the cores busy "
                 "for a shorter time per call, so the library's blocking and thread hand-offs weigh more (a "
                 "candidate; the two were also timed at different moments, and which it is, is not established "
                 "by this run)." + load_note() + " ")
    best = max(machines, key=lambda fw: machines[fw].peak_flops)
    roof = machines[best].peak_flops
    if best != "torch" and roof > 1.3 * own:
        text += (f"The compute roof drawn is {best}'s probe ({display.format_flops(roof)}, "
                 f"{libraries.get(best, 'its library')}), {roof / own:.2f}x torch's: that gap is the libraries (the "
                 f"table above), not the size, so against the roof drawn the matmul reads only "
                 f"{display.percent(rate / roof)}. ")
    elif best != "torch":
        text += (f"The compute roof drawn ({best}'s probe, {display.format_flops(roof)}) is within 1.3x of torch's: "
                 f"against it the matmul reads {display.percent(rate / roof)}. ")
    else:
        text += "torch's probe is itself the compute roof drawn. "
    if peak_flops:
        text += f"Against the computed peak it reads {display.percent(rate / peak_flops)}. "
    return text


def fresh_output_note(machine: roofline.Machine, *, slower: float = 1.25) -> str:
    """The summary's note on a framework's fresh-output triad, from its numbers: its cost claimed only when it ran
    over ``slower`` x the in-place triad's time (single probes: no spread to judge the noise by)."""
    validate.instance("machine", machine, roofline.Machine)
    slower = validate.number("slower", slower, low=1)
    fresh = machine.fresh_output_probes.get("triad, fresh output")
    in_place = machine.bandwidth_probes.get("triad", machine.bandwidth)
    if not fresh:
        return "not measured"
    if in_place / fresh > slower:
        return (f"{in_place / fresh:.1f}x the in-place triad's time: what a fresh output adds (allocation, page "
                "faults); not a bandwidth")
    return (f"{fresh / in_place:.2f}x the in-place triad: no fresh-output cost shows here (one probe each, "
            f"threshold {slower}x)")
