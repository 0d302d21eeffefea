"""course_utils.precision.policies: the JAX policy, and dtypes read back in torch, Keras and JAX."""

from __future__ import annotations

import pytest

from course_utils import env
from course_utils import precision as P

EXPECTED = {"weights": {"float32"}, "activations": {"bfloat16"}, "loss": {"float32"}, "gradients": {"float32"}}


def test_policy_casts_only_floating_leaves_and_gives_fp32_gradients() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    policy = P.Policy()
    tree = {"w": jnp.ones((2, 2)), "step": jnp.array(3, dtype=jnp.int32)}
    low = policy.cast_to_compute(tree)
    assert low["w"].dtype == jnp.bfloat16 and low["step"].dtype == jnp.int32
    assert policy.cast_to_param(low)["w"].dtype == jnp.float32

    def apply(params, x):
        return x @ params["w"]

    wrapped = policy.wrap(apply)
    assert wrapped(tree, jnp.ones((3, 2))).dtype == jnp.float32 and wrapped.__name__ == "apply_bfloat16"
    grads = jax.grad(lambda p: wrapped(p, jnp.ones((3, 2))).sum())({"w": jnp.ones((2, 2))})
    assert grads["w"].dtype == jnp.float32


def test_jax_activation_dtypes_come_from_the_program() -> None:
    pytest.importorskip("jax")
    import jax.numpy as jnp

    from course_utils import models

    params = models.jax_mlp_params((8, 16, 4), seed=0)
    x, y = jnp.ones((5, 8)), jnp.zeros(5, dtype=jnp.int32)
    mixed = P.Policy().wrap(models.jax_mlp_apply)
    assert P.jax_activation_dtypes(mixed, params, x) == {"bfloat16"}
    assert P.jax_activation_dtypes(models.jax_mlp_apply, params, x) == {"float32"}
    assert P.dtype_summary(P.jax_dtypes(mixed, params, x, y)) == EXPECTED


def test_torch_dtypes_under_autocast() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    report = P.torch_dtypes(models.torch_mlp((8, 16, 4)), torch.randn(5, 8), torch.zeros(5, dtype=torch.long),
                            torch.bfloat16)
    assert P.dtype_summary(report) == EXPECTED and "loss value" in report
    fp32 = P.torch_dtypes(models.torch_mlp((8, 16, 4)), torch.randn(5, 8), torch.zeros(5, dtype=torch.long),
                          torch.float32)
    assert fp32["activations"] == {"float32"}


@pytest.mark.skipif(not env.available("tensorflow"), reason="TensorFlow is not installed")
def test_keras_policy_is_set_and_restored() -> None:
    import keras
    import numpy as np

    from course_utils import models

    x, y = np.ones((4, models.DEFAULT_SIZES[0]), np.float32), np.zeros(4, np.int64)
    before = keras.config.dtype_policy().name
    assert P.dtype_summary(P.keras_dtypes("mixed_bfloat16", x, y)) == EXPECTED
    assert keras.config.dtype_policy().name == before
    assert P.keras_compile_wraps_optimizer("mixed_float16") is True
    assert P.keras_compile_wraps_optimizer("float32") is False
