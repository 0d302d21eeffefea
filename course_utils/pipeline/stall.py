"""The data stall of notebook 04 read from a profiler trace alone: the idle gaps between marked steps."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from course_utils import calls, declare, display, profile, timing
from course_utils.pipeline.loop import _close

STEP_MARK = "train step"
Durations = Annotated[tuple[declare.NonNegativeFloat, ...], declare.MaxItems(20_000)]


@declare.checked
def capture_loop(batches: Iterable, step: Callable, *, steps: Annotated[int, declare.Range(2, 1000)],
                 name: declare.FileName, timeout: calls.Timeout = None) -> profile.Trace:
    """Profile ``steps`` PyTorch steps fed by ``batches``, each marked ``STEP_MARK``; saved under
    ``build/traces/<name>.torch.json`` and returned loaded."""
    seconds = calls.default_timeout() if timeout is None else timeout

    def run() -> None:
        from torch.profiler import record_function

        iterator = iter(batches)
        try:
            with calls.time_limit(timeout, "the profiled loop") as guard:
                for _ in range(steps):
                    guard.doing = "the loader (next batch)"
                    batch = next(iterator, None)
                    if batch is None:
                        break
                    guard.doing = f"the step {getattr(step, '__name__', repr(step))!s:.60}"
                    with record_function(STEP_MARK):
                        timing.sync(step(batch))
        finally:
            _close(iterator)

    # the profiler's own limit a little longer, so that the error names the loader or the step, not ``run``
    return profile.capture("torch", run, steps=1, name=name, timeout=min(seconds + 30, calls.MAX_TIMEOUT))


@declare.checked
@dataclass(frozen=True)
class Stalls:
    """What the trace says about one loop: the marked steps' durations and the gaps between them (seconds)."""

    label: declare.Text
    thread: str
    steps: Annotated[Durations, declare.MinItems(2)]
    gaps: Durations

    def __post_init__(self) -> None:
        if len(self.gaps) != len(self.steps) - 1:
            raise ValueError(f"gaps must hold one fewer than steps; got {len(self.steps)} steps and "
                             f"{len(self.gaps)} gaps")

    @property
    def busy_share(self) -> float:
        """Share of the time from the first marked step's start to the last one's end spent inside a step."""
        total = sum(self.steps) + sum(self.gaps)
        return sum(self.steps) / total if total > 0 else 0.0


@declare.checked
def data_stalls(trace: profile.Trace, *, label: declare.Text = "loop", mark: declare.Text = STEP_MARK) -> Stalls:
    """The marked steps of ``trace`` on the thread that ran most of them and the idle gaps between them."""
    marked = trace.select(f"^{re.escape(mark)}$").events
    counts = Counter(e.thread for e in marked)
    thread = max(counts, key=lambda t: counts[t]) if counts else ""
    events = sorted((e for e in marked if e.thread == thread), key=lambda e: e.start)
    if len(events) < 2:
        raise ValueError(f"trace must hold at least two {mark!r} events on one thread; found {len(events)}")
    gaps = tuple(max(0.0, b.start - a.end) for a, b in zip(events, events[1:]))
    return Stalls(label, thread, tuple(e.duration for e in events), gaps)


@declare.checked
def stalls_table(stalls: Annotated[Sequence[Stalls], declare.NonEmpty]) -> display.Table:
    """One row per loop: steps seen in the trace, mean step, mean and longest gap, busy share."""
    rows = [(s.label, str(len(s.steps)), display.format_time(float(np.mean(s.steps))),
             display.format_time(float(np.mean(s.gaps))), display.format_time(max(s.gaps)),
             display.percent(s.busy_share)) for s in stalls]
    return display.table(["loop (from the trace)", "steps", "mean step", "mean gap", "longest gap", "busy share"],
                         rows, note="Gap: the compute thread idle between two marked steps, i.e. waiting for data.")
