"""The workers' timing records as ``timing.Measurement`` objects that keep their per-round medians, so that
``cu.intervals.speedup`` pairs them into an interval; ``summed`` adds parts round by round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from course_utils import declare, timing, validate


def measurements(record: Mapping[str, Any]) -> dict[str, timing.Measurement]:
    """{variant: Measurement} for every variant of a worker's record that has per-round medians ("rounds")."""
    validate.instance("record", record, Mapping)
    rounds = record.get("rounds")
    if not isinstance(rounds, Mapping) or not rounds:
        raise ValueError(f"record {record.get('kind')!r} holds no per-round medians ('rounds'): it was not timed "
                         "with worker.timed_rounds")
    found = {}
    for name, per_round in rounds.items():
        times = record.get(name, per_round)
        if isinstance(times, (str, bytes)) or not isinstance(times, (list, tuple)):
            raise ValueError(f"record {record.get('kind')!r}: {name!r} must be a list of seconds; got {times!r:.60}")
        found[name] = timing.Measurement(label=name, times=tuple(float(t) for t in times),
                                         rounds=tuple(float(t) for t in per_round))
    return found


def summed(label: str, *parts: timing.Measurement) -> timing.Measurement:
    """The round-by-round sum of ``parts`` (each with the same number of rounds), as one Measurement whose times
    are those sums: e.g. a step's compute plus its all-reduce, timed apart, to set against the step."""
    validate.text("label", label)
    validate.non_empty("parts", parts)
    for i, m in enumerate(parts):
        validate.instance(f"parts[{i}]", m, timing.Measurement)
    counts = {len(m.rounds) for m in parts}
    if len(counts) != 1 or 0 in counts:
        raise ValueError(f"parts must all have the same number (>= 1) of rounds; got {sorted(counts)}")
    totals = tuple(sum(values) for values in zip(*(m.rounds for m in parts)))
    return timing.Measurement(label=label, times=totals, rounds=totals)


_Seconds = Annotated[float, declare.Positive]


@declare.checked
def from_rounds(label: declare.Text,
                per_round: Annotated[Sequence[Annotated[Sequence[_Seconds], declare.NonEmpty]], declare.MinItems(2)],
                ) -> timing.Measurement:
    """A Measurement from a worker's times in rounds (at least 2 non-empty lists of seconds), medians per round kept."""
    flat = tuple(float(t) for times in per_round for t in times)
    return timing.Measurement(label=label, times=flat, number=1, total=sum(flat),
                              rounds=tuple(float(np.median(times)) for times in per_round))
