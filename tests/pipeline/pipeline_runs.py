"""Timelines with chosen numbers for the tests of notebook 04's comparisons and findings (no clock involved)."""

from __future__ import annotations

from collections.abc import Sequence

from course_utils import pipeline

STEADY = 4  # steady steps per round; each round also has a first step (the start-up) that the numbers leave out


def rounds_run(label: str, computes: Sequence[float], waits: Sequence[float] | float = 0.002, *,
               startups: Sequence[float] | float = 0.5) -> pipeline.Timeline:
    """A Timeline of ``len(computes)`` rounds (epochs): round r's steady steps all compute ``computes[r]`` and wait
    ``waits[r]``; its first step waits ``startups[r]``."""
    rounds = len(computes)
    waits = [waits] * rounds if isinstance(waits, float) else list(waits)
    startups = [startups] * rounds if isinstance(startups, float) else list(startups)
    w, c, e = [], [], []
    for r in range(rounds):
        w += [startups[r]] + [waits[r]] * STEADY
        c += [9.0] + [computes[r]] * STEADY
        e += [r] * (STEADY + 1)
    starts, t = [], 0.0
    for wi, ci in zip(w, c):
        starts.append(t)
        t += wi + ci
    return pipeline.Timeline(label, tuple(starts), tuple(w), tuple(c), tuple(e))


# compute per round: a steady loop, one 2x slower in every round, one that wanders around it
BASE = [0.010, 0.011, 0.010, 0.012]
DOUBLE = [0.020, 0.023, 0.019, 0.024]
WANDER = [0.008, 0.014, 0.009, 0.013]
