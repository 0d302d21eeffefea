"""report.json, the record one ``assess`` run leaves: versioned, stamped, numbers only (non-finite values flagged,
restored by ``read``), to be priced again or be the regression gate's baseline (``Gate``)."""

from __future__ import annotations

import json
import math
import os
import platform
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from course_utils import declare, env, intervals
from course_utils.findings import BELOW, Finding, above
from course_utils.migrate import decision, findings

SCHEMA_VERSION = 2  # 2: the compile call, the data wait, the machine's guard
_FLAGS = {"_infinite": math.inf, "_negative_infinite": -math.inf, "_nan": math.nan}


def now() -> str:
    """The current time, UTC, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def host() -> dict[str, Any]:
    """The machine: CPU model, logical and physical cores, operating system."""
    return {"cpu": env.cpu_model(), "logical_cores": os.cpu_count(), "platform": platform.platform(),
            "physical_cores": psutil.cpu_count(logical=False), "memory_bytes": psutil.virtual_memory().total}


def _flag(value: float) -> str:
    return "_nan" if math.isnan(value) else "_infinite" if value > 0 else "_negative_infinite"


def _bad(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def numbers_only(value: Any) -> Any:
    """``value`` with every non-finite float made ``null`` and flagged beside it (see the module's docstring)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if _bad(item):
                out[key], out[key + _flag(item)] = None, True
                continue
            if isinstance(item, (list, tuple)) and any(_bad(v) for v in item):
                for i, v in enumerate(item):
                    if _bad(v):
                        out.setdefault(key + _flag(v), []).append(i)
            out[key] = numbers_only(item)
        return out
    if isinstance(value, (list, tuple)):
        return [None if _bad(v) else numbers_only(v) for v in value]
    if _bad(value):
        raise ValueError(f"a non-finite number outside a named field cannot be flagged: {value!r}")
    return value


def restored(value: Any) -> Any:
    """The inverse of ``numbers_only``: flagged nulls become their non-finite numbers again, the flags go."""
    if isinstance(value, list):
        return [restored(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: restored(v) for k, v in value.items() if not any(k.endswith(f) and k[:-len(f)] in value
                                                                for f in _FLAGS)}
    for key, item in value.items():
        for suffix, number in _FLAGS.items():
            name = key[:-len(suffix)]
            if key.endswith(suffix) and name in value:
                if item is True:
                    out[name] = number
                else:
                    out[name] = [number if i in item else v for i, v in enumerate(out[name])]
    return out


def write(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as report.json (numbers only) through a temporary file, so a reader never sees half of it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(numbers_only(data), indent=2, allow_nan=False))
    os.replace(tmp, path)


def read(name: str, path: str | Path) -> dict[str, Any]:
    """A saved report.json, its non-finite numbers restored; refused, naming ``name``, where it is not one."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{name}: no file at {str(file)!r}")
    try:
        data = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{name}: {str(file)!r} is not JSON: {exc}") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ValueError(f"{name}: {str(file)!r} has no schema_version: not a report.json that assess wrote (or "
                         "one from before versioning: run assess again)")
    if data["schema_version"] != SCHEMA_VERSION:
        raise ValueError(f"{name}: {str(file)!r} has schema_version {data['schema_version']!r}; this version reads "
                         f"{SCHEMA_VERSION}")
    return restored(data)


def speedup(mode: dict[str, Any]) -> Any:
    """The ``intervals.Speedup`` of one saved mode (an entry of the record's ``modes``)."""

    fields = ("baseline", "candidate", "ratio", "low", "high", "n", "unit", "confidence")
    return intervals.Speedup(**{k: mode["speedup"][k] for k in fields})


@declare.checked
@dataclass(frozen=True)
class Baseline:
    """The deciding gain of a saved report, where it came from and when it was measured."""

    speedup: intervals.Speedup
    mode: str
    path: str
    measured_at: str


def baseline(path: str | Path) -> Baseline:
    """The baseline of ``--baseline`` (errors name it): read before anything is measured."""
    saved = read("baseline", path)
    mode = saved["modes"][0]
    return Baseline(speedup(mode), mode["mode"], str(path), saved["timestamp"])


@declare.checked
@dataclass(frozen=True)
class Gate:
    """The new run's deciding gain against the baseline's."""

    baseline: Baseline
    new: intervals.Speedup
    mode: str

    def __post_init__(self) -> None:
        if self.mode != self.baseline.mode:
            raise ValueError(f"baseline: its gain is of mode {self.baseline.mode!r}, this run's of {self.mode!r}; "
                             "compare the same mode (put it first in --modes)")

    @property
    def change(self) -> intervals.Speedup:
        """The new gain over the baseline's (computed from the two intervals)."""
        return decision.gap(self.new, self.baseline.speedup)

    def finding(self) -> Finding:
        check = above(f"the new gain {self.new.ratio:.3g}x over the baseline's {self.baseline.speedup.ratio:.3g}x "
                      "(computed)", self.change, 1.0)
        return findings.GATE.read(check, baseline=f"{self.baseline.path} (measured {self.baseline.measured_at}, "
                                                  f"{self.baseline.speedup})")

    @property
    def failed(self) -> bool:
        return self.finding().outcome == BELOW

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.path, "baseline_measured_at": self.baseline.measured_at,
                "baseline_speedup": self.baseline.speedup.to_dict(), "change": self.change.to_dict(),
                "failed": self.failed, "rule": findings.GATE_RULE, "sentence": self.finding().sentence}
