"""The memory hierarchy's edges read off a bandwidth sweep: the cliffs where a copy's rate falls and stays down.

A copy runs at one level's speed while its working set fits that level, then falls to the next level's. The sweep's
own cliffs say where the levels end, whatever the OS reports (a VM may report its host's cache, or a sum of slices):
the reported sizes are a second fact, drawn and quoted beside the measured edges, never the basis of a verdict.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from course_utils import declare, display
from course_utils.declare import NonEmpty, PositiveFloat, PositiveInt, Range, SameLength

DROP = 1.5  # a fall of at least this factor over consecutive falling points, staying down after, is a cliff
EDGE = 1.2  # a step that falls by less than this is flat: it belongs to a level, not to a cliff


@declare.checked
@dataclass(frozen=True)
class Cliff:
    """A fall in copy bandwidth: ``before`` is the last working set (bytes) at the upper level's rate, ``after``
    the first at the lower level's; the rate fell by ``drop`` times between them."""

    before: PositiveInt
    after: PositiveInt
    drop: Annotated[float, Range(1)]

    def __post_init__(self) -> None:
        if self.after <= self.before:
            raise ValueError(f"after must be larger than before ({self.before}); got {self.after}")

    def __str__(self) -> str:
        return (f"between {display.format_bytes(self.before)} and {display.format_bytes(self.after)}, "
                f"a {self.drop:.2g}x fall")


@declare.checked
def find_cliffs(working_sets: Annotated[Sequence[PositiveInt], NonEmpty],
                bandwidths: Annotated[Sequence[PositiveFloat], SameLength("working_sets")], *,
                drop: Annotated[float, Range(1, 100, low_open=True)] = DROP) -> tuple[Cliff, ...]:
    """The cliffs of a sweep, smallest working set first: runs of consecutive steep falls (each more than ``EDGE``)
    that add up to ``drop`` times or more and after which the rate stays down (the median of the points up to the
    next cliff lies ``drop`` times below the rate before), so one slow point in a plateau is not read as an edge."""
    points = sorted(zip(working_sets, bandwidths))
    sizes, rates = [int(s) for s, _ in points], [float(r) for _, r in points]
    runs, i = [], 0
    while i < len(rates) - 1:
        j = i
        while j + 1 < len(rates) and rates[j + 1] * EDGE < rates[j]:
            j += 1  # each step of the run falls by more than EDGE: a flat step ends it
        if j > i and rates[i] / rates[j] >= drop:
            runs.append((i, j))
        i = max(j, i + 1)
    cliffs = []
    for k, (start, end) in enumerate(runs):
        stop = runs[k + 1][0] if k + 1 < len(runs) else len(rates) - 1
        if rates[start] / statistics.median(rates[end:stop + 1]) >= drop:  # it stays down: a level's edge
            cliffs.append(Cliff(sizes[start], sizes[end], rates[start] / rates[end]))
    return tuple(cliffs)
