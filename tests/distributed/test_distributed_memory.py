"""course_utils.distributed.comms.memory_per_device: model state per device under ZeRO stages."""

from __future__ import annotations

import pytest

from course_utils import distributed as dist


def test_memory_per_device_zero_stages() -> None:
    assert dist.memory_per_device(1e9, 8, 0) == pytest.approx(16e9)
    assert dist.memory_per_device(1e9, 8, 1) == pytest.approx((2 + 2 + 12 / 8) * 1e9)
    assert dist.memory_per_device(1e9, 8, 2) == pytest.approx((2 + 14 / 8) * 1e9)
    assert dist.memory_per_device(1e9, 8, 3) == pytest.approx(2e9)


def test_largest_model_is_the_inverse() -> None:
    params = dist.comms.largest_model(141e9, 64, 3)
    assert dist.memory_per_device(params, 64, 3) == pytest.approx(141e9)
    assert dist.comms.largest_model(80e9, 1, 0) == pytest.approx(5e9)
