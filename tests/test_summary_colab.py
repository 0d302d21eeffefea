"""course_utils.summary and course_utils.colab: the closing table, and the one address of the course."""

from __future__ import annotations

import json

import pytest

from course_utils import colab, summary


def test_table_renders_and_is_written_when_asked(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COURSE_SUMMARY_DIR", str(tmp_path))
    t = summary.table("99_test", [("speed-up", 2.345, "x", "seed claims 1.3x"), summary.Row("cells", 12)])
    assert "2.35" in repr(t) and "seed claims" in t._repr_html_() and "12" in repr(t)
    saved = json.loads((tmp_path / "99_test.json").read_text())
    assert saved["rows"][0]["value"] == 2.345 and saved["notebook"] == "99_test"


def test_table_rejects_bad_input(monkeypatch) -> None:
    monkeypatch.delenv("COURSE_SUMMARY_DIR", raising=False)
    with pytest.raises(ValueError, match="notebook"):
        summary.table("", [("a", 1.0)])
    with pytest.raises(ValueError, match="rows"):
        summary.table("x", [])
    with pytest.raises(TypeError, match="value"):
        summary.table("x", [("a", "fast")])


def test_last_verified_names_versions() -> None:
    line = summary.last_verified()
    assert line.startswith("Last verified") and "torch" in line and "Python" in line


def test_install_cell_only_acts_on_colab() -> None:
    cell = colab.install_cell()
    assert 'if "google.colab" in sys.modules:' in cell and colab.REPO_URL in cell
    assert "torch" not in cell.split('"pip"')[1]  # never reinstalls Colab's frameworks
    compile(cell, "install_cell", "exec")  # plain Python: no magic that jupytext or ruff would trip on


def test_badge_points_at_the_notebook() -> None:
    assert "notebooks/00_measuring.ipynb" in colab.badge("00_measuring.ipynb")
    with pytest.raises(ValueError, match="notebook"):
        colab.badge("00_measuring.py")
