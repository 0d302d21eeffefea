"""The recurring workloads, identical in PyTorch, JAX and TensorFlow, so that numbers compare across notebooks.

- ``gelu_chain``: bias + GELU (tanh form) + residual, eleven elementwise ops: the fusion workload.
- a small MLP: the same layer sizes and the same initial weights (drawn once with NumPy) in each framework.
- a small CNN for image patches (e.g. ``pipeline.SyntheticImages``): three 3x3 convolutions (the last two with stride
  2), global average pooling and a linear head; NHWC in JAX and Keras, NCHW in PyTorch, same weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

DEFAULT_SIZES = (32, 64, 64, 10)
GELU_CHAIN_OPS = 11  # elementwise ops in gelu_chain, each a full pass over memory when run eagerly
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu_chain(x: Any, bias: Any, tanh: Callable[[Any], Any]) -> Any:
    """x + GELU_tanh(x + bias): eleven elementwise ops written with operators, so any framework runs it.

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


CNN_CHANNELS = (16, 32, 32)
_CNN_STRIDES = (1, 2, 2)


def cnn_weights(in_channels: int = 3, classes: int = 2, *, channels: Sequence[int] = CNN_CHANNELS,
                seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """He-uniform conv kernels in HWIO layout (3, 3, in, out) plus the head (in, classes); zero biases."""
    if len(channels) != len(_CNN_STRIDES):
        raise ValueError(f"channels must have {len(_CNN_STRIDES)} entries; got {channels!r}")
    rng = np.random.default_rng(seed)
    layers, fan_in = [], in_channels
    for out in channels:
        limit = math.sqrt(6.0 / (9 * fan_in))
        layers.append((rng.uniform(-limit, limit, (3, 3, fan_in, out)).astype(np.float32), np.zeros(out, np.float32)))
        fan_in = out
    limit = math.sqrt(6.0 / fan_in)
    layers.append((rng.uniform(-limit, limit, (fan_in, classes)).astype(np.float32), np.zeros(classes, np.float32)))
    return layers


def torch_cnn(in_channels: int = 3, classes: int = 2, *, seed: int = 0) -> Any:
    """The CNN as ``torch.nn.Sequential`` (input NCHW) holding ``cnn_weights``."""
    import torch

    weights = cnn_weights(in_channels, classes, seed=seed)
    layers: list[torch.nn.Module] = []
    for (w, b), stride in zip(weights[:-1], _CNN_STRIDES):
        conv = torch.nn.Conv2d(w.shape[2], w.shape[3], 3, stride=stride, padding=1)
        with torch.no_grad():
            conv.weight.copy_(torch.from_numpy(w.transpose(3, 2, 0, 1).copy()))
            conv.bias.copy_(torch.from_numpy(b))
        layers += [conv, torch.nn.ReLU()]
    head = torch.nn.Linear(*weights[-1][0].shape)
    with torch.no_grad():
        head.weight.copy_(torch.from_numpy(weights[-1][0].T.copy()))
        head.bias.copy_(torch.from_numpy(weights[-1][1]))
    return torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), head)


def jax_cnn_params(in_channels: int = 3, classes: int = 2, *, seed: int = 0) -> list[dict[str, Any]]:
    """The CNN's parameters as a JAX pytree: a list of {"w", "b"} dicts (conv kernels HWIO)."""
    import jax.numpy as jnp

    return [{"w": jnp.asarray(w), "b": jnp.asarray(b)} for w, b in cnn_weights(in_channels, classes, seed=seed)]


def jax_cnn_apply(params: Sequence[dict[str, Any]], x: Any) -> Any:
    """Forward pass of the CNN in JAX on NHWC input (symmetric padding of 1, as PyTorch's padding=1)."""
    import jax

    for layer, stride in zip(params[:-1], _CNN_STRIDES):
        x = jax.lax.conv_general_dilated(x, layer["w"], (stride, stride), ((1, 1), (1, 1)),
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        x = jax.nn.relu(x + layer["b"])
    return x.mean(axis=(1, 2)) @ params[-1]["w"] + params[-1]["b"]


def keras_cnn(in_channels: int = 3, classes: int = 2, *, size: int = 32, seed: int = 0) -> Any:
    """The CNN as a built ``keras.Sequential`` on NHWC input holding ``cnn_weights``."""
    from course_utils import env

    env.import_tensorflow()
    import keras

    weights = cnn_weights(in_channels, classes, seed=seed)
    layers: list[Any] = [keras.Input(shape=(size, size, in_channels))]
    for (w, _), stride in zip(weights[:-1], _CNN_STRIDES):
        layers += [keras.layers.ZeroPadding2D(1), keras.layers.Conv2D(w.shape[3], 3, strides=stride, activation="relu")]
    layers += [keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(classes)]
    model = keras.Sequential(layers)
    trainable = [layer for layer in model.layers if layer.weights]
    for layer, (w, b) in zip(trainable, weights):
        layer.set_weights([w, b])
    return model
