"""The device plan, computed for every known device with the device queries replaced by plain data: what each
profile runs where, in which dtype, with which memory budget, and the sentence of every skip."""

from __future__ import annotations

import os

import pytest

from course_utils import devices

GIB = 2**30
# what each runtime reports (torch's device name, JAX's device_kind), memory as the runtime sees it
PROFILES = {
    "T4": devices.Device("gpu", "Tesla T4", 15 * GIB, 1, 2, (7, 5)),
    "L4": devices.Device("gpu", "NVIDIA L4", 22 * GIB, 1, 12, (8, 9)),
    "A100 40GB": devices.Device("gpu", "NVIDIA A100-SXM4-40GB", 40 * GIB, 1, 12, (8, 0)),
    "A100 80GB": devices.Device("gpu", "NVIDIA A100-SXM4-80GB", 80 * GIB, 1, 12, (8, 0)),
    "H100 PCIe": devices.Device("gpu", "NVIDIA H100 PCIe", 80 * GIB, 1, 16, (9, 0)),
    "H100 SXM": devices.Device("gpu", "NVIDIA H100 80GB HBM3", 80 * GIB, 1, 16, (9, 0)),
    "TPU v5e-1": devices.Device("tpu", "TPU v5 lite-1", 16 * GIB, 1, 44),
    "TPU v6e-1": devices.Device("tpu", "TPU v6 lite-1", 32 * GIB, 1, 44),
    "TPU v5e-8": devices.Device("tpu", "TPU v5 lite-8", 16 * GIB, 8, 96),
}
CPU = devices.Device("cpu", "AMD EPYC", 24 * GIB, 1, 2)


def test_every_known_device_has_a_profile_and_is_recognised() -> None:
    assert set(PROFILES) == set(devices.KNOWN)
    for name, device in PROFILES.items():
        assert devices.spec(device).name == name, device
    assert devices.spec(devices.Device("gpu", "NVIDIA L40S", 44 * GIB, 1, 8, (8, 9))) is None  # not an L4
    assert devices.spec(CPU) is None


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_each_profile_plans_sizes_that_fit_dtypes_that_exist_and_skips_that_say_why(name: str) -> None:
    device = PROFILES[name]
    plan = devices.plan(device, host_memory=12 * GIB)
    spec = plan.spec
    assert spec.source and all(v > 0 for v in spec.peaks.values())
    assert plan.fast_dtype in spec.matrix_dtypes, (name, plan.fast_dtype, spec.matrix_dtypes)
    on_device = [fw for fw in plan.budgets if device.kind == "gpu" or (device.kind == "tpu" and fw == "jax")]
    assert sum(plan.budgets[fw] for fw in on_device) <= 0.9 * device.memory
    for capability, sentence in plan.skips.items():
        assert capability in devices.CAPABILITIES and len(sentence.split()) >= 6, (capability, sentence)
    assert (plan.torch_device == "cuda") == (device.kind == "gpu")
    assert plan.simulated == (device.count == 1) and plan.mesh_devices >= 2
    if device.kind == "gpu":
        assert plan.env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and plan.env["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
        assert ("fp8" in plan.skips) == (device.capability < (8, 9))
    else:
        assert plan.skip("tensorflow") and plan.skip("cuda") and plan.matmul_tolerance >= 1e-2


def test_a_t4_teaches_fp16_and_says_bf16_has_no_units_there() -> None:
    plan = devices.plan(PROFILES["T4"], host_memory=12 * GIB)
    assert plan.fast_dtype == "float16" and "fp16 is its fast format" in plan.skip("bf16 units")
    assert "bfloat16" not in plan.spec.peaks and plan.spec.peaks["float16"] == 65e12


def test_a_cpu_relies_on_what_the_run_measures() -> None:
    plan = devices.plan(CPU, host_memory=24 * GIB)
    assert plan.spec is None and plan.env == {}
    assert plan.torch_device == "cpu" and plan.torch_threads == 2 and plan.simulated
    assert plan.budgets["torch"] == 6 * GIB


def test_apply_sets_only_what_is_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = devices.plan(PROFILES["T4"], host_memory=12 * GIB)
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.5")
    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE", raising=False)
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    done = devices.apply(plan)
    assert set(done) == {"XLA_PYTHON_CLIENT_PREALLOCATE", "TF_FORCE_GPU_ALLOW_GROWTH"}
    assert os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.5"


def test_describe_on_this_machine_is_a_cpu_with_its_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(devices.SIMULATE, raising=False)
    found = devices.describe()
    assert found.kind == "cpu" and found.host_cores == os.cpu_count() and found.rehearsed_on is None


@pytest.mark.parametrize("bad, match", [
    (dict(kind="npu"), "kind must be one of"), (dict(memory=10), "memory must be"),
    (dict(count=0), "count must be"), (dict(capability=(8,)), "capability must"),
    (dict(kind="tpu", capability=(8, 0)), "capability is a GPU's"), (dict(rehearsed_on="npu"), "rehearsed_on"),
])
def test_a_bad_device_is_refused_by_name(bad: dict, match: str) -> None:
    fields = {"kind": "gpu", "name": "x", "memory": 16 * GIB, "count": 1, "host_cores": 2, "capability": None, **bad}
    with pytest.raises((TypeError, ValueError), match=match):
        devices.Device(**fields)


def test_course_device_simulates_a_known_device(monkeypatch) -> None:
    devices.current.cache_clear()
    monkeypatch.setenv(devices.SIMULATE, "T4")
    try:
        t4 = devices.current()
        # a rehearsal: the T4's choices, this CPU's computations (torch stays on the CPU it has)
        assert (t4.device.name, t4.fast_dtype, t4.torch_device, t4.spec.name) == ("T4", "float16", "cpu", "T4")
        assert t4.device.rehearsed_on == "cpu" and t4.skip("bf16 units") and t4.matmul_tolerance == 1e-4
        assert devices.plan(devices.describe()) == t4  # every call site that plans describe()'s device agrees
        assert devices.plan(devices.simulated("T4")).torch_device == "cuda"  # a real T4's plan
        assert devices.simulated("TPU v5e-1") == devices.Device("tpu", "TPU v5e-1", 16 * 10**9, 1, os.cpu_count() or 1)
        with pytest.raises(ValueError, match="name"):
            devices.simulated("T5")
    finally:
        devices.current.cache_clear()
