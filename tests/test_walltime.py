"""course_utils.walltime: a launch's wall time split into the parts its processes measured and the rest."""

from __future__ import annotations

import math

import pytest
from badinput import rejects

from course_utils import walltime


def test_outside_is_the_wall_minus_the_parts() -> None:
    assert walltime.time_split(10.0, {"a": 2.0, "b": 3.0}) == {"wall": 10.0, "a": 2.0, "b": 3.0, "outside": 5.0}


def test_nested_parts_say_what_they_cover() -> None:
    split = walltime.time_split(10, {"joined": 6.0, "work": 2.0, "import": 3.0}, inside=8.0)
    assert split["outside"] == 2.0 and list(split) == ["wall", "joined", "work", "import", "outside"]


def test_a_part_not_reported_leaves_outside_unknown() -> None:
    assert math.isnan(walltime.time_split(10.0, {"startup": float("nan"), "work": 1.0})["outside"])


@pytest.mark.parametrize(("call", "argument"), [
    (lambda: walltime.time_split(-1.0, {}), "wall"),
    (lambda: walltime.time_split("10", {}), "wall"),
    (lambda: walltime.time_split(10.0, [1.0]), "parts"),
    (lambda: walltime.time_split(10.0, {"a": "1"}), "parts['a']"),
    (lambda: walltime.time_split(10.0, {"wall": 1.0}), "parts"),
    (lambda: walltime.time_split(10.0, {"": 1.0}), "parts key"),
    (lambda: walltime.time_split(10.0, {"a": 1.0}, inside=float("inf")), "inside"),
])
def test_bad_input_is_refused_naming_the_argument(call, argument: str) -> None:
    rejects(call, argument)
