"""Peak bytes: the process's peak RSS (Linux), CUDA's allocator peak, the tensors autograd saves for backward, what a
torch model and optimizer hold, XLA's memory plan (computed, not measured); page faults per call."""

from __future__ import annotations

import contextlib
import ctypes
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any

from course_utils import calls as _calls  # page_faults() has a parameter named calls
from course_utils import declare, interop, timing, validate
from course_utils.declare import Range

SAVED_KINDS = ("parameters", "weight copies", "activations")
MAX_FAULT_CALLS = 1000  # calls page_faults may make: a few suffice (the count is exact), more is a typo


# ---------------------------------------------------------------------------------------------------------
# Process peak RSS


def _status_bytes(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def rss_peak_supported() -> bool:
    """True where the process's peak RSS can be reset and read (Linux ``/proc/self/clear_refs``), so a peak exists."""
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


@declare.checked
def peak_rss_delta(fn: Callable[[], Any], *, repeats: Annotated[int, Range(1, 100)] = 2,
                   timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT) -> int | None:
    """Peak resident bytes ``fn()`` adds to this process (smallest of ``repeats`` runs); None where unsupported.
    A run of ``fn`` that does not return within ``timeout`` seconds raises ``calls.LearnerTimeout`` naming it."""
    if not rss_peak_supported():
        return None
    trim = _malloc_trim()
    peaks = []
    for _ in range(repeats):  # freed heap back to the OS, then the peak mark reset: VmHWM is then this call's
        trim()
        Path("/proc/self/clear_refs").write_text("5")
        base = _status_bytes("VmRSS")
        with _calls.limit(fn, timeout):
            fn()
        peaks.append(_status_bytes("VmHWM") - base)
    return max(0, min(peaks))


# ---------------------------------------------------------------------------------------------------------
# torch: the allocator's peak, saved tensors, held state


@declare.checked
def torch_peak_bytes(fn: Callable[[], Any], device: Any = "cpu", *,
                     timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT) -> int | None:
    """Peak bytes ``fn()`` adds on ``device``: CUDA's ``max_memory_allocated`` on a GPU, else the process peak RSS.
    ``fn`` must return within ``timeout`` seconds (else ``calls.LearnerTimeout`` names it)."""
    import torch

    device = interop.torch_device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        with _calls.limit(fn, timeout):
            fn()
            torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - base)
    return peak_rss_delta(fn, timeout=timeout)


def _tensors(name: str, values: Any) -> list[Any]:
    import torch

    if values is None or isinstance(values, (str, bytes, torch.Tensor)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be an iterable of torch tensors (e.g. model.parameters()); "
                        f"got {type(values).__name__}")
    values = list(values)
    for i, t in enumerate(values):
        validate.instance(f"{name}[{i}]", t, torch.Tensor)
    return values


def _saved(fn: Callable[[], Any], params: Any, name: str, timeout: float | None) -> dict[str, int]:
    import torch

    params = _tensors(name, params)
    own = {p.untyped_storage().data_ptr() for p in params}
    shapes = {(tuple(p.shape), p.dtype) for p in params} | {(tuple(p.shape[::-1]), p.dtype) for p in params}
    shapes_only = {s for s, _ in shapes}
    seen: dict[int, tuple[str, int]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr in own:
            kind = "parameters"
        elif tuple(t.shape) in shapes_only and (tuple(t.shape), t.dtype) not in shapes:  # autocast's casts
            kind = "weight copies"
        else:
            kind = "activations"
        seen[ptr] = (kind, t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), _calls.limit(fn, timeout):
        out = fn()
    del out
    result = dict.fromkeys(SAVED_KINDS, 0)
    for kind, nbytes in seen.values():
        result[kind] += nbytes
    return result


@declare.checked
def saved_for_backward(fn: Callable[[], Any], params: Iterable[Any] = (), *,
                       timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT) -> dict[str, int]:
    """Bytes autograd saves while ``fn()`` runs (torch), by kind: what backward will hold on to, and why.
    ``fn`` must return within ``timeout`` seconds (else ``calls.LearnerTimeout`` names it)."""
    return _saved(fn, params, "params", timeout)


@declare.checked
def saved_activation_bytes(fn: Callable[[], Any], exclude: Iterable[Any] = (), *,
                           timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT) -> int:
    """Bytes autograd saves for backward while ``fn()`` runs, the tensors in ``exclude`` (parameters) not counted.
    ``fn`` must return within ``timeout`` seconds (else ``calls.LearnerTimeout`` names it)."""
    saved = _saved(fn, exclude, "exclude", timeout)
    return saved["weight copies"] + saved["activations"]


def torch_state_bytes(model: Any, optimizer: Any = None) -> dict[str, int]:
    """Bytes a torch model's weights, their gradients and the optimizer's state hold, by dtype (what stays resident)."""
    import torch

    validate.instance("model", model, torch.nn.Module)
    if optimizer is not None:
        validate.instance("optimizer", optimizer, torch.optim.Optimizer)
    held: dict[str, int] = {}

    def add(kind: str, t: Any) -> None:
        key = f"{kind} ({str(t.dtype).removeprefix('torch.')})"
        held[key] = held.get(key, 0) + t.numel() * t.element_size()

    for p in model.parameters():
        add("weights", p)
        if p.grad is not None:
            add("gradients", p.grad)
    for state in (optimizer.state.values() if optimizer is not None else ()):
        for t in state.values():
            if isinstance(t, torch.Tensor) and t.dim() > 0:
                add("optimizer state", t)
    return held


# ---------------------------------------------------------------------------------------------------------
# XLA's plan for a compiled JAX program


def compiled_stats(compiled: Any) -> dict[str, float]:
    """FLOPs, dot ops in the optimised HLO and argument/output/temp bytes of ``jit(f).lower(...).compile()``."""
    if not all(hasattr(compiled, a) for a in ("cost_analysis", "as_text", "memory_analysis")):
        raise TypeError(f"compiled must be a compiled JAX program (jax.jit(f).lower(...).compile()); "
                        f"got {type(compiled).__name__}")
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else (cost or {})
    stats: dict[str, float] = {"flops": float(cost.get("flops", float("nan"))),
                               "dots": compiled.as_text().count(" dot(")}
    mem = compiled.memory_analysis()
    if mem is not None:
        for key in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes"):
            stats[key.removesuffix("_size_in_bytes")] = int(getattr(mem, key))
    return stats


@declare.checked
def jax_compiled_stats(fn: Callable[..., Any], *args: Any,
                       timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT) -> dict[str, float]:
    """``compiled_stats`` of ``jax.jit(fn)`` compiled for ``args``: XLA's FLOPs, dot count and buffer bytes.
    Tracing runs ``fn``'s Python: it and the compile must end within ``timeout`` seconds."""
    import jax

    with _calls.limit(fn, timeout):
        compiled = jax.jit(fn).lower(*args).compile()
    return compiled_stats(compiled)


@declare.checked
def jax_memory(fn: Callable[..., Any], *args: Any, timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT) -> dict[str, int]:
    """XLA's argument, output and temp bytes for ``jax.jit(fn)(*args)``: the compiled program's memory plan."""
    stats = jax_compiled_stats(fn, *args, timeout=timeout)
    if "temp" not in stats:
        raise RuntimeError("this JAX backend gives no memory_analysis()")
    return {k: int(v) for k, v in stats.items() if k not in ("flops", "dots")}


@declare.checked
def page_faults(fn: Callable[..., Any], *args: Any, calls: Annotated[int, Range(1, MAX_FAULT_CALLS)] = 3,
                timeout: _calls.Timeout = _calls.DEFAULT_TIMEOUT) -> float:
    """Minor page faults per call of ``fn(*args)`` after one untimed call, over the whole process (``getrusage``): a
    fresh 32 MiB output costs 8192, a reused buffer none; nan where the OS has no ``resource``."""
    with _calls.limit(fn, timeout):
        timing.sync(fn(*args))
        before = minor_faults()
        for _ in range(calls):
            timing.sync(fn(*args))
        return (minor_faults() - before) / calls


def minor_faults() -> float:
    """Minor page faults of this process so far (nan where the OS has no ``resource`` module)."""
    try:
        import resource
    except ImportError:  # Windows
        return math.nan
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
