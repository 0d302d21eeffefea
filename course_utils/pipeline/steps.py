"""The model side of notebook 04: the course MLP and the one SGD step per framework from ``course_utils.models``,
built and warmed up (compiled) before any clock runs, for the frameworks present in this runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from course_utils import env, models, validate


def mlp_step(framework: str, sizes: Sequence[int], *, lr: float = 0.05, seed: int = 0) -> Callable[[Any], Any]:
    """``step((x, y)) -> loss``: one SGD step of ``models``' MLP on flattened images, in ``framework``
    ('torch', 'jax', 'tensorflow'/'tf'). torch moves the batch to the GPU when there is one; jax takes
    NumPy or JAX arrays; tensorflow takes tensors or NumPy arrays. The loss is returned without waiting."""
    framework = validate.framework(framework)
    models.mlp_weights(sizes, seed=seed)  # validates sizes and seed with the same checks as the models
    validate.positive("lr", lr)
    if framework == "torch":
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return models.torch_sgd_step(models.torch_mlp(sizes, seed=seed).to(device), lr=lr, device=device,
                                     flatten=True)
    if framework == "jax":
        return models.jax_sgd_step(models.jax_mlp_params(sizes, seed=seed), models.jax_mlp_apply, lr=lr,
                                   flatten=True)
    return models.keras_sgd_step(models.keras_mlp(sizes, seed=seed), lr=lr, flatten=True)


def to_framework(framework: str, batch: tuple[np.ndarray, np.ndarray]) -> tuple[Any, Any]:
    """A NumPy (x, y) batch as the framework's own arrays (torch tensors, JAX arrays on the device, TF tensors)."""
    framework = validate.framework(framework)
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(f"batch must be an (images, labels) pair; got {type(batch).__name__}")
    if framework == "torch":
        import torch

        return torch.from_numpy(np.asarray(batch[0])), torch.from_numpy(np.asarray(batch[1]))
    if framework == "jax":
        import jax

        return jax.device_put(batch)
    tf = env.import_tensorflow()
    return tf.constant(batch[0]), tf.constant(batch[1])


def warm_steps(sizes: Sequence[int], batch: tuple[np.ndarray, np.ndarray], *,
               frameworks: Iterable[str] | None = None, lr: float = 0.05) -> tuple[dict[str, Any], dict[str, float]]:
    """A step per framework present (or per name in ``frameworks``), each called once on ``batch`` so that
    jax.jit and tf.function compile before the clock runs. Returns (steps, first losses)."""
    names = env.installed_frameworks() if frameworks is None else [validate.framework(f) for f in frameworks]
    validate.non_empty("frameworks", names)
    steps, losses = {}, {}
    for name in names:
        steps[name] = mlp_step(name, sizes, lr=lr)
        losses[name] = float(steps[name](to_framework(name, batch)))
    return steps, losses
