"""The roofs each framework measured, side by side, and the costs that explain a kernel below its roof."""

from __future__ import annotations

import os
from collections.abc import Mapping

from course_utils import display, env, notebook, probes, roofline, validate


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
                 "faster than the main-memory roof.")
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
