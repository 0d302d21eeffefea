"""The machine's own limits: memory bandwidth and matmul FLOP/s, measured, and the roofline they draw.

A kernel that does ``flops`` arithmetic and moves ``bytes`` to and from memory cannot finish faster than
``max(flops / peak_flops, bytes / bandwidth)``. The two ceilings come from this machine, in this run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Any

from course_utils import env, timing

FRAMEWORK_NAMES = ("torch", "jax", "tensorflow", "numpy")
_ALIASES = {"tf": "tensorflow", "np": "numpy"}
_CACHE: dict[tuple[str, int, int], Machine] = {}
_FP32 = 4  # bytes


@dataclass(frozen=True)
class Machine:
    """Measured ceilings: bandwidth probes in bytes/s, matmul probes in FLOP/s, as one framework sees them."""

    framework: str
    device: str
    bandwidth_probes: dict[str, float]
    flops_probes: dict[str, float]

    @property
    def bandwidth(self) -> float:
        """The memory roof (bytes/s): the best of the probes (a single probe under-reports; see ENVIRONMENT.md)."""
        return max(self.bandwidth_probes.values())

    @property
    def peak_flops(self) -> float:
        """The compute roof (FLOP/s): the best matmul throughput measured."""
        return max(self.flops_probes.values())

    @property
    def ridge_intensity(self) -> float:
        """FLOP per byte where the two roofs meet: below it a kernel is memory-bound, above compute-bound."""
        return self.peak_flops / self.bandwidth

    def attainable(self, intensity: float) -> float:
        """Highest FLOP/s a kernel of this arithmetic intensity (FLOP/byte) can reach on this machine."""
        return attainable(intensity, self)

    def roofline_time(self, flops: float, bytes: float) -> float:
        """Shortest possible time (s) for a kernel doing ``flops`` and moving ``bytes``."""
        return roofline_time(flops, bytes, self)

    def rows(self) -> list[tuple[str, str]]:
        rows = [("framework", self.framework), ("device", self.device)]
        rows += [(f"bandwidth: {k}", f"{v / 1e9:.1f} GB/s") for k, v in self.bandwidth_probes.items()]
        rows += [(f"compute: {k}", f"{v / 1e9:.1f} GFLOP/s") for k, v in self.flops_probes.items()]
        rows.append(("ridge point", f"{self.ridge_intensity:.1f} FLOP/byte"))
        return rows

    def __repr__(self) -> str:
        return "\n".join(f"{k:<28} {v}" for k, v in self.rows())

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left'>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in self.rows()
        )
        return f"<table>{body}</table>"


@dataclass(frozen=True)
class Point:
    """One measured kernel for the roofline plot: its work, its traffic and its measured time."""

    label: str
    flops: float
    bytes: float
    seconds: float

    def __post_init__(self) -> None:
        for name in ("flops", "bytes", "seconds"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a non-negative number; got {value!r}")
        if self.bytes == 0 or self.seconds == 0:
            raise ValueError("bytes and seconds must be > 0 for a roofline point")

    @property
    def intensity(self) -> float:
        """FLOP per byte moved."""
        return self.flops / self.bytes

    @property
    def achieved_flops(self) -> float:
        return self.flops / self.seconds

    @property
    def achieved_bandwidth(self) -> float:
        return self.bytes / self.seconds


def _check_nonnegative(**values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number; got {value!r}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0; got {value!r}")


def roofline_time(flops: float, bytes: float, machine: Machine) -> float:
    """max(flops / peak FLOP/s, bytes / bandwidth): the time below which no kernel can run."""
    _check_nonnegative(flops=flops, bytes=bytes)
    return max(flops / machine.peak_flops, bytes / machine.bandwidth)


def attainable(intensity: float, machine: Machine) -> float:
    """min(peak FLOP/s, intensity x bandwidth): the roofline itself, in FLOP/s."""
    _check_nonnegative(intensity=intensity)
    return min(machine.peak_flops, intensity * machine.bandwidth)


def measure_machine(
    framework: str = "torch",
    *,
    array_bytes: int | None = None,
    matmul_n: int | None = None,
    min_time: float = 0.3,
) -> Machine:
    """Measure bandwidth (scale and triad over arrays of ``array_bytes``, torch/numpy also copy) and fp32
    matmul FLOP/s (n = ``matmul_n``) with one framework, on its default device. Cached per process.

    Sizes default to ``env.pick`` values large enough to leave the CPU caches (64-128 MB arrays).
    Outputs are preallocated (torch/numpy ``out=``, JAX buffer donation) so that allocation and page
    faults are not counted as bandwidth; TensorFlow cannot reuse outputs, and its figure shows that.
    """
    framework = _ALIASES.get(framework, framework)
    if framework not in FRAMEWORK_NAMES:
        raise ValueError(f"framework must be one of {FRAMEWORK_NAMES}; got {framework!r}")
    array_bytes = array_bytes or env.pick(ci=2**26, cpu=2**27, gpu=2**30, tpu=2**30)
    matmul_n = matmul_n or env.pick(ci=1024, cpu=2048, gpu=8192, tpu=8192)
    _check_nonnegative(array_bytes=array_bytes, matmul_n=matmul_n, min_time=min_time)
    if array_bytes < 1024 or matmul_n < 16 or min_time <= 0:
        raise ValueError("array_bytes must be >= 1024, matmul_n >= 16 and min_time > 0")
    key = (framework, int(array_bytes), int(matmul_n))
    if key not in _CACHE:
        probes = _PROBES[framework](int(array_bytes) // _FP32, int(matmul_n))
        bandwidth = {name: nbytes / _time(fn, min_time) for name, (fn, nbytes) in probes.bandwidth.items()}
        flops = {name: nflop / _time(fn, min_time) for name, (fn, nflop) in probes.compute.items()}
        _CACHE[key] = Machine(framework, probes.device, bandwidth, flops)
    return _CACHE[key]


def _time(fn: Callable[[], Any], min_time: float) -> float:
    return timing.benchmark(fn, warmup=1, min_time=min_time, min_repeats=3).median


@dataclass
class _Probes:
    device: str
    bandwidth: dict[str, tuple[Callable[[], Any], float]]
    compute: dict[str, tuple[Callable[[], Any], float]]


def _numpy_probes(n: int, m: int) -> _Probes:
    import numpy as np

    a, b = np.ones(n, np.float32), np.full(n, 2.0, np.float32)
    x = np.ones((m, m), np.float32)
    z = np.empty_like(x)
    return _Probes(
        "cpu",
        {
            "copy": (lambda: np.copyto(a, b), 2 * n * _FP32),
            "scale": (lambda: np.multiply(b, 1.5, out=a), 2 * n * _FP32),
        },
        {f"matmul fp32 n={m}": (lambda: np.matmul(x, x, out=z), 2 * m**3)},
    )


def _torch_probes(n: int, m: int) -> _Probes:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    a, b, c = (torch.full((n,), float(i), device=device) for i in (1, 2, 3))
    x = torch.randn(m, m, device=device)
    z = torch.empty_like(x)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    return _Probes(
        name,
        {
            "copy": (lambda: a.copy_(b), 2 * n * _FP32),
            "scale": (lambda: torch.mul(b, 1.5, out=a), 2 * n * _FP32),
            "triad": (lambda: torch.add(b, c, alpha=1.5, out=a), 3 * n * _FP32),
        },
        {f"matmul fp32 n={m}": (lambda: torch.mm(x, x, out=z), 2 * m**3)},
    )


def _jax_probes(n: int, m: int) -> _Probes:
    import jax
    import jax.numpy as jnp

    # donate_argnums=0: the output reuses the first argument's buffer, so no fresh allocation per call.
    # keep_unused=True: jit drops arguments the function never reads, and a dropped one is not donated.
    scale = jax.jit(lambda a, b: b * 1.5, donate_argnums=0, keep_unused=True)
    triad = jax.jit(lambda a, b, c: b + 1.5 * c, donate_argnums=0, keep_unused=True)
    matmul = jax.jit(jnp.matmul)
    state = {"a": jnp.ones(n, jnp.float32)}
    b, c = jnp.full(n, 2.0, jnp.float32), jnp.full(n, 3.0, jnp.float32)
    x = jax.random.normal(jax.random.key(0), (m, m), jnp.float32)

    def run_scale() -> Any:
        state["a"] = scale(state["a"], b)
        return state["a"]

    def run_triad() -> Any:
        state["a"] = triad(state["a"], b, c)
        return state["a"]

    device = jax.devices()[0]
    return _Probes(
        f"{device.platform}:{device.id} {getattr(device, 'device_kind', '')}".strip(),
        {"scale": (run_scale, 2 * n * _FP32), "triad": (run_triad, 3 * n * _FP32)},
        {f"matmul fp32 n={m}": (lambda: matmul(x, x), 2 * m**3)},
    )


def _tensorflow_probes(n: int, m: int) -> _Probes:
    tf = env.import_tensorflow()

    scale = tf.function(lambda b: b * 1.5, jit_compile=True)
    triad = tf.function(lambda b, c: b + 1.5 * c, jit_compile=True)
    matmul = tf.function(tf.linalg.matmul, jit_compile=True)
    b, c = tf.fill([n], 2.0), tf.fill([n], 3.0)
    x = tf.random.normal((m, m), seed=0)
    gpus = tf.config.list_logical_devices("GPU")
    return _Probes(
        gpus[0].name if gpus else "cpu",
        {"scale": (lambda: scale(b), 2 * n * _FP32), "triad": (lambda: triad(b, c), 3 * n * _FP32)},
        {f"matmul fp32 n={m}": (lambda: matmul(x, x), 2 * m**3)},
    )


_PROBES: dict[str, Callable[[int, int], _Probes]] = {
    "numpy": _numpy_probes,
    "torch": _torch_probes,
    "jax": _jax_probes,
    "tensorflow": _tensorflow_probes,
}

