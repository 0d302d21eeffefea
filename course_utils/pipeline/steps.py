"""The model side of notebook 04: the course MLP's one SGD step per framework (``course_utils.models``), warmed up
(compiled) before any clock runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

import numpy as np

from course_utils import declare, env, interop, models, validate

Widths = Annotated[Sequence[Annotated[int, declare.Range(1, 10**6)]], declare.MinItems(2), declare.MaxItems(16)]


def _mlp_step(framework: str, sizes: Sequence[int], lr: float) -> Callable[[Any], Any]:
    """``step((x, y)) -> loss`` (not waited for): one SGD step of ``models``' MLP on flattened images; torch moves
    the batch to the GPU when there is one."""
    if framework == "torch":
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return models.torch_sgd_step(models.torch_mlp(sizes, seed=0).to(device), lr=lr, device=device, flatten=True)
    if framework == "jax":
        return models.jax_sgd_step(models.jax_mlp_params(sizes, seed=0), models.jax_mlp_apply, lr=lr, flatten=True)
    return models.keras_sgd_step(models.keras_mlp(sizes, seed=0), lr=lr, flatten=True)


@declare.checked
def warm_steps(sizes: Widths, batch: tuple[Any, Any], *,
               frameworks: Annotated[Sequence[declare.Text], declare.NonEmpty, declare.Unique] | None = None,
               lr: Annotated[float, declare.Range(0, 10, low_open=True)] = 0.05,
               ) -> tuple[dict[str, Any], dict[str, float]]:
    """A step per framework present (or named in ``frameworks``) for an MLP of layer widths ``sizes``, each called
    once on the (inputs, labels) ``batch`` so that jax.jit and tf.function compile before the clock runs. Returns
    (steps, first losses)."""
    x, y = (np.asarray(a) for a in batch)
    if x.ndim < 2 or y.shape != (len(x),) or x[0].size != sizes[0]:
        raise ValueError(f"batch must be (inputs (B, ...) of sizes[0] = {sizes[0]} numbers each, labels (B,)); got "
                         f"shapes {x.shape} and {y.shape}")
    names = env.installed_frameworks() if frameworks is None else [validate.framework(f, "frameworks")
                                                                   for f in frameworks]
    models.mlp_weights(sizes)  # widths whose weights do not fit in memory are refused here, by name
    steps = {name: _mlp_step(name, sizes, lr) for name in names}
    return steps, {name: float(step(interop.to_framework(name, *batch))) for name, step in steps.items()}
