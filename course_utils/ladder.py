"""The optimisation ladder: one training set-up measured rung by rung (compile, mixed precision, loader, ...).

Each rung runs whole training steps from a real loader through ``pipeline.run_loop`` and records what a
lead needs: time to the first step (compilation included), steady-state step time with its spread, the
share of the step spent waiting for data, and the peak memory one step adds.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from course_utils import pipeline, timing


@dataclass(frozen=True)
class Rung:
    """One rung: its label, first-step seconds, per-step Measurement, data-wait share and peak bytes."""

    label: str
    first_step: float
    steps: timing.Measurement
    wait_share: float
    peak_bytes: int | None
    timeline: pipeline.Timeline

    @property
    def step_time(self) -> float:
        return self.steps.median


def measure_rung(
    label: str,
    loader: Iterable[Any],
    step: Callable[[Any], Any],
    *,
    epochs: int = 1,
    peak_memory: Callable[[Callable[[], Any]], int | None] | None = None,
) -> Rung:
    """Time the first step apart (compile, warm-up), then ``epochs`` of ``step`` over ``loader``.

    ``peak_memory(fn)`` measures what one more step adds (e.g. ``precision.torch_peak_bytes``).
    """
    if not callable(step):
        raise TypeError(f"step must be callable; got {type(step).__name__}")
    first_batch = next(iter(loader))
    with timing.Timer(label) as first:
        timing.sync(step(first_batch))
    timeline = pipeline.run_loop(loader, step, epochs=epochs, label=label)
    per_step = tuple(w + c for w, c in zip(timeline.waits, timeline.computes))
    steady = per_step[1:] if len(per_step) > 2 else per_step  # each epoch's first wait starts the loader
    peak = peak_memory(lambda: timing.sync(step(first_batch))) if peak_memory is not None else None
    return Rung(label, first.elapsed, timing.Measurement(label, steady, first_call=first.elapsed),
                1.0 - timeline.utilisation, peak, timeline)


@dataclass(frozen=True)
class Ladder:
    """The rungs in order; renders as a table of step time, speed-up over the first rung, wait and memory."""

    rungs: tuple[Rung, ...]

    def speedup(self, label: str) -> float:
        """First rung's median step time / this rung's."""
        for rung in self.rungs:
            if rung.label == label:
                return self.rungs[0].step_time / rung.step_time
        raise KeyError(f"no rung {label!r}; rungs are {[r.label for r in self.rungs]}")

    def waterfall_steps(self) -> list[tuple[str, float]]:
        """(label, median step seconds) pairs for ``plotting.waterfall``."""
        return [(r.label, r.step_time) for r in self.rungs]

    def _table(self) -> list[list[str]]:
        base = self.rungs[0].step_time
        rows = [["rung", "first step", "step (median)", "IQR", "speed-up", "waiting for data", "peak memory"]]
        for r in self.rungs:
            peak = "n/a" if r.peak_bytes is None else f"{r.peak_bytes / 2**20:.0f} MiB"
            rows.append([r.label, timing.format_time(r.first_step), timing.format_time(r.step_time),
                         f"{timing.format_time(r.steps.p25)} to {timing.format_time(r.steps.p75)}",
                         f"{base / r.step_time:.2f}x", f"{r.wait_share:.0%}", peak])
        return rows

    def __repr__(self) -> str:
        table = self._table()
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table)

    def _repr_html_(self) -> str:
        head, *body = self._table()
        cells = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in body)
        return f"<table><thead><tr>{''.join(f'<th>{escape(c)}</th>' for c in head)}</tr></thead>{cells}</table>"


def ladder(rungs: Sequence[Rung]) -> Ladder:
    """Collect measured rungs (the first is the baseline)."""
    if not rungs:
        raise ValueError("rungs must not be empty")
    return Ladder(tuple(rungs))


def lines_changed(before: Callable[..., Any] | str, after: Callable[..., Any] | str) -> int:
    """Lines added plus lines removed to turn ``before`` into ``after`` (functions or source text)."""
    def text(obj: Callable[..., Any] | str) -> list[str]:
        source = obj if isinstance(obj, str) else inspect.getsource(obj)
        return [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#")]

    diff = difflib.ndiff(text(before), text(after))
    return sum(1 for line in diff if line[:2] in ("+ ", "- "))
