"""A sharded checkpoint saved at one world size and loaded at another: the comparison, the files, and one real run
of the DCP worker (2 ranks -> 1 rank -> 2 ranks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from course_utils import distributed
from course_utils.beyond import elastic
from course_utils.distributed.breakdown import from_rounds
from course_utils.distributed.launcher import LaunchResult


def _launch(world: int, **states: dict) -> LaunchResult:
    arrays = {name: {0: state} for name, state in states.items()}
    return LaunchResult("fsdp_checkpoint.py", world, [], 1.0, [], {0: [{"kind": "checkpoint", "world": world}]},
                        arrays)


STATE = {"model/0.weight": np.ones((2, 2), np.float32), "optim/0.weight/step": np.array(3.0)}


def test_compare_finds_equal_different_and_missing_tensors() -> None:
    same = elastic.compare(_launch(2, saved=STATE), _launch(1, loaded=dict(STATE)))
    assert same == {"tensors": 2, "same names": True, "max diff": 0.0, "world": (2, 1)}
    off = elastic.compare(_launch(2, saved=STATE), _launch(1, loaded={**STATE, "model/0.weight": np.zeros((2, 2))}))
    assert off["max diff"] == 1.0 and off["same names"]
    missing = elastic.compare(_launch(2, saved=STATE), _launch(1, loaded={"model/0.weight": STATE["model/0.weight"]}))
    assert not missing["same names"] and missing["max diff"] == float("inf")  # a check that can fail
    with pytest.raises(ValueError, match="loaded_by"):
        elastic.compare(_launch(2, saved=STATE), _launch(1, saved=STATE))


def test_changed_compares_the_weights_not_the_step_counter() -> None:
    counted = {**STATE, "optim/0.weight/step": np.array(5.0)}
    assert elastic.changed(_launch(2, saved=STATE), _launch(1, saved=counted)) == 0.0
    moved = {**counted, "model/0.weight": np.full((2, 2), 1.25, np.float32)}
    assert elastic.changed(_launch(2, saved=STATE), _launch(1, saved=moved)) == 0.25


def test_files_lists_a_dcp_folder(tmp_path: Path) -> None:
    (tmp_path / ".metadata").write_bytes(b"m" * 10)
    (tmp_path / "__0_0.distcp").write_bytes(b"x" * 100)
    assert elastic.files(tmp_path) == {".metadata": 10, "__0_0.distcp": 100}
    table = elastic.files_table({"at 1": tmp_path})
    assert table.column("file") == [".metadata", "__0_0.distcp"]
    with pytest.raises(ValueError, match="folder"):
        elastic.files(tmp_path / "missing")


def test_rounds_become_paired_measurements() -> None:
    m = from_rounds("step", [[1.0, 3.0], [2.0, 2.0, 5.0]])
    assert m.rounds == (2.0, 2.0) and m.times == (1.0, 3.0, 2.0, 2.0, 5.0) and m.median == 2.0
    assert from_rounds("step", ((1, 2), (3, 4))).rounds == (1.5, 3.5)  # tuples and ints are seconds too


@pytest.mark.integration
def test_real_checkpoint_moves_from_two_ranks_to_one_and_back(tmp_path: Path) -> None:
    quiet = {"echo": False, "progress": False, "timeout": 300}
    at_2 = distributed.launch("fsdp_checkpoint.py", 2, args=["--steps", 1, "--save", tmp_path / "at2"], **quiet)
    at_1 = distributed.launch("fsdp_checkpoint.py", 1, args=["--load", tmp_path / "at2", "--steps", 1,
                                                             "--save", tmp_path / "at1"], **quiet)
    back = distributed.launch("fsdp_checkpoint.py", 2, args=["--load", tmp_path / "at1"], **quiet)
    assert sorted(elastic.files(tmp_path / "at2")) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    assert sorted(elastic.files(tmp_path / "at1")) == [".metadata", "__0_0.distcp"]
    for saved_by, loaded_by in ((at_2, at_1), (at_1, back)):
        found = elastic.compare(saved_by, loaded_by)
        assert found["same names"] and found["max diff"] == 0.0 and found["tensors"] == 32
    assert elastic.changed(at_2, at_1) > 0
