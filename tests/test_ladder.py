"""course_utils.ladder: rungs measured from a loader and a step, the ladder table, lines changed."""

from __future__ import annotations

import time

import numpy as np
import pytest

from course_utils import ladder

BATCHES = [np.full(4, i, np.float32) for i in range(6)]


def _slow_step(batch: np.ndarray) -> float:
    time.sleep(0.002)
    return float(batch.sum())


def _fast_step(batch: np.ndarray) -> float:
    return float(batch.sum())


def test_measure_rung_times_the_first_step_apart_and_records_steps() -> None:
    rung = ladder.measure_rung("slow", BATCHES, _slow_step, epochs=2, peak_memory=lambda fn: (fn(), 123)[1])
    assert rung.label == "slow" and rung.peak_bytes == 123 and rung.first_step > 0
    assert rung.steps.n == 2 * len(BATCHES) - 1 and rung.step_time >= 0.002
    assert 0 <= rung.wait_share < 1 and rung.timeline.steps == 2 * len(BATCHES)
    with pytest.raises(TypeError, match="step"):
        ladder.measure_rung("bad", BATCHES, 42)


def test_ladder_speedups_table_and_waterfall_steps() -> None:
    rungs = [ladder.measure_rung("slow", BATCHES, _slow_step), ladder.measure_rung("fast", BATCHES, _fast_step)]
    result = ladder.ladder(rungs)
    assert result.speedup("slow") == 1.0 and result.speedup("fast") > 2
    assert [label for label, _ in result.waterfall_steps()] == ["slow", "fast"]
    assert "speed-up" in repr(result) and "<table>" in result._repr_html_()
    with pytest.raises(KeyError, match="rungs"):
        result.speedup("medium")
    with pytest.raises(ValueError, match="rungs"):
        ladder.ladder([])


def test_lines_changed_counts_added_and_removed_lines() -> None:
    before = "def step(x):\n    y = f(x)\n    return y\n"
    after = "def step(x):\n    # a comment does not count\n    y = jax.jit(f)(x)\n    return y\n"
    assert ladder.lines_changed(before, before) == 0
    assert ladder.lines_changed(before, after) == 2  # one line removed, one added
    assert ladder.lines_changed(_slow_step, _fast_step) >= 2


def test_torch_train_step_learns_and_autocast_dtype_is_sensible() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    torch.manual_seed(0)
    model = models.torch_mlp((8, 16, 3))
    step = ladder.torch_train_step(model, lr=0.1)
    batch = (torch.randn(64, 8), torch.randint(0, 3, (64,)))
    losses = [step(batch).item() for _ in range(20)]
    assert losses[-1] < losses[0]
    assert ladder.autocast_dtype("cpu") in (None, torch.bfloat16)
