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


def image_patches(
    n: int, size: int = 32, channels: int = 3, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` noisy image patches (float32, NHWC) labelled 1 when they hold a bright blob ("lesion"), else 0.

    A stand-in for the seed's medical-imaging scenario: cheap to make, learnable by a small CNN, and the
    same bytes in every framework (transpose to NCHW for PyTorch).
    """
    for name, value in (("n", n), ("size", size), ("channels", channels)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int; got {value!r}")
    if size < 8:
        raise ValueError(f"size must be >= 8; got {size!r}")
    rng = np.random.default_rng(seed)
    images = rng.normal(0.0, 1.0, size=(n, size, size, channels)).astype(np.float32)
    labels = rng.integers(0, 2, size=n).astype(np.int64)
    yy, xx = np.mgrid[0:size, 0:size]
    centres = rng.uniform(size * 0.25, size * 0.75, size=(n, 2))
    radius = size / 8
    for i in np.flatnonzero(labels):
        blob = np.exp(-((yy - centres[i, 0]) ** 2 + (xx - centres[i, 1]) ** 2) / (2 * radius**2))
        images[i] += 2.5 * blob[..., None].astype(np.float32)
    return images, labels
