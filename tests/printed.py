"""Reading numbers back from a printed table, for issue 36's rule 1 ("the printed point estimate divides"): the
tests of every table that prints two times and a speed-up check it on the table's own output with these."""

from __future__ import annotations

import re

import pytest

from course_utils import display

UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(cell: str) -> float:
    """The first time a cell prints ('21.4 ms (19.6-26.2 ms)' -> 0.0214)."""
    value, unit = re.match(r"([\d.]+) (ns|µs|ms|s)\b", cell).groups()
    return float(value) * UNITS[unit]


def divides_or_names(table: display.Table, baseline: int | str, candidate: int | str, speedup: int | str) -> None:
    """Each row's printed speed-up is the ratio of its printed medians (to 2%), or the table names its estimate
    (a geometric mean of per-round ratios) in its header or note. Columns by index or by header."""
    named = "geometric mean" in (table.note or "") + " ".join(table.header)
    for row in table.rows:
        cells = dict(zip(table.header, row)) if isinstance(baseline, str) else dict(enumerate(row))
        if cells[speedup] in ("baseline", "-"):
            continue
        ratio = seconds(cells[baseline]) / seconds(cells[candidate])
        printed = float(cells[speedup].split("x")[0])
        assert named or printed == pytest.approx(ratio, rel=0.02), (row, ratio)
