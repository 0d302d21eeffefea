"""Where the course runs: a ``Device`` as data, the known devices' sourced peaks, and the ``Plan`` computed from one
(never a live query, so every profile plans anywhere): memory, dtype, tolerance, mesh, torch's device, the skips."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from course_utils import declare, env, validate
from course_utils.declare import Range, Text

DTYPES = ("float32", "tfloat32", "float16", "bfloat16", "float8")
TB = 1e12
#: one GPU shared by three frameworks in one kernel: PyTorch's caching allocator grows as it needs, JAX and TF are
#: told their share before their first operation (JAX would take 75% of the card at start, TF all of it)
GPU_SHARES = {"torch": 0.45, "jax": 0.25, "tensorflow": 0.20}
SIMULATED_DEVICES = 4  # host CPU devices that stand in for a mesh when the accelerator has one device


@dataclass(frozen=True)
class Spec:
    """A known device from its data sheet: dense peak FLOP/s per dtype (sparsity figures halved), memory in bytes,
    which dtypes its matrix units take, and where the numbers come from."""

    name: str
    kind: str
    memory: int
    peaks: Mapping[str, float]
    source: str
    capability: tuple[int, int] | None = None  # CUDA compute capability
    chips: int = 1
    pattern: str = ""  # a regular expression for the names runtimes report (torch's device name, JAX's device_kind)

    @property
    def matrix_dtypes(self) -> tuple[str, ...]:
        """The dtypes with a dense peak above fp32's: what the matrix units (tensor cores, the MXU) run."""
        return tuple(d for d in DTYPES if d != "float32" and self.peaks.get(d, 0) > self.peaks.get("float32", 0))


_NVIDIA = "NVIDIA {} data sheet (dense figures; the sheet's 'with sparsity' figures are twice these)"
_A100 = {"float32": 19.5 * TB, "tfloat32": 156 * TB, "float16": 312 * TB, "bfloat16": 312 * TB}  # both memory sizes
KNOWN: dict[str, Spec] = {s.name: s for s in (
    Spec("T4", "gpu", 16 * 10**9, {"float32": 8.1 * TB, "float16": 65 * TB}, _NVIDIA.format("T4"), (7, 5),
         pattern=r"\bT4\b"),
    Spec("L4", "gpu", 24 * 10**9, {"float32": 30.3 * TB, "tfloat32": 60 * TB, "float16": 121 * TB,
                                   "bfloat16": 121 * TB, "float8": 242.5 * TB}, _NVIDIA.format("L4"), (8, 9),
         pattern=r"\bL4\b"),
    Spec("A100 40GB", "gpu", 40 * 10**9, _A100, _NVIDIA.format("A100"), (8, 0), pattern=r"\bA100\b"),
    Spec("A100 80GB", "gpu", 80 * 10**9, _A100, _NVIDIA.format("A100"), (8, 0), pattern=r"\bA100\b"),
    Spec("H100 PCIe", "gpu", 80 * 10**9, {"float32": 51 * TB, "tfloat32": 378 * TB, "float16": 756 * TB,
                                          "bfloat16": 756 * TB, "float8": 1513 * TB}, _NVIDIA.format("H100"), (9, 0),
         pattern=r"\bH100\b.*\bPCIE\b"),
    Spec("H100 SXM", "gpu", 80 * 10**9, {"float32": 67 * TB, "tfloat32": 494.5 * TB, "float16": 989.5 * TB,
                                         "bfloat16": 989.5 * TB, "float8": 1979 * TB}, _NVIDIA.format("H100"),
         (9, 0), pattern=r"\bH100\b(?!.*\b(PCIE|NVL)\b)"),
    Spec("TPU v5e-1", "tpu", 16 * 10**9, {"bfloat16": 197 * TB}, "Google Cloud TPU v5e documentation (per chip)",
         pattern=r"\bV5 ?(E|LITE)"),
    Spec("TPU v6e-1", "tpu", 32 * 10**9, {"bfloat16": 918 * TB},
         "Google Cloud TPU v6e (Trillium) documentation (per chip)", pattern=r"\bV6 ?(E|LITE)"),
    Spec("TPU v5e-8", "tpu", 16 * 10**9, {"bfloat16": 197 * TB},
         "Google Cloud TPU v5e documentation (per chip; Kaggle's v5e-8 has 8 chips)", chips=8,
         pattern=r"\bV5 ?(E|LITE)"),
)}


_Kind = Literal["cpu", "gpu", "tpu"]
_Many = Annotated[int, Range(1, 4096)]
_Version = Annotated[int, Range(0, 99)]


@declare.checked
@dataclass(frozen=True)
class Device:
    """What a runtime offers, as plain data: kind, name, memory (bytes per device), device count, host cores, a GPU's
    compute capability; ``rehearsed_on``: this machine's kind, on a ``COURSE_DEVICE`` rehearsal."""

    kind: _Kind
    name: Text
    memory: Annotated[int, Range(2**26, 2**44)]
    count: _Many = 1
    host_cores: _Many = 2
    capability: tuple[_Version, _Version] | None = None
    rehearsed_on: _Kind | None = None

    def __post_init__(self) -> None:
        if self.capability is not None and self.kind != "gpu":
            raise ValueError(f"capability is a GPU's compute capability; got one for a {self.kind}")


@declare.checked
def spec(device: Device) -> Spec | None:
    """The known device ``device`` is (matched by kind and the data sheet's name inside its name, memory breaking
    a tie), or None: then the plan relies on what the run measures, never on a guessed peak."""
    name = device.name.upper().replace("-", " ")
    found = [s for s in KNOWN.values() if s.kind == device.kind and re.search(s.pattern, name)
             and (s.kind != "tpu" or s.chips == device.count)]
    found.sort(key=lambda s: abs(s.memory - device.memory))
    return found[0] if found else None


@dataclass(frozen=True)
class Plan:
    """What the notebooks do on ``device``: computed, never measured. ``env`` holds the variables to set before a
    framework's first operation; ``skips`` maps a capability to the sentence a section prints without it."""

    device: Device
    spec: Spec | None
    torch_device: str
    torch_threads: int
    fast_dtype: str
    matmul_tolerance: float
    mesh_devices: int
    simulated: bool
    budgets: Mapping[str, int]
    env: Mapping[str, str]
    skips: Mapping[str, str] = field(default_factory=dict)

    def skip(self, capability: str) -> str | None:
        """The sentence a section prints when this device lacks ``capability`` (None: it has it)."""
        return self.skips.get(validate.text("capability", capability))


CAPABILITIES = ("cuda", "fp8", "bf16 units", "several devices", "tensorflow")


@declare.checked
def plan(device: Device, *, host_memory: Annotated[int, Range(2**26, 2**46)] | None = None) -> Plan:
    """The plan for ``device``: where each framework runs, its memory budget, the dtype the matrix units favour,
    the tolerance of a float32 matmul comparison, real or simulated devices for sharding, and the skips."""
    known = spec(device)
    host = host_memory if host_memory is not None else _host_memory()
    skips: dict[str, str] = {}
    if device.kind != "gpu":
        skips["cuda"] = f"needs a CUDA GPU; this runtime has a {device.kind.upper()}"
    if device.kind == "gpu" and (device.capability or (0, 0)) < (8, 9):
        skips["fp8"] = (f"fp8 matrix units need compute capability 8.9 or newer (L4, H100) or an AMD MI300; "
                        f"this {device.name} is {'.'.join(map(str, device.capability or (0, 0)))}")
    elif device.kind != "gpu":
        skips["fp8"] = ("fp8 training needs fp8 matrix units: an NVIDIA GPU of compute capability 8.9 or later (Ada, "
                        "Hopper, Blackwell) or an AMD MI300 (fp8 as float8_e4m3fnuz); this runtime has no GPU")
    bf16_units = known is not None and "bfloat16" in known.matrix_dtypes
    if device.kind == "gpu" and not bf16_units:
        skips["bf16 units"] = (f"this {device.name} has no bf16 matrix units: fp16 is its fast format, and bf16 "
                               "runs at fp32 speed or slower")
    if device.count == 1 and device.kind != "cpu":
        skips["several devices"] = (f"this runtime has one {device.kind.upper()}: the sharding sections run on "
                                    f"{SIMULATED_DEVICES} simulated host devices (Kaggle's TPU v5e-8 or 2x T4 have "
                                    "several)")
    if device.kind == "tpu":
        skips["tensorflow"] = "Colab's TPU runtimes ship no TensorFlow"
    fast = "float16" if device.kind == "gpu" and not bf16_units else "bfloat16"
    # TPU: bf16 passes by default (a max error of ~0.022 was seen on 02's matmul); Ampere+: TF32 where turned on
    tolerance = {"tpu": 5e-2, "gpu": 1e-2 if device.capability and device.capability >= (8, 0) else 1e-4}.get(
        device.kind, 1e-4)
    budgets, variables = _memory(device, host)
    # a rehearsal of a GPU on a machine without one keeps torch on this machine's CPU (its choices stay the GPU's)
    torch_device = "cuda" if device.kind == "gpu" and device.rehearsed_on in (None, "gpu") else "cpu"
    real = device.count if device.kind != "cpu" else 1
    return Plan(device, known, torch_device, device.host_cores, fast, tolerance,
                real if real > 1 else SIMULATED_DEVICES, real < 2, budgets, variables, skips)


def _memory(device: Device, host: int) -> tuple[dict[str, int], dict[str, str]]:
    if device.kind != "gpu":  # torch runs on the host; JAX's TPU memory is the chip's own
        budgets = {fw: host // 4 for fw in validate.FRAMEWORKS}
        if device.kind == "tpu":
            budgets["jax"] = int(device.memory * 0.75)
        return budgets, {}
    budgets = {fw: int(device.memory * share) for fw, share in GPU_SHARES.items()}
    variables = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                 "XLA_PYTHON_CLIENT_MEM_FRACTION": f"{GPU_SHARES['jax']:.2f}",
                 "TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    return budgets, variables


def _host_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


@declare.checked
def apply(plan_: Plan) -> dict[str, str]:
    """Set the plan's environment variables that are not set yet (before JAX's and TensorFlow's first operation:
    they read them when their device starts); returns the ones set now."""
    done = {k: v for k, v in plan_.env.items() if k not in os.environ}
    os.environ.update(done)
    return done


def describe() -> Device:
    """This runtime as a ``Device``, from the one function that asks the hardware; where ``COURSE_DEVICE`` names a key
    of ``KNOWN``, that device, rehearsed on this machine (tests build ``Device``s instead)."""
    kind = env.accelerator()
    name = os.environ.get(SIMULATE, "").strip()
    if name:
        return dataclasses.replace(simulated(name), rehearsed_on=kind)
    cores = os.cpu_count() or 1
    found = _gpu(cores) if kind == "gpu" else _tpu(cores) if kind == "tpu" else None
    return found or Device("cpu", env.cpu_model() or "CPU", _host_memory(), 1, cores)


SIMULATE = "COURSE_DEVICE"  # names a KNOWN device: rehearse its plan's choices on this machine


def simulated(name: str) -> Device:
    """The known device ``name`` (a key of ``KNOWN``) as a ``Device``, as its runtime would describe itself."""
    known = KNOWN[validate.choice("name", name, tuple(KNOWN))]
    return Device(known.kind, known.name, known.memory, known.chips, os.cpu_count() or 1, known.capability)


@functools.cache
def current() -> Plan:
    """This runtime's plan, computed once from ``describe()``'s device (a rehearsal where ``COURSE_DEVICE`` names
    one: its choices made on this machine, whose devices still run the computations)."""
    return plan(describe())


def _gpu(cores: int) -> Device | None:
    import torch

    if not torch.cuda.is_available():
        return None  # describe() falls back to the host CPU
    props: Any = torch.cuda.get_device_properties(0)
    return Device("gpu", props.name, int(props.total_memory), torch.cuda.device_count(), cores,
                  (int(props.major), int(props.minor)))


def _tpu(cores: int) -> Device:
    import jax

    chips = jax.devices()
    kind = getattr(chips[0], "device_kind", "TPU")
    stats = chips[0].memory_stats() or {}
    return Device("tpu", f"TPU {kind}-{len(chips)}" if "TPU" not in kind.upper() else f"{kind}-{len(chips)}",
                  int(stats.get("bytes_limit", 16 * 10**9)), len(chips), cores)
