"""course_utils.precision.policies: dtypes read back from the learner's torch autocast block, Keras model built
under a dtype policy, and JAX cast policy."""

from __future__ import annotations

import pytest

from course_utils import calls, env
from course_utils import precision as P

EXPECTED = {"weights": {"float32"}, "activations": {"bfloat16"}, "loss": {"float32"}, "gradients": {"float32"}}


def test_jax_dtypes_come_from_the_learners_cast_policy() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from course_utils import models

    params = models.jax_mlp_params((8, 16, 4), seed=0)
    x, y = jnp.ones((5, 8)), jnp.zeros(5, dtype=jnp.int32)

    def mixed(params, x):
        p16 = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
        return models.jax_mlp_apply(p16, x.astype(jnp.bfloat16)).astype(jnp.float32)

    assert P.dtype_summary(P.jax_dtypes(mixed, params, x, y)) == EXPECTED
    assert P.jax_dtypes(models.jax_mlp_apply, params, x, y)["activations"] == {"float32"}


def test_watch_dtypes_reads_the_learners_autocast_block() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    model = models.torch_mlp((8, 16, 4))
    with P.watch_dtypes(model) as seen:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(torch.randn(5, 8)), torch.zeros(5, dtype=torch.long))
        loss.backward()
    report = seen.report(loss)
    assert P.dtype_summary(report) == EXPECTED and "loss value" in report
    assert all(not m._forward_hooks for m in model.modules())  # hooks removed on exit
    model.zero_grad(set_to_none=True)
    with pytest.raises(ValueError, match="backward"):
        seen.report(loss)


def test_watch_dtypes_refuses_what_it_cannot_watch() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="Linear"), P.watch_dtypes(torch.nn.ReLU()):
        pass
    from course_utils import models

    model = models.torch_mlp((8, 16, 4))
    loss = torch.nn.functional.cross_entropy(model(torch.randn(5, 8)), torch.zeros(5, dtype=torch.long))
    loss.backward()
    with P.watch_dtypes(model) as seen:
        pass
    with pytest.raises(ValueError, match="forward"):
        seen.report(loss)


def test_op_dtypes_names_each_output() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = torch.nn.functional.linear(x, x)
        found = P.op_dtypes({"linear": h, "cross_entropy": torch.nn.functional.cross_entropy(h, torch.zeros(4).long())})
    assert found == {"linear": "bfloat16", "cross_entropy": "float32"}


@pytest.mark.skipif(not env.available("tensorflow"), reason="TensorFlow is not installed")
def test_keras_dtypes_of_a_model_built_under_a_policy() -> None:
    import keras
    import numpy as np

    from course_utils import models

    x, y = np.ones((4, models.DEFAULT_SIZES[0]), np.float32), np.zeros(4, np.int64)
    before = keras.config.dtype_policy().name
    keras.config.set_dtype_policy(keras.DTypePolicy("mixed_bfloat16"))
    try:
        model = models.keras_mlp(seed=0)
    finally:
        keras.config.set_dtype_policy(before)
    assert P.dtype_summary(P.keras_dtypes(model, x, y)) == EXPECTED
    assert P.keras_dtypes(models.keras_mlp(seed=0), x, y)["activations"] == {"float32"}


def test_a_jax_apply_that_never_returns_is_stopped_and_named() -> None:
    pytest.importorskip("jax")
    import jax.numpy as jnp

    def endless_apply(params, x):
        while True:
            pass

    with pytest.raises(calls.LearnerTimeout, match="endless_apply"):
        P.jax_dtypes(endless_apply, {}, jnp.ones((2, 2)), jnp.zeros(2, dtype=jnp.int32), timeout=0.3)
