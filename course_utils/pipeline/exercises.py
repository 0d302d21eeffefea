"""The checkers of notebook 04's exercises, scored against this run's measurements or a reference."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from course_utils import declare, exercises, intervals

REMOVED = 0.5  # a worker count "removes the wait" when its steady wait is at most half the in-process wait
Waits = Annotated[Mapping[Annotated[int, declare.Range(0, 1024)], declare.NonNegativeFloat], declare.NonEmpty]
Rounds = Annotated[Sequence[declare.PositiveFloat], declare.MinItems(2), declare.MaxItems(1000)]


@exercises.register("04.1", hint="N workers deliver a batch every (data time / N): set that equal to the compute "
                                 "time, round up, and cap it at the cores free for data")
@declare.checked
def _workers_needed(answer: Any, *, wait: declare.NonNegativeFloat, compute: declare.PositiveFloat,
                    free: Annotated[int, declare.Range(1, 1024)], waits: Waits) -> str | None:
    """Right when it is ceil(data / compute) from this run's num_workers=0 loop (at most ``free``), or the
    smallest count that halved the wait in this run's sweep."""
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        raise TypeError(f"the answer should be a whole number of workers; got {answer!r}")
    if 0 not in waits:
        raise ValueError("waits must include 0 workers (the in-process loader)")
    measured = min((n for n, w in waits.items() if n > 0 and w <= REMOVED * waits[0]), default=None)  # halved it
    if int(answer) in (min(max(1, math.ceil(wait / compute)), free), measured):
        return None
    seen = "no count halved it" if measured is None else f"the smallest count that halved it was {measured}"
    return (f"{answer} follows neither from this run's numbers (data {wait * 1e3:.1f} ms, compute "
            f"{compute * 1e3:.1f} ms per step, {free} free core(s)) nor from the sweep ({seen})")


@exercises.register("04.2", hint="take the prefetch thread's and Grain's runs of section 6 (the same rounds) and "
                                 "read the interval of cu.intervals.speedup on their steady steps: if it contains 1, "
                                 "it is a tie")
@declare.checked
def _processes_or_threads(answer: Any, *, thread_rounds: Rounds,
                          process_rounds: Annotated[Rounds, declare.SameLength("thread_rounds")]) -> str | None:
    """'threads', 'processes' or 'tie': which gave JAX the shorter steady step (an interval containing 1: a tie)."""
    choice = answer.strip().lower() if isinstance(answer, str) else answer
    if choice not in ("threads", "processes", "tie"):
        raise ValueError(f"the answer should be 'threads', 'processes' or 'tie'; got {answer!r}")
    s = intervals.speedup(list(thread_rounds), list(process_rounds))
    expected = {intervals.FASTER: "processes", intervals.SLOWER: "threads"}.get(s.outcome, "tie")
    if choice == expected:
        return None
    verdict = "the interval contains 1: a tie" if expected == "tie" else f"{expected} gave the shorter step"
    return f"this run measured the process at {s} the thread's speed: {verdict}"


# seconds per step of one epoch, the first (start-up) step included
Steps = Annotated[Sequence[declare.NonNegativeFloat], declare.MinItems(2), declare.MaxItems(10**5)]


@declare.checked
def reference_utilisation(waits: Steps, computes: Annotated[Steps, declare.SameLength("waits")]) -> float:
    """Busy share of one epoch's steady steps: sum(compute) / sum(wait + compute), first step left out."""
    waits, computes = np.asarray(waits, dtype=float)[1:], np.asarray(computes, dtype=float)[1:]
    if waits.sum() + computes.sum() == 0:
        raise ValueError("waits and computes are all 0 after the first step: an epoch that took no time has no "
                         "busy share")
    return float(computes.sum() / (waits.sum() + computes.sum()))


def _inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    steps = int(rng.integers(3, 12))
    waits = rng.uniform(0.0, 0.02, steps)
    waits[0] = rng.uniform(0.05, 1.0)  # the start-up: large, and not part of the steady state
    return waits, rng.uniform(0.005, 0.02, steps)


@exercises.register("04.3", hint="leave out the first step (the loader's start-up), then divide the total compute "
                                 "by the total of wait + compute")
def _utilisation_function(answer: Any) -> str | None:
    """A function ``utilisation(waits, computes)`` equal to the reference on random epochs."""
    return exercises.same_function(answer, reference_utilisation, _inputs, trials=6)
