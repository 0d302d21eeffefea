"""Mixed precision in each framework, with the dtypes of weights, activations, loss and gradients read back:
``torch.autocast`` (hooks on every Linear), Keras dtype policies (``keras.config.set_dtype_policy``), and an
explicit JAX policy whose activations are read from the program itself (the jaxpr of the wrapped apply).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from course_utils import env, models, validate

DtypeReport = dict[str, set[str]]
_POLICY_DTYPES = ("float32", "bfloat16", "float16")
KERAS_POLICIES = ("float32", "mixed_bfloat16", "mixed_float16", "bfloat16", "float16")


# ---------------------------------------------------------------------------------------------------------
# JAX: an explicit policy


def _cast_floating(tree: Any, dtype: str) -> Any:
    import jax
    import jax.numpy as jnp

    def cast(leaf: Any) -> Any:
        if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.floating):
            return leaf.astype(dtype)
        return leaf

    return jax.tree.map(cast, tree)


@dataclass(frozen=True)
class Policy:
    """Which dtype parameters are stored in, computed in, and returned in (floating leaves only)."""

    param_dtype: str = "float32"
    compute_dtype: str = "bfloat16"
    output_dtype: str = "float32"

    def __post_init__(self) -> None:
        for field_name in ("param_dtype", "compute_dtype", "output_dtype"):
            value = getattr(self, field_name)
            validate.instance(field_name, value, str)
            validate.choice(field_name, value, _POLICY_DTYPES)

    def cast_to_param(self, tree: Any) -> Any:
        return _cast_floating(tree, self.param_dtype)

    def cast_to_compute(self, tree: Any) -> Any:
        return _cast_floating(tree, self.compute_dtype)

    def cast_to_output(self, tree: Any) -> Any:
        return _cast_floating(tree, self.output_dtype)

    def wrap(self, apply: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """``apply(params, x)`` run in the compute dtype, its output cast to the output dtype.

        The gradient with respect to fp32 parameters comes back in fp32: the transpose of a cast is a cast.
        """
        validate.function("apply", apply)

        def wrapped(params: Any, x: Any) -> Any:
            return self.cast_to_output(apply(self.cast_to_compute(params), self.cast_to_compute(x)))

        wrapped.__name__ = f"{getattr(apply, '__name__', 'apply')}_{self.compute_dtype}"
        return wrapped


def _jaxpr_values(jaxpr: Any, out: list[tuple[str, str]]) -> None:
    """(primitive, dtype) of every value computed in ``jaxpr``, nested jaxprs (relu's custom_jvp) included."""
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            out.append((eqn.primitive.name, str(var.aval.dtype)))
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    _jaxpr_values(inner, out)


def jax_activation_dtypes(apply: Callable[[Any, Any], Any], params: Any, x: Any) -> set[str]:
    """Dtypes of every intermediate value that ``apply(params, x)`` computes, casts excluded, from its jaxpr."""
    import jax

    validate.function("apply", apply)
    values: list[tuple[str, str]] = []
    _jaxpr_values(jax.make_jaxpr(apply)(params, x).jaxpr, values)
    return {dtype for prim, dtype in values if prim != "convert_element_type"}


def jax_dtypes(apply: Callable[[Any, Any], Any], params: Any, x: Any, y: Any) -> DtypeReport:
    """Dtypes of weights, activations (read from the program), cross-entropy loss and gradients in JAX."""
    import jax
    import jax.numpy as jnp

    def loss_fn(p: Any, xb: Any, yb: Any) -> Any:
        logits = apply(p, xb)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), yb[:, None], axis=1))

    loss, grads = jax.jit(jax.value_and_grad(loss_fn))(params, x, y)
    return {
        "weights": {str(a.dtype) for a in jax.tree.leaves(params)},
        "activations": jax_activation_dtypes(apply, params, x),
        "loss": {str(loss.dtype)},
        "gradients": {str(a.dtype) for a in jax.tree.leaves(grads)},
        "loss value": {f"{float(loss):.4f}"},
    }


# ---------------------------------------------------------------------------------------------------------
# PyTorch: autocast


def torch_dtypes(model: Any, x: Any, y: Any, dtype: Any) -> DtypeReport:
    """One autocast forward and backward in ``dtype``; dtypes of weights, Linear outputs, loss and gradients."""
    import torch
    import torch.nn.functional as F

    validate.instance("model", model, torch.nn.Module)
    validate.instance("x", x, torch.Tensor)
    validate.choice("dtype", dtype, (torch.bfloat16, torch.float16, torch.float32))
    acts: list[str] = []
    hooks = [m.register_forward_hook(lambda m, i, o: acts.append(str(o.dtype).removeprefix("torch.")))
             for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not hooks:
        raise ValueError("model must contain at least one torch.nn.Linear")
    try:
        with torch.autocast(x.device.type, dtype=dtype, enabled=dtype != torch.float32):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
    finally:
        for h in hooks:
            h.remove()
    name = lambda t: str(t.dtype).removeprefix("torch.")  # noqa: E731
    report = {
        "weights": {name(p) for p in model.parameters()},
        "activations": set(acts),
        "loss": {name(loss)},
        "gradients": {name(p.grad) for p in model.parameters()},
        "loss value": {f"{loss.item():.4f}"},
    }
    model.zero_grad(set_to_none=True)
    return report


# ---------------------------------------------------------------------------------------------------------
# Keras 3: dtype policies


def keras_dtypes(policy: str, x: Any, y: Any, *, seed: int = 0) -> DtypeReport:
    """Build the course MLP under ``keras.config.set_dtype_policy(policy)``, one step's dtypes; policy restored."""
    validate.instance("policy", policy, str)
    validate.choice("policy", policy, KERAS_POLICIES)
    tf = env.import_tensorflow()
    import keras

    before = keras.config.dtype_policy().name
    keras.config.set_dtype_policy(policy)
    try:
        model = models.keras_mlp(seed=seed)
        acts, h = set(), tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            for layer in model.layers:
                h = layer(h)
                acts.add(h.dtype.name)
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(y, tf.cast(h, "float32"),
                                                                               from_logits=True))
        grads = tape.gradient(loss, model.trainable_variables)
    finally:
        keras.config.set_dtype_policy(before)
    return {
        "weights": {v.dtype for v in model.trainable_variables},
        "activations": acts,
        "loss": {loss.dtype.name},
        "gradients": {g.dtype.name for g in grads},
        "loss value": {f"{float(loss):.4f}"},
    }


def keras_compile_wraps_optimizer(policy: str = "mixed_float16") -> bool:
    """True when ``model.compile`` under ``policy`` wraps the optimizer in a ``LossScaleOptimizer`` by itself."""
    validate.instance("policy", policy, str)
    validate.choice("policy", policy, KERAS_POLICIES)
    env.import_tensorflow()
    import keras

    before = keras.config.dtype_policy().name
    keras.config.set_dtype_policy(policy)
    try:
        model = models.keras_mlp(seed=0)
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    finally:
        keras.config.set_dtype_policy(before)
    return isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)


def dtype_summary(report: DtypeReport) -> DtypeReport:
    """``report`` without the loss value (the part a notebook compares with the expected dtypes)."""
    validate.instance("report", report, dict)
    return {k: v for k, v in report.items() if k != "loss value"}
