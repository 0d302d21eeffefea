"""What a notebook shows: the one ``Table`` (text and HTML), the time, byte and rate formatters, ``Prose``, and the
count of scored predictions for the summary."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Annotated, Any

from course_utils import declare, validate
from course_utils.declare import NonEmpty, NonNegativeFloat, PositiveFloat, Range, Text


@declare.checked
@dataclass(frozen=True, repr=False)
class Table:
    """A titled grid of strings: aligned text in a terminal, an HTML table in Jupyter."""

    header: Annotated[tuple[str, ...], NonEmpty]
    rows: tuple[tuple[str, ...], ...]
    title: str | None = None
    note: str | None = None

    def __post_init__(self) -> None:
        header, rows = tuple(self.header), tuple(tuple(row) for row in self.rows)
        for i, row in enumerate(rows):
            if len(row) != len(header):
                raise ValueError(f"rows[{i}] has {len(row)} cells; the header has {len(header)}")
        object.__setattr__(self, "header", header)  # lists in, tuples kept: the table is frozen
        object.__setattr__(self, "rows", rows)

    def column(self, name: str) -> list[str]:
        """The cells of the column headed ``name``."""
        index = self.header.index(validate.choice("name", name, self.header))
        return [row[index] for row in self.rows]

    def __repr__(self) -> str:
        widths = [max(len(c) for c in column) for column in zip(self.header, *self.rows)]
        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
        lines = [self.title] if self.title else []
        lines += [line(self.header), line(["-" * w for w in widths]), *(line(r) for r in self.rows)]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        caption = f"<caption style='text-align:left'>{escape(self.title)}</caption>" if self.title else ""
        head = "".join(f"<th>{escape(h)}</th>" for h in self.header)
        body = "".join(
            "<tr>" + "".join(f"<td style='text-align:{_align(c)}'>{escape(c)}</td>" for c in row) + "</tr>"
            for row in self.rows
        )
        note = f"<p style='font-size:smaller'>{escape(self.note)}</p>" if self.note else ""
        return f"<table>{caption}<tr>{head}</tr>{body}</table>{note}"


class Tabled:
    """Shown as its ``table()``: aligned text in a terminal, HTML in Jupyter (a mixin for the course's results)."""

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _align(cell: str) -> str:
    """Numbers right, words left: a cell that starts like a number is right-aligned."""
    stripped = cell.lstrip("~<>+-−≈ ")
    return "right" if stripped[:1].isdigit() else "left"


@declare.checked
def table(header: Iterable[Any], rows: Iterable[Iterable[Any]], *, title: str | None = None,
          note: str | None = None) -> Table:
    """Build a Table, each cell turned into text with ``str`` (format numbers first); ``header``, ``rows`` and each row
    are iterables but never a string (``rows="abc"`` would be three one-letter rows)."""
    head = tuple(str(h) for h in validate.non_empty("header", list(header)))
    return Table(head, tuple(tuple(str(c) for c in row) for row in rows), title, note)


TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


@declare.checked
def time_unit(seconds: float) -> tuple[float, str]:
    """(scale, unit) of the largest unit not above ``seconds``: what a chart of such times is labelled in."""
    seconds = abs(seconds)
    return next(((scale, unit) for scale, unit in TIME_UNITS if seconds >= scale), TIME_UNITS[-1])


@declare.checked
def format_time(seconds: float) -> str:
    """Time with three significant digits: '812 ns', '12.3 µs', '4.56 ms', '1.23 s'."""
    seconds = float(f"{seconds:.3g}")  # round first: 0.000999999 is '1 ms'
    scale, unit = time_unit(seconds)
    return f"{seconds / scale:.3g} {unit}"


@declare.checked
def format_bytes(nbytes: float) -> str:
    """Bytes in binary units with three significant digits: '812 B', '12.3 KiB', '4.56 MiB', '1.23 GiB'."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(float(f"{nbytes / scale:.3g}")) >= 1:  # round first: 1023.9999 KiB is '1 MiB'
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


@declare.checked
def format_rate(bytes_per_second: NonNegativeFloat) -> str:
    """Bandwidth in decimal GB/s (10^9 bytes per second), the unit that hardware data sheets quote."""
    return f"{bytes_per_second / 1e9:.3g} GB/s"


@declare.checked
def format_flops(flops_per_second: NonNegativeFloat) -> str:
    """Compute throughput in decimal GFLOP/s or TFLOP/s, as data sheets quote it."""
    rate = flops_per_second
    return f"{rate / 1e12:.3g} TFLOP/s" if rate >= 1e12 else f"{rate / 1e9:.3g} GFLOP/s"


HELD, FAILED, NOT_DECIDED, NOT_TESTED = "held", "failed", "not decided", "not tested"
STATUSES = (HELD, FAILED, NOT_DECIDED, NOT_TESTED)
_ISSUED: list[Any] = []  # every verdict or finding of this process, in order: the summary table counts them


def record(scored: Any) -> Any:
    """Count a scored prediction (anything with a ``status``) for this process's summary; returns it."""
    validate.choice("scored.status", getattr(scored, "status", None), STATUSES)
    _ISSUED.append(scored)
    return scored


def verdict_counts() -> dict[str, int]:
    """How many predictions this process scored so far, by status: held, failed, not decided, not tested."""
    return {status: sum(v.status == status for v in _ISSUED) for status in STATUSES}


MAX_PARAGRAPH_WORDS = 120


@declare.checked
@dataclass(frozen=True, repr=False)
class Prose:
    """Markdown told from a run's verdicts and numbers (a lesson's ``story`` returns it); Jupyter renders it as
    Markdown, a terminal as text. Paragraphs are kept to ``MAX_PARAGRAPH_WORDS`` by each story's tests."""

    text: Text

    @property
    def paragraphs(self) -> list[str]:
        return [p.strip() for p in self.text.split("\n\n") if p.strip()]

    @property
    def longest_paragraph(self) -> int:
        """Words in the longest paragraph that is not a table or a list of table rows."""
        return max((len(p.split()) for p in self.paragraphs if not p.lstrip().startswith("|")), default=0)

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def _repr_markdown_(self) -> str:
        return self.text


@declare.checked
def prose(*paragraphs: str) -> Prose:
    """Join non-empty paragraphs into one Markdown block (empty strings, e.g. a branch with nothing to say,
    are dropped)."""
    kept = [p.strip() for p in paragraphs]
    return Prose("\n\n".join(p for p in kept if p))


@declare.checked
def percent(value: float, digits: Annotated[int, Range(0, 6)] = 0) -> str:
    """A share as a percentage: 0.426 -> '43%' (``digits`` decimals, 0 to 6); NaN is refused rather than printed."""
    return f"{value:.{digits}%}"


@declare.checked
def ratio(value: PositiveFloat) -> str:
    """A speed-up or ratio: 2.345 -> '2.35x' (three significant digits). A ratio of two times or sizes is positive:
    zero, a negative or NaN is refused rather than printed."""
    return f"{value:.3g}x"
