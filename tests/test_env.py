"""course_utils.env: sizes, accelerator detection, the report, seeds and the quiet start."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

from course_utils import env, notebook


@pytest.fixture(autouse=True)
def _fresh_detection(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("COURSE_ACCELERATOR", raising=False)
    monkeypatch.delenv("COURSE_SIZE", raising=False)
    env.accelerator.cache_clear()
    yield
    env.accelerator.cache_clear()


@pytest.mark.parametrize(
    ("size", "accel", "expected"),
    [("ci", "cpu", 1), ("cpu", "cpu", 2), ("", "gpu", 3), ("auto", "tpu", 4), ("gpu", "cpu", 3)],
)
def test_pick_follows_course_size_then_accelerator(monkeypatch, size, accel, expected) -> None:
    monkeypatch.setenv("COURSE_SIZE", size)
    monkeypatch.setenv("COURSE_ACCELERATOR", accel)
    assert env.pick(ci=1, cpu=2, gpu=3, tpu=4) == expected


def test_pick_falls_back_to_cpu_and_tpu_to_gpu(monkeypatch) -> None:
    monkeypatch.setenv("COURSE_SIZE", "ci")
    assert env.pick(cpu=2) == 2
    monkeypatch.setenv("COURSE_SIZE", "tpu")
    assert env.pick(cpu=2, gpu=3) == 3
    monkeypatch.setenv("COURSE_SIZE", "gpu")
    assert env.pick(cpu=2) == 2


def test_pick_rejects_bad_input(monkeypatch) -> None:
    with pytest.raises(ValueError, match="cpu="):
        env.pick(ci=1)
    monkeypatch.setenv("COURSE_SIZE", "big")
    with pytest.raises(ValueError, match="COURSE_SIZE"):
        env.pick(cpu=1)


def test_accelerator_detection_and_override(monkeypatch) -> None:
    assert env.accelerator() in env.ACCELERATORS
    env.accelerator.cache_clear()
    monkeypatch.setenv("COURSE_ACCELERATOR", "tpu")
    assert env.accelerator() == "tpu"
    env.accelerator.cache_clear()
    monkeypatch.setenv("COURSE_ACCELERATOR", "quantum")
    with pytest.raises(ValueError, match="COURSE_ACCELERATOR"):
        env.accelerator()


def test_report_renders_as_text_and_html() -> None:
    report = env.report()
    text, html = str(report), report._repr_html_()
    for key in ("Python", "CPU", "Cores", "SIMD", "RAM", "Accelerator", "torch", "jax", "tensorflow"):
        assert key in text and key in html
    assert report.cores_logical >= 1 and report.ram_gib > 0
    assert report.load_average is not None and "Load average" in text
    assert "cpu" in {fw.name: fw for fw in report.frameworks}["torch"].devices


def test_available_normalises_names_and_refuses_unknown_ones() -> None:
    assert env.available("tf") == env.available("tensorflow")
    with pytest.raises(ValueError, match="framework"):
        env.available("mxnet")


def test_blocked_framework_is_not_available_in_a_fresh_process() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    blocker = Path(__file__).resolve().parents[1] / "tools" / "blocker"
    code = ("import course_utils as cu\nprint(cu.env.available('tensorflow'), cu.env.available('torch'))\n"
            "try:\n    import tensorflow\nexcept ModuleNotFoundError:\n    print('refused')")
    environ = {**os.environ, "COURSE_BLOCK": "tensorflow", "PYTHONPATH": str(blocker)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=120)
    assert out.stdout.split() == ["False", "True", "refused"], out.stderr


def test_missing_framework_says_not_installed(monkeypatch) -> None:
    monkeypatch.setattr(env, "available", lambda name: False)
    report = env.report()
    assert all(fw.version == "not installed" for fw in report.frameworks)
    assert env.installed_frameworks() == []


def test_broken_framework_is_reported_not_raised(monkeypatch) -> None:
    def broken(name: str):
        raise RuntimeError("driver mismatch")

    monkeypatch.setattr(env, "_devices", broken)
    info = {fw.name: fw for fw in env.report().frameworks}["jax"]
    assert info.devices and "driver mismatch" in info.devices[0]


def test_seed_everything_makes_numpy_and_random_repeat() -> None:
    notebook.seed_everything(3)
    first = (random.random(), np.random.rand())
    seeded = notebook.seed_everything(3)
    assert (random.random(), np.random.rand()) == first
    assert seeded[:2] == ["random", "numpy"]
    with pytest.raises(ValueError, match="seed"):
        notebook.seed_everything(-1)


def test_seed_everything_seeds_imported_torch() -> None:
    torch = pytest.importorskip("torch")
    notebook.seed_everything(5)
    a = torch.rand(3)
    assert "torch" in notebook.seed_everything(5)
    assert torch.equal(a, torch.rand(3))


def test_fail_on_deprecations_turns_our_own_deprecations_into_errors() -> None:
    with warnings.catch_warnings():
        env.fail_on_deprecations(module="test_env")
        with pytest.raises(DeprecationWarning):
            warnings.warn("old API", DeprecationWarning, stacklevel=1)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always", UserWarning)
            warnings.warn("a real warning", UserWarning, stacklevel=1)  # still only a warning


def test_silenced_stderr_drops_native_writes_and_restores_the_descriptor(capfd) -> None:
    import os

    with env.silenced_stderr():
        os.write(2, b"native noise\n")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_build_dir_is_the_checkout_build_folder_from_any_subfolder(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(env.BUILD_ENV, raising=False)
    (tmp_path / "course_utils").mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # where a notebook's kernel starts
    assert env.build_dir("traces") == tmp_path.resolve() / "build" / "traces"
    monkeypatch.setenv(env.BUILD_ENV, str(tmp_path / "elsewhere"))
    assert env.build_dir() == tmp_path / "elsewhere"
    with pytest.raises(TypeError, match="parts"):
        env.build_dir(3)


def test_smoke_size_takes_ci_sizes_and_a_tenth_of_the_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COURSE_SIZE", "smoke")
    assert env.pick(ci=1, cpu=2) == 1 and env.pick(smoke=0, ci=1, cpu=2) == 0 and env.pick(cpu=2) == 2
    assert env.time_scale() == env.SMOKE_TIME_SCALE
    monkeypatch.setenv("COURSE_SIZE", "ci")
    assert env.time_scale() == 1.0 and env.pick(smoke=0, ci=1, cpu=2) == 1


def test_build_dir_stays_inside_the_build_folder(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("COURSE_BUILD_DIR", str(tmp_path))
    assert env.build_dir("traces", "a.json") == tmp_path / "traces" / "a.json"
    for bad in ("/etc", "../x", "a/../../etc"):
        with pytest.raises(ValueError, match="parts"):
            env.build_dir(bad)


def test_seeds_take_numpy_integers_and_stop_at_32_bits() -> None:
    assert notebook.seed_everything(np.int64(3))[:2] == ["random", "numpy"]
    with pytest.raises(ValueError, match="seed"):
        notebook.seed_everything(2**32)  # NumPy's own error did not name the argument
    with pytest.raises(TypeError, match="module"):
        env.fail_on_deprecations(123)  # the warnings module raised a bare AssertionError
    with pytest.raises(ValueError, match="module"):
        env.fail_on_deprecations("(")


def test_sizes_declares_a_notebooks_table_once(monkeypatch) -> None:
    monkeypatch.setenv("COURSE_SIZE", "ci")
    sizes = env.sizes(rows=dict(ci=8, cpu=16, gpu=64), batch=dict(cpu=32))
    assert (sizes.rows, sizes.batch) == (8, 32)
    shown = repr(sizes)
    assert "ci (this run)" in shown and "rows" in shown and "64" in shown
    assert "<table>" in sizes._repr_html_()
    with pytest.raises(AttributeError, match="no size named 'row'"):
        sizes.row  # noqa: B018


@pytest.mark.parametrize("bad, match", [
    ({}, "at least one"),
    ({"rows": 8}, "must be a dict"),
    ({"rows": dict(ci=8)}, "needs cpu="),
    ({"rows": dict(cpu=8, laptop=4)}, "names \\['laptop'\\]"),
])
def test_sizes_refuses_a_bad_table(bad, match) -> None:
    with pytest.raises((TypeError, ValueError), match=match):
        env.sizes(**bad)


def test_simd_flags_are_known_names() -> None:
    assert set(env.simd_flags()) <= set(env._SIMD_FLAGS)
    assert isinstance(env.has_native_bf16(), bool)
    assert env.cpu_model()


def test_cache_sizes_are_positive_bytes_by_level() -> None:
    sizes = env.cache_sizes()
    assert all(name[:2] in ("L1", "L2", "L3", "L4") and value > 0 for name, value in sizes.items())
    assert env.last_level_cache_bytes() == max(sizes.values(), default=32 * 2**20)
