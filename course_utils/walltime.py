"""Where a launch's wall time went: the parts its processes measured on their own clocks, and the rest outside."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

from course_utils import validate


def time_split(wall: float, parts: Mapping[str, float], *, inside: float | None = None) -> dict[str, float]:
    """``{"wall": wall, **parts, "outside": wall - inside}`` (seconds), ``inside`` the parts' sum unless they overlap
    (pass it); a NaN part (not reported) leaves "outside" NaN."""
    wall = float(validate.non_negative("wall", wall))
    validate.instance("parts", parts, Mapping)
    split = {"wall": wall}
    for name, seconds in parts.items():
        if validate.text("parts key", name) in ("wall", "outside"):
            raise ValueError(f"parts must not name {name!r}: time_split adds it")
        split[name] = float(validate.instance(f"parts[{name!r}]", seconds, numbers.Real))
    covered = sum(split[name] for name in parts) if inside is None else float(validate.number("inside", inside))
    return {**split, "outside": wall - covered}
