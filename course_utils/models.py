"""The recurring workloads, identical in PyTorch, JAX and TensorFlow (the GELU chain, a small MLP, a small CNN, the
same weights drawn once with NumPy), and one SGD train step per framework."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from course_utils import declare, env, interop, validate
from course_utils.declare import MinItems, NonNegative, PositiveFloat, Range

_Width = Annotated[int, Range(1, validate.MAX_ELEMENTS)]
_Seed = Annotated[int, NonNegative]

DEFAULT_SIZES = (32, 64, 64, 10)
_DRAWN_BYTES = 12  # per weight while drawing: NumPy draws float64, then keeps a float32 copy
GELU_CHAIN_OPS = 11  # elementwise ops in gelu_chain, each a full pass over memory when run eagerly
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu_chain(x: Any, bias: Any, tanh: Callable[[Any], Any]) -> Any:
    """x + GELU_tanh(x + bias): eleven elementwise ops written with operators, so any framework runs it with its own
    ``tanh`` (``chain_for`` passes it)."""
    if not callable(tanh):  # traced by torch.compile without a graph break
        raise TypeError(f"tanh must be the framework's tanh function (torch.tanh, jnp.tanh, tf.tanh); got "
                        f"{type(tanh).__name__} {tanh!r}")
    h = x + bias
    inner = _SQRT_2_OVER_PI * (h + 0.044715 * (h * h * h))
    return x + 0.5 * h * (1.0 + tanh(inner))


def chain_for(framework: str) -> Callable[[Any, Any], Any]:
    """``gelu_chain`` bound to the framework's tanh: ``f(x, bias)``."""
    framework = validate.framework(framework, numpy=True)
    module = {"torch": "torch", "jax": "jax.numpy", "numpy": "numpy"}.get(framework)  # tensorflow: imported quietly
    tanh = importlib.import_module(module).tanh if module else env.import_tensorflow().tanh

    def chain(x: Any, bias: Any) -> Any:
        return gelu_chain(x, bias, tanh)

    chain.__name__ = f"gelu_chain_{framework}"
    return chain


@declare.checked
def mlp_weights(sizes: Annotated[Sequence[_Width], MinItems(2)] = DEFAULT_SIZES, *,
                seed: _Seed = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """He-uniform weights (in, out) and zero biases, float32, for each layer; shared by all three frameworks.
    Widths whose weights would not fit in half of the free memory are refused by name."""
    sizes = [int(width) for width in sizes]
    elements = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    validate.memory_fits("sizes", elements * _DRAWN_BYTES, what=f"sizes={tuple(sizes)} ({elements:,} weights)")
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

    _layers("params", params)
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def _layers(name: str, params: Any, count: int | None = None) -> None:
    """Refuse ``params`` unless it is a list of {"w", "b"} layers (``count`` of them when given), as
    ``jax_mlp_params`` and ``jax_cnn_params`` return."""
    validate.non_empty(name, params)
    if count is not None and len(params) != count:
        raise ValueError(f"{name} must hold {count} layers; got {len(params)}")
    for i, layer in enumerate(params):
        if not isinstance(layer, Mapping) or not {"w", "b"} <= set(layer):
            raise TypeError(f"{name}[{i}] must be a {{'w': ..., 'b': ...}} layer; got {type(layer).__name__}")


def keras_mlp(sizes: Sequence[int] = DEFAULT_SIZES, *, seed: int = 0) -> Any:
    """A built ``keras.Sequential`` of Dense layers holding ``mlp_weights(sizes, seed)``."""
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
MAX_IMAGE_SIDE = 2**14  # pixels: an image side past this is a typo
_CNN_STRIDES = (1, 2, 2)


@declare.checked
def cnn_weights(in_channels: _Width = 3, classes: _Width = 2, *, seed: _Seed = 0) -> list[tuple[Any, Any]]:
    """He-uniform conv kernels in HWIO layout (3, 3, in, out) of ``CNN_CHANNELS``, then the head (in, classes); zero
    biases."""
    for name, elements in (("in_channels", 9 * in_channels * CNN_CHANNELS[0]), ("classes", CNN_CHANNELS[-1] * classes)):
        validate.memory_fits(name, elements * _DRAWN_BYTES, what=f"{name} ({elements:,} weights)")
    rng = np.random.default_rng(seed)
    layers, fan_in = [], in_channels
    for out in CNN_CHANNELS:
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

    _layers("params", params, count=len(_CNN_STRIDES) + 1)
    for layer, stride in zip(params[:-1], _CNN_STRIDES):
        x = jax.lax.conv_general_dilated(x, layer["w"], (stride, stride), ((1, 1), (1, 1)),
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        x = jax.nn.relu(x + layer["b"])
    return x.mean(axis=(1, 2)) @ params[-1]["w"] + params[-1]["b"]


@declare.checked
def keras_cnn(in_channels: int = 3, classes: int = 2, *, size: Annotated[int, Range(1, MAX_IMAGE_SIDE)] = 32,
              seed: int = 0) -> Any:
    """The CNN as a built ``keras.Sequential`` on NHWC input of ``size`` x ``size`` pixels holding ``cnn_weights``."""
    weights = cnn_weights(in_channels, classes, seed=seed)
    env.import_tensorflow()
    import keras

    layers: list[Any] = [keras.Input(shape=(size, size, in_channels))]
    for (w, _), stride in zip(weights[:-1], _CNN_STRIDES):
        layers += [keras.layers.ZeroPadding2D(1), keras.layers.Conv2D(w.shape[3], 3, strides=stride, activation="relu")]
    layers += [keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(classes)]
    model = keras.Sequential(layers)
    trainable = [layer for layer in model.layers if layer.weights]
    for layer, (w, b) in zip(trainable, weights):
        layer.set_weights([w, b])
    return model


# ---------------------------------------------------------------------------------------------------------
# One SGD training step per framework, used by every lesson and the DDP worker: cross-entropy on an (x, y)
# batch, plain SGD (optionally with momentum) so that the three frameworks compute the same update.


@declare.checked
def torch_sgd_step(model: Any, *, lr: PositiveFloat = 0.05,
                   momentum: Annotated[float, Range(0, 1, high_open=True)] = 0.0, amp_dtype: Any = None,
                   device: Any = None, flatten: bool = False) -> Callable[[Any], Any]:
    """``step((x, y)) -> loss`` (not waited for) for ``model``: forward under autocast when ``amp_dtype`` is given (fp16
    with a GradScaler), backward, update; the batch moves to ``device`` (default: the model's)."""
    import torch
    import torch.nn.functional as F

    validate.instance("model", model, torch.nn.Module)
    first = next(model.parameters(), None)
    if first is None:
        raise ValueError(f"model ({type(model).__name__}) has no parameters to train")
    device = first.device if device is None else interop.torch_device(device)
    if amp_dtype is not None and amp_dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"amp_dtype must be None, torch.float16 or torch.bfloat16; got {amp_dtype!r}")
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype is torch.float16)

    def step(batch: Any) -> Any:
        x, y = (t.to(device, non_blocking=True) for t in batch)
        if flatten:
            x = x.flatten(1)
        with torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()

    step.optimizer = optimizer  # type: ignore[attr-defined]
    return step


@declare.checked
def jax_sgd_step(params: Any, apply: Callable[[Any, Any], Any], *, lr: PositiveFloat = 0.05,
                 flatten: bool = False, jit: bool = True) -> Callable[[Any], Any]:
    """``step((x, y)) -> loss`` for ``apply(params, x)``: one SGD update, jit-compiled unless ``jit=False`` (eager JAX,
    the baseline); ``step.state['params']`` holds the current parameters between calls."""
    import jax
    import jax.numpy as jnp

    if params is None:
        raise TypeError("params must be the model's parameters (a pytree of arrays, e.g. jax_mlp_params()); got None")

    def loss_fn(p: Any, x: Any, y: Any) -> Any:
        if flatten:
            x = x.reshape(x.shape[0], -1)
        logits = apply(p, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def update(p: Any, x: Any, y: Any) -> tuple[Any, Any]:
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree.map(lambda w, g: w - lr * g, p, grads), loss

    if jit:
        update = jax.jit(update)

    state = {"params": params}

    def step(batch: Any) -> Any:
        state["params"], loss = update(state["params"], *batch)
        return loss

    step.state = state  # type: ignore[attr-defined]
    return step


@declare.checked
def keras_sgd_step(model: Any, *, lr: PositiveFloat = 0.05, flatten: bool = False,
                   jit_compile: bool = False) -> Callable[[Any], Any]:
    """``step((x, y)) -> loss`` for a Keras model: a ``tf.function`` (XLA when ``jit_compile``) with a
    GradientTape and plain SGD on its trainable variables."""
    if not hasattr(model, "trainable_variables") or not callable(model):
        raise TypeError(f"model must be a Keras model (callable, with trainable_variables); got "
                        f"{type(model).__name__} {model!r:.80}")
    tf = env.import_tensorflow()
    variables = model.trainable_variables
    if not variables:
        raise ValueError(f"model ({type(model).__name__}) has no trainable variables: build it first (give it an "
                         "Input, or call it once)")

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def tf_step(x: Any, y: Any) -> Any:
        if flatten:
            x = tf.reshape(x, (tf.shape(x)[0], -1))
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(lr * g)
        return loss

    return lambda batch: tf_step(*batch)
