"""The memory hierarchy's edges read off a bandwidth sweep: the cliffs where a copy's rate falls and stays down.

A copy runs at one level's speed while its working set fits that level, then falls to the next level's. The sweep's
own cliffs say where the levels end, whatever the OS reports (a VM may report its host's cache, or a sum of slices):
the reported sizes are a second fact, drawn and quoted beside the measured edges, never the basis of a verdict.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from course_utils import display, validate

DROP = 1.5  # a fall of at least this factor over consecutive falling points, staying down after, is a cliff
EDGE = 1.2  # a step that falls by less than this is flat: it belongs to a level, not to a cliff


@dataclass(frozen=True)
class Cliff:
    """A fall in copy bandwidth: ``before`` is the last working set (bytes) at the upper level's rate, ``after``
    the first at the lower level's; the rate fell by ``drop`` times between them."""

    before: int
    after: int
    drop: float

    def __post_init__(self) -> None:
        validate.positive("before", self.before, integer=True)
        validate.number("after", self.after, low=self.before, low_open=True, integer=True)
        validate.number("drop", self.drop, low=1)

    def __str__(self) -> str:
        return (f"between {display.format_bytes(self.before)} and {display.format_bytes(self.after)}, "
                f"a {self.drop:.2g}x fall")


def find_cliffs(working_sets: Sequence[int], bandwidths: Sequence[float], *, drop: float = DROP) -> tuple[Cliff, ...]:
    """The cliffs of a sweep, smallest working set first: runs of consecutive steep falls (each more than ``EDGE``)
    that add up to ``drop`` times or more and after which the rate stays down (the median of the points up to the
    next cliff lies ``drop`` times below the rate before), so one slow point in a plateau is not read as an edge."""
    validate.non_empty("working_sets", working_sets)
    if len(bandwidths) != len(working_sets):
        raise ValueError(f"bandwidths must have one value per working set ({len(working_sets)}); got {len(bandwidths)}")
    drop = validate.number("drop", drop, low=1, low_open=True, high=100)
    for i, (size, rate) in enumerate(zip(working_sets, bandwidths)):
        validate.positive(f"working_sets[{i}]", size, integer=True)
        validate.positive(f"bandwidths[{i}]", rate)
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
