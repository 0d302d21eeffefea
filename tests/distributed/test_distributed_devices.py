"""course_utils.distributed.devices: simulated JAX devices through jax.config, and a clear error when too late."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | env
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=120)


@pytest.mark.slow
def test_simulate_devices_after_import_before_first_computation_gives_n_devices() -> None:
    out = _python("""
        import jax
        from course_utils import distributed as d
        print(d.simulate_devices(3), len(jax.devices("cpu")))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "3"]


@pytest.mark.slow
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
    assert "RuntimeError: JAX already started with 1 CPU device(s)" in out.stdout
    assert "restart the kernel" in out.stdout
    assert "ok with fewer: 1" in out.stdout


@pytest.mark.slow
def test_without_jax_or_tensorflow_there_are_no_devices() -> None:
    blocker = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "blocker")
    if not os.path.isdir(blocker):
        pytest.skip("tools/blocker (the COURSE_BLOCK shim) is not here")
    out = _python("""
        from course_utils import distributed as d
        print(d.simulate_devices(2), d.tf_logical_cpus(2))
    """, COURSE_BLOCK="tensorflow,jax", PYTHONPATH=os.path.abspath(blocker))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "[]"]


def test_time_threads_times_each_count_and_restores_the_thread_count() -> None:
    import torch

    from course_utils.distributed import devices

    before = torch.get_num_threads()
    x = torch.ones(64, 64)
    runs = devices.time_threads(torch.mm, x, x, threads=[1, 2], min_time=0.01, rounds=3)
    assert sorted(runs) == [1, 2] and torch.get_num_threads() == before
    assert all(len(run.measurement.rounds) == 3 for run in runs.values())  # the counts in turns: an interval
    for n, run in runs.items():
        assert run.threads == n and run.measurement.median > 0 and run.measurement.label.startswith(f"{n} thread")
        assert 0 < run.cores_busy < 2 * n + 1  # CPU seconds per wall second: at most about n busy cores
        assert 0 < run.caller_busy <= run.cores_busy + 0.05  # the calling thread is one of the process's


def test_mlp_threads_fresh_times_the_step_in_a_new_process_with_its_environment() -> None:
    pytest.importorskip("torch")
    from course_utils.distributed import devices

    runs = devices.mlp_threads_fresh({"tiny": ((8, 16, 4), 32)}, [1], {"OMP_WAIT_POLICY": "passive"}, min_time=0.01)
    assert list(runs) == ["tiny"] and list(runs["tiny"]) == [1]
    run = runs["tiny"][1]
    assert run.threads == 1 and run.measurement.median > 0 and 0 < run.caller_busy <= run.cores_busy + 0.05


def test_a_step_that_never_returns_is_stopped_and_named() -> None:
    pytest.importorskip("torch")
    import time

    from course_utils.distributed import devices

    def stuck_step() -> None:
        while True:
            time.sleep(0.01)

    start = time.perf_counter()
    with pytest.raises(TimeoutError, match="stuck_step"):
        devices.time_threads(stuck_step, threads=[1], timeout=0.5)
    assert time.perf_counter() - start < 10
