"""The device plan's choices for notebooks 02 and 03, with the device query (``devices.describe``) replaced by the
T4, L4 and TPU v5e-1 entries of ``devices.KNOWN``: the fast 16-bit dtype 03 times, where torch runs and with how many
threads, and the tolerance of a float32 matmul comparison in each framework."""

from __future__ import annotations

import pytest

from course_utils import devices, fusion
from course_utils import precision as P

GIB = 2**30
QUERIED = {  # what each runtime's query reports (torch's device name, JAX's device_kind)
    "T4": devices.Device("gpu", "Tesla T4", 15 * GIB, 1, 2, (7, 5)),
    "L4": devices.Device("gpu", "NVIDIA L4", 22 * GIB, 1, 12, (8, 9)),
    "TPU v5e-1": devices.Device("tpu", "TPU v5 lite-1", 16 * GIB, 1, 44),
}


def _plan(monkeypatch: pytest.MonkeyPatch, name: str, *, host_bf16: bool = False) -> devices.Plan:
    monkeypatch.setattr(devices, "describe", lambda: QUERIED[name])
    monkeypatch.setattr(devices, "_host_memory", lambda: 12 * GIB)
    monkeypatch.setattr("course_utils.env.has_native_bf16", lambda: host_bf16)
    plan = devices.plan(devices.describe())
    assert plan.spec is devices.KNOWN[name]
    return plan


def test_a_t4_times_fp16_on_its_tensor_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    choices = P.torch_choices(_plan(monkeypatch, "T4"))
    assert (choices.device, choices.amp, choices.short, choices.native) == ("cuda", "float16", "fp16", True)


def test_a_rehearsed_t4_gives_03_fp16_on_this_machines_torch_device(monkeypatch: pytest.MonkeyPatch) -> None:
    devices.current.cache_clear()
    monkeypatch.setenv(devices.SIMULATE, "T4")  # the plan 03 reads (section 7's autocast uses its device and dtype)
    monkeypatch.setattr(devices, "_host_memory", lambda: 12 * GIB)
    try:
        choices = P.torch_choices(devices.current())
    finally:
        devices.current.cache_clear()
    assert (choices.device, choices.amp) == ("cpu", "float16")  # the T4's format; torch stays on this CPU


def test_an_l4_times_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    choices = P.torch_choices(_plan(monkeypatch, "L4"))
    assert (choices.device, choices.amp, choices.short, choices.native) == ("cuda", "bfloat16", "bf16", True)


@pytest.mark.parametrize("host_bf16", [False, True])
def test_on_a_tpu_runtime_torch_is_a_cpu_with_the_hosts_cores(monkeypatch: pytest.MonkeyPatch,
                                                              host_bf16: bool) -> None:
    choices = P.torch_choices(_plan(monkeypatch, "TPU v5e-1", host_bf16=host_bf16))
    assert (choices.device, choices.threads, choices.amp) == ("cpu", 44, "bfloat16")
    assert choices.native == host_bf16  # bf16 has units only where the host CPU has them


def test_matmul_tolerances_follow_where_each_framework_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    tpu = _plan(monkeypatch, "TPU v5e-1")
    assert fusion.matmul_tolerance(tpu, "jax", 1e-3) == pytest.approx(5e-2)  # bf16 passes: max error ~0.022 seen
    assert fusion.matmul_tolerance(tpu, "torch", 1e-3) == 1e-3  # torch stays on the host CPU
    l4 = _plan(monkeypatch, "L4")
    assert fusion.matmul_tolerance(l4, "jax", 1e-5) == pytest.approx(1e-2)  # TF32 by default in XLA
    t4 = _plan(monkeypatch, "T4")
    assert fusion.matmul_tolerance(t4, "torch", 1e-5) == pytest.approx(1e-4)
    cpu = devices.plan(devices.Device("cpu", "AMD EPYC", 24 * GIB, 1, 2), host_memory=24 * GIB)
    assert {fusion.matmul_tolerance(cpu, fw, 1e-5) for fw in ("torch", "jax", "tensorflow")} == {1e-5}


def test_bad_choices_are_refused_by_name() -> None:
    with pytest.raises(TypeError, match="plan"):
        P.torch_choices("T4")
    with pytest.raises(ValueError, match="amp"):
        P.speed.TorchChoices("cpu", 2, "float8", False)
    with pytest.raises(ValueError, match="at_least"):
        fusion.matmul_tolerance(devices.plan(QUERIED["T4"], host_memory=GIB), "jax", 0.0)
