"""NumPy in and out of each framework, and each framework's default compile: written once, so "the same input in
every framework" means the same code path."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from course_utils import declare, env, validate


def to_framework(framework: str, *arrays: Any, device: str | None = None) -> Any:
    """NumPy arrays (or numbers), copied, as the framework's arrays (one in, one out; several, a tuple): torch's on
    ``device`` (default CUDA where present), JAX's and TensorFlow's on their default device."""
    name = validate.framework(framework)
    if device is not None:
        torch = sys.modules.get("torch")
        if not (isinstance(device, str) and device.strip() or torch is not None and isinstance(device, torch.device)):
            raise TypeError(f"device must be None or a torch device name such as 'cpu' or 'cuda:0'; got "
                            f"{type(device).__name__} {device!r}")
    validate.non_empty("arrays", arrays)
    converted = tuple(_convert(name, f"arrays[{i}]", array, device) for i, array in enumerate(arrays))
    return converted[0] if len(converted) == 1 else converted


def _convert(name: str, label: str, array: Any, device: str | None) -> Any:
    if array is None or isinstance(array, (str, bytes)):
        raise TypeError(f"{label} must be a NumPy array or a number; got {type(array).__name__}")
    array = np.asarray(array)
    if array.dtype == object:
        raise TypeError(f"{label} must hold numbers; got an object array")
    if name == "torch":
        import torch

        target = torch_device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        return torch.from_numpy(array.copy()).to(target)
    if name == "jax":
        import jax.numpy as jnp

        return jnp.array(array)
    return env.import_tensorflow().constant(array)


def torch_device(device: Any, name: str = "device") -> Any:
    """``device`` ('cpu', 'cuda:0' or a ``torch.device``) as a ``torch.device``; one this runtime lacks is refused."""
    import torch

    validate.instance(name, device, (str, torch.device))
    try:
        device = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"{name} must name a torch device such as 'cpu' or 'cuda:0'; got {device!r}") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name} is {str(device)!r} but this runtime has no CUDA GPU; use 'cpu'")
    return device


def to_numpy(value: Any) -> np.ndarray:
    """A framework's array (or a number) as a NumPy array on the host; torch tensors are detached first."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"value must be an array, a tensor or a number; got {type(value).__name__}")
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    result = np.asarray(value)
    if result.dtype == object:
        raise TypeError(f"value must hold numbers; got {type(value).__name__}")
    return result


@declare.checked
def compile_default(framework: str, fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    """``fn`` compiled as a learner would by default: ``torch.compile(fn)``, ``jax.jit(fn)`` or
    ``tf.function(fn, jit_compile=True)`` (XLA, like JAX's); ``kwargs`` pass on to the framework."""
    name = validate.framework(framework)  # by hand: it also takes 'pytorch' and 'tf'
    if name == "torch":
        import torch

        return torch.compile(fn, **kwargs)
    if name == "jax":
        import jax

        return jax.jit(fn, **kwargs)
    return env.import_tensorflow().function(fn, **{"jit_compile": True, **kwargs})
