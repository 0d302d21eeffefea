"""Synthetic, seeded data for the recurring workloads: generated on the spot, never downloaded."""

from __future__ import annotations

from typing import Annotated

import numpy as np

from course_utils import declare, validate
from course_utils.declare import Range

_TEACHER_WIDTH = 64
_Count = Annotated[int, Range(1, validate.MAX_ELEMENTS)]


@declare.checked
def classification(n: _Count, features: _Count = 32, classes: Annotated[int, Range(2, validate.MAX_ELEMENTS)] = 10, *,
                   seed: Annotated[int, Range(0)] = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` float32 samples of ``features`` labelled (int64) by a fixed random teacher network: a learnable task, cheap
    and download-free; sizes that would not fit in half of the free memory are refused by name."""
    floats = n * features + 2 * n * _TEACHER_WIDTH + 2 * n * classes + _TEACHER_WIDTH * (features + classes)
    largest = max((n, "n"), (features, "features"), (classes, "classes"))[1]
    validate.memory_fits(largest, 4 * floats + 8 * n,
                         what=f"n={n:,} samples of features={features:,} in classes={classes:,}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features), dtype=np.float32)
    teacher = np.random.default_rng(10_000 + seed)
    hidden = np.tanh(x @ teacher.standard_normal((features, _TEACHER_WIDTH), dtype=np.float32) / np.sqrt(features))
    logits = hidden @ teacher.standard_normal((_TEACHER_WIDTH, classes), dtype=np.float32)
    return x, logits.argmax(axis=1).astype(np.int64)
