"""The model side of notebook 04: the course MLP and the one SGD step per framework from ``course_utils.models``,
built and warmed up (compiled) before any clock runs, for the frameworks present in this runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from course_utils import env, interop, models, validate


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


def warm_steps(sizes: Sequence[int], batch: tuple[np.ndarray, np.ndarray], *,
               frameworks: Sequence[str] | None = None, lr: float = 0.05) -> tuple[dict[str, Any], dict[str, float]]:
    """A step per framework present (or per name in ``frameworks``), each called once on ``batch`` so that
    jax.jit and tf.function compile before the clock runs. Returns (steps, first losses)."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(f"batch must be an (inputs, labels) pair of NumPy arrays; got {type(batch).__name__}")
    if frameworks is None:
        names = validate.non_empty("frameworks", env.installed_frameworks())
    else:
        names = [validate.framework(f, "frameworks") for f in validate.non_empty("frameworks", frameworks)]
    steps, losses = {}, {}
    for name in names:
        steps[name] = mlp_step(name, sizes, lr=lr)
        losses[name] = float(steps[name](interop.to_framework(name, *batch)))
    return steps, losses
