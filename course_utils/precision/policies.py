"""The dtypes a mixed-precision recipe gave weights, activations, loss and gradients: the learner's torch
autocast block (hooks), Keras model (its dtype policy) and JAX cast policy."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from course_utils import calls, declare, env
from course_utils.declare import NonEmpty
from course_utils.precision.formats import Module, Tensor, linear_hooks

DtypeReport = dict[str, set[str]]
REPORT_KEYS = ("weights", "activations", "loss", "gradients")


def _name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------------------------------------------------
# PyTorch: the learner's autocast block, watched


@dataclass
class DtypeWatch:
    """Dtypes of every ``nn.Linear`` output seen while watching; ``report(loss)`` adds weights, loss, gradients."""

    model: Any
    activations: set[str] = field(default_factory=set)

    @declare.checked
    def report(self, loss: Tensor) -> DtypeReport:
        """Weights, the activations seen, ``loss`` and the gradients (call it after ``loss.backward()``)."""
        params = list(self.model.parameters())
        missing = [i for i, p in enumerate(params) if p.grad is None]
        if missing:
            raise ValueError(f"parameter {missing[0]} has no gradient: call report(loss) after loss.backward()")
        if not self.activations:
            raise ValueError("no Linear output was seen: run the forward pass inside `with watch_dtypes(model)`")
        return {"weights": {_name(p.dtype) for p in params}, "activations": set(self.activations),
                "loss": {_name(loss.dtype)}, "gradients": {_name(p.grad.dtype) for p in params},
                "loss value": {f"{float(loss.detach()):.4f}"}}


@declare.checked
@contextmanager
def watch_dtypes(model: Module) -> Iterator[DtypeWatch]:
    """Watch the dtype of every ``nn.Linear`` output of ``model`` while the block runs."""
    watch = DtypeWatch(model)
    with linear_hooks(model, lambda m, i, o: watch.activations.add(_name(o.dtype))):
        yield watch


@declare.checked
def op_dtypes(outputs: Annotated[dict[str, Tensor], NonEmpty]) -> dict[str, str]:
    """{op: dtype name} of the tensors an autocast block produced (``{"linear": h, "softmax": s, ...}``)."""
    return {op: _name(t.dtype) for op, t in outputs.items()}


# ---------------------------------------------------------------------------------------------------------
# Keras 3: a model built under the learner's dtype policy


def keras_dtypes(model: Any, x: Any, y: Any) -> DtypeReport:
    """The dtypes of one forward and backward pass of the learner's Keras ``model`` on (x, y)."""
    tf = env.import_tensorflow()
    import keras

    if not isinstance(model, keras.Model):
        raise TypeError(f"model must be a keras.Model; got {type(model).__name__}")
    acts, h = set(), tf.convert_to_tensor(x)
    with tf.GradientTape() as tape:
        for layer in model.layers:
            h = layer(h)
            acts.add(h.dtype.name)
        loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(y, tf.cast(h, "float32"),
                                                                           from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    return {"weights": {v.dtype for v in model.trainable_variables}, "activations": acts, "loss": {loss.dtype.name},
            "gradients": {g.dtype.name for g in grads}, "loss value": {f"{float(loss):.4f}"}}


# ---------------------------------------------------------------------------------------------------------
# JAX: the learner's cast policy


def _jaxpr_values(jaxpr: Any) -> Iterator[tuple[str, str]]:
    """(primitive, dtype) of every value computed in ``jaxpr``, nested jaxprs (relu's custom_jvp) included."""
    for eqn in jaxpr.eqns:
        yield from ((eqn.primitive.name, str(var.aval.dtype)) for var in eqn.outvars)
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if hasattr(inner := getattr(sub, "jaxpr", sub), "eqns"):
                    yield from _jaxpr_values(inner)


@declare.checked
def jax_dtypes(apply: Callable[[Any, Any], Any], params: Any, x: Any, y: Any, *,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> DtypeReport:
    """The dtypes of the learner's ``apply(params, x)``, its activations read from the jaxpr (casts excluded)."""
    import jax
    import jax.numpy as jnp

    def loss_fn(p: Any, xb: Any, yb: Any) -> Any:
        logits = apply(p, xb)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), yb[:, None], axis=1))

    with calls.time_limit(timeout, "trace and run of " + calls.describe(apply)):
        loss, grads = jax.jit(jax.value_and_grad(loss_fn))(params, x, y)
        values = _jaxpr_values(jax.make_jaxpr(apply)(params, x).jaxpr)
        activations = {dtype for prim, dtype in values if prim != "convert_element_type"}
    return {"weights": {str(a.dtype) for a in jax.tree.leaves(params)}, "activations": activations,
            "loss": {str(loss.dtype)}, "gradients": {str(a.dtype) for a in jax.tree.leaves(grads)},
            "loss value": {f"{float(loss):.4f}"}}


@declare.checked
def dtype_summary(report: dict[str, set[str]]) -> DtypeReport:
    """``report`` without the loss value (the part a notebook compares with the expected dtypes)."""
    if not set(REPORT_KEYS) <= set(report):
        raise ValueError(f"report must hold {', '.join(REPORT_KEYS)}; got {sorted(report)}")
    return {k: v for k, v in report.items() if k != "loss value"}
