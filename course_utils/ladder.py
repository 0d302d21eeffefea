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


def torch_train_step(model: Any, amp_dtype: Any = None, *, lr: float = 0.05) -> Callable[[Any], Any]:
    """One SGD step of ``model`` on an (x, y) batch: forward, cross-entropy, backward, update; under autocast
    when ``amp_dtype`` is given. Returns ``step(batch) -> loss``; the batch moves to the model's device.
    """
    import torch
    import torch.nn.functional as F

    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    device = next(model.parameters()).device

    def step(batch: Any) -> Any:
        x, y = (t.to(device, non_blocking=True) for t in batch)
        with torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    return step


def autocast_dtype(device: Any) -> Any:
    """The mixed-precision dtype worth using on ``device``: bf16 on CPUs with bf16 units and on GPUs that
    support it, fp16 on older GPUs, None (skip the rung) on CPUs that would emulate bf16 slowly."""
    import torch

    from course_utils import env

    device = torch.device(device)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if env.has_native_bf16() else None


def torch_ladder(
    dataset: Any, batch_size: int, make_model: Callable[[], Any], *, workers: int = 2, epochs: int = 1
) -> tuple[Ladder, Any]:
    """The PyTorch rungs of notebook 06 and ``make bench``: eager fp32 with an in-process loader, then
    torch.compile, then autocast (where ``autocast_dtype`` says it pays), then ``workers`` loader workers.

    Returns the ladder and the compiled model. Peak memory: CUDA's allocator on a GPU, else process RSS.
    """
    import torch

    from course_utils import pipeline, precision

    def loader(n_workers: int = 0) -> Any:
        return torch.utils.data.DataLoader(
            dataset, batch_size=batch_size, num_workers=n_workers, persistent_workers=n_workers > 0,
            multiprocessing_context=pipeline.worker_context() if n_workers else None,
            pin_memory=torch.cuda.is_available())

    device = next(make_model().parameters()).device
    peak = precision.torch_peak_bytes if device.type == "cuda" else precision.peak_rss_delta
    amp = autocast_dtype(device)
    compiled = torch.compile(make_model())
    rungs = [measure_rung("eager fp32", loader(), torch_train_step(make_model()), epochs=epochs, peak_memory=peak),
             measure_rung("+ torch.compile", loader(), torch_train_step(compiled), epochs=epochs, peak_memory=peak)]
    if amp is not None:
        rungs.append(measure_rung(f"+ autocast {str(amp).split('.')[-1]}", loader(), torch_train_step(compiled, amp),
                                  epochs=epochs, peak_memory=peak))
    rungs.append(measure_rung(f"+ {workers} loader workers", loader(workers), torch_train_step(compiled, amp),
                              epochs=epochs, peak_memory=peak))
    return ladder(rungs), compiled


def lines_changed(before: Callable[..., Any] | str, after: Callable[..., Any] | str) -> int:
    """Lines added plus lines removed to turn ``before`` into ``after`` (functions or source text)."""
    def text(obj: Callable[..., Any] | str) -> list[str]:
        source = obj if isinstance(obj, str) else inspect.getsource(obj)
        return [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#")]

    diff = difflib.ndiff(text(before), text(after))
    return sum(1 for line in diff if line[:2] in ("+ ", "- "))
