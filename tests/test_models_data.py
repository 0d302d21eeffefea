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


def test_the_three_sgd_steps_compute_the_same_update() -> None:
    """One train step per framework: same weights, same batch, same losses over three steps."""
    import torch

    pytest.importorskip("jax")
    pytest.importorskip("tensorflow")
    sizes = (12, 16, 4)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(8, 3, 2, 2)).astype(np.float32)  # flattened to 12 features by the steps
    y = rng.integers(0, 4, size=8)
    steps = {
        "torch": models.torch_sgd_step(models.torch_mlp(sizes), lr=0.1, flatten=True),
        "jax": models.jax_sgd_step(models.jax_mlp_params(sizes), models.jax_mlp_apply, lr=0.1, flatten=True),
        "tensorflow": models.keras_sgd_step(models.keras_mlp(sizes), lr=0.1, flatten=True),
    }
    batches = {"torch": (torch.from_numpy(x), torch.from_numpy(y)), "jax": (x, y),
               "tensorflow": (x, y.astype(np.int32))}
    losses = {name: [float(step(batches[name])) for _ in range(3)] for name, step in steps.items()}
    assert losses["torch"][2] < losses["torch"][0]  # it learns
    np.testing.assert_allclose(losses["jax"], losses["torch"], rtol=1e-4)
    np.testing.assert_allclose(losses["tensorflow"], losses["torch"], rtol=1e-4)


def test_jax_sgd_step_without_jit_runs_the_same_update_op_by_op() -> None:
    pytest.importorskip("jax")
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(8, 32)).astype(np.float32), rng.integers(0, 10, size=8)
    jitted = models.jax_sgd_step(models.jax_mlp_params(), models.jax_mlp_apply, lr=0.1)
    plain = models.jax_sgd_step(models.jax_mlp_params(), models.jax_mlp_apply, lr=0.1, jit=False)
    np.testing.assert_allclose([float(plain((x, y))) for _ in range(3)],
                               [float(jitted((x, y))) for _ in range(3)], rtol=1e-5)


def test_sgd_steps_refuse_bad_arguments() -> None:
    from badinput import rejects

    model = models.torch_mlp((4, 2))
    rejects(lambda: models.torch_sgd_step(model, lr=float("nan")), "lr")
    rejects(lambda: models.torch_sgd_step(model, momentum=1.5), "momentum")
    rejects(lambda: models.torch_sgd_step(model, amp_dtype="half"), "amp_dtype")
    rejects(lambda: models.jax_sgd_step([], None), "apply")
    rejects(lambda: models.jax_sgd_step([], models.jax_mlp_apply, jit="no"), "jit")
    rejects(lambda: models.mlp_weights((4,)), "sizes")
    rejects(lambda: models.cnn_weights(in_channels=0), "in_channels")


def test_numpy_integers_are_sizes_like_any_other() -> None:
    x, y = data.classification(np.int64(8), np.int32(4), np.int64(3), seed=np.int64(1))
    assert x.shape == (8, 4) and y.shape == (8,)
    assert [w.shape for w, _ in models.mlp_weights((np.int64(4), np.int64(2)))] == [(4, 2)]


@pytest.mark.parametrize(("call", "argument"), [
    (lambda: data.classification(2**30), "n"),  # "Unable to allocate 116. TiB" came from NumPy, naming nothing
    (lambda: data.classification(8, features=2**30), "features"),
    (lambda: models.cnn_weights(in_channels=2**30), "in_channels"),
    (lambda: models.cnn_weights(classes=2**30), "classes"),
    (lambda: models.mlp_weights((4, 2**30, 2**30)), "sizes"),
    (lambda: models.keras_cnn(size=10**9), "size"),
], ids=["n", "features", "in_channels", "classes", "sizes", "size"])
def test_a_size_past_the_memory_is_refused_by_name_before_allocating(call, argument) -> None:
    from badinput import rejects

    rejects(call, argument)


def test_a_callback_that_returned_none_is_named_not_a_missing_attribute() -> None:
    from badinput import rejects

    def make_model() -> None:  # forgot the return
        models.torch_mlp((4, 2))

    rejects(lambda: models.torch_sgd_step(make_model()), "model")  # was "'NoneType' ... has no attribute 'parameters'"
    rejects(lambda: models.keras_sgd_step(make_model()), "model")
    rejects(lambda: models.jax_sgd_step(make_model(), models.jax_mlp_apply), "params")
    rejects(lambda: models.jax_mlp_apply(make_model(), np.ones((1, 4), np.float32)), "params")
