"""The closing table of each notebook: this run's numbers, shown to the learner and collected by ``make course``.

Rows hold numbers (not text) so that ``tools/run_course.py`` can gather every notebook's summary into
``build/summary.md`` and ``build/summary.json`` when it sets ``COURSE_SUMMARY_DIR``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from html import escape
from pathlib import Path

from course_utils import env


@dataclass(frozen=True)
class Row:
    """One measured quantity: its name, value, unit and a short note (e.g. the article's claim)."""

    quantity: str
    value: float
    unit: str = ""
    note: str = ""

    def formatted(self) -> str:
        if isinstance(self.value, bool):
            return str(self.value)
        if isinstance(self.value, int):
            return f"{self.value:,}"
        return f"{self.value:.3g}" if math.isfinite(self.value) else str(self.value)


@dataclass(frozen=True)
class SummaryTable:
    """What this run measured, in one table; ``rows`` keep the numbers for the build summary."""

    notebook: str
    rows: tuple[Row, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "notebook": self.notebook,
            "environment": [list(r) for r in env.report(devices=False).rows()],
            "rows": [asdict(r) for r in self.rows],
        }

    def __repr__(self) -> str:
        width = max(len(r.quantity) for r in self.rows)
        lines = [f"{r.quantity:<{width}}  {r.formatted()} {r.unit}".rstrip() + (f"   ({r.note})" if r.note else "")
                 for r in self.rows]
        return f"Measured in this run ({self.notebook}):\n" + "\n".join(lines)

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td style='text-align:left'>{escape(r.quantity)}</td><td>{escape(r.formatted())}</td>"
            f"<td style='text-align:left'>{escape(r.unit)}</td><td style='text-align:left'>{escape(r.note)}</td></tr>"
            for r in self.rows
        )
        head = "<tr><th>quantity</th><th>measured</th><th>unit</th><th>note</th></tr>"
        return f"<table><caption style='text-align:left'>Measured in this run</caption>{head}{body}</table>"


def table(notebook: str, rows: Iterable[Row | tuple]) -> SummaryTable:
    """Build the notebook's summary; also write it to ``$COURSE_SUMMARY_DIR/<notebook>.json`` when set."""
    if not isinstance(notebook, str) or not notebook:
        raise ValueError(f"notebook must be a non-empty name such as '00_measuring'; got {notebook!r}")
    built = tuple(r if isinstance(r, Row) else Row(*r) for r in rows)
    if not built:
        raise ValueError("rows must not be empty")
    for r in built:
        if isinstance(r.value, str) or not isinstance(r.value, (int, float)):
            raise TypeError(f"value of {r.quantity!r} must be a number; got {r.value!r}")
    summary = SummaryTable(notebook, built)
    target = os.environ.get("COURSE_SUMMARY_DIR")
    if target:
        path = Path(target) / f"{notebook}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary.to_dict(), indent=2))
    return summary


def last_verified() -> str:
    """One line for a notebook's last cell: date, machine and framework versions of this run."""
    import datetime

    report = env.report(devices=False)
    versions = ", ".join(f"{fw.name} {fw.version}" for fw in report.frameworks)
    return (
        f"Last verified {datetime.date.today().isoformat()} on {report.cpu} ({report.cores_logical} cores, "
        f"accelerator: {report.accelerator}, size: {report.size}); Python {report.python}; {versions}."
    )
