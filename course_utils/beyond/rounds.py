"""Times a worker measured in rounds (every call timed a few times per round, the calls in turns, the same order
on every rank) turned into ``timing.Measurement`` objects whose per-round medians ``cu.intervals.speedup`` pairs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils import timing, validate


def measurement(label: str, per_round: Any) -> timing.Measurement:
    """A Measurement from a worker's times in rounds: a list of at least 2 per-round lists of seconds."""
    validate.text("label", label)
    if isinstance(per_round, (str, bytes)) or not isinstance(per_round, (list, tuple)) or len(per_round) < 2:
        raise ValueError(f"per_round ({label}) must hold the times of at least 2 rounds, a list of lists; "
                         f"got {per_round!r:.60}")
    found = []
    for times in per_round:
        if isinstance(times, (str, bytes)) or not isinstance(times, (list, tuple)) or not times:
            raise ValueError(f"per_round ({label}) must hold a non-empty list of seconds per round; got {times!r:.60}")
        found.append([validate.positive("per_round", t) for t in times])
    flat = tuple(t for times in found for t in times)
    return timing.Measurement(label=label, times=flat, number=1, total=sum(flat),
                              rounds=tuple(float(np.median(times)) for times in found))
