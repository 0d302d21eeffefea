"""course_utils.migrate.monitor: compile time and busy share read from real and hand-made traces."""

from __future__ import annotations

import pytest

from course_utils import migrate, profile

E = profile.Event


def _trace(*events):
    return profile.Trace("torch", None, tuple(events))


def test_compile_seconds_merges_nested_phases_on_the_main_thread() -> None:
    trace = _trace(E("entire_frame_compile (dynamo_timed)", "cpu_op", "main", 0.0, 2.0),
                   E("backend_compile (dynamo_timed)", "cpu_op", "main", 0.5, 1.0),
                   E("aten::mm", "cpu_op", "main", 2.0, 0.1),
                   E("compile_fx_inner (dynamo_timed)", "cpu_op", "main", 3.0, 0.5))
    assert migrate.compile_seconds(trace) == pytest.approx(2.5)
    assert migrate.compile_seconds(_trace(E("aten::mm", "cpu_op", "main", 0.0, 1.0))) == 0.0


def test_busy_share_subtracts_the_loader_waits() -> None:
    trace = _trace(E("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", "main", 0.0,
                     1.0), E("aten::conv2d", "cpu_op", "main", 1.0, 3.0))
    assert migrate.busy_share(trace) == pytest.approx(0.75)
    assert migrate.busy_share(_trace(E("aten::conv2d", "cpu_op", "main", 0.0, 1.0))) == 1.0


@pytest.mark.slow
def test_monitor_reads_a_real_compile_and_loop(tmp_path, monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    monkeypatch.chdir(tmp_path)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    result = migrate.monitor(lambda: migrate.train_step(migrate.compile_model(models.torch_mlp((8, 16, 3)))), loader,
                             steps=3, name="t")
    assert result.compile_s > 0 and 0 < result.utilisation <= 1
    assert result.compile_trace.count(r"\(dynamo_timed\)$") > 0 and result.loop_trace.count("DataLoader") == 3
    assert "Monitoring" in repr(result)
