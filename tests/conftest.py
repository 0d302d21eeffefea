"""Shared test plumbing: notebook discovery, and the clock that checks each notebook's minutes budget."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COURSE_NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ALL_NOTEBOOKS = [*COURSE_NOTEBOOKS, ROOT / "tests" / "smoke_frameworks.ipynb"]

# Seconds spent and cells passed per notebook under nbval in this session (setup of the first cell
# includes the kernel start-up, so the total is the notebook's real cost).
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "run_last: run after everything else (the notebook budget check)")
    config.pluginmanager.register(_NotebookClock(), "course-notebook-clock")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    last = [item for item in items if item.get_closest_marker("run_last")]
    items[:] = [item for item in items if not item.get_closest_marker("run_last")] + last


@pytest.fixture
def notebook_runs() -> tuple[dict[Path, float], dict[Path, int]]:
    """(seconds, cells passed) per notebook path, as recorded so far in this session."""
    return _NOTEBOOK_SECONDS, _NOTEBOOK_CELLS_PASSED


def read_notebook(path: Path) -> dict:
    """The notebook's JSON."""
    return json.loads(path.read_text())
