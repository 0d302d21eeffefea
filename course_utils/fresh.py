"""A measurement repeated in fresh Python processes (one process's rounds share its memory layout, allocator and
threads: Mytkowicz et al. 2009), giving the interval "across N fresh processes" a headline or decision rests on."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from course_utils import children, declare, display, env, intervals, validate
from course_utils.declare import MinItems, NonEmpty, Range, Text

WORKER = Path(__file__).resolve().parent / "workers" / "fresh_worker.py"
MARK = "@@fresh"  # the worker's result line starts with this; everything else it prints goes to its log
MAX_PROCESSES = 20
_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
_SETUP_KEYS = ("python", "cpus", "torch", "threads", "device")


def target_path(target: str | Callable[..., Any], name: str = "target") -> str:
    """``target`` as a 'package.module:function' path a fresh process can import (a function defined at the top of an
    importable module, or that string), checked by importing it here; the errors name ``name``."""
    validate.text("name", name)
    if callable(target) and not isinstance(target, str):
        module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
        path = f"{module}:{qualname}"
        if module in (None, "__main__") or not _PATH.match(path):
            raise TypeError(f"{name}: {qualname or target!r} is defined in a notebook, a script's __main__, a lambda "
                            "or inside another function, so a fresh process cannot import it; put it in a .py file "
                            "and pass 'module:function'")
        if function(name, path) is not target:
            raise TypeError(f"{name}: {path} does not name this function when imported again; pass 'module:function'")
        return path
    if not isinstance(target, str):
        raise TypeError(f"{name} must be 'package.module:function' or such a function; got {type(target).__name__} "
                        f"{target!r}")
    if not _PATH.match(target):
        raise ValueError(f"{name} must be 'package.module:function' (e.g. mypkg.models:make_model); got {target!r}")
    function(name, target)
    return target


def function(name: str, path: str) -> Callable[..., Any]:
    """The callable at 'package.module:function'; errors name the argument and say whether the module or the name
    is missing."""
    validate.text("name", name)
    if not _PATH.match(validate.text("path", path)):
        raise ValueError(f"path must be 'package.module:function'; got {path!r}")
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)  # the user's module, named at run time
    except Exception as exc:  # the user's module: any error on import is theirs to see
        raise ValueError(f"{name}: module {module_name!r} does not import: {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attribute):
        public = sorted(n for n in vars(module) if not n.startswith("_") and callable(getattr(module, n)))[:12]
        raise ValueError(f"{name}: module {module_name!r} has no {attribute!r}; its functions: {', '.join(public)}")
    found = getattr(module, attribute)
    if not callable(found):
        raise TypeError(f"{name}: {path} is {type(found).__name__}, not a function")
    return found


@declare.checked
@dataclass(frozen=True, repr=False)
class Replicates(display.Tabled):
    """What ``replicate`` measured: per label, one median per fresh process (in the order they ran), and the
    set-up each process reported (Python, CPUs it may use, torch version, torch threads, device)."""

    target: Text
    seconds: Annotated[Mapping[Text, Sequence[Annotated[float, Range(intervals.MIN_SECONDS, intervals.MAX_SECONDS)]]],
                       NonEmpty]
    setups: Annotated[Sequence[Mapping[str, Any]], MinItems(2)]

    def __post_init__(self) -> None:
        for label, values in self.seconds.items():
            if len(values) != len(self.setups):
                raise ValueError(f"seconds[{label!r}] holds {len(values)} medians for {len(self.setups)} processes")
        object.__setattr__(self, "seconds", {label: tuple(map(float, v)) for label, v in self.seconds.items()})
        object.__setattr__(self, "setups", tuple(dict(s) for s in self.setups))

    @property
    def n(self) -> int:
        """How many fresh processes ran."""
        return len(self.setups)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.seconds)

    def speedup(self, baseline: str, candidate: str, *, confidence: float = 0.95) -> intervals.Speedup:
        """How many times faster ``candidate`` ran than ``baseline``, paired by process: the geometric mean of the
        per-process ratios and its interval "across N fresh processes"."""
        for name, label in (("baseline", baseline), ("candidate", candidate)):
            validate.choice(name, label, self.labels)
        found = intervals.speedup(self.seconds[baseline], self.seconds[candidate], confidence=confidence)
        return dataclasses.replace(found, baseline=baseline, candidate=candidate)

    @property
    def setup(self) -> str:
        """The processes' set-up in words; a field that differed between them lists each process's value."""
        words = []
        for key in _SETUP_KEYS:
            values = [s.get(key) for s in self.setups]
            if all(v is None for v in values):
                continue
            shown = str(values[0]) if len(set(map(str, values))) == 1 else \
                ", ".join(map(str, values)) + " (differed between the processes)"
            words.append(f"{key} {shown}")
        return "; ".join(words)

    def table(self) -> display.Table:
        """One row per process: its median per label and its pid."""
        rows = [(str(i + 1), str(s.get("pid", "?")), *(display.format_time(self.seconds[label][i])
                                                      for label in self.labels)) for i, s in enumerate(self.setups)]
        return display.table(["process", "pid", *(f"{label} (median in the process)" for label in self.labels)],
                             rows, title=f"{self.target} in {self.n} fresh processes, one after another",
                             note=f"each process: {self.setup}")


@declare.checked
def replicate(target: str | Callable[..., Any], n: Annotated[int, Range(2, MAX_PROCESSES)] = 3, *,
              timeout: Annotated[float, Range(0, 3600, low_open=True)] = 300.0, env: Mapping[Text, str] | None = None,
              kwargs: Mapping[str, Any] | None = None) -> Replicates:
    """Run ``target(**kwargs)`` (JSON kwargs; returns ``{label: seconds}``) in ``n`` fresh processes one after another,
    each through ``children.run_child`` with this ``sys.path`` and ``env`` added, within ``timeout`` seconds each."""
    path = target_path(target)
    try:
        encoded = json.dumps(dict(kwargs or {}), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"kwargs must hold JSON values only (numbers, text, lists, dicts): {exc}") from None
    imports = [entry or os.getcwd() for entry in sys.path if isinstance(entry, str)]  # '' is the working folder
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(imports), **(env or {})}
    folder = _log_folder()  # env.build_dir: the parameter env hides the module here
    found = [_one(path, encoded, i, environ, folder / f"{re.sub(r'[^A-Za-z0-9]+', '-', path)}-{i + 1}.log", timeout)
             for i in range(n)]
    labels = list(found[0][0])
    for i, (seconds, _) in enumerate(found):
        if list(seconds) != labels:
            raise ValueError(f"target {path}: process {i + 1} returned the labels {sorted(seconds)}, process 1 "
                             f"{sorted(labels)}: every process must time the same workloads")
    return Replicates(path, {label: [s[label] for s, _ in found] for label in labels}, [setup for _, setup in found])


def _log_folder() -> Path:
    folder = env.build_dir("fresh")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _one(path: str, encoded: str, index: int, environ: dict[str, str], log: Path,
         timeout: float) -> tuple[dict[str, float], dict[str, Any]]:
    """One fresh process: its ``{label: seconds}`` and its set-up, read from the worker's result line."""
    lines: list[str] = []
    children.run_child([sys.executable, str(WORKER), path, encoded], log=log, timeout=timeout, env=environ,
                       on_line=lambda line: lines.append(line) if line.startswith(MARK) else None)
    if not lines:
        raise children.ChildFailed(f"process {index + 1} of target {path} printed no result; the end of its log "
                                   f"{log}:\n" + children.tail(log))
    result = json.loads(lines[-1][len(MARK):])
    seconds = result["seconds"]
    if not isinstance(seconds, dict) or not seconds:
        raise ValueError(f"target {path} must return {{label: seconds}} with at least one label; process "
                         f"{index + 1} returned {seconds!r}")
    for label, value in seconds.items():
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"target {path}: process {index + 1} returned {value!r} seconds for {label!r}; each "
                             "label needs a median in seconds above 0")
    return seconds, result["setup"]
