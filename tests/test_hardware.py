"""course_utils.hardware: CPU facts read from the operating system."""

from __future__ import annotations

import pytest

from course_utils import hardware


def test_simd_flags_are_known_names() -> None:
    assert set(hardware.simd_flags()) <= set(hardware._SIMD_FLAGS)
    assert isinstance(hardware.has_native_bf16(), bool)
    assert hardware.cpu_model()


def test_cache_sizes_are_positive_bytes_by_level() -> None:
    sizes = hardware.cache_sizes()
    assert all(name[:2] in ("L1", "L2", "L3", "L4") and value > 0 for name, value in sizes.items())
    assert hardware.last_level_cache_bytes() == max(sizes.values(), default=32 * 2**20)


def test_last_level_cache_default_is_checked() -> None:
    with pytest.raises(ValueError, match="default"):
        hardware.last_level_cache_bytes(default=0)
