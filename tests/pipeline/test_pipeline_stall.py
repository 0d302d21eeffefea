"""course_utils.pipeline.stall: the data stall read from a trace's marked steps (synthetic traces, no timing)."""

from __future__ import annotations

import pytest

from course_utils import display, pipeline, profile
from course_utils.pipeline import stall


def _trace(gaps: list[float], step: float = 0.01) -> profile.Trace:
    events, now = [], 0.0
    for gap in [*gaps, 0.0]:
        events.append(profile.Event(stall.STEP_MARK, "user_annotation", "main", now, step))
        events.append(profile.Event("aten::mm", "cpu_op", "main", now + 0.001, step / 2))
        now += step + gap
    events.append(profile.Event(stall.STEP_MARK, "user_annotation", "other", 0.0, 0.5))  # another thread
    return profile.Trace("torch", None, tuple(events))


def test_gaps_between_marked_steps_are_the_stall() -> None:
    stalls = pipeline.data_stalls(_trace([0.03, 0.03, 0.03]), label="before")
    assert stalls.thread == "main" and len(stalls.steps) == 4
    assert stalls.gaps == pytest.approx((0.03, 0.03, 0.03))
    assert stalls.busy_share == pytest.approx(0.04 / 0.13)
    table = pipeline.stalls_table([stalls, pipeline.data_stalls(_trace([0.0, 0.001]), label="after")])
    assert isinstance(table, display.Table) and table.column("busy share") == ["31%", "97%"]


def test_a_trace_without_marks_is_refused() -> None:
    bare = profile.Trace("torch", None, (profile.Event("aten::mm", "cpu_op", "main", 0.0, 0.1),))
    with pytest.raises(ValueError, match="no event matches"):
        pipeline.data_stalls(bare)
    one = profile.Trace("torch", None, (profile.Event(stall.STEP_MARK, "u", "main", 0.0, 0.1),))
    with pytest.raises(ValueError, match="trace must hold at least two"):
        pipeline.data_stalls(one)


def test_capture_loop_marks_each_step(tmp_path, monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    trace = pipeline.capture_loop([torch.ones(4)] * 3, lambda b: (b * 2).sum(), steps=3, name="t")
    stalls = pipeline.data_stalls(trace)
    assert len(stalls.steps) == 3 and len(stalls.gaps) == 2
    assert (tmp_path / "build" / "traces" / "t.torch.json").is_file()
