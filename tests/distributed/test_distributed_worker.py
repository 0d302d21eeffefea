"""course_utils.distributed.worker: what the launched scripts call, also outside a launch."""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np
import pytest

from course_utils.distributed import worker


def test_emit_prints_json_outside_launch(monkeypatch, capsys) -> None:
    monkeypatch.delenv(worker.OUT_ENV, raising=False)
    worker.emit(kind="x", value=1)
    assert capsys.readouterr().out.strip() == '{"kind": "x", "value": 1}'


def test_emit_and_save_write_per_rank_files_inside_launch(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(worker.OUT_ENV, str(tmp_path))
    monkeypatch.setenv("RANK", "3")
    worker.emit(kind="a")
    worker.save("w", x=[1, 2])
    assert (tmp_path / "rank3.jsonl").read_text() == '{"kind": "a"}\n'
    assert np.array_equal(np.load(tmp_path / "w.rank3.npz")["x"], [1, 2])


def test_ranks_default_outside_torchrun(monkeypatch) -> None:
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert (worker.rank(), worker.local_rank(), worker.world_size()) == (0, 0, 1)


def test_progress_prints_the_launchers_line(capsys) -> None:
    worker.progress(2, 5)
    assert capsys.readouterr().out == f"{worker.PROGRESS_PREFIX} 2 5\n"


def test_save_outside_launch_refuses_instead_of_writing_into_the_current_directory(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(worker.OUT_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError, match="outside cu.distributed.launch"):
        worker.save("w", x=[1])
    assert not list(tmp_path.iterdir())
    monkeypatch.setenv(worker.OUT_ENV, str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=worker.OUT_ENV):
        worker.save("w", x=[1])


def test_pg_timeout_reads_what_the_launch_chose(monkeypatch) -> None:
    monkeypatch.delenv(worker.PG_TIMEOUT_ENV, raising=False)
    assert worker.pg_timeout() is None
    monkeypatch.setenv(worker.PG_TIMEOUT_ENV, "60")
    assert worker.pg_timeout() == datetime.timedelta(seconds=60)
    for bad in ("soon", "nan", "0", "-5"):
        monkeypatch.setenv(worker.PG_TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=worker.PG_TIMEOUT_ENV):
            worker.pg_timeout()


def test_timed_rounds_takes_the_calls_in_turns_and_keeps_one_median_per_round() -> None:
    order = []
    found = worker.timed_rounds(None, {"a": (order.append, "a"), "b": (order.append, "b")}, 3, 5, together=False)
    assert order[:2] == ["a", "b"]  # one warm-up call each
    timed = order[2:]
    assert timed[:2] == ["a", "a"] and timed[4:6] == ["b", "b"] and timed[6:8] == ["a", "a"]  # the order rotates
    assert len(found["a"]) == len(found["b"]) == 6  # 5 calls asked, 2 per round over 3 rounds
    assert len(found["rounds"]["a"]) == 3 and found["rounds"]["a"][0] == pytest.approx(np.median(found["a"][:2]))
    skipped = []
    worker.timed_rounds(None, {"a": (skipped.append, 1)}, 1, 1, together=False, warmup=False)
    assert skipped == [1]
    with pytest.raises(ValueError, match="n_rounds"):
        worker.timed_rounds(None, {"a": (print,)}, 0, 1, together=False)
