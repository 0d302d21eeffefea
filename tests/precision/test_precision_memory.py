"""course_utils.precision.memory: the computed accounting, held state, saved tensors, peaks, XLA's plan."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import precision as P


def test_training_memory_per_scheme() -> None:
    assert sum(P.training_memory(10, "fp32 + Adam").values()) == 160
    assert sum(P.training_memory(10, "mixed + Adam, fp32 master").values()) == 160
    assert sum(P.training_memory(10, "pure bf16 + Adam").values()) == 80


def test_torch_state_bytes_by_dtype() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    model = models.torch_mlp((8, 16, 4), seed=0)
    opt = torch.optim.Adam(model.parameters())
    n = sum(p.numel() for p in model.parameters())
    assert P.torch_state_bytes(model, opt) == {"weights (float32)": 4 * n}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(torch.randn(5, 8)).float().sum()
    loss.backward()
    opt.step()
    assert P.torch_state_bytes(model, opt) == {"weights (float32)": 4 * n, "gradients (float32)": 4 * n,
                                               "optimizer state (float32)": 8 * n}


def test_saved_for_backward_splits_copies_from_activations() -> None:
    torch = pytest.importorskip("torch")

    w = torch.randn(8, 16, requires_grad=True)
    x = torch.randn(32, 8, requires_grad=True)
    # x @ w saves x (for w's gradient) and w (for x's gradient); relu saves its output
    saved = P.saved_for_backward(lambda: torch.relu(x @ w), [w])
    assert saved == {"parameters": 8 * 16 * 4, "weight copies": 0, "activations": 32 * 8 * 4 + 32 * 16 * 4}
    assert P.saved_activation_bytes(lambda: torch.relu(x @ w), exclude=[w]) == 32 * 8 * 4 + 32 * 16 * 4
    lin = torch.nn.Linear(8, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = P.saved_for_backward(lambda: lin(x), lin.parameters())
    assert mixed["weight copies"] == 8 * 16 * 2 and mixed["parameters"] == 0


def test_peak_rss_delta_sees_an_allocation() -> None:
    if not P.rss_peak_supported():
        pytest.skip("peak RSS cannot be reset on this system")
    size = 64 * 2**20
    peak = P.peak_rss_delta(lambda: np.ones(size // 8))
    assert size * 0.9 <= peak <= size * 1.5
    torch = pytest.importorskip("torch")
    assert P.torch_peak_bytes(lambda: torch.ones(size // 4).sum(), "cpu") >= size * 0.9


def test_jax_compiled_stats_report_flops_and_bytes() -> None:
    pytest.importorskip("jax")
    import jax.numpy as jnp

    stats = P.jax_compiled_stats(lambda a, b: a @ b, jnp.ones((16, 32)), jnp.ones((32, 8)))
    assert stats["flops"] == pytest.approx(2 * 16 * 32 * 8, rel=0.01)
    assert stats["argument"] == 4 * (16 * 32 + 32 * 8) and stats["output"] == 4 * 16 * 8
    assert stats["dots"] == 1


def test_jax_memory_keeps_the_bytes_only() -> None:
    pytest.importorskip("jax")
    import jax.numpy as jnp

    stats = P.jax_memory(lambda x: jnp.tanh(x) * 2, jnp.ones(1000, jnp.float32))
    assert stats["argument"] == 4000 and stats["output"] == 4000 and "temp" in stats and "flops" not in stats
