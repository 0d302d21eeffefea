"""Profiler traces of torch (Chrome JSON), JAX (Perfetto JSON) and TensorFlow (XSpace ``.xplane.pb``) saved under
``build/traces/`` and read into one ``Trace`` (counts, busy time, gaps); https://ui.perfetto.dev opens the JSON."""

from __future__ import annotations

import gzip
import json
import math
import numbers
import re
import shutil
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from course_utils import calls, declare, display, env, timing, validate


@dataclass(frozen=True)
class Event:
    """One complete event of a trace: what ran, on which thread, from when (s, trace clock) and for how long."""

    name: str
    category: str
    thread: str
    start: float
    duration: float  # the loaders check each field of a trace file: a trace holds 10^5 events

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True, repr=False)
class Trace(display.Tabled):
    """The events of one capture, with the questions a practitioner asks of a profile."""

    framework: str
    path: Path | None
    events: tuple[Event, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.events, (tuple, list)) or not all(isinstance(e, Event) for e in self.events):
            raise TypeError(f"events must be a tuple of Event; got {type(self.events).__name__} {self.events!r:.60}")
        if not self.events:
            raise ValueError(f"the trace {self.path} holds no events: was anything run while profiling?")
        object.__setattr__(self, "events", tuple(self.events))

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

    @declare.checked
    def select(self, name: declare.Pattern | None = None, *, thread: declare.Pattern | None = None,
               category: declare.Pattern | None = None) -> Trace:
        """The events whose name / thread / category match these regular expressions (``re.search``)."""
        patterns = {k: re.compile(v) for k, v in
                    (("name", name), ("thread", thread), ("category", category)) if v is not None}
        kept = tuple(e for e in self.events if all(p.search(getattr(e, k)) for k, p in patterns.items()))
        if not kept:
            raise ValueError(f"no event matches name={name!r}, thread={thread!r}, category={category!r}; "
                             f"threads: {sorted({e.thread for e in self.events})}")
        return Trace(self.framework, self.path, kept)

    @declare.checked
    def count(self, name: declare.Pattern | None = None, *, thread: declare.Pattern | None = None,
              category: declare.Pattern | None = None) -> int:
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


# ---------------------------------------------------------------------------------------------------------
# Loading


@declare.checked
def load(path: str | Path, framework: declare.Text = "trace") -> Trace:
    """Read a Chrome/Perfetto JSON trace (``.json``, ``.json.gz``) or an XSpace protobuf (``.xplane.pb``); a malformed
    field raises ValueError naming the event and the field, instead of giving a wrong busy time."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    if path.name.endswith(".xplane.pb"):
        return Trace(framework, path, tuple(_xplane_events(path)))
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"path {str(path)!r} is not a JSON trace: {type(exc).__name__}: {exc}") from None
    except RecursionError:
        raise ValueError(f"path {str(path)!r} is not a JSON trace: nested too deeply to read") from None
    raw = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise ValueError(f"path {str(path)!r} has no 'traceEvents' list: not a Chrome/Perfetto trace")
    return Trace(framework, path, tuple(_chrome_events(raw, path)))


_ID_TYPES = (str, int, float, type(None))  # what a Chrome trace's pid and tid hold


def _field(path: Path, i: int, event: dict[str, Any], key: str, *, default: Any = None,
           low: float | None = None) -> Any:
    """``event[key]`` as a finite float (µs) at least ``low``, or ``default`` where absent; else ValueError naming
    the event and the field."""
    value = event.get(key, default)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or (low is not None and value < low):
        wanted = "a finite number" + (f" >= {low:g}" if low is not None else "")
        raise ValueError(f"path {str(path)!r}: traceEvents[{i}] field {key!r} must be {wanted} (µs); got {value!r}")
    return float(value)


def _thread_id(path: Path, i: int, event: dict[str, Any]) -> tuple[Any, Any]:
    ids = (event.get("pid"), event.get("tid"))
    for key, value in zip(("pid", "tid"), ids):
        if not isinstance(value, _ID_TYPES):
            raise ValueError(f"path {str(path)!r}: traceEvents[{i}] field {key!r} must be a number or a string; "
                             f"got {type(value).__name__}")
    return ids


def _chrome_events(raw: list[Any], path: Path) -> Iterable[Event]:
    names: dict[tuple[Any, Any], Any] = {}
    for i, e in enumerate(raw):
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "thread_name":
            args = e.get("args", {})
            if not isinstance(args, dict):
                raise ValueError(f"path {str(path)!r}: traceEvents[{i}] field 'args' must be an object; "
                                 f"got {type(args).__name__}")
            names[_thread_id(path, i, e)] = args.get("name")
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") == "Trace":
            continue  # 'Trace' is torch.profiler's own span around the whole capture
        key = _thread_id(path, i, e)
        thread = names.get(key) or f"{key[0]}/{key[1]}"
        start, duration = _field(path, i, e, "ts"), _field(path, i, e, "dur", default=0.0, low=0.0)
        yield Event(str(e.get("name", "")), str(e.get("cat") or "op"), str(thread),
                    start * 1e-6, duration * 1e-6)  # Chrome trace times are in µs


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


@declare.checked
def capture(framework: str, fn: Callable[..., Any], *args: Any, steps: Annotated[int, declare.Range(1, 1000)] = 3,
            name: declare.FileName = "trace", folder: str | Path | None = None,
            timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> Trace:
    """Profile ``steps`` calls of ``fn(*args)`` (each waited for; run it once before, so the compile is not traced),
    save the trace as ``folder/<name>.<framework>.*`` (default ``build/traces``) and return it loaded."""
    framework = validate.framework(framework)
    folder = env.build_dir("traces") if folder is None else validate.folder("folder", folder)
    folder.mkdir(parents=True, exist_ok=True)

    def work() -> None:
        with calls.limit(fn, timeout):
            for _ in range(steps):
                timing.sync(fn(*args))

    try:
        stem = folder / f"{name}.{framework}"
        return _capture_torch(work, stem) if framework == "torch" else _capture_xla(framework, work, stem)
    except ValueError as exc:
        if "holds no events" not in str(exc):
            raise
        raise ValueError(f"fn = {calls.describe(fn)} ran nothing the {framework} profiler records ({steps} call(s)): "
                         "profile a function that runs the framework's operations") from None


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


def _capture_xla(framework: str, work: Callable[[], Any], stem: Path) -> Trace:
    """JAX's and TensorFlow's profilers write into a folder: the trace they wrote there is kept beside ``stem``."""
    with tempfile.TemporaryDirectory() as tmp:
        if framework == "jax":
            import jax

            with jax.profiler.trace(tmp, create_perfetto_trace=True):
                work()
            patterns, suffix = ("*.trace.json.gz", "perfetto_trace.json.gz"), ".json.gz"
        else:
            tf = env.import_tensorflow()
            tf.profiler.experimental.start(tmp)
            try:
                work()
            finally:
                tf.profiler.experimental.stop()
            patterns, suffix = ("*.xplane.pb",), ".xplane.pb"
        found = [path for pattern in patterns for path in sorted(Path(tmp).rglob(pattern))]
        if not found:
            raise RuntimeError(f"the {framework} profiler wrote no {' or '.join(patterns)} under {tmp}")
        target = stem.with_name(stem.name + suffix)
        shutil.copyfile(found[0], target)
    return load(target, framework)
