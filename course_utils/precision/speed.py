"""Speed per format on this machine: matmul FLOP/s in fp32 and bf16 (and fp16 on a GPU) for each framework
present, and a memory-bound op in fp32 against bf16 (bf16 halves the bytes: the roofline's other half).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from course_utils import env, timing, validate

# Published dense peaks of one NVIDIA A100 SXM (datasheet); shown as published, never as measured.
A100_PUBLISHED = {"A100 fp32": 19.5e12, "A100 tf32 (tensor cores)": 156e12, "A100 bf16 / fp16": 312e12}


def _formats(device_type: str) -> tuple[str, ...]:
    return ("fp32", "bf16", "fp16") if device_type == "cuda" else ("fp32", "bf16")


def matmul_times(n: int, frameworks: Sequence[str] = ("torch", "jax"), *, device: Any = "cpu",
                 min_time: float = 0.1) -> dict[str, Any]:
    """``timing.Measurement`` of an n x n matmul per '<framework> <format>', frameworks missing here skipped."""
    import numpy as np

    n = validate.number("n", n, low=1, high=2**16, integer=True)
    validate.non_empty("frameworks", frameworks)
    validate.positive("min_time", min_time)
    names = [validate.framework(f, "frameworks") for f in frameworks]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    times: dict[str, Any] = {}
    for fw in (f for f in names if env.available(f)):
        for fmt, (x, y, mm) in _matmul_inputs(fw, a, b, device).items():
            times[f"{fw} {fmt}"] = timing.benchmark(mm, x, y, min_time=min_time, max_repeats=20, label=f"{fw} {fmt}")
    return times


def _matmul_inputs(fw: str, a: Any, b: Any, device: Any) -> dict[str, tuple[Any, Any, Any]]:
    if fw == "torch":
        import torch

        ta, tb = torch.from_numpy(a).to(device), torch.from_numpy(b).to(device)
        dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
        return {f: (ta.to(dtypes[f]), tb.to(dtypes[f]), torch.mm) for f in _formats(ta.device.type)}
    if fw == "jax":
        import jax
        import jax.numpy as jnp

        mm = jax.jit(jnp.matmul)
        ja, jb = jnp.asarray(a), jnp.asarray(b)
        kinds = {"fp32": jnp.float32, "bf16": jnp.bfloat16, "fp16": jnp.float16}
        platform = jax.devices()[0].platform
        return {f: (ja.astype(kinds[f]), jb.astype(kinds[f]), mm) for f in _formats("cuda" if platform == "gpu"
                                                                                  else platform)}
    tf = env.import_tensorflow()
    mm = tf.function(tf.linalg.matmul, jit_compile=True)
    return {f: (tf.cast(a, d), tf.cast(b, d), mm) for f, d in (("fp32", tf.float32), ("bf16", tf.bfloat16))}


def copy_times(n_bytes_fp32: int, *, device: Any = "cpu", min_time: float = 0.1, rounds: int = 3) -> dict[str, Any]:
    """torch: time of ``out.copy_(x)`` (read + write, preallocated) for the same element count in fp32 and bf16.

    A copy is memory-bound, so halving the bytes per element should halve the time where bandwidth is the limit.
    The two are measured alternately ``rounds`` times and each keeps its best median.
    """
    import torch

    n_bytes_fp32 = validate.number("n_bytes_fp32", n_bytes_fp32, low=4096, high=2**34, integer=True)
    validate.positive("min_time", min_time)
    rounds = validate.number("rounds", rounds, low=1, high=20, integer=True)
    count = n_bytes_fp32 // 4
    arrays = {}
    for fmt, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        x = torch.ones(count, dtype=dtype, device=device)
        arrays[fmt] = (x, torch.empty_like(x))
    best: dict[str, Any] = {}
    for _ in range(rounds):  # alternate the two, keep each one's best median: shared-machine noise hits both
        for fmt, (x, out) in arrays.items():
            m = timing.benchmark(out.copy_, x, min_time=min_time, max_repeats=50, label=f"copy {fmt}")
            if fmt not in best or m.median < best[fmt].median:
                best[fmt] = m
    return best
