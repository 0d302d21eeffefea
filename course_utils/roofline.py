"""The machine's limits measured in this run (bandwidth, matmul FLOP/s) by probes that write into memory they own (page
faults are no bandwidth), and the roofline they draw: no kernel beats ``max(flops / peak, bytes / bandwidth)``."""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from course_utils import declare, display, env, timing, validate
from course_utils.declare import NonEmpty, NonNegative, NonNegativeFloat, PositiveFloat, PositiveInt, Text

FP32 = 4  # bytes per element
ARRAYS = 4  # the triad holds three arrays of the probe size, its fresh output a fourth
MIN_ARRAY_BYTES = 64 * 2**20
CACHE_MULTIPLE = 4  # probe arrays at least this many times the last-level cache
CI_CAP = 256 * 2**20  # COURSE_SIZE=ci keeps a notebook within minutes on 2 cores; the notebook says so


@declare.checked
@dataclass(frozen=True)
class ProbeSize:
    """Bytes per probe array, chosen from the last-level cache unless ``capped_by`` "memory" (half of the free memory)
    or "ci size" (256 MiB at ``COURSE_SIZE=ci``)."""

    array_bytes: PositiveInt
    last_level_cache: Annotated[int, NonNegative]  # 0: the OS reports none
    target: PositiveInt
    capped_by: Literal["", "memory", "ci size"] = ""

    @property
    def cache_multiple(self) -> float:
        """Probe array size over the last-level cache the OS reports (4 or more is meant to leave the caches;
        notebook 00's sweep measures whether it does); inf where no cache size is known."""
        return self.array_bytes / self.last_level_cache if self.last_level_cache else math.inf


def probe_size() -> ProbeSize:
    """Bytes per probe array on a CPU: >= 4x the last-level cache (and >= 64 MiB), capped so the ``ARRAYS`` of them
    take half of the free memory, and at 256 MiB at ci size; 1 GiB on a GPU or TPU."""
    llc = env.last_level_cache_bytes()
    if env.accelerator() != "cpu":
        return ProbeSize(2**30, llc, 2**30)
    target = max(CACHE_MULTIPLE * llc, MIN_ARRAY_BYTES)
    chosen, capped_by = target, ""
    memory_cap = _free_memory() // (2 * ARRAYS)
    if env.size_name() in ("ci", "smoke") and CI_CAP < chosen:
        chosen, capped_by = CI_CAP, "ci size"
    if memory_cap < chosen:
        chosen, capped_by = max(memory_cap, 2**20), "memory"
    chosen -= chosen % 2**20
    return ProbeSize(int(chosen), llc, target, capped_by)


def _free_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


_CACHE: dict[tuple[str, int, int], Machine] = {}
_Probe = dict[str, tuple[Callable[[], Any], float]]  # name: (a zero-argument call, the bytes or FLOPs one call does)


@declare.checked
@dataclass(frozen=True, repr=False)
class Machine(display.Tabled):
    """Measured ceilings as one framework sees them: bandwidth probes (bytes/s), matmul probes (FLOP/s), and
    fresh-output probes, whose page faults make them no bandwidth: they never set the roof."""

    framework: Text
    device: Text
    bandwidth_probes: Annotated[Mapping[Text, PositiveFloat], NonEmpty]
    flops_probes: Annotated[Mapping[Text, PositiveFloat], NonEmpty]
    fresh_output_probes: Mapping[Text, PositiveFloat] = field(default_factory=dict)
    array_bytes: PositiveInt | None = None

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

    @declare.checked
    def roofline_time(self, flops: NonNegativeFloat, bytes: NonNegativeFloat) -> float:
        """max(flops / peak FLOP/s, bytes / bandwidth): the time (s) below which no kernel doing ``flops`` and moving
        ``bytes`` can run."""
        return max(flops / self.peak_flops, bytes / self.bandwidth)

    def table(self) -> display.Table:
        """Every probe with its unit; the fresh-output rows say that they are not a bandwidth."""
        rows = [("device", self.device)]
        if self.array_bytes is not None:
            rows.append(("probe array size", display.format_bytes(self.array_bytes)))
        rows += [(f"bandwidth: {k}", display.format_rate(v)) for k, v in self.bandwidth_probes.items()]
        rows += [(f"{k} (allocation + page faults: not a bandwidth)", display.format_rate(v))
                 for k, v in self.fresh_output_probes.items()]
        rows += [(f"compute: {k}", display.format_flops(v)) for k, v in self.flops_probes.items()]
        rows.append(("ridge point", f"{self.ridge_intensity:.1f} FLOP/byte"))
        return display.table(["probe", "measured"], rows, title=f"Machine as {self.framework} sees it",
                             note="GB/s are decimal (10^9 bytes/s); read + write bytes counted, as STREAM does.")


@declare.checked
@dataclass(frozen=True)
class Point:
    """One measured kernel for the roofline plot: its work, its traffic and its measured time."""

    label: Text
    flops: NonNegativeFloat
    bytes: PositiveFloat
    seconds: PositiveFloat

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


@declare.checked
def attainable(intensity: NonNegativeFloat, machine: Machine) -> float:
    """min(peak FLOP/s, intensity x bandwidth): the roofline itself, in FLOP/s."""
    return min(machine.peak_flops, intensity * machine.bandwidth)


@declare.checked
def share_of_roof(point: Point, machine: Machine) -> float:
    """The fraction of the roof a measured kernel reaches: achieved FLOP/s over attainable FLOP/s at its
    intensity; for a kernel without FLOPs, achieved bandwidth over the memory roof."""
    if point.flops == 0:
        return point.achieved_bandwidth / machine.bandwidth
    return point.achieved_flops / attainable(point.intensity, machine)


#: the machine figures' probe sizes, one table for every notebook (one machine, one figure): the matmul's n is large
#: enough to approach the compute roof
PROBE_SIZES = env.sizes(matmul_n=dict(ci=1024, cpu=2048, gpu=8192, tpu=8192))


def measure_machine(framework: str = "torch", *, array_bytes: int | None = None, matmul_n: int | None = None,
                    min_time: float = 0.3) -> Machine:
    """Bandwidth (copy/scale/triad over ``array_bytes``, default ``probe_size()``) and fp32 matmul FLOP/s
    (n = ``matmul_n``) with one framework on its default device; cached per process."""
    framework = validate.framework(framework, numpy=True)
    array_bytes = validate.count("array_bytes", probe_size().array_bytes if array_bytes is None else array_bytes,
                                 low=1024, high=validate.MAX_ELEMENTS * FP32)
    matmul_n = validate.count("matmul_n", PROBE_SIZES.matmul_n if matmul_n is None else matmul_n, low=16,
                              high=math.isqrt(validate.MAX_ELEMENTS))
    min_time = validate.number("min_time", min_time, low=0, high=60, low_open=True)  # before the probes it times
    if framework == "numpy" or env.accelerator() == "cpu":  # arrays in host memory: refused by name, not by malloc
        validate.memory_fits("array_bytes", ARRAYS * array_bytes, share=0.75,
                             what=f"array_bytes={array_bytes:,} ({ARRAYS} probe arrays)")
        validate.memory_fits("matmul_n", 3 * matmul_n**2 * FP32, share=0.75,
                             what=f"matmul_n={matmul_n:,} (input, output and draw of the matmul probe)")
    key = (framework, array_bytes, matmul_n)
    if key not in _CACHE:
        device, *probes = _BUILDERS[framework](array_bytes // FP32, matmul_n)
        bandwidth, fresh, flops = ({name: work / _time(fn, min_time) for name, (fn, work) in probe.items()}
                                   for probe in probes)
        del probes
        gc.collect()  # the probe arrays (GiBs) go now, not at the next collection
        _CACHE[key] = Machine(framework, device, bandwidth, flops, fresh, array_bytes)
    return _CACHE[key]


def _time(fn: Callable[[], Any], min_time: float) -> float:
    seconds = timing.benchmark(fn, min_time=min_time, min_repeats=3).median
    if not math.isfinite(seconds) or seconds <= 0:
        raise RuntimeError(f"a probe measured {seconds!r} s; the timer cannot resolve it")
    return seconds


# Each framework's probes over arrays of ``n`` float32 and an ``m`` x ``m`` matmul: (device, bandwidth, fresh output,
# compute), sizes checked by ``measure_machine``.


def _numpy_probes(n: int, m: int) -> tuple[str, _Probe, _Probe, _Probe]:
    import numpy as np

    a, b, c = np.ones(n, np.float32), np.full(n, 2.0, np.float32), np.full(n, 3.0, np.float32)
    x = np.ones((m, m), np.float32)
    z = np.empty_like(x)

    return (
        "cpu",
        {"copy": (lambda: np.copyto(a, b), 2 * n * FP32), "scale": (lambda: np.multiply(b, 1.5, out=a), 2 * n * FP32)},
        {"triad, fresh output": (lambda: b + 1.5 * c, 3 * n * FP32)},
        {f"matmul fp32 n={m}": (lambda: np.matmul(x, x, out=z), 2 * m**3)},
    )


def _torch_probes(n: int, m: int) -> tuple[str, _Probe, _Probe, _Probe]:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    a, b, c = (torch.full((n,), float(i), device=device) for i in (1, 2, 3))
    x = torch.randn(m, m, device=device)
    z = torch.empty_like(x)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    return (
        name,
        {
            "copy": (lambda: a.copy_(b), 2 * n * FP32),
            "triad": (lambda: torch.add(b, c, alpha=1.5, out=a), 3 * n * FP32),
        },
        {"triad, fresh output": (lambda: torch.add(b, c, alpha=1.5), 3 * n * FP32)},
        {f"matmul fp32 n={m}": (lambda: torch.mm(x, x, out=z), 2 * m**3)},
    )


def _jax_probes(n: int, m: int) -> tuple[str, _Probe, _Probe, _Probe]:
    import jax
    import jax.numpy as jnp

    # donate_argnums=0: the output reuses the first argument's buffer, so no fresh allocation per call.
    # keep_unused=True: jit drops arguments the function never reads, and a dropped one is not donated.
    scale = jax.jit(lambda a, b: b * 1.5, donate_argnums=0, keep_unused=True)
    triad = jax.jit(lambda a, b, c: b + 1.5 * c, donate_argnums=0, keep_unused=True)
    fresh = jax.jit(lambda b, c: b + 1.5 * c)
    matmul = jax.jit(jnp.matmul)
    state = {"a": jnp.ones(n, jnp.float32)}
    b, c = jnp.full(n, 2.0, jnp.float32), jnp.full(n, 3.0, jnp.float32)
    x = jax.random.normal(jax.random.key(0), (m, m), jnp.float32)

    def donated(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        def run() -> Any:  # the output replaces the donated buffer, which the next call donates again
            state["a"] = fn(state["a"], *args)
            return state["a"]
        return run

    device = jax.devices()[0]
    return (
        f"{device.platform}:{device.id} {getattr(device, 'device_kind', '')}".strip(),
        {"scale": (donated(scale, b), 2 * n * FP32), "triad": (donated(triad, b, c), 3 * n * FP32)},
        {"triad, fresh output": (lambda: fresh(b, c), 3 * n * FP32)},
        {f"matmul fp32 n={m}": (lambda: matmul(x, x), 2 * m**3)},
    )


def _tensorflow_probes(n: int, m: int) -> tuple[str, _Probe, _Probe, _Probe]:
    tf = env.import_tensorflow()

    # A Variable assigned inside an XLA-compiled function is updated in place: no fresh output per call.
    a = tf.Variable(tf.ones([n]))
    b, c = tf.fill([n], 2.0), tf.fill([n], 3.0)
    @tf.function(jit_compile=True)
    def scale(b: Any) -> None:
        a.assign(b * 1.5)

    @tf.function(jit_compile=True)
    def triad(b: Any, c: Any) -> None:
        a.assign(b + 1.5 * c)

    fresh = tf.function(lambda b, c: b + 1.5 * c, jit_compile=True)
    matmul = tf.function(lambda x, y: tf.linalg.matmul(x, y), jit_compile=True)
    x = tf.random.normal((m, m), seed=0)

    def assigned(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        def run() -> Any:
            fn(*args)
            return a  # timing.sync waits on the variable's value
        return run

    gpus = tf.config.list_logical_devices("GPU")
    return (
        gpus[0].name if gpus else "cpu",
        {"scale": (assigned(scale, b), 2 * n * FP32), "triad": (assigned(triad, b, c), 3 * n * FP32)},
        {"triad, fresh output": (lambda: fresh(b, c), 3 * n * FP32)},
        {f"matmul fp32 n={m}": (lambda: matmul(x, x), 2 * m**3)},
    )


_BUILDERS = {"numpy": _numpy_probes, "torch": _torch_probes, "jax": _jax_probes, "tensorflow": _tensorflow_probes}
