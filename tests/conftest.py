"""Shared test plumbing: notebook discovery, and the clock that checks each notebook's minutes budget at the end
of the session (make test). Under pytest-xdist, make test uses --dist loadscope: a test file (so every cell of one
notebook, in order, in one kernel) or a test class runs on one worker."""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COURSE_NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ALL_NOTEBOOKS = [*COURSE_NOTEBOOKS, ROOT / "tests" / "smoke_frameworks.ipynb"]
COURSE_BUDGET_MINUTES = 15  # the whole ci-size course under nbval, on 2 quiet cores

# Seconds spent and cells passed per notebook under nbval in this session (setup of the first cell
# includes the kernel start-up, so the total is the notebook's real cost). Filled in the process that sees every
# report: the only process without xdist, the controller with it.
_NOTEBOOK_SECONDS: dict[Path, float] = defaultdict(float)
_NOTEBOOK_CELLS_PASSED: dict[Path, int] = defaultdict(int)


class _NotebookClock:
    """Registered as a global plugin: a hook defined in this conftest would only see reports from tests/."""

    @staticmethod
    def pytest_runtest_logreport(report: pytest.TestReport) -> None:
        path = Path(report.location[0])
        if path.suffix != ".ipynb":
            return
        path = (ROOT / path).resolve()
        _NOTEBOOK_SECONDS[path] += report.duration
        if report.when == "call" and report.passed:
            _NOTEBOOK_CELLS_PASSED[path] += 1


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require-notebooks",
        action="store_true",
        help="fail unless nbval executed every notebook, each within its ci minutes budget (make test)",
    )


def recorded_seconds(ipynb: Path) -> float:
    """Seconds the notebook's stored run took, cell by cell (nbclient's timing metadata, written by make execute);
    0 where none is recorded."""
    from datetime import datetime

    total = 0.0
    for cell in read_notebook(ipynb)["cells"]:
        timing = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            total += (datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
                      - datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))).total_seconds()
    return total


def scope_rank(item: pytest.Item, seconds: dict[Path, float], slow_modules: dict[Path, int]) -> tuple[int, float]:
    """Where ``item``'s scope starts in make test (smaller first): the learner editions, then the notebooks under
    nbval, each group longest first by the notebook's recorded seconds (an edition runs at ci sizes too), then the
    test files holding a slow or integration test, most such tests first (``slow_modules``: their count per file),
    then the rest: the session ends on short scopes. Every item of a scope gets the same rank."""
    path = Path(str(item.path)).resolve()
    ipynb = getattr(getattr(item.getparent(pytest.Class), "obj", None), "ipynb", None)
    if ipynb is not None:
        return 0, -seconds.get(Path(ipynb).resolve(), 0.0)
    if path.suffix == ".ipynb":
        return 1, -seconds.get(path, 0.0)
    return (2, -slow_modules[path]) if path in slow_modules else (3, 0.0)


class _LongestFirst:
    """Orders the collection so that the longest scopes start first: pytest-xdist with --dist loadscope and
    --no-loadscope-reorder (make test) hands scopes to the workers in this order, so the session does not end
    with one worker running a long notebook while the other waits. The order within a scope is kept."""

    @staticmethod
    def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
        seconds = {p.resolve(): recorded_seconds(p) for p in ALL_NOTEBOOKS if p.exists()}
        slow = Counter(Path(str(i.path)).resolve() for i in items
                       if i.get_closest_marker("slow") or i.get_closest_marker("integration"))
        items.sort(key=lambda item: scope_rank(item, seconds, slow))


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_NotebookClock(), "course-notebook-clock")
    config.pluginmanager.register(_LongestFirst(), "course-longest-first")


def _workers(config: pytest.Config) -> int:
    """How many processes ran tests side by side (pytest-xdist's -n), 1 without it."""
    return max(1, int(getattr(config.option, "numprocesses", 0) or 0))


def budget_problems(seconds: dict[Path, float], passed: dict[Path, int], notebooks: list[Path],
                    share: int) -> list[str]:
    """What breaks the notebooks' ci budgets: a notebook nbval never ran, or one over its budget times ``share``
    (the number of test processes that shared the machine's cores with it; 1 on a quiet machine)."""
    problems = []
    for ipynb in notebooks:
        path = ipynb.resolve()
        if passed.get(path, 0) == 0:
            problems.append(f"nbval executed no cell of {ipynb.name}: was it collected?")
            continue
        budget = json.loads(ipynb.read_text())["metadata"]["course"]["minutes"]["ci"] * 60 * share
        if seconds[path] > budget:
            problems.append(f"{ipynb.name} took {seconds[path]:.0f} s under nbval, over its {budget:.0f} s budget")
    course = sum(seconds.get(p.resolve(), 0.0) for p in notebooks if p in COURSE_NOTEBOOKS)
    if course > COURSE_BUDGET_MINUTES * 60 * share:
        problems.append(f"the ci-size course took {course / 60:.1f} minutes under nbval, over "
                        f"{COURSE_BUDGET_MINUTES * share}")
    return problems


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With --require-notebooks (make test): every notebook ran under nbval within its budget, or the run fails.
    Checked where every report arrives, after every test ended, so the order of xdist workers does not matter."""
    config = session.config
    if not config.getoption("--require-notebooks") or hasattr(config, "workerinput") or session.shouldfail:
        return
    share = _workers(config)
    problems = budget_problems(_NOTEBOOK_SECONDS, _NOTEBOOK_CELLS_PASSED, ALL_NOTEBOOKS, share)
    lines = [f"  {p.stem:<28} {_NOTEBOOK_SECONDS.get(p.resolve(), 0.0):6.0f} s" for p in ALL_NOTEBOOKS]
    note = (f"(under nbval, {share} test processes sharing {os.cpu_count()} cores: each notebook may take {share}x "
            "its quiet-machine budget here; make course records quiet-machine minutes in build/summary.md)")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("-", "notebook minutes under nbval " + note)
        for line in lines:
            reporter.write_line(line)
        for problem in problems:
            reporter.write_line(f"BUDGET: {problem}", red=True)
    if problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def read_notebook(path: Path) -> dict:
    """The notebook's JSON."""
    return json.loads(path.read_text())
