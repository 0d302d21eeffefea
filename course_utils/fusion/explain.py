"""Sentences notebook 02 generates from its numbers, one function per claim, each with every branch a run can
take: a working set against the last-level cache, copies of the same bytes, whether two costs add up, the matmul
sweep's shares, and what a small compiled call costs. Causes this run does not measure are named as candidates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from course_utils import display, roofline, timing, validate

#: beating the memory roof by more than this is not noise: the roof under-read, or a cache served part of the bytes
OVER_ROOF = 1.2


def working_set_text(working_bytes: int, llc_bytes: int) -> str:
    """How a working set (inputs + outputs) compares with the last-level cache: inside it, between 1x and 4x it
    (partly served from cache, neither regime), or 4x and more (streams from main memory, like the probes)."""
    validate.positive("working_bytes", working_bytes, integer=True)
    validate.positive("llc_bytes", llc_bytes, integer=True)
    ratio = working_bytes / llc_bytes
    head = (f"{display.format_bytes(working_bytes)} in and out, {ratio:.1f}x the {display.format_bytes(llc_bytes)} "
            "last-level cache")
    if ratio <= 1:
        return f"{head}: it fits, so the bandwidth it meets may be the cache's as much as memory's"
    if ratio < 4:
        return (f"{head}: under the 4x at which this course streams from main memory (section 1's probes), so "
                "part of it may still be served from cache; neither a pure cache nor a pure memory regime")
    return f"{head}: 4x or more, like section 1's probes, so it streams from main memory"


def copies_text(copies: Mapping[str, timing.Measurement], shares: Mapping[str, float], roof_framework: str) -> str:
    """The copies of the same bytes: their shares of the memory roof (over ``OVER_ROOF``: the roof under-read, or a
    cache helped), which copy was faster, by how much and whether beyond the noise; the cause is left open."""
    validate.instance("copies", copies, Mapping)
    validate.non_empty("copies", copies)
    validate.instance("shares", shares, Mapping)
    validate.text("roof_framework", roof_framework)
    for name, m in copies.items():
        validate.instance(f"copies[{name!r}]", m, timing.Measurement)
        validate.positive(f"shares[{name!r}]", shares.get(name))
    text = ("The copies themselves reached " + ", ".join(f"{display.percent(shares[k])} ({k})" for k in copies)
            + " of the memory roof. ")
    over = [k for k in copies if shares[k] > OVER_ROOF]
    if over:
        text += (f"The {' and '.join(over)} cop{'ies' if len(over) > 1 else 'y'} beat the roof by more than "
                 f"{OVER_ROOF}x: section 1 measured the roof "
                 f"once, with {roof_framework}'s own kernels, and it under-read what this machine streamed at this "
                 "moment, or part of the working set was served from cache; which of the two is not established by "
                 "this run. ")
    if len(copies) > 1:
        order = sorted(copies, key=lambda k: copies[k].median)
        fast, slow = order[0], order[-1]
        ratio = copies[slow].median / copies[fast].median
        if timing.apart(copies[fast], copies[slow]):
            text += (f"On the same bytes the {slow} copy took {ratio:.2f}x the {fast} copy's time, beyond the noise "
                     "(quartiles apart); why two compilers' copies differ is not established by this run (candidates: "
                     "the stores each emits, such as non-temporal stores that skip reading the destination first, "
                     "and the threads each runtime runs). ")
        else:
            text += (f"The {slow} copy's median was {ratio:.2f}x the {fast} copy's, within the noise (quartiles "
                     "overlapping): this run does not tell the two copies apart. ")
    return text


def fresh_sum_text(name: str, *, fresh: float, into: float, fresh_plain: float, into_plain: float) -> str:
    """Whether a chain's two costs add up: ``fresh`` (tanh, fresh output) against ``into`` (tanh, reused buffer)
    plus what the fresh output added without tanh (``fresh_plain`` - ``into_plain``), all medians in seconds."""
    validate.text("name", name)
    for key, value in (("fresh", fresh), ("into", into), ("fresh_plain", fresh_plain), ("into_plain", into_plain)):
        validate.positive(key, value)
    added = fresh_plain - into_plain
    total = into + added
    sign = "+" if added >= 0 else "-"
    text = (f"{name} with tanh into a fresh output took {display.format_time(fresh)}; the same into its reused buffer "
            f"({display.format_time(into)}) {sign} what the fresh output changed without tanh "
            f"({display.format_time(abs(added))}) gives {display.format_time(total)} (computed): ")
    if total <= 0:
        return text + "no time at all, so the two costs cannot be added here. "
    ratio = fresh / total
    if 1 / 1.25 <= ratio <= 1.25:
        return text + f"measured and computed agree within 1.25x ({ratio:.2f}x), so the two costs add up. "
    return (text + f"the measured time is {ratio:.2f}x that sum, so with tanh the fresh output cost "
            f"{'more' if ratio > 1 else 'less'} than it did without; why is not established by this run. ")


def matmul_shares_text(points: Sequence[roofline.Point], machine: roofline.Machine) -> str:
    """The sweep's matmuls against the ridge (n = 6 x the ridge intensity): each left of it against the share its
    bytes allow (computed), those right of it rising or levelling off (within 10% of their best), as measured."""
    validate.non_empty("points", points)
    validate.instance("machine", machine, roofline.Machine)
    for i, p in enumerate(points):
        validate.instance(f"points[{i}]", p, roofline.Point)
    share = {p.label: p.achieved_flops / machine.peak_flops for p in points}
    left = [p for p in points if p.intensity < machine.ridge_intensity]
    right = [p for p in points if p.intensity >= machine.ridge_intensity]
    parts = []
    if left:
        allowed = ", ".join(f"{p.label} reached {display.percent(share[p.label])} of the best rate where its bytes "
                            f"allow {display.percent(machine.attainable(p.intensity) / machine.peak_flops)} (computed)"
                            for p in left)
        parts.append(f"left of it, {allowed}"
                     + ("; a share far under what the bytes allow is held back by something besides bytes (a call's "
                        "fixed cost is a candidate, not measured here)"
                        if any(share[p.label] < 0.5 * machine.attainable(p.intensity) / machine.peak_flops
                               for p in left) else ""))
    if right:
        best = max(share[p.label] for p in right)
        level = next((i for i, p in enumerate(right) if all(share[q.label] >= 0.9 * best for q in right[i:])), None)
        listed = ", ".join(f"{p.label} {display.percent(share[p.label])}" for p in right)
        top = max(right, key=lambda p: share[p.label])
        if len(right) == 1:
            parts.append(f"right of it {listed}")
        elif level is None:
            parts.append(f"right of it the share peaked at {top.label} and the largest fell more than 10% below that "
                         f"({listed}): the sweep does not show it levelling off, and why the largest fell back is not "
                         "established by this run")
        elif level == 0:
            parts.append(f"right of it every size reached within 10% of the best of them ({listed}): the library "
                         "kernel levels off as soon as it crosses the ridge")
        elif level == len(right) - 1:
            parts.append(f"right of it the share still rose up to the largest size ({listed}): the sweep does not "
                         "show it levelling off")
        else:
            parts.append(f"right of it the share first rose ({listed}) and levelled off, within 10% of its best, from "
                         f"{right[level].label} on: crossing the ridge removes the memory limit, and what held the "
                         "smaller ones back is not established by this run")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + ". "


def small_call_text(framework: str, *, fused: timing.Measurement, eager: timing.Measurement, n_ops: int,
                    gains: tuple[float, float], eager_fresh_outputs: float, fixed_costs: Mapping[str, float]) -> str:
    """Why one framework's fusion gained less at the smallest size than at the largest (``gains``), from its fused
    call in eager ops' worth, its eager ops' fresh outputs per call (a candidate), and the fixed costs this run
    measured for a small compiled call in other ways ({what: seconds}), with their spread."""
    validate.text("framework", framework)
    validate.instance("fused", fused, timing.Measurement)
    validate.instance("eager", eager, timing.Measurement)
    validate.positive("n_ops", n_ops, integer=True)
    validate.non_negative("eager_fresh_outputs", eager_fresh_outputs)
    validate.instance("fixed_costs", fixed_costs, Mapping)
    ops = fused.median / (eager.median / n_ops)
    text = f"In {framework} fusion gained {gains[0]:.2g}x at the smallest size against {gains[1]:.2g}x at the largest: "
    if ops >= 2:
        text += (f"its one fused call took {display.format_time(fused.median)}, as long as {ops:.1f} of its eager ops, "
                 "so the compiled call's own cost ate into the gain. ")
    else:
        text += (f"its fused call took {display.format_time(fused.median)}, only {ops:.1f} eager ops' worth, so the "
                 "call itself did not cost the gain; the largest size gained more, "
                 + (f"where each eager op also wrote fresh pages ({eager_fresh_outputs:.1f} outputs' worth of page "
                    "faults per call, section 3): a candidate cause, not established by this run. "
                    if eager_fresh_outputs >= n_ops / 2 else "for a reason not established by this run. "))
    known = {k: v for k, v in fixed_costs.items() if v and v > 0}
    unresolved = [k for k in fixed_costs if k not in known]
    if unresolved:
        text += f"({', '.join(unresolved)}: too small to resolve.) "
    if len(known) > 1:
        spread = max(known.values()) / min(known.values())
        text += (f"A small {framework} compiled call, measured in other ways in this run: "
                 + ", ".join(f"{display.format_time(v)} ({k})" for k, v in known.items())
                 + (f"; these spread {spread:.1f}x, and why the same kind of call differs this much is not established "
                    "by this run. " if spread > 1.25 else f"; these agree within {spread:.2f}x. "))
    return text


def fast_tanh_report(runs: Mapping[str, timing.Measurement], *, fast: str, default: str, plain: str, copy: str,
                     earlier: Mapping[str, timing.Measurement] | None = None) -> str:
    """Exercise 3's timing, lines of text: the ``fast`` tanh's kernel against the ``default`` one, beside the chain
    without tanh (``plain``) and the ``copy`` of the same bytes, all timed in the same rounds; ``fast`` beating
    either of those two beyond the noise is reported as a contradiction, not as a speed. ``earlier``: the same
    calls timed at another moment (by name); where one differs from now beyond the noise, a line says so."""
    validate.instance("runs", runs, Mapping)
    earlier = {} if earlier is None else validate.instance("earlier", earlier, Mapping)
    for key, name in (("fast", fast), ("default", default), ("plain", plain), ("copy", copy)):
        if name not in runs:
            raise ValueError(f"{key} must name one of runs' keys {sorted(runs)}; got {name!r}")
        validate.instance(f"runs[{name!r}]", runs[name], timing.Measurement)
    lines = [f"{name}: {display.format_time(runs[name].median)} (quartiles "
             f"{timing.quartiles(runs[name], display.format_time)})" for name in (fast, default, plain, copy)]
    speed = runs[default].median / runs[fast].median
    lines.append(f"{fast}: {speed:.2f}x the speed of {default} "
                 + ("(beyond the noise)" if timing.apart(runs[fast], runs[default]) else "(within the noise)"))
    beaten = [name for name in (copy, plain)
              if timing.apart(runs[fast], runs[name]) and runs[fast].median < runs[name].median]
    if beaten:
        lines.append(f"contradiction: {fast} ran faster than {' and '.join(beaten)} beyond the noise, though it "
                     "moves the same bytes with more work; one of these timings is off, and this run does not "
                     "establish which")
    else:
        lines.append(f"consistent: {fast} was not faster than {copy} or {plain} beyond the noise")
    for name in (default, plain, copy):
        before = earlier.get(name)
        if isinstance(before, timing.Measurement) and timing.apart(before, runs[name]):
            lines.append(f"{name}: {runs[name].median / before.median:.2f}x its earlier time "
                         f"({display.format_time(before.median)}): the same call differs beyond the noise between the "
                         "two moments; what changed is not established by this run")
    return "\n".join(lines)
