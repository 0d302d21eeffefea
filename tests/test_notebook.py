"""course_utils.notebook: the frame of every notebook (set-up, skip sentence, Colab cell, summary)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from course_utils import notebook

ROOT = Path(__file__).resolve().parents[1]


def test_needs_is_silent_when_present_and_one_sentence_when_missing(monkeypatch, capsys) -> None:
    assert notebook.needs("torch", "pytorch")
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(notebook.env, "available", lambda name: name != "tensorflow")
    assert not notebook.needs("tf")
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "TensorFlow is not installed" in out and "pip install" in out
    assert notebook.present() == ["torch", "jax"]


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_setup_says_first_that_pytorch_is_required_when_it_is_missing() -> None:
    """The first cell's output, in a runtime where torch cannot be imported (the COURSE_BLOCK shim)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COURSE_BLOCK": "torch",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "tools" / "blocker"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", "import course_utils as cu; cu.notebook.setup()"], env=env,
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    first = out.stdout.splitlines()[0] if out.stdout else ""
    assert "PyTorch is not installed: this course needs it" in first, out.stdout + out.stderr


def test_needs_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="framework"):
        notebook.needs("mxnet")
    with pytest.raises(ValueError, match="frameworks"):
        notebook.needs()


def test_install_cell_pins_the_release_written_in_one_place() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert notebook.RELEASE == f"v{version}"
    assert f"@{notebook.RELEASE}" in notebook.install_cell() and "@main" not in notebook.install_cell()
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert notebook.REPO_URL == urls["Repository"]


def test_badge_points_at_the_notebook_of_the_release() -> None:
    badge = notebook.badge("00_measuring.ipynb")
    assert badge.startswith("[![Open In Colab]") and f"/blob/{notebook.RELEASE}/notebooks/00_measuring.ipynb" in badge
    with pytest.raises(ValueError, match="notebook"):
        notebook.badge("00_measuring.py")


def test_summary_table_keeps_numbers_and_writes_json(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COURSE_SUMMARY_DIR", str(tmp_path))
    table = notebook.summary_table("99_x", [("speed-up", 2.5, "x", "torch.compile over eager"), ("steps", 3)])
    assert "speed-up" in repr(table) and "<table>" in table._repr_html_()
    saved = json.loads((tmp_path / "99_x.json").read_text())
    assert saved["rows"][0]["value"] == 2.5 and saved["environment"]


@pytest.mark.parametrize(("rows", "argument"), [([("q", "fast")], "value"), ([], "rows"), ([("", 1.0)], "quantity"),
                                                ([("q", True)], "value"), ([("q",)], r"rows\[0\]"),
                                                ("abc", "rows")])
def test_summary_table_refuses_bad_rows(rows, argument) -> None:
    with pytest.raises((TypeError, ValueError), match=argument):
        notebook.summary_table("99_x", rows)


def test_last_verified_names_versions_and_date() -> None:
    line = notebook.last_verified()
    assert re.match(r"Last verified \d{4}-\d\d-\d\d on ", line) and "torch" in line


def test_numpy_numbers_are_kept_as_json_numbers(tmp_path, monkeypatch) -> None:
    import numpy as np

    monkeypatch.setenv("COURSE_SUMMARY_DIR", str(tmp_path))
    notebook.summary_table("99_np", [("steps", np.int64(3)), ("speed-up", np.float32(1.5))])
    assert [r["value"] for r in json.loads((tmp_path / "99_np.json").read_text())["rows"]] == [3, 1.5]


def test_present_takes_a_list_of_names_not_one_string() -> None:
    with pytest.raises(TypeError, match="frameworks"):
        notebook.present("torch")  # used to read as 't', 'o', 'r', ...
    with pytest.raises(ValueError, match=r"frameworks\[1\]"):
        notebook.present(["torch", "caffe"])
