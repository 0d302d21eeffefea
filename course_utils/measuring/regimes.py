"""Where a size sweep leaves the overhead floor: read off the measured curve, not extrapolated.

The floor is the time of one call at the smallest size (all overhead). The bend is the size at which a call takes
twice its floor: half of its time is then the data's. It is read off the sweep, interpolated on log-log axes
between the two points around it, so it lies where the plot shows it; a model fitted from the largest size would
carry that size's page faults (a fresh output's first touch) back to the small sizes. The slope of log(time)
against log(size) between the two largest sizes says whether the large end is the slope-1 (bandwidth) regime;
the page faults counted at each point (``metadata["faults"]``) say where fresh memory begins to cost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from course_utils import display, timing, validate

FAULTED = 0.5  # outputs' worth of page faults per call from which a point pays for fresh memory


@dataclass(frozen=True)
class Bend:
    """One series' overhead floor (s), the size where a call takes twice that (elements; None when the sweep never
    got there), the log slope between its two largest sizes, and the smallest size whose calls page-faulted
    (None when none did, or faults were not counted)."""

    label: str
    floor: float
    size: float | None
    slope: float
    faulted_from: int | None = None

    def __post_init__(self) -> None:
        validate.text("label", self.label)
        validate.positive("floor", self.floor)
        if self.size is not None:
            validate.positive("size", self.size)
        validate.number("slope", self.slope)
        if self.faulted_from is not None:
            validate.positive("faulted_from", self.faulted_from, integer=True)

    @property
    def within(self) -> bool:
        """True when the sweep reached twice the floor."""
        return self.size is not None

    def row(self) -> tuple[str, str, str, str, str]:
        return (self.label, display.format_time(self.floor),
                f"{self.size:,.0f} ({display.format_bytes(4 * self.size)})" if self.size else "past the sweep",
                f"{self.slope:.2f}", f"{self.faulted_from:,}" if self.faulted_from else "none")


def bend(sizes: Sequence[int], measurements: Sequence[timing.Measurement], label: str = "series") -> Bend:
    """The floor, bend and top slope of one sweep (sizes strictly ascending, one measurement per size)."""
    validate.non_empty("sizes", sizes)
    validate.non_empty("measurements", measurements)
    if len(sizes) != len(measurements) or len(sizes) < 3:
        raise ValueError(f"measurements must have one entry per size, at least 3; got {len(measurements)} "
                         f"for {len(sizes)} sizes")
    xs = [validate.positive(f"sizes[{i}]", s, integer=True) for i, s in enumerate(sizes)]
    if any(b <= a for a, b in zip(xs, xs[1:])):
        raise ValueError("sizes must be strictly increasing")
    ms = [validate.instance(f"measurements[{i}]", m, timing.Measurement) for i, m in enumerate(measurements)]
    times = [max(m.median, 1e-12) for m in ms]
    floor = times[0]
    size = None
    for i in range(1, len(xs)):
        if times[i] >= 2 * floor:
            t0, t1 = math.log(max(times[i - 1], floor)), math.log(times[i])
            share = 1.0 if t1 <= t0 else (math.log(2 * floor) - t0) / (t1 - t0)
            size = math.exp(math.log(xs[i - 1]) + min(max(share, 0.0), 1.0) * math.log(xs[i] / xs[i - 1]))
            break
    slope = math.log(times[-1] / times[-2]) / math.log(xs[-1] / xs[-2])
    faults = [m.metadata.get("faults") for m in ms]
    faulted = next((int(x) for x, f in zip(xs, faults) if f is not None and f >= FAULTED), None)
    return Bend(validate.text("label", label), floor, size, slope, faulted)


def bends(sizes: Sequence[int], series: Mapping[str, Sequence[timing.Measurement]]) -> dict[str, Bend]:
    """``bend`` for every series of a sweep."""
    validate.instance("series", series, Mapping)
    validate.non_empty("series", series)
    return {label: bend(sizes, ms, label) for label, ms in series.items()}


def bends_table(found: Mapping[str, Bend]) -> display.Table:
    validate.instance("found", found, Mapping)
    validate.non_empty("found", found)
    for label, b in found.items():
        validate.instance(f"found[{label!r}]", b, Bend)
    return display.table(["variant", "floor (smallest size)", "bend: twice the floor, elements",
                          "log slope at the top", "page faults from (elements)"],
                         [b.row() for b in found.values()],
                         title="Read off the sweep: the overhead floor, where it ends, and the top",
                         note="bend interpolated on log-log axes between the two points around it; page faults: the "
                              f"smallest size whose calls faulted {FAULTED} outputs' worth or more (fresh memory)")
