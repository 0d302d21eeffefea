"""Monitoring read from profiler traces: the compile time a job pays, and how busy the training loop is.

The seed's checklist asks to "monitor hardware utilisation and compile time". Both are read from a
``torch.profiler`` trace (``course_utils.profile``), as a team would read them from its jobs:

- compile time: the first call of a freshly compiled step, traced; Dynamo and Inductor mark their phases
  (``... (dynamo_timed)`` events), and their union on the main thread is the compile time;
- utilisation: steady steps fed by the real loader, traced; the share of the span in which the training
  thread was *not* waiting in ``DataLoader.__next__`` (busy share of the step, not MFU).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from course_utils import display, profile, validate

_COMPILE = r"\(dynamo_timed\)$"
_LOADER_WAIT = r"^enumerate\(DataLoader\)"


@dataclass(frozen=True)
class Monitoring:
    """Compile time and busy share, each with the trace it was read from."""

    compile_s: float
    utilisation: float
    compile_trace: profile.Trace
    loop_trace: profile.Trace

    def table(self) -> display.Table:
        rows = [("compile time of the first step", display.format_time(self.compile_s),
                 f"{self.compile_trace.count(_COMPILE)} compiler phases ({self.compile_trace.path})"),
                ("busy share of the steady loop", display.percent(self.utilisation),
                 f"{self.loop_trace.count(_LOADER_WAIT)} loader waits ({self.loop_trace.path})")]
        return display.table(["read from a trace", "value", "evidence"], rows, title="Monitoring (torch.profiler)")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _main_thread(trace: profile.Trace) -> str:
    return trace.threads()[0]


def compile_seconds(trace: profile.Trace) -> float:
    """Seconds the busiest thread spent inside Dynamo/Inductor phases (nested phases counted once); 0 if none."""
    validate.instance("trace", trace, profile.Trace)
    if trace.count(_COMPILE) == 0:
        return 0.0
    phases = trace.select(_COMPILE)
    return phases.busy(_main_thread(phases))


def busy_share(trace: profile.Trace) -> float:
    """1 - (time the training thread waited in ``DataLoader.__next__``) / the trace's span."""
    validate.instance("trace", trace, profile.Trace)
    if trace.count(_LOADER_WAIT) == 0 or trace.span <= 0:
        return 1.0
    waits = trace.select(_LOADER_WAIT)
    return max(0.0, 1.0 - waits.busy(_main_thread(waits)) / trace.span)


def monitor(make_compiled_step: Callable[[], Callable[[Any], Any]], loader: Iterable[Any], *, steps: int = 5,
            name: str = "migrate") -> Monitoring:
    """Trace the first call of a fresh compiled step (compile time), then ``steps`` steady steps over
    ``loader`` (busy share). Compiled graphs of this process are reset first, so the first call compiles as a
    new job's would (Inductor's on-disk cache stays: a machine that compiled before compiles faster)."""
    import torch

    validate.function("make_compiled_step", make_compiled_step)
    validate.number("steps", steps, low=1, high=1000, integer=True)
    if not re.fullmatch(r"[\w.-]+", validate.text("name", name)):
        raise ValueError(f"name must be a file name of letters, digits, '.', '-' or '_'; got {name!r}")
    if isinstance(loader, (str, bytes)) or not isinstance(loader, Iterable):
        raise TypeError(f"loader must be an iterable of batches; got {type(loader).__name__} {loader!r}")
    if hasattr(loader, "__len__") and len(loader) < steps + 3:
        raise ValueError(f"loader must yield at least steps + 3 = {steps + 3} batches; it has {len(loader)}")
    batches = iter(loader)
    try:
        first = next(batches)
    except StopIteration:
        raise ValueError("loader yields no batch") from None
    torch._dynamo.reset()
    step = make_compiled_step()
    compile_trace = profile.capture("torch", step, first, steps=1, name=f"{name}-compile")
    batches = iter(loader)
    for _ in range(2):  # start the workers and settle before tracing
        step(next(batches))
    loop_trace = profile.capture("torch", lambda: step(next(batches)), steps=steps, name=f"{name}-loop")
    return Monitoring(compile_seconds(compile_trace), busy_share(loop_trace), compile_trace, loop_trace)
