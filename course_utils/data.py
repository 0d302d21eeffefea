"""Synthetic, seeded data for the recurring workloads: generated on the spot, never downloaded."""

from __future__ import annotations

import numpy as np


def classification(
    n: int, features: int = 32, classes: int = 10, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` samples (float32, shape (n, features)) labelled (int64) by a fixed random teacher network.

    A teacher makes the task learnable (loss really goes down) while staying cheap and download-free.
    """
    for name, value in (("n", n), ("features", features), ("classes", classes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int; got {value!r}")
    if classes < 2:
        raise ValueError(f"classes must be >= 2; got {classes!r}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features), dtype=np.float32)
    teacher = np.random.default_rng(10_000 + seed)
    hidden = np.tanh(x @ teacher.standard_normal((features, 64), dtype=np.float32) / np.sqrt(features))
    logits = hidden @ teacher.standard_normal((64, classes), dtype=np.float32)
    return x, logits.argmax(axis=1).astype(np.int64)

