"""The recipe stays in the cell: what a learner can copy is visible, the prose behind it is hidden, short and told
from stored verdicts, and helpers are reached one way (``cu.<package>.<name>``). Limits and measures come from
``tools/lesson_share.py``, which prints them per notebook."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest
from conftest import COURSE_NOTEBOOKS, ROOT, read_notebook

sys.path.insert(0, str(ROOT / "tools"))
share = importlib.import_module("lesson_share")

pytestmark = pytest.mark.integration  # reads the executed notebooks

# The calls each lesson teaches (course.toml), found in a visible code cell (or in a worker file the cell shows).
course_file = importlib.import_module("course_file")
TAUGHT = {lesson["notebook"]: lesson["taught"] for lesson in course_file.lessons()}
SHOWN_FILES = {lesson["notebook"] for lesson in course_file.lessons() if lesson["shows_files"]}
MAX_PREDICTION_WORDS = 60  # "at most two clauses"
PACKAGE = ROOT / "course_utils"
LESSONS = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py") if p.parent.name != "workers")
# Lessons whose notebook still reaches past its package's public face, each until its owner exports what the
# notebook uses (issue 35); the xfail is strict, so it fails the day the notebook is fixed and the entry stays.


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def _code(path: Path) -> list[dict]:
    return [c for c in read_notebook(path)["cells"] if c["cell_type"] == "code"]


def _tree(cell: dict) -> ast.Module | None:
    text = "\n".join(line for line in share.source(cell).splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def test_course_utils_stays_within_issue_35s_limit_plus_what_later_features_added() -> None:
    later = share.later_features()
    if later is None:
        pytest.skip("a copy without git history: the later issues' commits cannot be counted")
    lines = share.package_measures()["course_utils lines"]
    assert lines <= share.LINE_LIMIT + sum(later.values()), f"course_utils {lines:,} lines; later features {later}"


def test_net_python_lines_counts_python_files_only() -> None:
    numstat = "10\t2\tcourse_utils/a.py\n-\t-\tcourse_utils/b.png\n5\t0\tcourse_utils/c.toml\n1\t4\tcourse_utils/d.py\n"
    assert share.net_python_lines(numstat) == 5


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_lesson_code_dominates_and_the_prose_is_short(ipynb: Path) -> None:
    found = share.measure(ipynb)
    assert found.lesson_share >= share.MIN_LESSON_SHARE, found.line()
    assert found.words <= share.MAX_WORDS, found.line()
    assert found.longest_paragraph <= share.MAX_PARAGRAPH_WORDS, found.line()


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_prose_cells_are_hidden_short_off_the_slides_and_compare_nothing(ipynb: Path) -> None:
    for cell in _code(ipynb):
        if not share.builds_prose(cell):
            continue
        head = share.source(cell).splitlines()[:2]
        assert share.hidden(cell), f"{ipynb.name}: a prose cell shows its source: {head}"
        assert (cell["metadata"].get("slideshow") or {}).get("slide_type") == "skip", f"{ipynb.name}: {head} on slides"
        assert share.code_lines(share.source(cell))[0] <= share.MAX_HIDDEN_LINES, f"{ipynb.name}: {head} is long"
        tree = _tree(cell)
        assert tree is not None, f"{ipynb.name}: {head} does not parse"
        decided = [type(n).__name__ for n in ast.walk(tree) if isinstance(n, ast.Compare | ast.If | ast.IfExp)]
        assert not decided, f"{ipynb.name}: {head} decides something ({decided}): a stored verdict already did"


def _calls(tree: ast.AST, names: set[str]) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
            (getattr(n.func, "attr", None) in names or getattr(n.func, "id", None) in names)]


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_every_verdict_is_stored(ipynb: Path) -> None:
    for cell in _code(ipynb):
        tree = _tree(cell)
        if tree is None:
            continue
        stored = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign)}
        for call in _calls(tree, {"verdict", "not_tested", "score"}):
            assert id(call) in stored, f"{ipynb.name}: a verdict is not stored (v = verdict(...)): " \
                                       f"{ast.unparse(call)[:80]}"


def _aliases(tree: ast.AST) -> list[str]:
    """Assignments whose value is a bare attribute of ``cu`` (``m0 = cu.measuring``, ``fmt = cu.display.x``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for value in values:
                root = value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(value, ast.Attribute) and isinstance(root, ast.Name) and root.id == "cu":
                    found.append(ast.unparse(node)[:60])
    return found


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_helpers_are_reached_one_way(ipynb: Path) -> None:
    for cell in _code(ipynb):
        tree = _tree(cell)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("course_utils"), f"{ipynb.name}: {ast.unparse(node)}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name == "course_utils" or not alias.name.startswith("course_utils"), \
                        f"{ipynb.name}: {ast.unparse(node)}: reach helpers as cu.<package>.<name>"
        assert not _aliases(tree), f"{ipynb.name}: helpers renamed: {_aliases(tree)}; write cu.<package>.<name>"


def _lesson_reaches(tree: ast.AST) -> set[tuple[str, ...]]:
    """Every ``cu.<lesson>.<name>[.<attribute>]`` spelled in ``tree``, as (lesson, name, attribute or "")."""
    found = set()
    for node in ast.walk(tree):
        parts, root = [], node
        while isinstance(root, ast.Attribute):
            parts.insert(0, root.attr)
            root = root.value
        if isinstance(root, ast.Name) and root.id == "cu":
            parts.insert(0, "cu")
            if len(parts) >= 3 and parts[1] in LESSONS:
                found.add((parts[1], parts[2], parts[3] if len(parts) > 3 else ""))
    return found


def _public_face(ipynb: Path) -> list[str]:
    """What ``ipynb`` reaches past ``cu.<lesson>.<name>``: a name outside the package's ``__all__``, or a module's
    name (``cu.<lesson>.<module>.<name>``) other than the predictions' templates (``cu.<lesson>.findings.<NAME>``)."""
    wrong = set()
    for cell in _code(ipynb):
        tree = _tree(cell)
        for lesson, name, attribute in _lesson_reaches(tree) if tree is not None else ():
            package = importlib.import_module(f"course_utils.{lesson}")
            if name not in package.__all__:
                wrong.add(f"cu.{lesson}.{name} is not in course_utils.{lesson}.__all__")
            elif name != "findings" and attribute and (PACKAGE / lesson / f"{name}.py").is_file():
                wrong.add(f"cu.{lesson}.{name}.{attribute}: export it as cu.{lesson}.<name>")
    return sorted(wrong)


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_lesson_helpers_are_reached_through_the_package(ipynb: Path) -> None:
    wrong = _public_face(ipynb)
    assert not wrong, f"{ipynb.name}: " + "; ".join(wrong)


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_the_taught_calls_are_in_the_cells(ipynb: Path) -> None:
    visible = "\n".join(share.source(c) for c in _code(ipynb) if not share.hidden(c))
    if ipynb.stem in SHOWN_FILES:
        visible += "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                             for c in _code(ipynb) for o in c.get("outputs", []))
    missing = [call for call in TAUGHT[ipynb.stem] if call not in visible]
    assert not missing, f"{ipynb.name}: the recipe is not in a visible cell: {missing}"


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=_ids(COURSE_NOTEBOOKS))
def test_predictions_are_short(ipynb: Path) -> None:
    for cell in read_notebook(ipynb)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for para in re.split(r"\n\s*\n", share.source(cell)):
            if "**Prediction" in para:
                said = para[para.index("**Prediction"):]
                assert share.words(said) <= MAX_PREDICTION_WORDS, f"{ipynb.name}: a long prediction: {said[:90]}"
