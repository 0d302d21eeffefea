"""The notebooks as files: pairs in sync, executed outputs present where nbval checks them, budgets kept."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest
from conftest import ALL_NOTEBOOKS, COURSE_NOTEBOOKS, ROOT, budget_problems, read_notebook

from course_utils import notebook

pytestmark = pytest.mark.integration  # files, builds and notebooks: not in make test-unit

PAIRED_METADATA = ("slideshow", "jupyter", "tags")


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def _cells(path: Path) -> list[tuple[str, str, dict]]:
    nb = jupytext.read(path)
    return [
        (c.cell_type, c.source.strip(), {k: c.metadata[k] for k in PAIRED_METADATA if k in c.metadata})
        for c in nb.cells
    ]


def _code_cells(path: Path) -> list[dict]:
    return [c for c in read_notebook(path)["cells"] if c["cell_type"] == "code"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def test_there_are_notebooks_to_check() -> None:
    assert (ROOT / "tests" / "smoke_frameworks.ipynb").exists()


@pytest.mark.parametrize("ipynb", ALL_NOTEBOOKS, ids=_ids(ALL_NOTEBOOKS))
def test_jupytext_pair_in_sync(ipynb: Path) -> None:
    source = ipynb.with_suffix(".py")
    assert source.exists(), f"{source.name} is missing: every notebook is a jupytext pair (make sync)"
    assert _cells(source) == _cells(ipynb), f"{source.name} and {ipynb.name} differ: run make sync"


@pytest.mark.parametrize("ipynb", ALL_NOTEBOOKS, ids=_ids(ALL_NOTEBOOKS))
def test_notebook_was_executed_and_checked_cells_have_outputs(ipynb: Path) -> None:
    cells = _code_cells(ipynb)
    checked = [c for c in cells if "NBVAL_CHECK_OUTPUT" in _source(c)]
    assert checked, f"{ipynb.name} has no '# NBVAL_CHECK_OUTPUT' cell: nbval would check nothing in it"
    not_run = [i for i, c in enumerate(cells) if _source(c).strip() and c.get("execution_count") is None]
    assert not not_run, f"{ipynb.name}: code cells {not_run} were never executed (make execute NB={ipynb.name})"
    empty = [_source(c).splitlines()[1:2] for c in checked if not c.get("outputs")]
    assert not empty, f"{ipynb.name}: checked cells without stored output (nbval would skip them): {empty}"


@pytest.mark.parametrize("ipynb", ALL_NOTEBOOKS, ids=_ids(ALL_NOTEBOOKS))
def test_no_cell_hides_from_nbval(ipynb: Path) -> None:
    hidden = [_source(c).splitlines()[:2] for c in _code_cells(ipynb) if "NBVAL_SKIP" in _source(c)]
    assert not hidden, f"{ipynb.name}: NBVAL_SKIP hides a cell from the tests: {hidden}"


@pytest.mark.parametrize("ipynb", ALL_NOTEBOOKS, ids=_ids(ALL_NOTEBOOKS))
def test_minutes_budget_in_metadata(ipynb: Path) -> None:
    minutes = read_notebook(ipynb)["metadata"].get("course", {}).get("minutes", {})
    assert "workshop" not in minutes, f"{ipynb.name}: workshop minutes are computed (tools/minutes.py), never typed"
    for key in ("ci", "laptop"):
        assert isinstance(minutes.get(key), (int, float)), f"{ipynb.name}: metadata course.minutes.{key} missing"
    assert 0 < minutes["ci"] <= 3, f"{ipynb.name}: a notebook must run in ci size within 3 minutes"
    assert 0 < minutes["laptop"] <= 6, f"{ipynb.name}: a notebook must run at default size within 6 minutes"


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_first_code_cell_is_the_colab_install_cell(ipynb: Path) -> None:
    assert _source(_code_cells(ipynb)[0]) == notebook.install_cell()


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_title_cell_has_colab_badge(ipynb: Path) -> None:
    first = read_notebook(ipynb)["cells"][0]
    assert first["cell_type"] == "markdown" and notebook.badge(ipynb.name) in _source(first)


def test_the_budget_check_names_what_broke_it(tmp_path: Path) -> None:
    nb = tmp_path / "99_x.ipynb"
    nb.write_text(json.dumps({"metadata": {"course": {"minutes": {"ci": 1}}}}))
    seconds, passed = {nb.resolve(): 90.0}, {nb.resolve(): 3}
    assert budget_problems(seconds, passed, [nb], share=2) == []
    assert budget_problems(seconds, passed, [nb], share=1) == ["99_x.ipynb took 90 s under nbval, over its 60 s budget"]
    assert "executed no cell" in budget_problems(seconds, {}, [nb], share=1)[0]


def _stored_text(ipynb: Path) -> str:
    chunks = []
    for cell in _code_cells(ipynb):
        for output in cell.get("outputs", []):
            chunks.append("".join(output.get("text", "")))
            chunks.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(chunks)


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_every_prediction_has_a_verdict_computed_in_the_run(ipynb: Path) -> None:
    predictions = len(re.findall(r"^#.*\*\*Prediction", ipynb.with_suffix(".py").read_text(), re.M))
    verdicts = len(re.findall(r"Prediction (held|failed): |Not decided: |Not tested here: ", _stored_text(ipynb)))
    assert predictions > 0, f"{ipynb.name} makes no **Prediction**: every notebook predicts, then measures"
    assert verdicts >= predictions, (f"{ipynb.name}: {predictions} predictions but {verdicts} verdicts (held, failed "
                                     "or not tested here) in its outputs")


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_every_exercise_is_checked_and_its_solution_passes(ipynb: Path) -> None:
    cells = _code_cells(ipynb)
    checks = [c for c in cells if "cu.exercises.check(" in _source(c)]
    solutions = [c for c in cells if "solution" in c.get("metadata", {}).get("tags", [])]
    assert len(checks) >= 2, f"{ipynb.name}: every notebook ends with at least two checked exercises"
    assert len(solutions) >= len(checks), f"{ipynb.name}: each exercise needs a solution cell tagged 'solution'"
    for cell in checks:
        assert "NBVAL_CHECK_OUTPUT" in _source(cell), f"{ipynb.name}: a check cell must be # NBVAL_CHECK_OUTPUT"
        text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
        solved = re.fullmatch(r"(exercise \d\d\.\d+: correct\n)+", text)
        assert solved, f"{ipynb.name}: a solution fails its check: {text!r}"
    for cell in solutions:
        assert cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"), f"{ipynb.name}: solutions are hidden"
