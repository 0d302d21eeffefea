"""The chain in each framework (and its polynomial twin without tanh), notebook 02's variant names, the reused-buffer
recipe (``into_buffer``), a float32 matmul's tolerance, and a NumPy tanh by table lookup (opaque to compilers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import declare, devices, env, models, validate
from course_utils.graphs.capture import fresh_function

EAGER = {"torch": "torch eager", "jax": "jax op-by-op", "tensorflow": "tf eager"}
FUSED = {"torch": "torch.compile", "jax": "jax.jit", "tensorflow": "tf jit_compile"}
INTO = {"torch": "torch.compile, out=", "jax": "jax.jit, donated", "tensorflow": "tf jit_compile, Variable"}


@declare.checked
def chain(framework: str, *, tanh: bool = True) -> Callable[[Any, Any], Any]:
    """The course chain ``x + GELU_tanh(x + bias)`` in ``framework``; ``tanh=False`` puts the identity in tanh's
    place, which leaves a pure polynomial (multiplies and adds only) that moves the same bytes."""
    framework = validate.framework(framework)
    if tanh:
        return models.chain_for(framework)

    def polynomial(x: Any, bias: Any) -> Any:
        return models.gelu_chain(x, bias, lambda v: v)

    polynomial.__name__ = f"polynomial_chain_{framework}"
    return polynomial


@declare.checked
def into_buffer(framework: str, fn: Callable[[Any, Any], Any], like: Any) -> Callable[[Any, Any], Any]:
    """A compiled ``fn(x, bias)`` writing into one reused buffer shaped like ``like``: torch ``out.copy_`` (its own
    code object), jax a donated buffer, tensorflow a ``tf.Variable`` assigned under ``jit_compile=True``."""
    framework = validate.framework(framework)
    if framework == "torch":
        import torch

        out = torch.empty_like(like)

        def write(x: Any, bias: Any, buffer: Any) -> Any:
            return buffer.copy_(fn(x, bias))

        write.__name__ = f"{getattr(fn, '__name__', 'fn')}_into"
        kernel = torch.compile(fresh_function(write), dynamic=False)
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
    tf = env.import_tensorflow()
    target = tf.Variable(tf.zeros_like(like))

    def assign(x: Any, bias: Any) -> None:  # returns nothing: no output buffer besides the Variable
        target.assign(fn(x, bias))

    compiled = tf.function(assign, jit_compile=True)

    def assigned(x: Any, bias: Any) -> Any:
        compiled(x, bias)
        return target

    return assigned


@declare.checked
def matmul_tolerance(plan: devices.Plan, framework: Literal["torch", "jax", "tensorflow"],
                     at_least: Annotated[float, declare.Range(0, 1, low_open=True)]) -> float:
    """A float32 matmul comparison's tolerance in ``framework``: ``at_least`` on a CPU, the plan's on the accelerator
    (a TPU multiplies float32 in bf16 passes by default, Ampere's TF32 keeps 10 mantissa bits)."""
    on_cpu = plan.device.kind == "cpu" or (framework == "torch" and plan.torch_device == "cpu")
    return at_least if on_cpu else max(at_least, plan.matmul_tolerance)


GRID = np.linspace(-10.0, 10.0, 4001, dtype=np.float32)
TABLE = np.tanh(GRID)


def table_tanh_np(a: Any) -> np.ndarray:
    """The legacy operator: tanh by linear interpolation in a 4001-entry table (error ~1e-6), float32 out."""
    return np.interp(np.asarray(a), GRID, TABLE).astype(np.float32)


@declare.checked
def legacy_tanh_torch(t: Any) -> Any:
    """The legacy op called from PyTorch: leaves the graph (``.numpy()``), runs NumPy, comes back."""
    import torch

    return torch.from_numpy(table_tanh_np(t.detach().cpu().numpy())).to(t.device)


def chain_with_callback_jax(x: Any, bias: Any) -> Any:
    """The chain with the legacy op inside ``jax.pure_callback`` (the host callback XLA calls out to)."""
    import jax

    def host_tanh(v: Any) -> Any:
        return jax.pure_callback(table_tanh_np, jax.ShapeDtypeStruct(v.shape, v.dtype), v)

    return models.gelu_chain(x, bias, host_tanh)


def chain_with_numpy_function_tf(x: Any, bias: Any) -> Any:
    """The chain with the legacy op inside ``tf.numpy_function`` (runs in a graph; XLA cannot compile it)."""
    tf = env.import_tensorflow()
    return models.gelu_chain(x, bias, lambda v: tf.numpy_function(table_tanh_np, [v], tf.float32))
