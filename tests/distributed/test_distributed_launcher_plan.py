"""The launcher follows the device plan: fewer GPUs than ranks puts every rank on the CPU (gloo), and says so."""

from __future__ import annotations

from course_utils import devices
from course_utils.distributed import launcher


def _plan(monkeypatch, name: str | None) -> None:
    devices.current.cache_clear()
    if name:
        monkeypatch.setenv(devices.SIMULATE, name)
    else:
        monkeypatch.delenv(devices.SIMULATE, raising=False)


def test_one_t4_for_two_ranks_runs_them_on_the_cpu(monkeypatch, capsys) -> None:
    _plan(monkeypatch, "T4")
    try:
        assert launcher.ranks_on_cpu(2, {}) == {"CUDA_VISIBLE_DEVICES": ""}
        assert "every rank runs on the CPU over gloo" in capsys.readouterr().out
        assert launcher.ranks_on_cpu(1, {}) == {}
        assert launcher.ranks_on_cpu(2, {"CUDA_VISIBLE_DEVICES": "0"}) == {}
        _plan(monkeypatch, "TPU v5e-1")
        assert launcher.ranks_on_cpu(2, {}) == {}
    finally:
        devices.current.cache_clear()
