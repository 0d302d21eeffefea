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
    parts = graphs.step_parts(pair, graphs.batch_for(framework, x, y), min_time=0.01)
    assert set(parts) == ({"forward + backward", "optimizer.step"} if framework == "torch" else set())


def test_step_table_without_first_call_from_benchmark() -> None:
    e = timing.Measurement("e", (2.0, 2.0, 2.0))
    c = timing.Measurement("c", (1.0, 1.0, 1.0))
    run = graphs.LossRun("torch", (1.0,), (1.0,), 3.0)
    table = graphs.step_table({"torch": run}, {"torch": (e, c)})
    assert table.column("speed-up over own eager (IQR range)")[0].startswith("2.00x")
    assert table.column("first compiled step (compile)") == ["3 s"]


def _m(seconds: float) -> timing.Measurement:
    return timing.Measurement("m", (seconds,) * 3)


def test_step_parts_text_adds_the_parts_up_against_the_whole() -> None:
    step = (_m(450e-6), _m(600e-6))
    parts = {"forward + backward": (_m(300e-6), _m(280e-6)), "optimizer.step": (_m(50e-6), _m(220e-6))}
    text = graphs.step_parts_text(parts, step)
    assert "0.227x" in text and "500 µs compiled and 350 µs eager" in text and "fixed cost" not in text
    assert "optimizer.step 170 µs slower (113% of that)" in text and "forward + backward 20 µs faster (-13%" in text
    assert "optimizer.step runs at 0.227x its eager twin" in text
    over = {"forward + backward": (_m(300e-6), _m(479e-6)), "optimizer.step": (_m(56e-6), _m(140e-6))}
    lost = graphs.step_parts_text(over, (_m(776e-6), _m(869e-6)))
    assert "192% of that" in lost and "do not add up to the step's" in lost and "0.4x its eager twin" in lost
    faster = {"forward + backward": (_m(300e-6), _m(200e-6)), "optimizer.step": (_m(50e-6), _m(40e-6))}
    assert "faster than eager" in graphs.step_parts_text(faster, (_m(450e-6), _m(300e-6)))
    assert "not established" in graphs.step_parts_text(parts, (_m(450e-6), _m(97e-3)))
    assert graphs.step_parts_text({}, step) == ""
