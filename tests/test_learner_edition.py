"""The learner edition (tools/learner_edition.py) on a synthetic notebook: solutions hidden the Colab way (a form
with its title line) and in JupyterLab, no stored outputs, the badge opening the published edition, and a run as a
learner who opened no solution: every check says "not attempted", the solutions stay in the file."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

from course_utils import notebook

sys.path.insert(0, str(ROOT / "tools"))
learner_edition = importlib.import_module("learner_edition")

SOLUTION = "answer = 2 + 2\nprint(answer)"


def _synthetic() -> nbformat.NotebookNode:
    title = nbformat.v4.new_markdown_cell(f"# 99 · Synthetic\n{notebook.badge('99_synthetic.ipynb')}\n\nText.")
    solution = nbformat.v4.new_code_cell(SOLUTION, metadata={"tags": ["solution"], "jupyter": {"source_hidden": True},
                                                             "execution": {"shell.execute_reply": "2026-01-01"}},
                                         outputs=[nbformat.v4.new_output("stream", text="4\n")], execution_count=3)
    return nbformat.v4.new_notebook(cells=[
        title,
        nbformat.v4.new_code_cell("x = 1", outputs=[nbformat.v4.new_output("stream", text="1\n")], execution_count=1),
        nbformat.v4.new_markdown_cell("**1.** What is 2 + 2?"),
        nbformat.v4.new_code_cell("answer = None  # your answer here"),
        solution,
        nbformat.v4.new_code_cell('print("exercise 99.1: " + ("not attempted" if answer is None else "correct"))'),
    ])


def test_solutions_are_colab_forms_and_outputs_go() -> None:
    edition = learner_edition.learner_copy(_synthetic())
    solution = edition.cells[4]
    assert solution.source.splitlines()[0] == learner_edition.FORM_TITLE == \
        "#@title Solution (run to check, open to read)"
    assert solution.source.endswith(SOLUTION) and ast.parse(solution.source)  # still the code, still Python
    assert solution.metadata["cellView"] == "form" and solution.metadata["jupyter"]["source_hidden"] is True
    assert all(not c.outputs and c.execution_count is None and "execution" not in c.metadata
               for c in edition.cells if c.cell_type == "code")
    assert "cellView" not in edition.cells[3].metadata  # only solutions are forms
    again = learner_edition.learner_copy(edition)
    assert again.cells[4].source == solution.source  # one title line, however often it runs
    nbformat.validate(edition)


def test_the_badge_opens_the_published_edition() -> None:
    title = learner_edition.learner_copy(_synthetic()).cells[0].source
    assert notebook.badge(f"{learner_edition.PUBLISHED}/99_synthetic.ipynb") in title
    assert f"/blob/{notebook.RELEASE}/notebooks/learner/99_synthetic.ipynb)" in title
    assert "/notebooks/99_synthetic.ipynb)" not in title


def test_unanswered_leaves_only_the_solutions_out() -> None:
    nb = learner_edition.learner_copy(_synthetic())
    assert [c.source for c in learner_edition.unanswered(nb).cells] == \
        [c.source for c in nb.cells if "solution" not in c.metadata.get("tags", [])]


@pytest.mark.integration
def test_a_run_says_not_attempted_and_keeps_the_solutions(tmp_path: Path) -> None:
    target = tmp_path / "99_synthetic.ipynb"
    nbformat.write(learner_edition.learner_copy(_synthetic()), target)
    ran, _, error = learner_edition.run_unanswered(target, "python3", 120)
    assert error is None
    assert learner_edition.check_lines(ran) == [("99.1", "not attempted")]
    written = nbformat.read(target, as_version=4)
    assert written.cells[4].metadata["cellView"] == "form" and not written.cells[4].outputs  # kept, never run
    assert "".join(written.cells[5].outputs[0]["text"]) == "exercise 99.1: not attempted\n"
