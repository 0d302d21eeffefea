"""course_utils.graphs.training: the same SGD step eager and compiled gives the same losses."""

from __future__ import annotations

import pytest

from course_utils import data, env, graphs, timing


@pytest.mark.parametrize("framework", ["jax", "tensorflow", "torch"])
def test_step_pair_same_losses_eager_and_compiled(framework: str) -> None:
    if not env.available(framework):
        pytest.skip(f"{framework} not installed")
    x, y = data.classification(32)
    pair = graphs.step_pair(framework, lr=0.1)
    run = graphs.run_losses(pair, graphs.batch_for(framework, x, y), 3)
    assert len(run.eager) == len(run.compiled) == 3 and run.max_abs_diff < 1e-4
    assert run.eager[-1] < run.eager[0] and run.first_compiled_step > 0


def test_step_table_without_first_call_from_benchmark() -> None:
    e = timing.Measurement("e", (2.0, 2.0, 2.0))
    c = timing.Measurement("c", (1.0, 1.0, 1.0))
    run = graphs.LossRun("torch", (1.0,), (1.0,), 3.0)
    table = graphs.step_table({"torch": run}, {"torch": (e, c)})
    assert table.column("speed-up over own eager (IQR range)")[0].startswith("2.00x")
    assert table.column("first compiled step (compile)") == ["3 s"]
