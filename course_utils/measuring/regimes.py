"""Where a size sweep leaves the overhead floor, read off the measured curve: the floor is one call at the smallest
size, the bend the size at which a call takes twice that (log-log interpolation between the points around it), the
slope that of the two largest sizes, and page faults (``metadata["faults"]``) say where fresh memory starts to cost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

from course_utils import declare, display, timing
from course_utils.declare import MinItems, NonEmpty, PositiveFloat, PositiveInt, SameLength

FAULTED = 0.5  # outputs' worth of page faults per call from which a point pays for fresh memory


@declare.checked
@dataclass(frozen=True)
class Bend:
    """One series' floor (s), its bend (elements; None past the sweep), its top log slope, and the smallest size
    whose calls page-faulted (None: none did, or faults were not counted)."""

    label: declare.Text
    floor: PositiveFloat
    size: PositiveFloat | None
    slope: float
    faulted_from: PositiveInt | None = None

    @property
    def within(self) -> bool:
        """True when the sweep reached twice the floor."""
        return self.size is not None

    def row(self) -> tuple[str, str, str, str, str]:
        return (self.label, display.format_time(self.floor),
                f"{self.size:,.0f} ({display.format_bytes(4 * self.size)})" if self.size else "past the sweep",
                f"{self.slope:.2f}", f"{self.faulted_from:,}" if self.faulted_from else "none")


@declare.checked
def bend(sizes: Annotated[Sequence[PositiveInt], MinItems(3)],
         measurements: Annotated[Sequence[timing.Measurement], SameLength("sizes")],
         label: declare.Text = "series") -> Bend:
    """The floor, bend and top slope of one sweep (sizes strictly ascending, one measurement per size)."""
    xs = list(sizes)
    if any(b <= a for a, b in zip(xs, xs[1:])):
        raise ValueError("sizes must be strictly increasing")
    times = [max(m.median, 1e-12) for m in measurements]
    floor, size = times[0], None
    for i in range(1, len(xs)):
        if times[i] >= 2 * floor:
            t0, t1 = math.log(max(times[i - 1], floor)), math.log(times[i])
            share = 1.0 if t1 <= t0 else (math.log(2 * floor) - t0) / (t1 - t0)
            size = math.exp(math.log(xs[i - 1]) + min(max(share, 0.0), 1.0) * math.log(xs[i] / xs[i - 1]))
            break
    slope = math.log(times[-1] / times[-2]) / math.log(xs[-1] / xs[-2])
    faults = [m.metadata.get("faults") for m in measurements]
    faulted = next((int(x) for x, f in zip(xs, faults) if f is not None and f >= FAULTED), None)
    return Bend(label, floor, size, slope, faulted)


@declare.checked
def bends(sizes: Annotated[Sequence[PositiveInt], MinItems(3)],
          series: Annotated[Mapping[str, Sequence[timing.Measurement]], NonEmpty]) -> dict[str, Bend]:
    """``bend`` for every series of a sweep."""
    return {label: bend(sizes, ms, label) for label, ms in series.items()}


@declare.checked
def bends_table(found: Annotated[Mapping[str, Bend], NonEmpty]) -> display.Table:
    """One row per series: floor, bend, top slope, where page faults begin."""
    return display.table(["variant", "floor (smallest size)", "bend: twice the floor, elements",
                          "log slope at the top", "page faults from (elements)"],
                         [b.row() for b in found.values()],
                         title="Read off the sweep: the overhead floor, where it ends, and the top",
                         note="bend interpolated on log-log axes between the two points around it; page faults: the "
                              f"smallest size whose calls faulted {FAULTED} outputs' worth or more (fresh memory)")
