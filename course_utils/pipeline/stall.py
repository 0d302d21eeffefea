"""The data stall of notebook 04 read from a profiler trace alone: each training step is marked in the trace
(``torch.profiler.record_function``), and the idle gaps of the compute thread between two marked steps are the
time it waited for data. No clock of our own is read: only the trace.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import calls, display, profile, timing, validate

STEP_MARK = "train step"
CAPTURE_TIMEOUT = 480.0


def capture_loop(batches: Iterable[Any], step: Callable[[Any], Any], *, steps: int, name: str,
                 timeout: float = CAPTURE_TIMEOUT) -> profile.Trace:
    """Profile ``steps`` PyTorch training steps fed by ``batches`` (each step marked ``STEP_MARK``, its result
    waited for); the trace is saved under ``build/traces/<name>.torch.json`` and returned loaded. A loader or
    step that does not return within ``timeout`` seconds raises ``LearnerTimeout``."""
    if batches is None or isinstance(batches, (str, bytes)) or not isinstance(batches, Iterable):
        raise TypeError(f"batches must be an iterable of batches (a loader); got {type(batches).__name__}")
    validate.function("step", step)
    validate.number("steps", steps, low=2, high=1000, integer=True)
    validate.text("name", name)

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
            close = getattr(iterator, "close", None)
            if callable(close):
                close()

    return profile.capture("torch", run, steps=1, name=name)


@dataclass(frozen=True, repr=False)
class Stalls:
    """What the trace says about one loop: the marked steps' durations and the gaps between them (seconds)."""

    label: str
    thread: str
    steps: tuple[float, ...]
    gaps: tuple[float, ...]

    def __post_init__(self) -> None:
        validate.text("label", self.label)
        validate.instance("thread", self.thread, str)
        validate.sequence("steps", self.steps)
        validate.sequence("gaps", self.gaps)
        if len(self.steps) < 2 or len(self.gaps) != len(self.steps) - 1:
            raise ValueError(f"steps must hold at least 2 durations and gaps one fewer; got {len(self.steps)} steps "
                             f"and {len(self.gaps)} gaps")
        for name in ("steps", "gaps"):
            for value in getattr(self, name):
                validate.non_negative(name, value)

    @property
    def busy_share(self) -> float:
        """Share of the time from the first marked step's start to the last one's end spent inside a step."""
        total = sum(self.steps) + sum(self.gaps)
        return sum(self.steps) / total if total > 0 else 0.0

    def table(self) -> display.Table:
        return stalls_table([self])

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def data_stalls(trace: profile.Trace, *, label: str = "loop", mark: str = STEP_MARK) -> Stalls:
    """The marked steps of ``trace`` on the thread that ran them, in time order, and the idle gaps between
    consecutive steps: the compute thread's waits for data, read from the trace alone."""
    validate.instance("trace", trace, profile.Trace)
    validate.text("label", label)
    marked = trace.select(f"^{re.escape(validate.text('mark', mark))}$")
    counts = Counter(e.thread for e in marked.events)
    thread = max(counts, key=lambda t: counts[t])  # the thread that ran the most steps: the training loop
    events = sorted((e for e in marked.events if e.thread == thread), key=lambda e: e.start)
    if len(events) < 2:
        raise ValueError(f"trace must hold at least two {mark!r} events on one thread; found {len(events)}")
    gaps = tuple(max(0.0, b.start - a.end) for a, b in zip(events, events[1:]))
    return Stalls(label, thread, tuple(e.duration for e in events), gaps)


def stalls_table(stalls: Iterable[Stalls]) -> display.Table:
    """One row per loop: steps seen in the trace, mean step, mean and longest gap, busy share."""
    rows = []
    for s in validate.non_empty("stalls", list(validate.instance("stalls", stalls, Iterable))):
        validate.instance("stalls", s, Stalls)
        rows.append((s.label, str(len(s.steps)), display.format_time(float(np.mean(s.steps))),
                     display.format_time(float(np.mean(s.gaps))), display.format_time(max(s.gaps)),
                     display.percent(s.busy_share)))
    return display.table(["loop (from the trace)", "steps", "mean step", "mean gap", "longest gap", "busy share"],
                         rows, note="Gap: the compute thread idle between two marked steps, i.e. waiting for data.")
