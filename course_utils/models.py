"""The recurring workloads, identical in PyTorch, JAX and TensorFlow, so that numbers compare across notebooks.

- ``gelu_chain``: bias + GELU (tanh form) + residual, nine elementwise ops: the fusion workload.
- a small MLP: the same layer sizes and the same initial weights (drawn once with NumPy) in each framework.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

DEFAULT_SIZES = (32, 64, 64, 10)
GELU_CHAIN_OPS = 9  # elementwise ops in gelu_chain, each a full pass over memory when run eagerly
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu_chain(x: Any, bias: Any, tanh: Callable[[Any], Any]) -> Any:
    """x + GELU_tanh(x + bias): nine elementwise ops written with operators, so any framework runs it.

    Pass the framework's tanh (``torch.tanh``, ``jnp.tanh``, ``tf.tanh``); ``chain_for`` does that.
    """
    h = x + bias
    inner = _SQRT_2_OVER_PI * (h + 0.044715 * (h * h * h))
    return x + 0.5 * h * (1.0 + tanh(inner))


def chain_for(framework: str) -> Callable[[Any, Any], Any]:
    """``gelu_chain`` bound to the framework's tanh: ``f(x, bias)``."""
    if framework == "torch":
        import torch

        tanh = torch.tanh
    elif framework == "jax":
        import jax.numpy as jnp

        tanh = jnp.tanh
    elif framework in ("tensorflow", "tf"):
        from course_utils import env

        tanh = env.import_tensorflow().tanh
    elif framework == "numpy":
        tanh = np.tanh
    else:
        raise ValueError(f"framework must be one of 'torch', 'jax', 'tensorflow', 'numpy'; got {framework!r}")

    def chain(x: Any, bias: Any) -> Any:
        return gelu_chain(x, bias, tanh)

    chain.__name__ = f"gelu_chain_{framework}"
    return chain


def mlp_weights(sizes: Sequence[int] = DEFAULT_SIZES, *, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """He-uniform weights (in, out) and zero biases, float32, for each layer; shared by all three frameworks."""
    if len(sizes) < 2 or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
        raise ValueError(f"sizes must be at least two positive ints; got {sizes!r}")
    rng = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = math.sqrt(6.0 / fan_in)
        w = rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32)
        layers.append((w, np.zeros(fan_out, np.float32)))
    return layers


def torch_mlp(sizes: Sequence[int] = DEFAULT_SIZES, *, seed: int = 0) -> Any:
    """``torch.nn.Sequential`` of Linear + ReLU layers holding ``mlp_weights(sizes, seed)``."""
    import torch

    layers: list[torch.nn.Module] = []
    for w, b in mlp_weights(sizes, seed=seed):
        linear = torch.nn.Linear(*w.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w.T.copy()))
            linear.bias.copy_(torch.from_numpy(b))
        layers += [linear, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def jax_mlp_params(sizes: Sequence[int] = DEFAULT_SIZES, *, seed: int = 0) -> list[dict[str, Any]]:
    """The MLP's parameters as a JAX pytree: a list of {"w", "b"} dicts."""
    import jax.numpy as jnp

    return [{"w": jnp.asarray(w), "b": jnp.asarray(b)} for w, b in mlp_weights(sizes, seed=seed)]


def jax_mlp_apply(params: Sequence[dict[str, Any]], x: Any) -> Any:
    """Forward pass of the MLP in JAX (pure function: parameters in, logits out)."""
    import jax

    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def keras_mlp(sizes: Sequence[int] = DEFAULT_SIZES, *, seed: int = 0) -> Any:
    """A built ``keras.Sequential`` of Dense layers holding ``mlp_weights(sizes, seed)``."""
    from course_utils import env

    env.import_tensorflow()
    import keras

    weights = mlp_weights(sizes, seed=seed)
    layers = [keras.Input(shape=(sizes[0],))]
    for i, (w, _) in enumerate(weights):
        layers.append(keras.layers.Dense(w.shape[1], activation=None if i == len(weights) - 1 else "relu"))
    model = keras.Sequential(layers)
    for layer, (w, b) in zip(model.layers, weights):
        layer.set_weights([w, b])
    return model
