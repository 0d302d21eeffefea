"""Sizes in words: one formatter for bytes, used by every module and notebook (times: ``timing.format_time``)."""

from __future__ import annotations

import math


def format_bytes(nbytes: float) -> str:
    """Binary units with three significant digits: '812 B', '12.3 KiB', '4.56 MiB', '1.23 GiB'."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or math.isnan(nbytes):
        raise TypeError(f"nbytes must be a number; got {nbytes!r}")
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"
