"""See where the time goes: capture a profiler trace in PyTorch, JAX or TensorFlow, save it under
``build/traces/`` and read it back into one ``Trace`` that answers a few questions (how many ops or kernels,
how busy each thread was, the longest gaps, time by category). No browser and no network needed.

- PyTorch: ``torch.profiler.profile`` exported as a Chrome trace (JSON); CUDA kernels too on a GPU.
- JAX: ``jax.profiler.trace(..., create_perfetto_trace=True)``; its Perfetto/Chrome JSON is read.
- TensorFlow 2.21 ships no TensorBoard: ``tf.profiler.experimental`` writes an XSpace protobuf
  (``*.xplane.pb``), read here with the protobuf classes TensorFlow itself ships.
Online, open any saved ``.json``/``.json.gz`` file at https://ui.perfetto.dev (drag and drop) to browse it.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_utils import display, env, timing, validate


@dataclass(frozen=True)
class Event:
    """One complete event of a trace: what ran, on which thread, from when (s, trace clock) and for how long."""

    name: str
    category: str
    thread: str
    start: float
    duration: float

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True, repr=False)
class Trace:
    """The events of one capture, with the questions a practitioner asks of a profile."""

    framework: str
    path: Path | None
    events: tuple[Event, ...]

    def __post_init__(self) -> None:
        if not self.events:
            raise ValueError(f"the trace {self.path} holds no events: was anything run while profiling?")

    @property
    def start(self) -> float:
        return min(e.start for e in self.events)

    @property
    def end(self) -> float:
        return max(e.end for e in self.events)

    @property
    def span(self) -> float:
        """Seconds from the first event's start to the last event's end."""
        return self.end - self.start

    def threads(self) -> list[str]:
        """Thread names, the busiest first."""
        return sorted({e.thread for e in self.events}, key=lambda t: -self.busy(t))

    def select(self, name: str | None = None, *, thread: str | None = None, category: str | None = None) -> Trace:
        """The events whose name / thread / category match these regular expressions (``re.search``)."""
        patterns = {k: re.compile(validate.instance(k, v, str)) for k, v in
                    (("name", name), ("thread", thread), ("category", category)) if v is not None}
        kept = tuple(e for e in self.events if all(p.search(getattr(e, k)) for k, p in patterns.items()))
        if not kept:
            raise ValueError(f"no event matches name={name!r}, thread={thread!r}, category={category!r}; "
                             f"threads: {sorted({e.thread for e in self.events})}")
        return Trace(self.framework, self.path, kept)

    def count(self, name: str | None = None, *, thread: str | None = None, category: str | None = None) -> int:
        """How many events match (0 when none does)."""
        try:
            return len(self.select(name, thread=thread, category=category).events)
        except ValueError:
            return 0

    def names(self, top: int = 10) -> list[tuple[str, int]]:
        """The most frequent event names with their counts."""
        return Counter(e.name for e in self.events).most_common(validate.positive("top", top, integer=True))

    def busy(self, thread: str) -> float:
        """Seconds in which ``thread`` was inside at least one event (nested events counted once)."""
        return sum(end - start for start, end in self._intervals(thread))

    def gaps(self, thread: str, top: int = 5) -> list[tuple[float, float]]:
        """The ``top`` longest idle stretches of ``thread`` between its events: (start, seconds), longest first."""
        validate.positive("top", top, integer=True)
        spans = self._intervals(thread)
        holes = [(a_end, b_start - a_end) for (_, a_end), (b_start, _) in zip(spans, spans[1:]) if b_start > a_end]
        return sorted(holes, key=lambda g: -g[1])[:top]

    def time_by(self, key: str = "category") -> dict[str, float]:
        """Total event seconds per category (or per name), largest first; nested events each count."""
        validate.choice("key", key, ("category", "name", "thread"))
        totals: Counter[str] = Counter()
        for e in self.events:
            totals[getattr(e, key)] += e.duration
        return dict(totals.most_common())

    def window(self, start: float, end: float) -> Trace:
        """The events that overlap [start, end) (seconds on the trace clock)."""
        validate.number("start", start)
        validate.number("end", end, low=start, low_open=True)
        return Trace(self.framework, self.path, tuple(e for e in self.events if e.end > start and e.start < end))

    def _intervals(self, thread: str) -> list[tuple[float, float]]:
        validate.instance("thread", thread, str)
        spans = sorted((e.start, e.end) for e in self.events if e.thread == thread)
        if not spans:
            known = sorted({e.thread for e in self.events})
            raise ValueError(f"thread {thread!r} is not in this trace; threads: {known}")
        merged = [list(spans[0])]
        for start, end in spans[1:]:
            if start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        return [(a, b) for a, b in merged]

    def table(self) -> display.Table:
        rows = []
        for thread in self.threads()[:8]:
            busy = self.busy(thread)
            longest = self.gaps(thread, top=1)
            rows.append((thread, str(self.count(thread=re.escape(thread) + "$")), display.format_time(busy),
                         display.percent(busy / self.span if self.span else 0.0),
                         display.format_time(longest[0][1]) if longest else "-"))
        where = f" ({self.path.name})" if self.path else ""
        return display.table(["thread", "events", "busy", "busy share of the span", "longest gap"], rows,
                             title=f"{self.framework} trace{where}: {len(self.events)} events over "
                                   f"{display.format_time(self.span)}")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


# ---------------------------------------------------------------------------------------------------------
# Loading


def load(path: str | Path, framework: str = "trace") -> Trace:
    """Read a Chrome/Perfetto JSON trace (``.json`` or ``.json.gz``) or an XSpace protobuf (``.xplane.pb``)."""
    path = Path(validate.instance("path", path, (str, Path)))
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    if path.name.endswith(".xplane.pb"):
        return Trace(framework, path, tuple(_xplane_events(path)))
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"path {str(path)!r} is not a JSON trace: {exc}") from None
    raw = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise ValueError(f"path {str(path)!r} has no 'traceEvents' list: not a Chrome/Perfetto trace")
    return Trace(framework, path, tuple(_chrome_events(raw)))


def _chrome_events(raw: list[Any]) -> Iterable[Event]:
    names = {(e.get("pid"), e.get("tid")): e.get("args", {}).get("name") for e in raw
             if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "thread_name"}
    for e in raw:
        if not isinstance(e, dict) or e.get("ph") != "X" or "ts" not in e or e.get("cat") == "Trace":
            continue  # 'Trace' is torch.profiler's own span around the whole capture
        thread = names.get((e.get("pid"), e.get("tid"))) or f"{e.get('pid')}/{e.get('tid')}"
        yield Event(str(e.get("name", "")), str(e.get("cat") or "op"), str(thread),
                    float(e["ts"]) * 1e-6, float(e.get("dur", 0.0)) * 1e-6)  # Chrome trace times are in µs


def _xplane_events(path: Path) -> Iterable[Event]:
    env.import_tensorflow()
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    try:
        space.ParseFromString(path.read_bytes())
    except Exception as exc:  # protobuf raises its own DecodeError
        raise ValueError(f"path {str(path)!r} is not an XSpace protobuf: {exc}") from None
    for plane in space.planes:
        for line in plane.lines:
            for e in line.events:
                yield Event(plane.event_metadata[e.metadata_id].name, plane.name, line.name or str(line.id),
                            line.timestamp_ns * 1e-9 + e.offset_ps * 1e-12, e.duration_ps * 1e-12)


# ---------------------------------------------------------------------------------------------------------
# Capturing


def capture(framework: str, fn: Callable[..., Any], *args: Any, steps: int = 3, name: str = "trace",
            folder: str | Path | None = None) -> Trace:
    """Profile ``steps`` calls of ``fn(*args)`` (each waited for), save the trace and return it loaded.

    Run ``fn`` once before (compilation is then not in the trace). The file lands in ``folder`` as
    ``<name>.<framework>.json`` (torch), ``.json.gz`` (JAX) or ``.xplane.pb`` (TensorFlow).
    """
    framework = validate.framework(framework)
    validate.function("fn", fn)
    validate.number("steps", steps, low=1, high=1000, integer=True)
    if not re.fullmatch(r"[\w.-]+", validate.text("name", name)):
        raise ValueError(f"name must be a file name of letters, digits, '.', '-' or '_'; got {name!r}")
    folder = env.build_dir("traces") if folder is None else Path(validate.instance("folder", folder, (str, Path)))
    folder.mkdir(parents=True, exist_ok=True)
    run = {"torch": _capture_torch, "jax": _capture_jax, "tensorflow": _capture_tensorflow}[framework]
    return run(lambda: [timing.sync(fn(*args)) for _ in range(steps)], folder / f"{name}.{framework}")


def _capture_torch(work: Callable[[], Any], stem: Path) -> Trace:
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    prof = profile(activities=activities)
    with env.silenced_stderr():  # Kineto prints 'USDT: profiler_start/stop' lines to fd 2 at start and stop
        prof.start()
    try:
        work()
    finally:
        with env.silenced_stderr():
            prof.stop()
    target = stem.with_name(stem.name + ".json")
    prof.export_chrome_trace(str(target))
    return load(target, "torch")


def _capture_jax(work: Callable[[], Any], stem: Path) -> Trace:
    import jax

    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            work()
        found = sorted(Path(tmp).rglob("*.trace.json.gz")) or sorted(Path(tmp).rglob("perfetto_trace.json.gz"))
        if not found:
            raise RuntimeError(f"jax.profiler wrote no trace JSON under {tmp}")
        target = stem.with_name(stem.name + ".json.gz")
        shutil.copyfile(found[0], target)
    return load(target, "jax")


def _capture_tensorflow(work: Callable[[], Any], stem: Path) -> Trace:
    tf = env.import_tensorflow()
    with tempfile.TemporaryDirectory() as tmp:
        tf.profiler.experimental.start(tmp)
        try:
            work()
        finally:
            tf.profiler.experimental.stop()
        found = sorted(Path(tmp).rglob("*.xplane.pb"))
        if not found:
            raise RuntimeError(f"tf.profiler wrote no .xplane.pb under {tmp}")
        target = stem.with_name(stem.name + ".xplane.pb")
        shutil.copyfile(found[0], target)
    return load(target, "tensorflow")
