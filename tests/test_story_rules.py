"""Stories arrange findings and never decide again: a function of a lesson's ``story*`` or ``findings`` module
takes findings only and branches only on a finding's outcome, never on a number (checked from the source)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_utils"
OUTCOME_ATTRIBUTES = {"held", "failed", "tested", "undecided", "outcome", "status"}
MODULES = sorted(p for p in PACKAGE.glob("*/*.py") if p.stem.startswith("story") or p.stem == "findings")


def _decides_on_outcome_only(test: ast.expr) -> bool:
    """True when ``test`` is built from ``x.held``/``x.outcome == ...``-style reads, ``not``, ``and``, ``or``."""
    if isinstance(test, ast.BoolOp):
        return all(_decides_on_outcome_only(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _decides_on_outcome_only(test.operand)
    if isinstance(test, ast.Attribute):
        return test.attr in OUTCOME_ATTRIBUTES
    if isinstance(test, ast.Compare):
        sides = [test.left, *test.comparators]
        return any(isinstance(s, ast.Attribute) and s.attr in ("outcome", "status") for s in sides) and all(
            isinstance(s, (ast.Attribute, ast.Constant, ast.Name, ast.Tuple)) for s in sides)
    return False


def _branches(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        tests = []
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            tests = [node.test]
        elif isinstance(node, ast.comprehension):
            tests = list(node.ifs)
        elif isinstance(node, ast.Match):
            found.append((node.lineno, "match"))
        for test in tests:
            if not _decides_on_outcome_only(test):
                found.append((test.lineno, ast.unparse(test)))
    return found


def _parameters_not_findings(tree: ast.Module) -> list[str]:
    wrong = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for arg in args:
                if arg.annotation is None or "Finding" not in ast.unparse(arg.annotation):
                    wrong.append(f"{node.name}({arg.arg}: {ast.unparse(arg.annotation) if arg.annotation else '?'})")
    return wrong


@pytest.mark.parametrize("path", MODULES, ids=[f"{p.parent.name}/{p.stem}" for p in MODULES])
def test_story_functions_branch_on_outcomes_only(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert not _branches(tree), f"{path.relative_to(ROOT)} decides on something other than an outcome: " \
                                f"{_branches(tree)}"
    if path.stem.startswith("story"):
        assert not _parameters_not_findings(tree), f"{path.relative_to(ROOT)}: story functions take findings only: " \
                                                   f"{_parameters_not_findings(tree)}"


def test_the_rule_catches_a_story_that_decides_on_a_number() -> None:
    bad = ast.parse("def s(v: Finding, ratio: float):\n    return 'faster' if ratio > 1 else 'slower'\n")
    good = ast.parse("def s(v: Finding):\n    return 'a' if v.held or v.outcome == ABOVE else 'b'\n")
    assert _branches(bad) == [(2, "ratio > 1")] and _parameters_not_findings(bad) == ["s(ratio: float)"]
    assert _branches(good) == [] and _parameters_not_findings(good) == []
