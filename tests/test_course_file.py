"""course.toml is the one list of lessons: every notebook and every lesson package is in it, once, in order."""

from __future__ import annotations

import importlib
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
course_file = importlib.import_module("course_file")


def test_the_course_file_lists_every_notebook_and_package_in_order() -> None:
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    assert course_file.notebooks() == notebooks
    packages = {p.parent.name for p in (ROOT / "course_utils").glob("*/__init__.py")} - {"workers"}
    assert sorted(course_file.packages()) == sorted(packages)
    for lesson in course_file.lessons():
        assert lesson["question"].endswith("?") and lesson["taught"], lesson["notebook"]


def test_a_broken_course_file_is_refused_by_name(tmp_path) -> None:
    path = tmp_path / "course.toml"
    path.write_text('[[lesson]]\nnotebook = "00_x"\npackage = "x"\nquestion = "Why?"\nminutes = "ten"\n')
    with pytest.raises(ValueError, match="lesson 0 needs minutes as int"):
        course_file.lessons(path)
    path.write_text("")
    with pytest.raises(ValueError, match="lists no"):
        course_file.lessons(path)
