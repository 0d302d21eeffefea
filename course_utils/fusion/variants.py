"""The chain in each framework, eager and fused, with a fresh output or written into a reused buffer, and
the probes that measure what limits it (page faults per call, the vector units' own roof).

The notebook loops over the frameworks present (``cu.notebook.present()``), so a missing one costs a
sentence; each function here takes the framework's canonical name ('torch', 'jax', 'tensorflow').
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from course_utils import env, models, timing, validate

EAGER = {"torch": "torch eager", "jax": "jax op-by-op", "tensorflow": "tf eager"}
FUSED = {"torch": "torch.compile", "jax": "jax.jit", "tensorflow": "tf jit_compile"}
INTO = {"torch": "torch.compile, out=", "jax": "jax.jit, donated"}


def identity(v: Any) -> Any:
    """The 'no tanh' chain's tanh: same bytes and ops around it, no transcendental."""
    return v


def chain(framework: str, *, tanh: bool = True) -> Callable[[Any, Any], Any]:
    """The course chain ``x + GELU_tanh(x + bias)`` in ``framework``; ``tanh=False`` puts the identity in
    tanh's place, which leaves a pure polynomial (multiplies and adds only)."""
    framework = validate.framework(framework)
    validate.instance("tanh", tanh, bool)
    if tanh:
        return models.chain_for(framework)

    def polynomial(x: Any, bias: Any) -> Any:
        return models.gelu_chain(x, bias, identity)

    polynomial.__name__ = f"polynomial_chain_{framework}"
    return polynomial


def to_framework(framework: str, *arrays: Any, device: str | None = None) -> tuple[Any, ...]:
    """NumPy arrays as the framework's arrays (torch on ``device``, default cpu)."""
    framework = validate.framework(framework)
    validate.non_empty("arrays", arrays)
    import numpy as np

    for i, array in enumerate(arrays):
        validate.instance(f"arrays[{i}]", array, np.ndarray)
    if framework == "torch":
        import torch

        return tuple(torch.from_numpy(a).to(device or "cpu") for a in arrays)
    if framework == "jax":
        import jax.numpy as jnp

        return tuple(jnp.asarray(a) for a in arrays)
    tf = env.import_tensorflow()
    return tuple(tf.constant(a) for a in arrays)


def to_numpy(value: Any) -> Any:
    """A framework's array as a NumPy array (a torch tensor is detached and copied to the host first)."""
    if value is None:
        raise TypeError("value must be an array or tensor; got None")
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    import numpy as np

    return np.asarray(value)


def compiled(framework: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(fn)``, ``jax.jit(fn)`` or ``tf.function(fn, jit_compile=True)``."""
    framework = validate.framework(framework)
    validate.function("fn", fn)
    if framework == "torch":
        import torch

        return torch.compile(fn)
    if framework == "jax":
        import jax

        return jax.jit(fn)
    return env.import_tensorflow().function(fn, jit_compile=True)


def into_buffer(framework: str, fn: Callable[[Any, Any], Any], like: Any) -> Callable[[Any, Any], Any] | None:
    """A compiled ``fn(x, bias)`` that writes into one reused buffer shaped like ``like``; None for TensorFlow.

    torch: ``out.copy_(fn(x, bias))`` compiled (Inductor fuses the copy: the kernel writes into ``out``).
    jax: ``jit(..., donate_argnums=2, keep_unused=True)``: XLA writes into the donated buffer (``keep_unused``
    because jit drops unread arguments, and a dropped buffer is silently not donated).
    TensorFlow has neither: a tf.function returns new tensors, so there is nothing to pass.
    """
    framework = validate.framework(framework)
    validate.function("fn", fn)
    _check_like(like)
    if framework == "torch":
        import torch

        out = torch.empty_like(like)

        def write(x: Any, bias: Any, buffer: Any) -> Any:
            return buffer.copy_(fn(x, bias))

        write.__name__ = f"{getattr(fn, '__name__', 'fn')}_into"
        kernel = torch.compile(write)
        return lambda x, bias: kernel(x, bias, out)
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        donating = jax.jit(lambda x, bias, buffer: fn(x, bias), donate_argnums=2, keep_unused=True)
        state = {"buffer": jnp.zeros_like(like)}

        def run(x: Any, bias: Any) -> Any:
            state["buffer"] = donating(x, bias, state["buffer"])
            return state["buffer"]

        return run
    return None


def _check_like(like: Any) -> None:
    if like is None or not (hasattr(like, "shape") and hasattr(like, "dtype")):
        raise TypeError(f"like must be an array or tensor (it gives the buffer's shape and dtype); got {like!r}")


def copy_into(framework: str, like: Any) -> Callable[[Any], Any] | None:
    """A compiled copy of ``x`` into a reused buffer: the same bytes as the fused chain (read x, write x), no
    arithmetic, generated by the same compiler (torch: an Inductor ``cpp_fused_copy_`` kernel; jax: XLA); None for
    TensorFlow."""
    framework = validate.framework(framework)
    _check_like(like)
    if framework == "torch":
        import torch

        out = torch.empty_like(like)

        def copy(x: Any, buffer: Any) -> Any:
            return buffer.copy_(x)

        kernel = torch.compile(copy)  # Inductor's own copy loop: the same code generator and threads as the chain
        return lambda x: kernel(x, out)
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        donating = jax.jit(lambda x, buffer: jnp.copy(x), donate_argnums=1, keep_unused=True)
        state = {"buffer": jnp.zeros_like(like)}

        def run(x: Any) -> Any:
            state["buffer"] = donating(x, state["buffer"])
            return state["buffer"]

        return run
    return None


def page_faults(fn: Callable[..., Any], *args: Any, calls: int = 3) -> float:
    """Minor page faults per call of ``fn(*args)`` (after one warm-up call), from ``getrusage``.

    A fresh 32 MiB output costs 8192 faults (one per 4 KiB page); a reused buffer costs none.
    """
    validate.function("fn", fn)
    validate.positive("calls", calls, integer=True)
    import resource

    timing.sync(fn(*args))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        timing.sync(fn(*args))
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


@dataclass(frozen=True)
class VectorRoof:
    """What the vector units do on data that stays in cache: FLOP/s of fused multiply-adds, tanh per second."""

    flops_per_second: float
    tanh_per_second: float
    elements: int

    def __post_init__(self) -> None:
        validate.positive("flops_per_second", self.flops_per_second)
        validate.positive("tanh_per_second", self.tanh_per_second)
        validate.positive("elements", self.elements, integer=True)

    def chain_seconds(self, elements: int, *, flops: float, tanh: float) -> float:
        """Time the arithmetic alone needs: ``flops`` multiply-add FLOPs and ``tanh`` tanhs *per element*."""
        validate.positive("elements", elements, integer=True)
        validate.non_negative("flops", flops)
        validate.non_negative("tanh", tanh)
        return elements * (flops / self.flops_per_second + tanh / self.tanh_per_second)


def measure_vector_roof(*, elements: int | None = None, steps: int = 128, min_time: float = 0.1) -> VectorRoof:
    """Measure PyTorch's compiled elementwise arithmetic on an in-cache tensor, written into a reused buffer.

    FMA rate: a Horner polynomial of ``steps`` multiply-adds (2 FLOPs each) per element; tanh rate: ``steps // 8``
    nested tanh per element; each the best of its repeats (a roof is a best case, as in STREAM). Both kernels are
    compute-bound by construction (the tensor, by default a quarter of the L2 cache, never leaves the cache), so
    they measure the vector units, not memory; the long inner loop keeps each call's work large against the cost
    of waking the worker threads.
    """
    validate.positive("steps", steps, integer=True)
    validate.positive("min_time", min_time)
    if elements is None:
        elements = max(2**14, env.cache_sizes().get("L2", 2**20) // 16)
    validate.number("elements", elements, low=1024, high=2**26, integer=True)
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.rand(elements, device=device) * 0.5
    out = torch.empty_like(x)

    def horner(v: Any, buffer: Any) -> Any:
        acc = v
        for k in range(steps):
            acc = acc * v + (0.5 + 0.01 * k)
        return buffer.copy_(acc)

    nested = max(1, steps // 8)

    def tanh_nested(v: Any, buffer: Any) -> Any:
        for _ in range(nested):
            v = torch.tanh(v)
        return buffer.copy_(v)

    fma, tanh = torch.compile(horner), torch.compile(tanh_nested)
    fma_time = timing.benchmark(fma, x, out, min_time=min_time, min_repeats=5).min
    tanh_time = timing.benchmark(tanh, x, out, min_time=min_time, min_repeats=5).min
    return VectorRoof(2 * steps * elements / fma_time, nested * elements / tanh_time, elements)


def measure_variants(data: Mapping[str, tuple[Any, Any]], *, known: Mapping[str, Any] | None = None,
                     **bench: Any) -> dict[str, Any]:
    """Time the chain like for like in each framework of ``data`` ({framework: (x, bias)}): compiled with and
    without tanh, each with a fresh output and into a reused buffer (torch ``out=``, JAX donation; TensorFlow
    has no such buffer), a copy of ``x`` into a reused buffer (the same bytes, no arithmetic), and eager
    PyTorch without tanh. ``known`` supplies measurements already taken (by name), so nothing runs twice.
    """
    validate.instance("data", data, Mapping)
    validate.non_empty("data", data)
    for key, value in data.items():
        if not (isinstance(value, tuple) and len(value) == 2):
            raise TypeError(f"data[{key!r}] must be an (x, bias) pair; got {type(value).__name__}")
    if known is not None:
        validate.instance("known", known, Mapping)
    found: dict[str, Any] = dict(known or {})

    def time(name: str, fn: Callable[..., Any] | None, *args: Any) -> None:
        if fn is not None and name not in found:
            found[name] = timing.benchmark(fn, *args, label=name, **bench)

    for framework, (x, bias) in data.items():
        framework = validate.framework(framework, "data key")
        for tanh in (True, False):
            fn, tag = chain(framework, tanh=tanh), "" if tanh else ", no tanh"
            time(f"{FUSED[framework]}{tag}", compiled(framework, fn), x, bias)
            if framework in INTO:
                time(f"{INTO[framework]}{tag}", into_buffer(framework, fn, x), x, bias)
        time(f"{framework} copy, same bytes", copy_into(framework, x), x)
        if framework == "torch":
            time("torch eager, no tanh", chain("torch", tanh=False), x, bias)
    return found
