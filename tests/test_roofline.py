"""course_utils.roofline: the roofline arithmetic, the measured machine, and the bad inputs."""

from __future__ import annotations

import pytest

from course_utils import roofline

MACHINE = roofline.Machine("test", "cpu", {"copy": 10e9, "triad": 20e9}, {"matmul": 100e9})


def test_ceilings_take_the_best_probe() -> None:
    assert MACHINE.bandwidth == 20e9 and MACHINE.peak_flops == 100e9
    assert MACHINE.ridge_intensity == pytest.approx(5.0)


def test_attainable_and_roofline_time() -> None:
    assert roofline.attainable(1.0, MACHINE) == pytest.approx(20e9)  # memory-bound
    assert roofline.attainable(50.0, MACHINE) == pytest.approx(100e9)  # compute-bound
    assert MACHINE.roofline_time(flops=0, bytes=20e9) == pytest.approx(1.0)
    assert MACHINE.roofline_time(flops=200e9, bytes=1.0) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="bytes"):
        roofline.roofline_time(1.0, -1.0, MACHINE)
    with pytest.raises(TypeError, match="intensity"):
        roofline.attainable("high", MACHINE)


def test_point_derived_quantities_and_validation() -> None:
    p = roofline.Point("chain", flops=4e9, bytes=8e9, seconds=0.5)
    assert p.intensity == 0.5 and p.achieved_flops == 8e9 and p.achieved_bandwidth == 16e9
    with pytest.raises(ValueError, match="seconds"):
        roofline.Point("bad", 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="flops"):
        roofline.Point("bad", -1.0, 1.0, 1.0)


def test_measure_machine_rejects_unknown_framework_and_sizes() -> None:
    with pytest.raises(ValueError, match="framework"):
        roofline.measure_machine("mxnet")
    with pytest.raises(ValueError, match="array_bytes"):
        roofline.measure_machine("numpy", array_bytes=10)


@pytest.mark.parametrize("framework", ["numpy", "torch", "jax", "tf"])
def test_measure_machine_gives_plausible_ceilings_and_caches(framework: str) -> None:
    machine = roofline.measure_machine(framework, array_bytes=2**24, matmul_n=256, min_time=0.02)
    assert 1e8 < machine.bandwidth < 1e13 and 1e8 < machine.peak_flops < 1e16
    assert roofline.measure_machine(framework, array_bytes=2**24, matmul_n=256, min_time=0.02) is machine
    assert "GB/s" in repr(machine) and "<table>" in machine._repr_html_()
