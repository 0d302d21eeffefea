"""course_utils.pipeline.loop, warm_steps: the core SGD step per framework lowers the loss on the pipeline's batches."""

from __future__ import annotations

import pytest

from course_utils import env, interop, pipeline


@pytest.mark.parametrize("framework", ["torch", "jax", "tf"])
def test_mlp_step_lowers_the_loss(framework: str) -> None:
    if not env.available(framework):
        pytest.skip(f"{framework} not installed")
    data = pipeline.SyntheticImages(8, size=16, work=1)
    batch = data.batch(range(8))
    step = pipeline.warm_steps((data.features, 16, data.classes), batch, frameworks=[framework], lr=0.05)[0]
    step = next(iter(step.values()))
    inputs = interop.to_framework(framework, *batch)
    losses = [float(step(inputs)) for _ in range(5)]
    assert losses[-1] < losses[0]


def test_warm_steps_cover_the_frameworks_present() -> None:
    data = pipeline.SyntheticImages(4, size=16, work=0)
    steps, losses = pipeline.warm_steps((data.features, 8, data.classes), data.batch(range(4)), frameworks=["torch"])
    assert list(steps) == ["torch"] and losses["torch"] > 0
