"""Workshop minutes are computed from the material (tools/minutes.py): recomputed here from a synthetic notebook by
the stated rules, and from the course's notebooks against the guide's generated tables and agendas."""

from __future__ import annotations

import importlib
import math
import sys

import nbformat
import pytest
from conftest import COURSE_NOTEBOOKS, ROOT

pytestmark = pytest.mark.integration  # reads the notebooks and the guide

sys.path.insert(0, str(ROOT / "tools"))
minutes = importlib.import_module("minutes")
build_slides = importlib.import_module("build_slides")


def _timed(source: str, seconds: float, **meta) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, metadata=meta)
    cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T10:00:00.000000Z",
                                  "shell.execute_reply": f"2026-01-01T10:00:{seconds:09.6f}Z"}
    return cell


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    prose = " ".join(["word"] * 300)
    finding = _timed("story()", 6.0)
    finding.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": " ".join(["held"] * 150)})]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 99 · T"),
        nbformat.v4.new_markdown_cell(f"## 1. Idea\n\n**Prediction:** it holds.\n\n{prose}",
                                      metadata={"course": {"lead": True}}),
        _timed("x = 1", 24.0), finding,
        nbformat.v4.new_markdown_cell("## Exercises\n\n**1.** Write it."),
        nbformat.v4.new_code_cell("answer = None"),
        _timed("def f(x):\n    return x\nanswer = f(1)", 50.0, tags=["solution"]),
        _timed('cu.exercises.check("99.1", answer)', 0.0),
        nbformat.v4.new_code_cell("answer = None"),
        _timed("answer = 2", 1.0, tags=["solution"]),
        _timed('cu.exercises.check("99.2", answer)', 0.0),
        nbformat.v4.new_markdown_cell("## Going further", metadata={"course": {"optional": True}}),
    ]
    return nb


def test_a_section_is_priced_by_the_stated_rules() -> None:
    idea, exercises, further = minutes.sections(_notebook())
    reading = (5 + 300 + 150) / minutes.WORDS_PER_MINUTE  # "1. Idea" "Prediction it holds." + prose + the finding
    talk = minutes.TALK_PER_SECTION + minutes.TALK_PER_PREDICTION
    assert (idea.words, idea.predictions, idea.run_seconds) == (455, 1, 30.0)
    assert idea.minutes == math.ceil(reading + 0.5 + talk)
    assert exercises.exercises == ("99.1", "99.2") and exercises.code_exercises == ("99.1",)
    assert exercises.run_seconds == 0.0, "solutions are run by the learners, inside their exercise minutes"
    assert exercises.minutes >= minutes.CODE_EXERCISE + minutes.ANSWER_EXERCISE + minutes.TALK_PER_SECTION
    assert further.optional and minutes.session_minutes(_notebook()) == idea.minutes + exercises.minutes
    assert minutes.lead_minutes(_notebook()) == idea.minutes


def test_a_notebook_without_execution_times_says_so() -> None:
    nb = _notebook()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    assert minutes.sections(nb)[0].run_seconds is None
    assert "not recorded" in build_slides.guide.sections_markdown({"99_t": nb}, "a test")


def test_code_exercises_need_the_stated_minimum() -> None:
    assert minutes.CODE_EXERCISE >= 5, "issue 39: at least 5 minutes for an exercise that asks for code"
    assert minutes.asks_for_code(None), "no solution: the learner edits the code given"
    assert not minutes.asks_for_code(nbformat.v4.new_code_cell("# the answer\nanswer = 2\nprint(answer)"))


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_guide_prints_the_minutes_recomputed_here(ipynb) -> None:
    nb = nbformat.read(ipynb, as_version=4)
    text = build_slides.GUIDE.read_text()
    heading = f"#### `{ipynb.stem}`: {minutes.session_minutes(nb)} minutes computed"
    assert heading in text, f"the guide's sections are stale for {ipynb.stem}: tools/build_slides.py --update-guide"
