"""The chain in each framework, and the names the notebook gives its variants.

The notebook writes the compiled variants itself (``torch.compile``, ``jax.jit``, ``tf.function(...,
jit_compile=True)``, ``out=``, ``donate_argnums``, a ``tf.Variable`` assigned inside the function); this module
only supplies the workload, ``x + GELU_tanh(x + bias)``, and its polynomial twin without the transcendental.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from course_utils import models, validate

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
