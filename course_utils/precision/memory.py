"""Where training memory goes: the standard bytes-per-parameter accounting (computed), what a torch model and
optimizer really hold (measured), what autograd saves for backward (measured, split into 16-bit weight copies
and activations), and peak memory: process RSS, CUDA ``max_memory_allocated``, XLA's ``memory_analysis``.

The peak helpers are generic; they belong in a core ``memory.py`` once there is one.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from course_utils import validate

# Bytes per parameter of each piece of training state, the standard accounting (ZeRO, Rajbhandari et al. 2020).
TRAINING_SCHEMES: dict[str, dict[str, int]] = {
    "fp32 + Adam": {"fp32 weights": 4, "fp32 gradients": 4, "Adam moments (fp32)": 8},
    "mixed + Adam, fp32 master": {"16-bit weights": 2, "16-bit gradients": 2, "fp32 master weights": 4,
                                  "Adam moments (fp32)": 8},
    "pure bf16 + Adam": {"16-bit weights": 2, "16-bit gradients": 2, "Adam moments (bf16)": 4},
}


def training_memory(n_params: int, scheme: str) -> dict[str, int]:
    """Bytes of weights, gradients and Adam state for ``n_params`` parameters under ``scheme`` (computed)."""
    validate.non_negative("n_params", n_params, integer=True)
    validate.instance("scheme", scheme, str)
    validate.choice("scheme", scheme, TRAINING_SCHEMES)
    return {k: v * int(n_params) for k, v in TRAINING_SCHEMES[scheme].items()}


def _tensor_bytes(t: Any) -> int:
    return t.numel() * t.element_size()


def torch_state_bytes(model: Any, optimizer: Any = None) -> dict[str, int]:
    """Bytes held by a torch model's parameters, their gradients and the optimizer's state, by dtype (measured)."""
    import torch

    validate.instance("model", model, torch.nn.Module)
    if optimizer is not None:
        validate.instance("optimizer", optimizer, torch.optim.Optimizer)
    held: dict[str, int] = {}

    def add(kind: str, t: Any) -> None:
        key = f"{kind} ({str(t.dtype).removeprefix('torch.')})"
        held[key] = held.get(key, 0) + _tensor_bytes(t)

    for p in model.parameters():
        add("weights", p)
        if p.grad is not None:
            add("gradients", p.grad)
    for state in (optimizer.state.values() if optimizer is not None else ()):
        for t in state.values():
            if isinstance(t, torch.Tensor) and t.dim() > 0:
                add("optimizer state", t)
    return held


def saved_for_backward(fn: Callable[[], Any], params: Iterable[Any] = ()) -> dict[str, int]:
    """Bytes autograd saves while ``fn()`` runs its forward pass (torch), split into three kinds.

    "parameters" (the tensors of ``params`` themselves, which exist anyway), "weight copies" (a saved tensor of
    a parameter's shape, or its transpose, in another dtype: autocast's cast, made per region and freed after
    backward), and "activations" (the rest; pick batch sizes unequal to the layer widths, or an activation
    could pass for a copy). Storages shared by several saved tensors count once.
    """
    import torch

    validate.function("fn", fn)
    params = list(params)
    own = {p.untyped_storage().data_ptr() for p in params}
    shapes = {(tuple(p.shape), p.dtype) for p in params} | {(tuple(p.shape[::-1]), p.dtype) for p in params}
    shapes_only = {s for s, _ in shapes}
    seen: dict[int, tuple[str, int]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr in own:
            kind = "parameters"
        elif tuple(t.shape) in shapes_only and (tuple(t.shape), t.dtype) not in shapes:
            kind = "weight copies"
        else:
            kind = "activations"
        seen[ptr] = (kind, t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    result = {"parameters": 0, "weight copies": 0, "activations": 0}
    for kind, nbytes in seen.values():
        result[kind] += nbytes
    return result


def saved_activation_bytes(fn: Callable[[], Any], exclude: Iterable[Any] = ()) -> int:
    """Bytes of the tensors autograd saves for backward while ``fn()`` runs, parameters in ``exclude`` not counted."""
    saved = saved_for_backward(fn, exclude)
    return saved["weight copies"] + saved["activations"]


# ---------------------------------------------------------------------------------------------------------
# Peak memory


def _status_bytes(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def rss_peak_supported() -> bool:
    """True where the process's peak RSS can be reset and read (Linux /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        _status_bytes("VmHWM")
        return True
    except (OSError, KeyError):
        return False


def _malloc_trim() -> Callable[[], None]:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        return lambda: libc.malloc_trim(0)
    return lambda: None


def peak_rss_delta(fn: Callable[[], Any], *, repeats: int = 2) -> int | None:
    """Peak resident memory ``fn()`` adds to this process, in bytes (smallest of ``repeats`` runs); None if unsupported.

    Freed heap memory is first returned to the OS (glibc ``malloc_trim``), then the kernel's peak-RSS mark is
    reset, so the peak seen is the one ``fn`` causes. The first run also pays one-time costs: keep repeats >= 2.
    """
    validate.function("fn", fn)
    repeats = validate.number("repeats", repeats, low=1, high=100, integer=True)
    if not rss_peak_supported():
        return None
    trim = _malloc_trim()
    peaks = []
    for _ in range(repeats):
        trim()
        Path("/proc/self/clear_refs").write_text("5")
        base = _status_bytes("VmRSS")
        fn()
        peaks.append(_status_bytes("VmHWM") - base)
    return max(0, min(peaks))


def torch_peak_bytes(fn: Callable[[], Any], device: Any = "cpu") -> int | None:
    """Peak memory ``fn()`` adds on ``device``: CUDA's ``max_memory_allocated``, else the process peak RSS."""
    import torch

    validate.function("fn", fn)
    validate.instance("device", device, (str, torch.device))
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - base
    return peak_rss_delta(fn)


def jax_compiled_stats(fn: Callable[..., Any], *args: Any) -> dict[str, float]:
    """XLA's plan for ``jax.jit(fn)(*args)``: FLOPs (``cost_analysis``), dot ops in the optimised HLO, and
    argument/output/temp bytes (``memory_analysis``)."""
    import jax

    validate.function("fn", fn)
    return compiled_stats(jax.jit(fn).lower(*args).compile())


def compiled_stats(compiled: Any) -> dict[str, float]:
    """FLOPs, dot-op count and buffer bytes of an already compiled JAX program (``jit(f).lower(...).compile()``)."""
    if not hasattr(compiled, "cost_analysis") or not hasattr(compiled, "as_text"):
        raise TypeError(f"compiled must be a compiled JAX program; got {type(compiled).__name__}")
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else (cost or {})
    stats: dict[str, float] = {"flops": float(cost.get("flops", float("nan"))),
                               "dots": compiled.as_text().count(" dot(")}
    mem = compiled.memory_analysis()
    if mem is not None:
        for key in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes"):
            stats[key.removesuffix("_size_in_bytes")] = int(getattr(mem, key))
    return stats


def jax_memory(fn: Callable[..., Any], *args: Any) -> dict[str, int]:
    """XLA's argument, output and temp bytes for ``jax.jit(fn)(*args)`` (``jax_compiled_stats`` without FLOPs)."""
    stats = jax_compiled_stats(fn, *args)
    if "temp" not in stats:
        raise RuntimeError("this JAX backend gives no memory_analysis()")
    return {k: int(v) for k, v in stats.items() if k not in ("flops", "dots")}
