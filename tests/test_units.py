"""course_utils.units: byte sizes in words."""

from __future__ import annotations

import pytest

from course_utils import units


def test_format_bytes() -> None:
    assert units.format_bytes(512) == "512 B"
    assert units.format_bytes(1536) == "1.5 KiB"
    assert units.format_bytes(3 * 2**20) == "3 MiB"
    assert units.format_bytes(2.5 * 2**30) == "2.5 GiB"
    with pytest.raises(TypeError, match="nbytes"):
        units.format_bytes("1 MiB")
