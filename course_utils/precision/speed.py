"""Speed per format on this machine: matmul FLOP/s in fp32 and bf16 (and fp16 on a GPU) for each framework
present, and a memory-bound op in fp32 against bf16 (bf16 halves the bytes: the roofline's other half).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from course_utils import env, roofline, timing, validate

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


STREAM_OPS = ("copy", "triad")
_STREAM = {"copy": (2, 0), "triad": (3, 2)}  # arrays touched per element (read + write), FLOPs per element


def stream_times(n_bytes_fp32: int, *, ops: Sequence[str] = STREAM_OPS, device: Any = "cpu", min_time: float = 0.1,
                 rounds: int = 3) -> dict[str, Any]:
    """torch: ``timing.Measurement`` per '<op> <format>' of STREAM-like ops into preallocated outputs, for the
    same element count in fp32 and bf16: 'copy' (``a.copy_(b)``) and 'triad' (``a = b + 1.5 c``, 2 FLOPs).

    Both are memory-bound, so halving the bytes per element should halve the time where bandwidth is the limit
    (a CPU without bf16 units converts each value to fp32 and back inside the triad; the copy moves bytes only).
    The formats are measured alternately ``rounds`` times and each keeps its best median: shared-machine noise
    hits both.
    """
    import torch

    n_bytes_fp32 = validate.number("n_bytes_fp32", n_bytes_fp32, low=4096, high=2**34, integer=True)
    validate.non_empty("ops", ops)
    for op in ops:
        if op not in _STREAM:
            raise ValueError(f"ops must hold 'copy' and/or 'triad'; got {op!r}")
    validate.positive("min_time", min_time)
    rounds = validate.number("rounds", rounds, low=1, high=20, integer=True)
    count = n_bytes_fp32 // 4
    arrays = {fmt: tuple(torch.full((count,), float(i), dtype=dtype, device=device) for i in (1, 2, 3))
              for fmt, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16))}
    calls = {"copy": lambda a, b, c: (lambda: a.copy_(b)),
             "triad": lambda a, b, c: (lambda: torch.add(b, c, alpha=1.5, out=a))}
    best: dict[str, Any] = {}
    for _ in range(rounds):
        for op in ops:
            for fmt, abc in arrays.items():
                name = f"{op} {fmt}"
                m = timing.benchmark(calls[op](*abc), min_time=min_time, max_repeats=50, label=name)
                if name not in best or m.median < best[name].median:
                    best[name] = m
    return best


def stream_point(name: str, measurement: Any, n_bytes_fp32: int) -> Any:
    """The roofline ``Point`` of a ``stream_times`` entry ('triad bf16', ...): its FLOPs, bytes and median time."""

    validate.text("name", name)
    op, _, fmt = name.partition(" ")
    if op not in _STREAM or fmt not in ("fp32", "bf16"):
        raise ValueError(f"name must be '<copy|triad> <fp32|bf16>'; got {name!r}")
    n_bytes_fp32 = validate.number("n_bytes_fp32", n_bytes_fp32, low=4096, integer=True)
    count = n_bytes_fp32 // 4
    arrays, flops = _STREAM[op]
    seconds = validate.positive("measurement", getattr(measurement, "median", measurement))
    return roofline.Point(name, flops * count, arrays * count * (4 if fmt == "fp32" else 2), float(seconds))


def bandwidth_ratio(fp32: Any, bf16: Any) -> tuple[float, float, float]:
    """bf16's bandwidth over fp32's for the same op and element count (bf16 moves half the bytes): the ratio of
    medians, and the low and high ends from the quartiles (bf16's slow quartile against fp32's fast one)."""
    for name, m in (("fp32", fp32), ("bf16", bf16)):
        for attr in ("median", "p25", "p75"):
            if not hasattr(m, attr):
                raise TypeError(f"{name} must be a timing.Measurement; got {type(m).__name__}")
    return (0.5 * fp32.median / bf16.median, 0.5 * fp32.p25 / bf16.p75, 0.5 * fp32.p75 / bf16.p25)


def jax_dot_dtypes(n: int = 64, dtype: str = "bfloat16") -> dict[str, Any]:
    """What XLA makes of an n x n ``jnp.matmul`` in ``dtype``, read from the optimized HLO of this backend:
    the element types the dot's operands have ('dot operands') and how many ``convert`` ops surround it."""
    import re

    import jax
    import jax.numpy as jnp

    n = validate.number("n", n, low=1, high=4096, integer=True)
    validate.text("dtype", dtype)
    a = jnp.ones((n, n), getattr(jnp, dtype))
    text = jax.jit(jnp.matmul).lower(a, a).compile().as_text()
    types = dict(re.findall(r"%([\w.\-]+) = (\w+)\[", text))  # every value: name -> element type
    operands: set[str] = set()
    for args in re.findall(r"= \w+\[[^\]]*\]\{?[^ ]*\}? dot\(([^)]*)\)", text):
        operands |= {types.get(name.strip().lstrip("%"), "?") for name in args.split(",")}
    return {"dot operands": tuple(sorted(operands)), "converts": len(re.findall(r"\bconvert\(", text)),
            "dots": len(re.findall(r"\bdot\(", text))}


def copy_times(n_bytes_fp32: int, *, device: Any = "cpu", min_time: float = 0.1, rounds: int = 3) -> dict[str, Any]:
    """torch: time of ``out.copy_(x)`` (read + write, preallocated) for the same element count in fp32 and bf16,
    as {'fp32': Measurement, 'bf16': Measurement} (``stream_times`` with the copy only)."""
    times = stream_times(n_bytes_fp32, ops=("copy",), device=device, min_time=min_time, rounds=rounds)
    return {fmt: times[f"copy {fmt}"] for fmt in ("fp32", "bf16")}


def torch_onednn_bf16() -> bool | None:
    """Whether PyTorch would hand a bf16 matmul on this CPU to oneDNN: ``torch.ops.mkldnn._is_mkldnn_bf16_supported()``,
    the device check that PyTorch's CPU gemm consults before its own fallback loop; None where PyTorch was built
    without oneDNN or lacks the check."""
    import torch

    try:
        if not torch.backends.mkldnn.is_available():
            return None
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return None
