"""course_utils.graphs.training: the learner's eager and compiled steps give the same losses; their times are paired
in rounds; PyTorch's step part by part."""

from __future__ import annotations

import pytest

from course_utils import data, env, graphs, interop, models, timing


def _steps(framework: str) -> tuple:
    """The eager and compiled steps as notebook 01 builds them."""
    if framework == "torch":
        import torch

        pair = (models.torch_mlp(), torch.compile(models.torch_mlp()))
        steps = tuple(models.torch_sgd_step(m, lr=0.1) for m in pair)
        steps[1].optimizer.step = torch.compile(steps[1].optimizer.step)
        return pair, steps
    if framework == "jax":
        params = models.jax_mlp_params()
        return None, (models.jax_sgd_step(params, models.jax_mlp_apply, lr=0.1, jit=False),
                      models.jax_sgd_step(params, models.jax_mlp_apply, lr=0.1))
    return None, (graphs.eagerly("tensorflow", models.keras_sgd_step(models.keras_mlp(), lr=0.1)),
                  models.keras_sgd_step(models.keras_mlp(), lr=0.1, jit_compile=True))


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
@pytest.mark.parametrize("framework", ["jax", "tensorflow", "torch"])
def test_same_losses_eager_and_compiled(framework: str) -> None:
    if not env.available(framework):
        pytest.skip(f"{framework} not installed")
    x, y = data.classification(32)
    batch = interop.to_framework(framework, x, y)
    modules, steps = _steps(framework)
    run = graphs.run_losses(framework, *steps, batch, 3)
    assert len(run.eager) == len(run.compiled) == 3 and run.max_abs_diff < 1e-4
    assert run.eager[-1] < run.eager[0] and run.first_compiled_step > 0
    times = graphs.step_times({framework: steps}, {framework: batch}, rounds=2, min_time=0.01)
    assert all(len(m.rounds) == 2 for m in times[framework])
    if framework == "torch":
        parts = graphs.step_parts(modules, steps, batch, rounds=2, min_time=0.01)
        assert set(parts) == {"forward + backward", "optimizer.step"}
        assert graphs.parts_table(parts, times["torch"]).column("part")[-1] == "whole step"


def test_step_parts_needs_the_courses_torch_steps() -> None:
    with pytest.raises(ValueError, match="optimizer"):
        graphs.step_parts((abs, abs), (abs, abs), (1, 2))


def test_step_table_prints_the_interval() -> None:
    e = timing.Measurement("e", (2.0, 2.0, 2.0), rounds=(2.0, 2.1, 1.9))
    c = timing.Measurement("c", (1.0, 1.0, 1.0), rounds=(1.0, 1.0, 1.0))
    run = graphs.training.LossRun("torch", (1.0,), (1.0,), 3.0)
    table = graphs.step_table({"torch": run}, {"torch": (e, c)})
    assert table.column("speed-up over own eager")[0].startswith("2.00x (geometric mean; 95% interval 1.76x")
    assert table.column("first compiled step (compile)") == ["3 s"]
