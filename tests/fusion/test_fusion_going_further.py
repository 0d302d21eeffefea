"""Issue 39.3 for notebooks 02 and 03: no cell after "Going further" (the exercises, the Summary) reads a name that
only "Going further" defines, so a learner who skips it meets no NameError. Read statically from the .py sources."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _names(body: str) -> tuple[set[str], set[str]]:
    """(defined, read) names of one code cell."""
    defined, read = set(), set()
    for node in ast.walk(ast.parse(body)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else defined).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
    return defined, read


def going_further_names_read_later(source: str) -> list[tuple[str, list[str]]]:
    """(cell start, names) for each cell after "Going further" that reads a name only "Going further" defines."""
    heads = re.findall(r"^# %%.*$", source, flags=re.M)
    cells = re.split(r"^# %%.*$", source, flags=re.M)[1:]
    section, core, further, found = "core", set(dir(builtins)), set(), []
    for head, body in zip(heads, cells):
        if "[markdown]" in head:
            if re.search(r"^# ## Going further", body, re.M):
                section = "further"
            elif section == "further" and re.search(r"^# ## ", body, re.M):
                section = "after"
            continue
        defined, read = _names(body)
        if section == "further":
            further |= defined
            continue
        if section == "after" and (read - core - defined) & further:
            found.append((body.strip()[:50], sorted((read - core - defined) & further)))
        core |= defined
    return found


@pytest.mark.parametrize("name", ["02_operator_fusion.py", "03_mixed_precision.py"])
def test_nothing_after_going_further_needs_its_names(name: str) -> None:
    assert going_further_names_read_later((NOTEBOOKS / name).read_text()) == []


def test_the_check_finds_a_summary_that_reads_going_further() -> None:
    source = ("# %%\nx = 1\n# %% [markdown]\n# ## Going further\n# %%\nbusy = 2\n# %% [markdown]\n# ## Summary\n"
              "# %%\nrows = [x, busy]\n")
    assert going_further_names_read_later(source) == [("rows = [x, busy]", ["busy"])]
