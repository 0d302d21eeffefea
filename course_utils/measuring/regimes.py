"""Where a size sweep bends from the overhead floor into the bandwidth slope.

Model: time(size) = floor + size x per_element. The floor is the fixed cost of one call (the smallest size's
time); per_element comes from the largest size; the bend is the size where both terms are equal (the time
there is twice the floor). The slope of log(time) against log(size) between the two largest sizes says
whether the large end really is the slope-1 (bandwidth) regime.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from course_utils import display, env, timing, validate
from course_utils.measuring.hierarchy import HierarchySweep


@dataclass(frozen=True)
class Bend:
    """One series' overhead floor (s), time per element (s), bend size (elements) and large-size log slope."""

    label: str
    floor: float
    per_element: float
    size: float
    slope: float

    def row(self) -> tuple[str, str, str, str, str]:
        return (self.label, display.format_time(self.floor), f"{self.per_element * 1e9:.3g} ns",
                f"{self.size:,.0f}", f"{self.slope:.2f}")


def bend(sizes: Sequence[int], measurements: Sequence[timing.Measurement], label: str = "series") -> Bend:
    """Fit the floor-plus-slope model to one sweep (sizes ascending, one measurement per size)."""
    validate.non_empty("sizes", sizes)
    validate.non_empty("measurements", measurements)
    if len(sizes) != len(measurements) or len(sizes) < 3:
        raise ValueError(f"measurements must have one entry per size, at least 3; got {len(measurements)} "
                         f"for {len(sizes)} sizes")
    xs = [validate.positive(f"sizes[{i}]", s) for i, s in enumerate(sizes)]
    if any(b <= a for a, b in zip(xs, xs[1:])):
        raise ValueError("sizes must be strictly increasing")
    times = [validate.instance(f"measurements[{i}]", m, timing.Measurement).median for i, m in enumerate(measurements)]
    floor = times[0]
    per_element = max(times[-1] - floor, 1e-15) / xs[-1]
    slope = math.log(times[-1] / times[-2]) / math.log(xs[-1] / xs[-2])
    return Bend(validate.text("label", label), floor, per_element, floor / per_element, slope)


def bends(sizes: Sequence[int], series: dict[str, Sequence[timing.Measurement]]) -> dict[str, Bend]:
    """``bend`` for every series of a sweep."""
    validate.non_empty("series", series)
    return {label: bend(sizes, ms, label) for label, ms in series.items()}


def bends_table(found: dict[str, Bend]) -> display.Table:
    validate.non_empty("found", found)
    return display.table(["variant", "overhead floor", "time per element", "bend (elements)", "log slope at the top"],
                         [b.row() for b in found.values()],
                         title="Overhead floor and bend, fitted from the sweep (floor + size x per-element time)")


def _top_faults(ms: Sequence[timing.Measurement]) -> tuple[float, float] | None:
    """Page faults per call (outputs' worth) at the two largest sizes, where the sweep counted them."""
    found = [m.metadata.get("faults") for m in ms[-2:]]
    return None if len(found) < 2 or None in found else (float(found[0]), float(found[1]))


def steep_top_text(sizes: Sequence[int], found: dict[str, Bend], *, element_bytes: int = 4,
                   series: dict[str, Sequence[timing.Measurement]] | None = None) -> str:
    """A sentence naming the series steeper than slope 1.3 at the top, the cache their arrays outgrew between
    the two largest sizes (as the OS reports it), and, where the sweep counted them (``series``' metadata), the
    page faults per call at those sizes; '' when none is steeper."""
    validate.non_empty("sizes", sizes)
    validate.positive("element_bytes", element_bytes, integer=True)
    steep = [label for label, b in validate.non_empty("found", found).items() if b.slope > 1.3]
    if not steep or len(sizes) < 2:
        return ""
    low, high = sizes[-2] * element_bytes, sizes[-1] * element_bytes
    crossed = [name for name, size in sorted(env.cache_sizes().items(), key=lambda item: item[1])
               if 2 * low <= size < 2 * high]  # the working set is the input and the output
    faults = {label: _top_faults((series or {}).get(label, ())) for label in steep}
    counted = {label: f for label, f in faults.items() if f is not None}
    paged = any(f[1] - f[0] >= 0.5 for f in counted.values())
    where = (f"between {display.format_bytes(low)} and {display.format_bytes(high)} per array, input plus output "
             f"outgrow {', '.join(crossed)}, which steepens the slope only as much as the two levels' bandwidths "
             "differ (the hierarchy sweep below measures that)" if crossed else
             f"no cache boundary the OS reports lies between {display.format_bytes(low)} and "
             f"{display.format_bytes(high)} per array" + ("" if paged else ", and why the top is steep is not "
                                                           "established by this run"))
    text = f"Steeper than 1 at the top: {', '.join(steep)}: {where}."
    if counted:
        text += (f" Page faults per call, in outputs' worth, at {display.format_bytes(high)} (and "
                 f"{display.format_bytes(low)}) per array: "
                 + ", ".join(f"{label} {f[1]:.1f} ({f[0]:.1f})" for label, f in counted.items())
                 + (": the top size's outputs land on fresh memory, which a copy into a preallocated array never "
                    "pays." if paged else "."))
    return text


def slope_budget(sizes: Sequence[int], found: dict[str, Bend], series: dict[str, Sequence[timing.Measurement]],
                 sweep: HierarchySweep, *, element_bytes: int = 4) -> str:
    """How much of each top slope the memory hierarchy can explain: the copy bandwidths the hierarchy ``sweep``
    measured at the two largest working sets (input + output) allow a slope of at most
    1 + log(bandwidth ratio) / log(size step) (computed); steeper series are named with their page faults."""
    validate.non_empty("sizes", sizes)
    validate.non_empty("found", found)
    validate.instance("sweep", sweep, HierarchySweep)
    if len(sizes) < 2:
        return ""
    low, high = 2 * element_bytes * sizes[-2], 2 * element_bytes * sizes[-1]
    r_low, r_high, step = sweep.rate_at(low), sweep.rate_at(high), sizes[-1] / sizes[-2]
    ratio = max(r_low / r_high, 1.0)
    most = 1 + math.log(ratio) / math.log(step)
    text = (f"At the top of section 4's sweep the working set grows from {display.format_bytes(low)} to "
            f"{display.format_bytes(high)}; the copy ran at {display.format_rate(r_low)} and "
            f"{display.format_rate(r_high)} there, so the hierarchy alone allows a top slope of at most "
            f"{most:.2f} (computed: 1 + log {ratio:.2f} / log {step:.0f}). ")
    over = {label: b for label, b in found.items() if b.slope > most + 0.1}
    if not over:
        return text + "Every variant's top slope is within that: the cache levels account for it. "
    reasons = []
    for label, b in over.items():
        f = _top_faults(series.get(label, ()))
        if f is not None and f[1] - f[0] >= 0.5:
            reasons.append(f"{label} ({b.slope:.2f}: its top size paid {f[1]:.1f} outputs' worth of page faults per "
                           f"call against {f[0]:.1f} one size below, fresh memory the copy never pays)")
        else:
            reasons.append(f"{label} ({b.slope:.2f}" + (f", with {f[1]:.1f} outputs' worth of page faults per call "
                                                         f"against {f[0]:.1f}" if f else "")
                           + ": what else it pays at the top is not established by this run)")
    return text + "Steeper than that: " + "; ".join(reasons) + ". "


def slope_why(sizes: Sequence[int], series: dict[str, Sequence[timing.Measurement]], found: dict[str, Bend],
              labels: Sequence[str], *, element_bytes: int = 8,
              retime: Mapping[str, Mapping[tuple[int, int], timing.Measurement]] | None = None) -> str:
    """Why each series in ``labels`` missed the prediction, from its own numbers: the bend outside the sweep, or
    a top slope under 0.7, with the two largest points' times, bytes/s (``element_bytes`` read + written per
    element: 8 for ``x + 1`` in fp32) and quartile spread; ``retime`` (label -> {(size, threads): Measurement},
    ``torch_eager_threads``) adds the two largest points timed again on one thread and on several, in
    alternating rounds."""
    validate.non_empty("labels", labels)
    validate.positive("element_bytes", element_bytes, integer=True)
    retime = retime or {}
    reasons = []
    for label in labels:
        b, ms = validate.instance(f"found[{label!r}]", found[label], Bend), series[label]
        if not sizes[0] < b.size < sizes[-1]:
            reasons.append(f"{label}: its bend, at {b.size:,.0f} elements (floor {display.format_time(b.floor)}, "
                           f"{b.per_element * 1e9:.3g} ns per element), lies outside the sweep")
            continue
        (n1, m1), (n2, m2) = (sizes[-2], ms[-2]), (sizes[-1], ms[-1])
        rates = [element_bytes * n / m.median / 1e9 for n, m in ((n1, m1), (n2, m2))]
        spread = max(m.p75 / m.p25 if m.p25 > 0 else math.inf for m in (m1, m2))
        text = (f"{label}: {n2 / n1:.0f}x the elements took only {m2.median / m1.median:.1f}x the time "
                f"({display.format_time(m1.median)} at {n1:,}, {display.format_time(m2.median)} at {n2:,}), so the "
                f"smaller size ran at {rates[0]:.3g} GB/s against {rates[1]:.3g} GB/s")
        if label in retime:
            text += "; " + _threads_text({n1: m1, n2: m2}, retime[label])
        elif spread > 1.5:
            text += f"; its quartiles spread {spread:.1f}x, so a point was disturbed while it ran"
        reasons.append(text)
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return "; ".join(reasons) + (f" (load average {load:.1f} on {cores} cores)" if load > cores else "")


def _threads_text(sweep: Mapping[int, timing.Measurement], runs: Mapping[tuple[int, int], timing.Measurement]) -> str:
    """The sweep's two points (size -> Measurement) against the same calls re-timed on one thread and on several
    in alternating rounds (``runs``): were the sweep's points slowed, do the threads cost, what slope is left."""
    (n1, n2), counts = sorted(sweep), sorted({t for _, t in runs})
    one, many = counts[0], counts[-1]
    for key in ((n, t) for n in (n1, n2) for t in (one, many)):
        if key not in runs:
            raise ValueError(f"retime must hold a measurement for (size, threads) {key}; got {sorted(runs)}")
    fmt = display.format_time
    times = ", ".join(f"{n:,} elements {fmt(runs[(n, one)].median)}"
                      + (f" and {fmt(runs[(n, many)].median)}" if many > one else "") for n in (n1, n2))
    text = (f"timed again in alternating rounds, on one thread and on {many}: {times}" if many > one else
            f"timed again in alternating rounds (torch runs one thread here): {times}")
    slowed = {n: m.median / runs[(n, many)].median for n, m in sweep.items()
              if timing.apart(m, runs[(n, many)]) and m.median > runs[(n, many)].median}
    text += (". The sweep's " + " and its ".join(f"{n:,}-element point took {r:.1f}x" for n, r in slowed.items())
             + " the same call re-timed (quartile ranges apart): slowed while the sweep ran, by what, this run does "
             "not establish" if slowed else ". The sweep's points are within the noise of (or faster than) the same "
             "calls re-timed")
    if many > one:
        faster = {n: ("one" if runs[(n, one)].median < runs[(n, many)].median else "many")
                  for n in (n1, n2) if timing.apart(runs[(n, one)], runs[(n, many)])}
        if not faster:
            text += (f"; one thread and {many} are within the noise of each other at both sizes: the threads do not "
                     "explain it")
        elif set(faster.values()) == {"one"} and len(faster) == 2:
            text += (f"; one thread was faster than {many} at both sizes (quartile ranges apart): handing each op to "
                     f"{many} threads costs here")
        elif set(faster.values()) == {"many"} and len(faster) == 2:
            text += f"; {many} threads were faster than one at both sizes: the threads pay off, they are not the cause"
        else:
            text += ("; the threads' effect differs between the sizes (" + ", ".join(
                f"{n:,}: {'one thread' if w == 'one' else f'{many} threads'} faster" for n, w in faster.items())
                + ", quartile ranges apart; elsewhere within the noise)")
    slope = math.log(runs[(n2, many)].median / runs[(n1, many)].median) / math.log(n2 / n1)
    ratios = {n: m.median / runs[(n, many)].median for n, m in sweep.items()}
    text += f"; re-timed, the top slope is {slope:.2f}" + (f" on {many} threads" if many > one else "") + (
        f": at least 0.7, so the sweep's shallow slope came from its {n1:,}-element point, {ratios[n1]:.1f}x the "
        f"re-timed call, against {ratios[n2]:.1f}x at the top (computed)" if slope >= 0.7 else
        ": still under 0.7")
    if slope >= 0.7:
        return text
    single = math.log(runs[(n2, one)].median / runs[(n1, one)].median) / math.log(n2 / n1)
    if many > one and single >= 0.7:
        return text + (f", and {single:.2f} on one thread: the shallow slope comes with the threads (at "
                       f"{n1:,} elements {many} threads took {runs[(n1, many)].median / runs[(n1, one)].median:.1f}x "
                       "one thread's time); why they cost that much there is not established by this run")
    return (text + (f" (and {single:.2f} on one thread)" if many > one else "")
            + ", and why is not established by this run")
