"""make colab-bundle's wheel (tools/colab_bundle.py) and make release's checks (tools/release_check.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser

import nbformat
import pytest
from conftest import ROOT

from course_utils import notebook

sys.path.insert(0, str(ROOT / "tools"))
from colab_bundle import build_wheel  # noqa: E402
from release_check import notebook_problems, version_problems, write_notebooks  # noqa: E402


@pytest.mark.integration
@pytest.mark.slow
def test_the_wheel_holds_every_tracked_file_of_the_package_and_its_loose_requirements(tmp_path) -> None:
    wheel = build_wheel(tmp_path / "out")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert wheel.name == f"course_utils-{project['version']}-py3-none-any.whl"
    assert wheel.match(notebook.WHEEL_PATTERN)  # the name the install cell looks for
    tracked = subprocess.run(["git", "ls-files", "course_utils"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = Parser().parsestr(archive.read(f"course_utils-{project['version']}.dist-info/METADATA").decode())
    packaged = {n for n in names if not n.startswith("course_utils-")}
    assert set(tracked) <= packaged, f"missing from the wheel: {sorted(set(tracked) - packaged)}"
    assert not [n for n in packaged if "__pycache__" in n or n.endswith(".pyc")]
    required = {r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r}
    assert required == set(project["dependencies"])  # the loose ones: Colab's numpy and ipywidgets satisfy them


def test_the_release_tag_and_address_are_written_in_one_place() -> None:
    assert version_problems(ROOT) == []


def _pair(folder, name: str, badge_url: str, install: str) -> None:
    """A synthetic jupytext pair as the course writes them: title with badge, install cell, one more cell."""
    title = f"# 99 · A title\n[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({badge_url})"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(title), nbformat.v4.new_code_cell(install),
                                         nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, folder / f"{name}.ipynb")
    comment = "\n".join(f"# {line}" for line in title.splitlines())
    (folder / f"{name}.py").write_text(f"# %% [markdown]\n{comment}\n\n# %%\n{install}\n\n# %%\nx = 1\n")


def test_write_brings_every_badge_and_install_cell_up_to_date(tmp_path) -> None:
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    old_url = "https://colab.research.google.com/github/someone/old/blob/v0.0.1/notebooks/99_small.ipynb"
    _pair(tmp_path / "notebooks", "99_small", old_url, 'print("an old install cell")')
    found = notebook_problems(tmp_path)
    assert any("99_small.ipynb: the title cell" in p for p in found)
    assert any("99_small.ipynb: the first code cell" in p for p in found)
    assert any("99_small.py" in p for p in found) and "release_check.py --write" in found[-1]
    changed = write_notebooks(tmp_path)
    assert {p.name for p in changed} == {"99_small.ipynb", "99_small.py"}
    assert notebook_problems(tmp_path) == []
    nb = nbformat.read(tmp_path / "notebooks" / "99_small.ipynb", as_version=4)
    assert nb.cells[1].source == notebook.install_cell() and nb.cells[2].source == "x = 1"
    assert write_notebooks(tmp_path) == []  # a second run changes nothing
