"""course_utils.distributed.devices: simulated JAX devices through jax.config, and a clear error when too late."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from course_utils import devices
from course_utils.distributed import devices as d


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


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
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


def _device(name: str) -> devices.Device:
    """A runtime with one of ``devices.KNOWN``'s entries, as ``describe`` would report it."""
    spec = devices.KNOWN[name]
    return devices.Device(spec.kind, spec.name, spec.memory, spec.chips, 2, spec.capability)


class _FakeJax:
    """``jax.devices`` of a runtime with ``accelerators`` default devices and 4 simulated host CPU devices."""

    def __init__(self, accelerators: int) -> None:
        self.accelerators = accelerators

    def devices(self, backend: str | None = None) -> list[str]:
        return [f"cpu{i}" for i in range(4)] if backend == "cpu" else [f"acc{i}" for i in range(self.accelerators)]


@pytest.mark.parametrize("name", ["T4", "TPU v5e-1"])
def test_one_accelerator_shards_over_simulated_host_devices_and_says_so(name, monkeypatch) -> None:
    """A single T4 or TPU v5e-1 would give a 1-device mesh: the plan sends the sharding sections to the host."""
    plan = devices.plan(_device(name), host_memory=12 * 2**30)
    monkeypatch.setitem(sys.modules, "jax", _FakeJax(1))  # the device query, replaced
    assert plan.simulated and plan.mesh_devices == devices.SIMULATED_DEVICES
    assert d.sharding_devices(plan) == ["cpu0", "cpu1", "cpu2", "cpu3"]
    note = d.sharding_note(plan)
    assert "simulated host devices" in note and "Kaggle" in note and "one " in note
    assert "simulated devices are threads" in d.mesh_facts(plan, 2)["where"]


def test_several_accelerators_shard_over_themselves(monkeypatch) -> None:
    plan = devices.plan(_device("TPU v5e-8"), host_memory=12 * 2**30)
    monkeypatch.setitem(sys.modules, "jax", _FakeJax(8))
    assert not plan.simulated and d.sharding_devices(plan) == [f"acc{i}" for i in range(8)]
    assert d.sharding_note(plan) == "JAX sharding: 8 TPU devices of this runtime"
    assert d.mesh_facts(plan, 96) == {"where": "The 8 devices are this runtime's own TPUs, so the times are theirs."}


def test_a_mesh_of_one_device_is_refused_with_the_fix(monkeypatch) -> None:
    plan = devices.plan(_device("T4"), host_memory=12 * 2**30)
    fake = _FakeJax(1)
    fake.devices = lambda backend=None: ["cpu0"]  # simulate_devices came too late
    monkeypatch.setitem(sys.modules, "jax", fake)
    with pytest.raises(RuntimeError, match=r"simulate_devices\(4\)"):
        d.sharding_devices(plan)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["T4", "TPU v5e-1"])
def test_the_jax_sharding_sections_run_on_the_host_under_a_one_device_plan(name) -> None:
    """05's and 06's JAX sharding as the notebooks call them, under the T4 and TPU v5e-1 plans, in a fresh
    process on this CPU: a mesh of the simulated devices, and the collectives the lesson shows."""
    pytest.importorskip("jax")
    out = _python(f"""
        from course_utils import devices
        from course_utils import distributed as d
        from course_utils.beyond import jaxmulti
        d.simulate_devices(devices.SIMULATED_DEVICES)
        spec = devices.KNOWN[{name!r}]
        plan = devices.plan(devices.Device(spec.kind, spec.name, spec.memory, spec.chips, 2, spec.capability))
        out = jaxmulti.jax_sharding(d.sharding_devices(plan), sizes=(8, 16, 4), batch=8)
        smaller = out["sharded"]["argument_bytes"] < out["replicated"]["argument_bytes"]
        print(out["devices"], out["max_diff"] < 1e-6, smaller,
              sorted(k for k, v in out["sharded"]["collectives"].items() if v))
    """)
    assert out.returncode == 0, out.stderr
    n, same, smaller, *found = out.stdout.split(maxsplit=3)
    assert (n, same, smaller) == ("4", "True", "True") and "all-gather" in found[0], out.stdout
