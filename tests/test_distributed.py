"""course_utils.distributed: torchrun launches (results, clear errors, no orphans), simulated devices, cost models."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from course_utils import distributed as dist


def _write(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "worker_under_test.py"
    script.write_text(textwrap.dedent(body))
    return script


def _survivors(marker: str) -> list[psutil.Process]:
    """Live processes whose command line mentions ``marker`` (the test's unique script path)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if marker in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            continue
    return found


def _assert_no_orphans(script: Path, pids: list[int] = ()) -> None:
    deadline = time.time() + 5  # signals are delivered asynchronously; give the kernel a moment
    while _survivors(str(script)) and time.time() < deadline:
        time.sleep(0.1)
    assert not _survivors(str(script)), [p.info["cmdline"] for p in _survivors(str(script))]
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# ---------------------------------------------------------------------------------------------------------
# launch


def test_command_is_real_torchrun_on_loopback(tmp_path: Path) -> None:
    cmd = dist.torchrun_command(tmp_path / "w.py", 3, ["--x", "1"], 12345, tmp_path / "logs")
    assert Path(cmd[0]).name == "torchrun" or cmd[1:3] == ["-m", "torch.distributed.run"]
    assert "--master-addr=127.0.0.1" in cmd and "--master-port=12345" in cmd and "--nproc-per-node=3" in cmd
    assert "--max-restarts=0" in cmd and cmd[-3:] == [str(tmp_path / "w.py"), "--x", "1"]


def test_free_port_can_be_bound() -> None:
    import socket

    port = dist.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="nprocs"):
        dist.launch("fail_demo.py", nprocs=0)
    with pytest.raises(ValueError, match="timeout"):
        dist.launch("fail_demo.py", nprocs=1, timeout=0)
    with pytest.raises(FileNotFoundError, match="ddp_train.py"):
        dist.launch("no_such_worker.py")


def test_shipped_workers_exist_and_show() -> None:
    for name in ("ddp_train.py", "fail_demo.py"):
        assert dist.worker_path(name).is_file()
    assert "init_process_group" in dist.show_worker("ddp_train.py").data


@pytest.mark.slow
def test_success_returns_records_arrays_and_leaves_no_process(tmp_path: Path, capsys) -> None:
    script = _write(tmp_path, """
        from course_utils import distributed as d
        r = d.rank()
        print("hello from", r)
        d.progress(1, 1)
        d.emit(kind="hello", rank=r, square=r * r)
        d.save("weights", w=[r, r + 1.5])
    """)
    result = dist.launch(script, nprocs=2, timeout=120, progress=False)
    assert result.record("hello", 1)["square"] == 1 and result.record("hello", 0)["rank"] == 0
    assert np.array_equal(result.arrays["weights"][1]["w"], [1.0, 2.5])
    assert "[rank 1] hello from 1" in capsys.readouterr().out
    assert not any("@@progress" in line for line in capsys.readouterr().out.splitlines())
    assert result.pids, "the launcher should have seen its processes"
    _assert_no_orphans(script, result.pids)


@pytest.mark.slow
def test_failing_rank_raises_with_its_traceback_and_kills_the_others(tmp_path: Path) -> None:
    script = _write(tmp_path, """
        import os, time
        def read_shard():
            raise ValueError("shard 7 is corrupt (test)")
        if os.environ["RANK"] == "1":
            read_shard()
        time.sleep(120)  # rank 0 would wait forever
    """)
    start = time.perf_counter()
    with pytest.raises(dist.LaunchError) as info:
        dist.launch(script, nprocs=2, timeout=100, echo=False, progress=False)
    assert time.perf_counter() - start < 60, "the launcher must not wait for the sleeping rank"
    error = info.value
    assert error.rank == 1 and error.exitcode == 1
    text = str(error)
    assert "rank 1 failed" in text and "Traceback (most recent call last)" in text
    assert "in read_shard" in text and "ValueError: shard 7 is corrupt (test)" in text
    assert not isinstance(error, dist.LaunchTimeout)
    _assert_no_orphans(script)


@pytest.mark.slow
def test_timeout_kills_every_process(tmp_path: Path) -> None:
    script = _write(tmp_path, """
        import time
        print("ready", flush=True)
        time.sleep(300)
    """)
    with pytest.raises(dist.LaunchTimeout, match="did not finish within 20 s") as info:
        dist.launch(script, nprocs=2, timeout=20, echo=False, progress=False)
    assert isinstance(info.value, TimeoutError)
    assert any(line.endswith("ready") for line in info.value.output), "workers should have started"
    _assert_no_orphans(script)


@pytest.mark.slow
def test_keyboard_interrupt_kills_every_process(tmp_path: Path) -> None:
    script = _write(tmp_path, """
        import time
        print("ready", flush=True)
        time.sleep(300)
    """)
    seen = []

    def interrupt(rank, text):  # Ctrl-C arrives while the cell waits for output
        seen.append(rank)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dist.launch(script, nprocs=2, timeout=120, echo=False, progress=False, on_line=interrupt)
    _assert_no_orphans(script)


def test_failure_parsing_prefers_torchruns_root_cause() -> None:
    lines = ["[default0]:[rank0]: Traceback (most recent call last):", "[default0]:[rank0]: RuntimeError: gloo closed",
             "[default1]:Traceback (most recent call last):", '[default1]:  File "w.py", line 3',
             "[default1]:KeyError: 'x'", "Root Cause (first observed failure):", "[0]:",
             "  rank      : 1 (local_rank: 1)", "  exitcode  : 1 (pid: 42)"]
    error = dist._failure("w.py", 2, 1, lines)
    assert error.rank == 1 and error.traceback.endswith("KeyError: 'x'") and "gloo" not in error.traceback


def test_emit_prints_json_outside_launch(monkeypatch, capsys) -> None:
    monkeypatch.delenv("COURSE_DIST_OUT", raising=False)
    dist.emit(kind="x", value=1)
    assert capsys.readouterr().out.strip() == '{"kind": "x", "value": 1}'


# ---------------------------------------------------------------------------------------------------------
# simulated devices


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | env
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=120)


def test_simulate_devices_before_jax_gives_n_devices_and_keeps_other_flags() -> None:
    out = _python("""
        import os
        from course_utils import distributed as d
        d.simulate_devices(3)
        import jax
        print(len(jax.devices("cpu")), os.environ["XLA_FLAGS"])
    """, XLA_FLAGS="--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=2")
    assert out.returncode == 0, out.stderr
    count, flags = out.stdout.split(" ", 1)
    assert count == "3" and "--xla_cpu_enable_fast_math=false" in flags and "device_count=2" not in flags


def test_simulate_devices_after_jax_started_is_a_clear_error() -> None:
    out = _python("""
        import jax
        jax.devices()
        from course_utils import distributed as d
        try:
            d.simulate_devices(4)
        except RuntimeError as e:
            print("RuntimeError:", e)
        print("ok with fewer:", d.simulate_devices(1))
    """)
    assert out.returncode == 0, out.stderr
    assert "RuntimeError: JAX was already imported and started with 1 CPU device(s)" in out.stdout
    assert "restart the kernel" in out.stdout and "before `import jax`" in out.stdout
    assert "ok with fewer: 1" in out.stdout


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "4"])
def test_simulate_devices_rejects_bad_n(bad) -> None:
    with pytest.raises(ValueError, match="n must be a positive int"):
        dist.simulate_devices(bad)
    with pytest.raises(ValueError, match="n must be a positive int"):
        dist.tf_logical_cpus(bad)


# ---------------------------------------------------------------------------------------------------------
# cost models


def test_ring_model_formula() -> None:
    assert dist.ring_allreduce_time(1e9, 1, 1e9, 1e-3) == 0.0
    assert dist.ring_allreduce_time(1e9, 2, 1e9, 0.0) == pytest.approx(1.0)  # 2(1)/2 x 1 s
    assert dist.ring_allreduce_time(0, 5, 1e9, 1e-6) == pytest.approx(8e-6)
    t = dist.ring_allreduce_time(1e8, np.array([2, 8, 512]), 1e10, 0.0)
    assert t.shape == (3,) and t[-1] < 2 * 1e8 / 1e10
    with pytest.raises(ValueError, match="bandwidth"):
        dist.ring_allreduce_time(1, 2, 0, 0)


def test_fit_recovers_the_model_from_noisy_times() -> None:
    sizes = 2.0 ** np.arange(10, 25)
    true = dist.ring_allreduce_time(sizes, 2, 3e9, 40e-6)
    noisy = true * np.random.default_rng(0).uniform(0.97, 1.03, sizes.size)
    model = dist.fit_allreduce(sizes, noisy, n=2)
    assert model.bandwidth == pytest.approx(3e9, rel=0.05) and model.latency == pytest.approx(40e-6, rel=0.1)
    assert model.time(1e6, 2) == pytest.approx(dist.ring_allreduce_time(1e6, 2, 3e9, 40e-6), rel=0.05)
    assert "GB/s" in repr(model)


def test_fit_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        dist.fit_allreduce([1, 2], [1.0], n=2)
    with pytest.raises(ValueError, match="n must be >= 2"):
        dist.fit_allreduce([1, 2], [1.0, 2.0], n=1)
    with pytest.raises(ValueError, match="no bandwidth"):
        dist.fit_allreduce([1e3, 1e6, 1e9], [3.0, 2.0, 1.0], n=2)


def test_memory_per_device_zero_stages() -> None:
    assert dist.memory_per_device(1e9, 8, 0) == pytest.approx(16e9)
    assert dist.memory_per_device(1e9, 8, 1) == pytest.approx((2 + 2 + 12 / 8) * 1e9)
    assert dist.memory_per_device(1e9, 8, 2) == pytest.approx((2 + 14 / 8) * 1e9)
    assert dist.memory_per_device(1e9, 8, 3) == pytest.approx(2e9)
    with pytest.raises(ValueError, match="stage"):
        dist.memory_per_device(1e9, 8, 4)


def test_figures_are_returned() -> None:
    from matplotlib.figure import Figure

    model = dist.AllReduceModel(1e9, 1e-5)
    assert isinstance(dist.diagram(), Figure)
    assert isinstance(dist.scaling_plot(model, 4e6, 0.03, {"link": (1e10, 5e-6)}), Figure)
    assert isinstance(dist.allreduce_fit_plot([1e3, 1e6], [1e-4, 1e-3], model), Figure)
    assert isinstance(dist.breakdown_plot({"m": {"a": (1e-3, 0.0), "b": (5e-4, 1e-3)}}), Figure)
    assert dist.measurement("x", [0.1, 0.2]).median == pytest.approx(0.15)
