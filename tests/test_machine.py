"""course_utils.machine: the machine measured once per run, then read by every notebook that asks again."""

from __future__ import annotations

import json

import pytest

from course_utils import machine, roofline


def _figures() -> machine.MachineFigures:
    roofs = {"torch": roofline.Machine("torch", "cpu", {"copy": 10e9}, {"matmul": 100e9}),
             "jax": roofline.Machine("jax", "cpu", {"triad": 12e9}, {"matmul": 300e9})}
    return machine.MachineFigures("k", roofs, 1e-10, {"torch": 1e-5, "jax": 3e-6}, "2026-12-05T10:00:00", "measured")


def test_best_roof_names_the_framework_that_reached_it() -> None:
    f = _figures()
    assert f.bandwidth == 12e9 and f.bandwidth_probe == "jax triad"
    assert f.peak_flops == 300e9 and f.flops_probe == "jax matmul"
    assert f.ridge_intensity == pytest.approx(25.0)
    assert f.fault_seconds(2**20) == pytest.approx(2**20 * 1e-10)
    assert "Measured now" in repr(f) and "torch: one compiled call" in repr(f)


def test_figures_are_measured_once_then_read_back(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("COURSE_BUILD_DIR", str(tmp_path))
    monkeypatch.setattr(machine.env, "installed_frameworks", lambda: ["torch", "jax"])  # the frameworks of _figures()
    measured = []
    monkeypatch.setattr(machine, "_measure", lambda key: measured.append(key) or
                        machine.MachineFigures(key, *list(vars(_figures()).values())[1:]))
    machine._FIGURES.clear()
    first = machine.figures()
    machine._FIGURES.clear()  # a new process: only the file remains
    second = machine.figures()
    assert len(measured) == 1 and first.source == "measured" and second.source == "read"
    assert "Read from build/machine/" in second.how and second.bandwidth == first.bandwidth
    (file,) = (tmp_path / "machine").glob("*.json")
    json.loads(file.read_text())
    machine._FIGURES.clear()
    assert machine.figures(refresh=True).source == "measured" and len(measured) == 2
    machine._FIGURES.clear()


def test_a_damaged_file_is_measured_again(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("COURSE_BUILD_DIR", str(tmp_path))
    path = tmp_path / "machine" / f"{machine.machine_key()}.json"
    path.parent.mkdir()
    monkeypatch.setattr(machine.env, "installed_frameworks", lambda: ["torch"])
    path.write_text("{not json")
    assert machine._read(path, "k")[0] is None and "is not a record of figures" in machine._read(path, "k")[1]
    # a whole JSON file whose fields are not figures: a list of roofs, a NaN fault cost, a zero call cost
    good = {"measured_at": "2025-01-01T00:00:00", "fault_seconds_per_byte": 1e-10, "call_cost": {"torch": 1e-5},
            "faults_per_mib": 256.0, "fault_allocator": "torch",
            "roofs": {"torch": {"framework": "torch", "device": "cpu", "bandwidth_probes": {"triad": 2e10},
                                "flops_probes": {"matmul": 1e11}}}}
    assert machine._read(_written(path, good), "k")[0].source == "read"
    for damaged in ({**good, "roofs": []}, {**good, "fault_seconds_per_byte": float("nan")},
                    {**good, "call_cost": {"torch": 0.0}}, [],
                    {k: v for k, v in good.items() if k != "faults_per_mib"}):  # an older probe's record
        found, why = machine._read(_written(path, damaged), "k")
        assert found is None and why
    assert "no framework" in machine._read(_written(path, {**good, "roofs": {}}), "k")[1]
    assert "lacks 'faults_per_mib'" in machine._read(_written(path, {k: v for k, v in good.items()
                                                                       if k != "faults_per_mib"}), "k")[1]


def test_a_folder_at_the_cache_path_is_refused_before_measuring(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("COURSE_BUILD_DIR", str(tmp_path))
    (tmp_path / "machine" / f"{machine.machine_key()}.json").mkdir(parents=True)
    monkeypatch.setattr(machine, "_measure", lambda key: pytest.fail("measured before refusing the path"))
    machine._FIGURES.clear()
    with pytest.raises(ValueError, match="is not a file: remove it"):
        machine.figures()
    assert not list((tmp_path / "machine").glob("*.tmp"))


def test_a_failed_write_leaves_no_temporary_file(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("COURSE_BUILD_DIR", str(tmp_path))
    target = tmp_path / "machine" / "x.json"
    target.mkdir(parents=True)
    (target / "inside").write_text("a folder that rename cannot replace")
    with pytest.raises(OSError):
        machine.store(target, {"a": 1})
    assert not list((tmp_path / "machine").glob("*.tmp"))


def _written(path, data):
    path.write_text(json.dumps(data))
    return path


def test_fault_cost_and_call_cost_are_positive_and_small() -> None:
    per_byte, per_mib, allocator = machine.fault_cost(repeats=3)  # 64 MiB: new pages whatever the heap holds
    assert 0 <= per_byte < 1e-6  # seconds per byte: under 1 ms per KiB is certain
    assert allocator == "torch" and 0 < per_mib <= 2**20 / 4096 * 1.05  # at most one fault per 4 KiB page
    torch = pytest.importorskip("torch")
    assert torch is not None and 0 < machine.call_cost("torch", min_time=0.02) < 0.1


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="nbytes"):
        machine.fault_cost(10)
    with pytest.raises(TypeError, match="refresh"):
        machine.figures(refresh="yes")
    with pytest.raises(ValueError, match="framework"):
        machine.call_cost("caffe")
    with pytest.raises(ValueError, match="machines"):
        machine.best_roof({})



def test_a_bad_min_time_is_refused_before_the_compile_it_would_time() -> None:
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match="min_time"):
        machine.call_cost("torch", min_time=-1.0)  # used to compile first (seconds), then refuse
    assert time.perf_counter() - start < 2


def test_store_writes_whole_records_inside_the_build_folder_only(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("COURSE_BUILD_DIR", str(tmp_path / "build"))
    target = tmp_path / "build" / "machine" / "k.json"
    machine.store(target, {"key": "k", "roofs": {}})
    assert json.loads(target.read_text()) == {"key": "k", "roofs": {}} and not list(target.parent.glob("*.tmp"))
    with pytest.raises(ValueError, match="path must lie inside the build folder"):
        machine.store(tmp_path / "elsewhere.json", {"key": "k"})
    with pytest.raises(TypeError, match="record"):
        machine.store(target, ["not", "a", "mapping"])
