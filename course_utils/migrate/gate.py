"""The regression gate: ``assess --baseline old/report.json`` exits 3 when the new gain fell beyond the noise: the
ratio of the two gains (``decision.gap``) lies wholly below 1x exactly when the intervals are disjoint with the new
one lower. The same compile mode must decide both runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_utils import declare, intervals
from course_utils.findings import BELOW, Finding, above
from course_utils.migrate import decision, findings, record


@declare.checked
@dataclass(frozen=True)
class Baseline:
    """The deciding gain of a saved report, where it came from and when it was measured."""

    speedup: intervals.Speedup
    mode: str
    path: str
    measured_at: str


def load(path: str | Path) -> Baseline:
    """The baseline of ``--baseline`` (errors name it): read before anything is measured."""
    saved = record.read("baseline", path)
    mode = saved["modes"][0]
    return Baseline(record.speedup(mode), mode["mode"], str(path), saved["timestamp"])


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
