"""Measuring rungs: a training loop's steady steps, interleaved epoch by epoch across rungs, so that a drift in
the machine's load hits every rung alike. ``ladder`` holds what is done with them (intervals, the migration's gain).
"""

from __future__ import annotations

import itertools
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from course_utils import pipeline, timing, validate
from course_utils.migrate.ladder import KINDS, NO_MIGRATION, Rung

_GROUPS = itertools.count(1)
MAX_ROUNDS = 1000  # epochs of each rung: past this a typo, not a measurement


def _steady(timelines: Sequence[pipeline.Timeline]) -> tuple[list[float], list[float], float]:
    """Per-step times, their compute parts and the wait share of the steady steps (each epoch's first step
    holds the loader start)."""
    totals, computes, waits = [], [], 0.0
    for timeline in timelines:
        for i, (w, c) in enumerate(zip(timeline.waits, timeline.computes)):
            if i == 0 or timeline.epochs[i] != timeline.epochs[i - 1]:
                continue
            totals.append(w + c)
            computes.append(c)
            waits += w
    if not totals:  # one step per epoch: keep what there is
        totals = [w + c for t in timelines for w, c in zip(t.waits, t.computes)]
        computes = [c for t in timelines for c in t.computes]
        waits = sum(sum(t.waits) for t in timelines)
    return totals, computes, waits / sum(totals)


def _first(label: str, loader: Iterable[Any], step: Callable[[Any], Any]) -> tuple[Any, float]:
    iterator = iter(loader)
    try:
        batch = next(iterator)
    except StopIteration:
        raise ValueError(f"loader for rung {label!r} yields no batch") from None
    with timing.Timer(label) as first:
        timing.sync(step(batch))
    return batch, first.elapsed


def _batch_size(label: str, batch: Any) -> int:
    """Samples in a batch: the length of its first element (x of an (x, y) pair), or of the batch itself."""
    first = batch[0] if isinstance(batch, (tuple, list)) and batch else batch
    size = getattr(first, "shape", (None,))[0] if hasattr(first, "shape") else None
    if size is None:
        try:
            size = len(first)
        except TypeError:
            raise ValueError(f"loader for rung {label!r}: cannot tell the batch size of a "
                             f"{type(first).__name__}; yield (x, y) pairs of arrays") from None
    return int(size)


def measure_rung(label: str, loader: Iterable[Any], step: Callable[[Any], Any], *, kind: str = NO_MIGRATION,
                 epochs: int = 1, peak_memory: Callable[[Callable[[], Any]], int | None] | None = None) -> Rung:
    """Time the first step apart (compile, warm-up), then ``epochs`` of ``step`` over ``loader``.

    ``peak_memory(fn)`` measures what one more step adds (CUDA allocator or process RSS).
    """
    validate.number("epochs", epochs, low=1, high=MAX_ROUNDS, integer=True)
    return measure_rungs([(label, loader, step, kind)], rounds=epochs, peak_memory=peak_memory)[0]


def measure_rungs(specs: Sequence[tuple[str, Iterable[Any], Callable[[Any], Any], str]], *, rounds: int = 1,
                  peak_memory: Callable[[Callable[[], Any]], int | None] | None = None) -> list[Rung]:
    """Measure several rungs interleaved: one epoch of each in turn, ``rounds`` times, so that a drift in
    the machine's load hits every rung alike. ``specs`` are (label, loader, step, kind)."""
    validate.non_empty("specs", specs)
    validate.number("rounds", rounds, low=1, high=MAX_ROUNDS, integer=True)
    if peak_memory is not None:
        validate.function("peak_memory", peak_memory)
    firsts = []
    for spec in specs:
        if not isinstance(spec, (tuple, list)) or len(spec) != 4:
            raise TypeError(f"specs must hold (label, loader, step, kind) tuples; got {spec!r}")
        label, loader, step, kind = spec
        validate.text("label", label)
        validate.function("step", step)
        validate.choice("kind", kind, KINDS)
        if isinstance(loader, (str, bytes)) or not isinstance(loader, Iterable):
            raise TypeError(f"loader must be an iterable of batches; got {type(loader).__name__} {loader!r}")
        firsts.append(_first(label, loader, step))
    lines: list[list[pipeline.Timeline]] = [[] for _ in specs]
    for _ in range(rounds):
        for i, (label, loader, step, _kind) in enumerate(specs):
            lines[i].append(pipeline.run_loop(loader, step, epochs=1, label=label))
    rungs, group = [], next(_GROUPS)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    for (label, _loader, step, kind), (batch, first), timelines in zip(specs, firsts, lines):
        size = _batch_size(label, batch)
        totals, computes, wait_share = _steady(timelines)
        peak = peak_memory(lambda: timing.sync(step(batch))) if peak_memory is not None else None  # noqa: B023
        prints = tuple(p for t in timelines[:1] for p in t.fingerprints)
        per_round = [_steady([t]) for t in timelines]
        rungs.append(Rung(label, kind, size, first, timing.Measurement(label, tuple(totals), first_call=first),
                          wait_share, peak, prints, tuple(statistics.median(r[0]) for r in per_round), group,
                          timing.Measurement(f"{label} (compute)", tuple(computes)),
                          tuple(statistics.median(r[1]) for r in per_round), load))
    return rungs
