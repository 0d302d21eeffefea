"""course_utils.models and course_utils.data: the recurring workloads agree across frameworks."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import data, env, models


def test_classification_is_seeded_and_learnable_shape() -> None:
    x, y = data.classification(64, features=8, classes=3, seed=1)
    x2, y2 = data.classification(64, features=8, classes=3, seed=1)
    assert x.shape == (64, 8) and x.dtype == np.float32 and y.dtype == np.int64
    assert np.array_equal(x, x2) and np.array_equal(y, y2) and set(y) <= {0, 1, 2}
    with pytest.raises(ValueError, match="classes"):
        data.classification(4, classes=1)
    with pytest.raises(ValueError, match="n"):
        data.classification(0)


def test_mlp_forward_agrees_in_all_frameworks() -> None:
    torch = pytest.importorskip("torch")
    import jax.numpy as jnp

    x, _ = data.classification(16)
    reference = models.torch_mlp()(torch.from_numpy(x)).detach().numpy()
    jax_out = np.asarray(models.jax_mlp_apply(models.jax_mlp_params(), jnp.asarray(x)))
    keras_out = np.asarray(models.keras_mlp()(x))
    np.testing.assert_allclose(jax_out, reference, atol=1e-5)
    np.testing.assert_allclose(keras_out, reference, atol=1e-5)


def test_gelu_chain_agrees_in_all_frameworks() -> None:
    torch = pytest.importorskip("torch")
    import jax.numpy as jnp

    tf = env.import_tensorflow()
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    reference = models.chain_for("numpy")(x, np.float32(0.25))
    np.testing.assert_allclose(models.chain_for("torch")(torch.from_numpy(x), 0.25).numpy(), reference, atol=1e-6)
    np.testing.assert_allclose(np.asarray(models.chain_for("jax")(jnp.asarray(x), 0.25)), reference, atol=1e-6)
    np.testing.assert_allclose(models.chain_for("tf")(tf.constant(x), 0.25).numpy(), reference, atol=1e-6)
    with pytest.raises(ValueError, match="framework"):
        models.chain_for("mxnet")


def test_gelu_chain_op_count_is_what_eager_launches() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import fusion

    traffic = fusion.trace_traffic(models.chain_for("torch"), torch.ones(4), torch.tensor(0.5))
    assert traffic.n_ops == models.GELU_CHAIN_OPS


def test_mlp_weights_validation() -> None:
    assert [w.shape for w, _ in models.mlp_weights((4, 3, 2))] == [(4, 3), (3, 2)]
    with pytest.raises(ValueError, match="sizes"):
        models.mlp_weights((4,))


def test_cnn_forward_agrees_in_all_frameworks() -> None:
    torch = pytest.importorskip("torch")
    import jax.numpy as jnp

    x = np.random.default_rng(0).standard_normal((4, 16, 16, 3), dtype=np.float32)
    reference = models.torch_cnn()(torch.from_numpy(x.transpose(0, 3, 1, 2).copy())).detach().numpy()
    np.testing.assert_allclose(np.asarray(models.jax_cnn_apply(models.jax_cnn_params(), jnp.asarray(x))),
                               reference, atol=1e-5)
    np.testing.assert_allclose(np.asarray(models.keras_cnn(size=16)(x)), reference, atol=1e-5)
    with pytest.raises(ValueError, match="channels"):
        models.cnn_weights(channels=(8, 8))
