"""A legacy operator that compilers cannot see into, tanh by table lookup in NumPy (``np.interp``), and its wrappers
in each framework; the notebook shows the PyTorch registration (``torch.library.custom_op``) itself."""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils import declare, env, models

GRID = np.linspace(-10.0, 10.0, 4001, dtype=np.float32)
TABLE = np.tanh(GRID)


def table_tanh_np(a: Any) -> np.ndarray:
    """The legacy operator: tanh by linear interpolation in a 4001-entry table (error ~1e-6), float32 out."""
    values = np.asarray(a)
    if values.dtype.kind not in "fiu":
        raise TypeError(f"a must be a real-valued array; got {type(a).__name__} of dtype {values.dtype}")
    return np.interp(values, GRID, TABLE).astype(np.float32)


@declare.checked
def legacy_tanh_torch(t: Any) -> Any:
    """The legacy op called from PyTorch: leaves the graph (``.numpy()``), runs NumPy, comes back."""
    import torch

    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a torch.Tensor; got {type(t).__name__}")
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
