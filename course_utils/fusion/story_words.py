"""The small pieces notebook 02's story sentences share: argument checks for stored verdicts and intervals, lists
of names, and where a working set sits against the last-level cache. No sentence of the notebook lives here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from course_utils import display, intervals, validate

#: a working set this many times the last-level cache streams from main memory (as the bandwidth probes do)
MAIN_MEMORY_MULTIPLE = 4


def verdict(v: Any) -> display.Verdict:
    """``v`` if it is a stored verdict (``cu.display.verdict`` or ``not_tested``)."""
    return validate.instance("v", v, display.Verdict)


def gains(name: str, values: Any) -> dict[str, intervals.Speedup]:
    """``values`` if it is a non-empty mapping of names to ``cu.intervals.Speedup``."""
    validate.instance(name, values, Mapping)
    validate.non_empty(name, values)
    for key, value in values.items():
        validate.instance(f"{name}[{key!r}]", value, intervals.Speedup)
    return dict(values)


def names(name: str, values: Any) -> list[str]:
    """``values`` if it is a list or tuple of strings (a string itself is not a list of names)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of names; got {type(values).__name__} {values!r}")
    return [validate.text(f"{name}[{i}]", v) for i, v in enumerate(values)]


def listed(items: Iterable[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def outcome(g: intervals.Speedup) -> str:
    """'1.42x faster (95% interval ...)', '1.3x slower (...)' or 'within the noise (...)', read from the interval."""
    if g.faster:
        return f"{g.ratio:.3g}x faster ({g.interval})"
    if g.slower:
        return f"{1 / g.ratio:.3g}x slower ({g.interval})"
    return f"within the noise ({g})"


def working_set(nbytes: float, llc: float | None) -> str:
    """Where ``nbytes`` in and out sit against a last-level cache of ``llc`` bytes: inside it, under 4x it (partly
    served from cache), or 4x and more (main memory), said with the sizes."""
    validate.positive("nbytes", nbytes)
    if not llc:
        return f"{display.format_bytes(nbytes)} in and out; this CPU reports no last-level cache size to compare with"
    llc = validate.positive("llc", llc)
    ratio = nbytes / llc
    head = f"{display.format_bytes(nbytes)} in and out, {ratio:.2g}x the {display.format_bytes(llc)} last-level cache"
    if ratio <= 1:
        return f"{head}: it fits, so the bandwidth it meets is the cache's as much as memory's"
    if ratio < MAIN_MEMORY_MULTIPLE:
        return (f"{head}: under the {MAIN_MEMORY_MULTIPLE}x at which this course counts a stream as main memory, so "
                "part of it may be served from cache")
    return f"{head}: {MAIN_MEMORY_MULTIPLE}x or more, so it streams from main memory"


def untested(v: display.Verdict, what: str) -> str:
    """The paragraph for a prediction this run could not test: what was not tested, and why."""
    return f"{what} was not tested here: {v.why}."
