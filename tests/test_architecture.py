"""The shape of course_utils, checked from its source: core modules at the top, one package per lesson, arrows
only downward (notebooks -> lesson packages -> core -> frameworks), no circles, no framework at import time.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "course_utils"
FRAMEWORKS = ("torch", "jax", "jaxlib", "tensorflow", "keras")
MAX_LINES = 400
EXEMPT = {"timing.py": 480}  # issue 13: timing may stay one file while it does one job (measure, compare)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources(*, workers: bool = False) -> dict[str, Path]:
    """course_utils modules by name; the worker scripts (run by launched processes, never imported by the
    package) only when asked: they follow the import rules but are not nodes of the package's graph."""
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if workers or "workers" not in p.parts}


def _imported(module: str, path: Path) -> list[tuple[str, bool]]:
    """(course_utils module imported, at module top?) for each import in ``path``."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    guards = [b for b in tree.body if isinstance(b, ast.If) and "TYPE_CHECKING" in ast.unparse(b.test)]
    type_only = {id(n) for block in guards for n in ast.walk(block)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in type_only:  # `if TYPE_CHECKING:` imports draw no arrow at run time
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "course_utils":
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                target = candidate if (PACKAGE.parent / (candidate.replace(".", "/") + ".py")).exists() or (
                    PACKAGE.parent / candidate.replace(".", "/")).is_dir() else base
                found.append((target, id(node) in top))
        elif isinstance(node, ast.Import):
            found += [(a.name, id(node) in top) for a in node.names if a.name.split(".")[0] == "course_utils"]
    return [(target, at_top) for target, at_top in found if target != module]


def _layer(module: str) -> str:
    """'core' for course_utils.X where X is a file, else the lesson package's name."""
    parts = module.split(".")
    if len(parts) == 1:
        return "facade"
    return "core" if (PACKAGE / f"{parts[1]}.py").exists() else parts[1]


def _graph() -> dict[str, set[str]]:
    sources = _sources()
    return {m: {t for t, _ in _imported(m, p) if t in sources and t != "course_utils"} for m, p in sources.items()}


def test_core_never_imports_a_lesson_package() -> None:
    wrong = [(m, t) for m, targets in _graph().items() if _layer(m) == "core"
             for t in targets if _layer(t) not in ("core",)]
    assert not wrong, f"core modules importing lesson packages (arrows must point down): {wrong}"


def test_the_import_graph_has_no_circle() -> None:
    graph = _graph()
    # modules of one package import their own __init__ only through siblings; collapse each package's
    # __init__ edges to its files to avoid counting 'package re-exports its own files' as a circle
    def edges(m: str) -> set[str]:
        return {t for t in graph[m] if not (m.startswith(t + ".") and t.count(".") == 1)}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in edges(m):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                raise AssertionError(f"import circle: {' -> '.join(cycle)}")
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for module in graph:
        if module not in state:
            visit(module)


def test_course_utils_modules_are_imported_at_module_top() -> None:
    """Sibling imports inside functions hide the arrows; only frameworks are imported lazily."""
    hidden = [(m, t) for m, p in _sources(workers=True).items() for t, at_top in _imported(m, p) if not at_top]
    assert not hidden, f"course_utils imports inside functions (move them to the module top): {hidden}"


def _dynamic_imports_of_course_utils(tree: ast.AST) -> bool:
    """A call to importlib.import_module or __import__ whose name is not a plain variable holding the user's own
    module (e.g. assess imports PKG.MODULE named on its command line): a literal or f-string naming course_utils."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in ("import_module", "__import__"):
            if node.args and not isinstance(node.args[0], ast.Name):
                return True
    return False


def test_no_import_hides_from_the_graph() -> None:
    """importlib.import_module("course_utils....") draws an arrow the AST cannot see; only the lazy facade
    (course_utils/__init__.py) may use it. Importing the learner's own module, named at run time, is allowed."""
    hiding = [m for m, p in _sources(workers=True).items() if m != "course_utils"
              and _dynamic_imports_of_course_utils(ast.parse(p.read_text()))]
    assert not hiding, f"modules importing course_utils through importlib (import at the top instead): {hiding}"


def test_no_file_is_over_the_size_limit() -> None:
    big = {}
    for path in PACKAGE.rglob("*.py"):
        name, lines = str(path.relative_to(PACKAGE)), len(path.read_text().splitlines())
        if lines > EXEMPT.get(name, MAX_LINES):
            big[name] = lines
    assert not big, f"files over {MAX_LINES} lines (one job per file): {big}"


# The lesson packages in the order of their notebooks (course.toml): a lesson may build on an earlier one, never a
# later one.
sys.path.insert(0, str(PACKAGE.parent / "tools"))
LESSONS = tuple(importlib.import_module("course_file").packages())


def test_no_earlier_lesson_imports_a_later_one() -> None:
    backwards = sorted({(_layer(m), _layer(t)) for m, targets in _graph().items() for t in targets
                        if _layer(m) in LESSONS and _layer(t) in LESSONS
                        and LESSONS.index(_layer(t)) > LESSONS.index(_layer(m))})
    assert not backwards, f"an earlier lesson imports a later one (lesson, imported): {backwards}"


def test_every_lesson_package_is_in_the_lesson_order() -> None:
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")} - {"workers"}
    assert packages <= set(LESSONS), f"lesson packages missing from LESSONS: {sorted(packages - set(LESSONS))}"


def test_child_processes_run_files_in_workers_not_strings() -> None:
    strings = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.parent.name != "workers" and re.search(r"""["']-c["']""", p.read_text())]
    assert not strings, f"a child process runs a -c string; put its entry point in course_utils/workers/: {strings}"


def test_each_lesson_package_names_its_notebook() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        if init.parent.name == "workers":
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "notebook" in doc.lower(), f"{init}: the docstring must say which notebook the package serves"


@pytest.mark.parametrize("modules", [["course_utils"], sorted(m for m in _sources() if m != "course_utils")])
def test_importing_course_utils_imports_no_framework(modules: list[str]) -> None:
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            f"print(sorted(f for f in {FRAMEWORKS!r} if f in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", f"frameworks imported at import time: {out.stdout}"
