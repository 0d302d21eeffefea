"""Measuring rungs: a training loop's steady steps, interleaved epoch by epoch across rungs, so that a drift in
the machine's load hits every rung alike. ``ladder`` holds what is done with them."""

from __future__ import annotations

import itertools
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, Literal

from course_utils import declare, pipeline, timing
from course_utils.declare import NonEmpty, Range, Text
from course_utils.migrate.ladder import KINDS, Rung

_GROUPS = itertools.count(1)
MAX_ROUNDS = 1000  # epochs of each rung: past this a typo, not a measurement
Spec = tuple[Text, Iterable[Any], Callable[..., Any], Literal[KINDS]]


def _steady(timelines: Sequence[pipeline.Timeline]) -> tuple[list[float], list[float], float]:
    """Per-step times, their compute parts and the wait share of the steady steps (each epoch's first step holds
    the loader start; with one step per epoch, every step)."""
    pairs = [(w, c) for t in timelines for i, (w, c) in enumerate(zip(t.waits, t.computes))
             if i > 0 and t.epochs[i] == t.epochs[i - 1]]
    pairs = pairs or [(w, c) for t in timelines for w, c in zip(t.waits, t.computes)]
    totals = [w + c for w, c in pairs]
    return totals, [c for _, c in pairs], sum(w for w, _ in pairs) / sum(totals)


def _first(label: str, loader: Iterable[Any], step: Callable[[Any], Any]) -> tuple[Any, float]:
    batch = next(iter(loader), None)
    if batch is None:
        raise ValueError(f"loader for rung {label!r} yields no batch")
    try:
        pipeline.dataset.fingerprint(batch)  # what the timed loop reads of every batch
    except (TypeError, ValueError) as error:
        raise ValueError(f"loader for rung {label!r} yields a batch the loop cannot read: {error}") from None
    with timing.Timer(label) as first:
        timing.sync(step(batch))
    return batch, first.elapsed


def _batch_size(label: str, batch: Any) -> int:
    """Samples in a batch: the length of its first element (x of an (x, y) pair), or of the batch itself."""
    first = batch[0] if isinstance(batch, (tuple, list)) and batch else batch
    try:
        return int(first.shape[0]) if hasattr(first, "shape") else len(first)
    except TypeError:
        raise ValueError(f"loader for rung {label!r}: cannot tell the batch size of a {type(first).__name__}; yield "
                         "(x, y) pairs of arrays") from None


@declare.checked
def measure_rungs(specs: Annotated[Sequence[Spec], NonEmpty], *, rounds: Annotated[int, Range(1, MAX_ROUNDS)] = 1,
                  peak_memory: Callable[..., Any] | None = None) -> list[Rung]:
    """Measure rungs (label, loader, step, kind) interleaved: one epoch of each in turn, ``rounds`` times, the
    first step timed apart (compile, warm-up); ``peak_memory(fn)`` measures what one more step adds."""
    firsts = [_first(label, loader, step) for label, loader, step, _ in specs]
    lines: list[list[pipeline.Timeline]] = [[] for _ in specs]
    for _ in range(rounds):
        for i, (label, loader, step, _kind) in enumerate(specs):
            lines[i].append(pipeline.run_loop(loader, step, epochs=1, label=label))
    rungs, group = [], next(_GROUPS)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    for (label, _loader, step, kind), (batch, first), timelines in zip(specs, firsts, lines):
        totals, computes, wait_share = _steady(timelines)
        peak = peak_memory(lambda: timing.sync(step(batch))) if peak_memory is not None else None  # noqa: B023
        per_round = [_steady([t]) for t in timelines]
        rungs.append(Rung(label, kind, _batch_size(label, batch), first,
                          timing.Measurement(label, tuple(totals), first_call=first), wait_share, peak,
                          tuple(p for t in timelines[:1] for p in t.fingerprints),
                          tuple(statistics.median(r[0]) for r in per_round), group,
                          timing.Measurement(f"{label} (compute)", tuple(computes)),
                          tuple(statistics.median(r[1]) for r in per_round), load))
    return rungs
