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
