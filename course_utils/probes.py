"""The probes behind ``roofline.measure_machine``: their array size, and what each framework runs. They write into
memory they own (``out=``, donation, a TF Variable): page faults are not bandwidth ("triad, fresh output" has them)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from course_utils import declare, env, validate
from course_utils.declare import NonNegative, PositiveFloat, PositiveInt, Text

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


def probe_size(arrays: int = ARRAYS) -> ProbeSize:
    """Bytes per probe array on a CPU: >= 4x the last-level cache (and >= 64 MiB), capped so ``arrays`` of them take
    half of the free memory, and at 256 MiB at ci size; 1 GiB on a GPU or TPU."""
    arrays = validate.positive("arrays", arrays, integer=True)
    llc = env.last_level_cache_bytes()
    if env.accelerator() != "cpu":
        return ProbeSize(2**30, llc, 2**30)
    target = max(CACHE_MULTIPLE * llc, MIN_ARRAY_BYTES)
    chosen, capped_by = target, ""
    memory_cap = _free_memory() // (2 * arrays)
    if env.size_name() in ("ci", "smoke") and CI_CAP < chosen:
        chosen, capped_by = CI_CAP, "ci size"
    if memory_cap < chosen:
        chosen, capped_by = max(memory_cap, 2**20), "memory"
    chosen -= chosen % 2**20
    return ProbeSize(int(chosen), llc, target, capped_by)


def _free_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def on_host(framework: str) -> bool:
    """True where ``framework``'s probe arrays live in this machine's memory (NumPy, or no accelerator here)."""
    return framework == "numpy" or env.accelerator() == "cpu"


def sizes(n: int, m: int, *, host: bool = True) -> tuple[int, int]:
    """(n, m) if ``n`` (elements per bandwidth array) and ``m`` (the matmul's side) fit: at most ``MAX_ELEMENTS`` and,
    ``host`` arrays, half of the free memory; else ValueError naming the size before anything is allocated."""
    n = validate.count("n", n, high=validate.MAX_ELEMENTS)
    m = validate.count("m", m, high=math.isqrt(validate.MAX_ELEMENTS))
    if host:  # probe_size() fills half of the free memory; three quarters leaves room for what others take meanwhile
        validate.memory_fits("n", ARRAYS * n * FP32, share=0.75, what=f"n={n:,} ({ARRAYS} probe arrays of float32)")
        validate.memory_fits("m", 3 * m * m * FP32, share=0.75,
                             what=f"m={m:,} (a {m:,} x {m:,} matmul: input, output, draw)")
    return n, m


@declare.checked
@dataclass
class Probes:
    """One framework's probes: each a zero-argument call and the bytes (or FLOPs) one call moves (does)."""

    device: Text
    bandwidth: dict[str, tuple[Callable[[], Any], PositiveFloat]]
    fresh: dict[str, tuple[Callable[[], Any], PositiveFloat]]
    compute: dict[str, tuple[Callable[[], Any], PositiveFloat]]


def numpy_probes(n: int, m: int) -> Probes:
    """NumPy's probes over arrays of ``n`` float32 and an ``m`` x ``m`` matmul (sizes checked by ``sizes``)."""
    n, m = sizes(n, m, host=on_host("numpy"))
    import numpy as np

    a, b, c = np.ones(n, np.float32), np.full(n, 2.0, np.float32), np.full(n, 3.0, np.float32)
    x = np.ones((m, m), np.float32)
    z = np.empty_like(x)

    return Probes(
        "cpu",
        {"copy": (lambda: np.copyto(a, b), 2 * n * FP32), "scale": (lambda: np.multiply(b, 1.5, out=a), 2 * n * FP32)},
        {"triad, fresh output": (lambda: b + 1.5 * c, 3 * n * FP32)},
        {f"matmul fp32 n={m}": (lambda: np.matmul(x, x, out=z), 2 * m**3)},
    )


def torch_probes(n: int, m: int) -> Probes:
    """PyTorch's probes over arrays of ``n`` float32 and an ``m`` x ``m`` matmul (sizes checked by ``sizes``)."""
    n, m = sizes(n, m, host=on_host("torch"))
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    a, b, c = (torch.full((n,), float(i), device=device) for i in (1, 2, 3))
    x = torch.randn(m, m, device=device)
    z = torch.empty_like(x)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    return Probes(
        name,
        {
            "copy": (lambda: a.copy_(b), 2 * n * FP32),
            "triad": (lambda: torch.add(b, c, alpha=1.5, out=a), 3 * n * FP32),
        },
        {"triad, fresh output": (lambda: torch.add(b, c, alpha=1.5), 3 * n * FP32)},
        {f"matmul fp32 n={m}": (lambda: torch.mm(x, x, out=z), 2 * m**3)},
    )


def jax_probes(n: int, m: int) -> Probes:
    """JAX's probes over arrays of ``n`` float32 and an ``m`` x ``m`` matmul (sizes checked by ``sizes``)."""
    n, m = sizes(n, m, host=on_host("jax"))
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

    def run_scale() -> Any:
        state["a"] = scale(state["a"], b)
        return state["a"]

    def run_triad() -> Any:
        state["a"] = triad(state["a"], b, c)
        return state["a"]

    device = jax.devices()[0]
    return Probes(
        f"{device.platform}:{device.id} {getattr(device, 'device_kind', '')}".strip(),
        {"scale": (run_scale, 2 * n * FP32), "triad": (run_triad, 3 * n * FP32)},
        {"triad, fresh output": (lambda: fresh(b, c), 3 * n * FP32)},
        {f"matmul fp32 n={m}": (lambda: matmul(x, x), 2 * m**3)},
    )


def tensorflow_probes(n: int, m: int) -> Probes:
    """TensorFlow's probes over arrays of ``n`` float32 and an ``m`` x ``m`` matmul (sizes checked by ``sizes``)."""
    n, m = sizes(n, m, host=on_host("tensorflow"))
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
    return Probes(
        gpus[0].name if gpus else "cpu",
        {"scale": (assigned(scale, b), 2 * n * FP32), "triad": (assigned(triad, b, c), 3 * n * FP32)},
        {"triad, fresh output": (lambda: fresh(b, c), 3 * n * FP32)},
        {f"matmul fp32 n={m}": (lambda: matmul(x, x), 2 * m**3)},
    )


BUILDERS: dict[str, Callable[[int, int], Probes]] = {
    "numpy": numpy_probes,
    "torch": torch_probes,
    "jax": jax_probes,
    "tensorflow": tensorflow_probes,
}
