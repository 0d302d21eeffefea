"""course_utils.roofline: the roofline arithmetic, the probe sizing, the measured machine."""

from __future__ import annotations

import pytest

from course_utils import roofline

MACHINE = roofline.Machine("test", "cpu", {"copy": 10e9, "triad": 20e9}, {"matmul": 100e9},
                           {"triad, fresh output": 5e9}, 2**26)


def test_ceilings_take_the_best_in_place_probe() -> None:
    assert MACHINE.bandwidth == 20e9 and MACHINE.peak_flops == 100e9  # the fresh-output probe sets no roof
    assert MACHINE.ridge_intensity == pytest.approx(5.0)


def test_attainable_and_roofline_time() -> None:
    assert roofline.attainable(1.0, MACHINE) == pytest.approx(20e9)  # memory-bound
    assert roofline.attainable(50.0, MACHINE) == pytest.approx(100e9)  # compute-bound
    assert MACHINE.roofline_time(flops=0, bytes=20e9) == pytest.approx(1.0)
    assert MACHINE.roofline_time(flops=200e9, bytes=1.0) == pytest.approx(2.0)


def test_point_derived_quantities_and_share_of_roof() -> None:
    p = roofline.Point("chain", flops=4e9, bytes=8e9, seconds=0.5)
    assert p.intensity == 0.5 and p.achieved_flops == 8e9 and p.achieved_bandwidth == 16e9
    assert roofline.share_of_roof(p, MACHINE) == pytest.approx(8e9 / 10e9)
    copy = roofline.Point("copy", 0, 20e9, 2.0)
    assert roofline.share_of_roof(copy, MACHINE) == pytest.approx(0.5)


def test_machine_table_labels_the_fresh_output_probe() -> None:
    text = repr(MACHINE)
    assert "not a bandwidth" in text and "GB/s" in text and "GFLOP/s" in text and "64 MiB" in text
    assert "<table>" in MACHINE._repr_html_()


def test_probe_size_leaves_the_last_level_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(roofline.env, "last_level_cache_bytes", lambda: 480 * 2**20)
    monkeypatch.setattr(roofline.env, "accelerator", lambda: "cpu")
    monkeypatch.setattr(roofline, "_free_memory", lambda: 64 * 2**30)
    monkeypatch.setenv("COURSE_SIZE", "cpu")
    size = roofline.probe_size()
    assert size.array_bytes == 4 * 480 * 2**20 and size.capped_by == "" and size.cache_multiple == 4
    monkeypatch.setenv("COURSE_SIZE", "ci")
    assert roofline.probe_size().capped_by == "ci size" and roofline.probe_size().array_bytes == roofline.CI_CAP
    monkeypatch.setenv("COURSE_SIZE", "cpu")
    monkeypatch.setattr(roofline, "_free_memory", lambda: 6 * 2**30)
    capped = roofline.probe_size()
    assert capped.capped_by == "memory" and capped.array_bytes == 768 * 2**20  # 4 arrays in half of 6 GiB


def test_small_caches_still_get_64_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(roofline.env, "last_level_cache_bytes", lambda: 2 * 2**20)
    monkeypatch.setattr(roofline.env, "accelerator", lambda: "cpu")
    monkeypatch.setattr(roofline, "_free_memory", lambda: 64 * 2**30)
    monkeypatch.setenv("COURSE_SIZE", "cpu")
    assert roofline.probe_size().array_bytes == roofline.MIN_ARRAY_BYTES


@pytest.mark.parametrize("framework", ["numpy", "torch", "jax", "tf"])
def test_measure_machine_gives_plausible_ceilings_and_caches(framework: str) -> None:
    if framework != "numpy":
        pytest.importorskip({"tf": "tensorflow"}.get(framework, framework))
    machine = roofline.measure_machine(framework, array_bytes=2**22, matmul_n=128, min_time=0.01)
    assert 1e8 < machine.bandwidth < 1e13 and 1e7 < machine.peak_flops < 1e16
    assert set(machine.fresh_output_probes) == {"triad, fresh output"}
    assert machine.array_bytes == 2**22
    assert roofline.measure_machine(framework, array_bytes=2**22, matmul_n=128, min_time=0.01) is machine
