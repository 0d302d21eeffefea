"""'Going further' is optional reading (issue 39): a learner or a workshop that skips it must meet no NameError,
so no cell outside it may use a name that only a 'Going further' cell defines. Checked statically from each
code cell's symbol table (names it reads from the notebook's globals, in nested functions too), so the test
costs milliseconds and finds the cell, the name and the section that defines it."""

from __future__ import annotations

import builtins
import re
import symtable

import nbformat
import pytest
from conftest import COURSE_NOTEBOOKS

MAGIC = re.compile(r"^\s*[%!].*$", re.MULTILINE)


def _optional(cell: nbformat.NotebookNode) -> bool | None:
    """True/False at a '## ' heading (optional when its course metadata says so), None for any other cell."""
    if cell.cell_type != "markdown" or not cell.source.startswith("## "):
        return None
    return bool(cell.get("metadata", {}).get("course", {}).get("optional", False))


def _globals_read(table: symtable.SymbolTable, top: bool = True) -> set[str]:
    """Names a cell reads from the notebook's globals: free at its top level, or global in a nested scope."""
    read = set()
    for symbol in table.get_symbols():
        if not symbol.is_referenced():
            continue
        if top and not (symbol.is_assigned() or symbol.is_imported()):
            read.add(symbol.get_name())
        elif not top and symbol.is_global() and not symbol.is_declared_global():
            read.add(symbol.get_name())
    for child in table.get_children():
        read |= _globals_read(child, top=False)
    return read


def _globals_written(table: symtable.SymbolTable) -> set[str]:
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}


def optional_names_used_outside(nb: nbformat.NotebookNode) -> list[str]:
    """'cell N uses NAME, defined only in Going further' for every such use."""
    core_defined: set[str] = set(dir(builtins)) | {"get_ipython", "display", "__file__"}
    optional_defined: set[str] = set()
    optional, uses = False, []
    for index, cell in enumerate(nb.cells):
        heading = _optional(cell)
        if heading is not None:
            optional = heading
        if cell.cell_type != "code":
            continue
        table = symtable.symtable(MAGIC.sub("", cell.source), f"cell {index}", "exec")
        if optional:
            optional_defined |= _globals_written(table)
            continue
        missing = sorted((_globals_read(table) & optional_defined) - core_defined)
        uses += [f"cell {index} uses {name!r}, defined only in 'Going further'" for name in missing]
        core_defined |= _globals_written(table)
    return uses


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=[p.stem for p in COURSE_NOTEBOOKS])
def test_going_further_can_be_skipped(ipynb) -> None:
    uses = optional_names_used_outside(nbformat.read(ipynb, as_version=4))
    assert not uses, f"{ipynb.stem}: " + "; ".join(uses)


def test_the_check_finds_a_name_only_going_further_defines() -> None:
    cells = [nbformat.v4.new_markdown_cell("## 1. Core"), nbformat.v4.new_code_cell("x = 1"),
             nbformat.v4.new_markdown_cell("## Going further", metadata={"course": {"optional": True}}),
             nbformat.v4.new_code_cell("extra = x + 1"),
             nbformat.v4.new_markdown_cell("## Summary"),
             nbformat.v4.new_code_cell("def show():\n    return extra\n%time print(x)")]
    nb = nbformat.v4.new_notebook(cells=cells)
    assert optional_names_used_outside(nb) == ["cell 5 uses 'extra', defined only in 'Going further'"]
    nb.cells[1].source = "x = 1\nextra = 0"  # defined in a core cell too: fine
    assert optional_names_used_outside(nb) == []
