"""The chain in each framework, the names notebook 02 gives its variants, and the reused-buffer recipe as one
function.

Notebook 02 writes its compiled variants itself (``torch.compile``, ``jax.jit``, ``tf.function(...,
jit_compile=True)``, ``out=``, ``donate_argnums``, a ``tf.Variable`` assigned inside the function); this module
supplies the workload, ``x + GELU_tanh(x + bias)``, its polynomial twin without the transcendental, and
``into_buffer``: that section's recipe wrapped once, for probes (the vector roof) and notebooks that need a
buffered kernel without teaching it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from course_utils import env, models, validate
from course_utils.graphs.capture import fresh_function

EAGER = {"torch": "torch eager", "jax": "jax op-by-op", "tensorflow": "tf eager"}
FUSED = {"torch": "torch.compile", "jax": "jax.jit", "tensorflow": "tf jit_compile"}
INTO = {"torch": "torch.compile, out=", "jax": "jax.jit, donated", "tensorflow": "tf jit_compile, Variable"}


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


def into_buffer(framework: str, fn: Callable[[Any, Any], Any], like: Any) -> Callable[[Any, Any], Any]:
    """A compiled ``fn(x, bias)`` that writes into one reused buffer shaped like ``like``, and returns it.

    torch: ``out.copy_(fn(x, bias))`` compiled (Inductor fuses the copy: the kernel writes into ``out``), static
    (``dynamic=False``) and from its own code object: Dynamo keys its cache and its automatic-dynamic memory on
    the code object, so two buffers of different shapes would otherwise share one shape-generic graph.
    jax: ``jit(..., donate_argnums=2, keep_unused=True)``: XLA writes into the donated buffer (``keep_unused``
    because jit drops unread arguments, and a dropped buffer is silently not donated).
    tensorflow: a ``tf.Variable`` the caller owns, assigned inside ``tf.function(..., jit_compile=True)``.
    """
    framework = validate.framework(framework)
    validate.function("fn", fn)
    if like is None or not (hasattr(like, "shape") and hasattr(like, "dtype")):
        raise TypeError(f"like must be an array or tensor (it gives the buffer's shape and dtype); got {like!r}")
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

    def assign(x: Any, bias: Any) -> None:
        target.assign(fn(x, bias))

    compiled = tf.function(assign, jit_compile=True)

    def assigned(x: Any, bias: Any) -> Any:
        compiled(x, bias)
        return target

    return assigned
