"""Workshop minutes computed from the material, never typed: each '## ' section of a notebook is priced from what
it holds, so that a plan changes when the notebook does.

A section's minutes (rounded up to a whole minute) are the sum of four parts, each a stated rule:

- reading: the words of its Markdown cells and of its cells' generated Markdown outputs (the findings) at
  ``WORDS_PER_MINUTE``, a rate for technical text full of numbers;
- exercises: ``CODE_EXERCISE`` minutes for one that asks for code, ``ANSWER_EXERCISE`` for one answered with a
  number or a one-line formula (see ``asks_for_code``);
- run time: the seconds its cells (solutions excluded: learners run those) took in the executed notebook, read
  from the execution timestamps nbclient records in each cell's metadata; a notebook without them says so;
- talk: ``TALK_PER_SECTION`` minutes to set the section up, plus ``TALK_PER_PREDICTION`` for each
  ``**Prediction**`` the room commits to before the cell runs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

import nbformat

WORDS_PER_MINUTE = 150  # reading technical text with numbers, aloud or along with the presenter
CODE_EXERCISE = 6  # minutes for an exercise that asks for code: read, write, run, fail once, fix
ANSWER_EXERCISE = 3  # minutes for an exercise answered with a number or a one-line formula
TALK_PER_SECTION = 2  # minutes to set a section up: the question and why it matters
TALK_PER_PREDICTION = 1  # minutes for the room to commit to each prediction before the cell runs
CODE_LINES = 3  # a solution longer than this (comments, blank lines and prints aside) is code to write

CHECK = re.compile(  # a checked exercise: its id
    r"cu\.exercises\.check\(\s*[\"'](\d\d\.\d+)[\"']")
_WORD = re.compile(r"[A-Za-z0-9][\w.'%-]*")


@dataclass(frozen=True)
class Section:
    """One '## ' section: its heading's title and metadata flags, and what the material makes it cost."""

    title: str
    lead: bool  # a section a product or tech lead needs (course.lead)
    optional: bool  # "Going further": reading after the session (course.optional)
    words: int
    exercises: tuple[str, ...]
    code_exercises: tuple[str, ...]
    predictions: int
    run_seconds: float | None  # None: the notebook recorded no execution times

    @property
    def minutes(self) -> int:
        """The computed minutes: reading + exercises + run time + talk, rounded up."""
        exercises = CODE_EXERCISE * len(self.code_exercises)
        exercises += ANSWER_EXERCISE * (len(self.exercises) - len(self.code_exercises))
        talk = TALK_PER_SECTION + TALK_PER_PREDICTION * self.predictions
        run = (self.run_seconds or 0.0) / 60
        return math.ceil(self.words / WORDS_PER_MINUTE + exercises + run + talk)


def words(text: str) -> int:
    """How many words ``text`` holds once HTML tags and link targets are dropped (numbers count as words)."""
    shown = re.sub(r"\]\([^)]*\)", "]", re.sub(r"<[^>]+>", " ", text))
    return len(_WORD.findall(shown))


def _markdown_outputs(cell: nbformat.NotebookNode) -> str:
    return "\n".join("".join(out.get("data", {}).get("text/markdown", "")) for out in cell.get("outputs", []))


def run_seconds(cell: nbformat.NotebookNode) -> float | None:
    """Seconds the cell ran, from nbclient's ``execution`` timestamps (input received to reply sent), or None."""
    stamps = cell.get("metadata", {}).get("execution", {})
    start, end = stamps.get("iopub.execute_input"), stamps.get("shell.execute_reply")
    if not (start and end):
        return None
    return (datetime.fromisoformat(end.replace("Z", "+00:00"))
            - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()


def is_solution(cell: dict) -> bool:
    """True for an exercise solution: a code cell tagged ``solution`` (hidden in the notebook; prose cells are
    hidden too, but they are not solutions)."""
    return cell.get("cell_type") == "code" and "solution" in cell.get("metadata", {}).get("tags", [])


def asks_for_code(solution: nbformat.NotebookNode | None) -> bool:
    """True when the exercise asks for code: its solution has a ``def`` or more than ``CODE_LINES`` lines that
    are not comments, blank or ``print``; or it has no solution cell (the learner edits the code given)."""
    if solution is None:
        return True
    lines = [line.strip() for line in solution.source.splitlines()]
    lines = [line for line in lines if line and not line.startswith(("#", "print("))]
    return any(line.startswith("def ") for line in lines) or len(lines) > CODE_LINES


def sections(nb: nbformat.NotebookNode) -> list[Section]:
    """The notebook's '## ' sections, each priced from the cells up to the next '## ' heading."""
    groups: list[list[nbformat.NotebookNode]] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            groups.append([])
        if groups:
            groups[-1].append(cell)
    return [_priced(cells) for cells in groups]


def _priced(cells: list[nbformat.NotebookNode]) -> Section:
    head = cells[0]
    meta = head.get("metadata", {}).get("course", {})
    text = "\n".join(c.source if c.cell_type == "markdown" else _markdown_outputs(c) for c in cells)
    exercises, code, solution = [], [], None
    times: list[float | None] = []
    for cell in cells:
        if cell.cell_type != "code":
            continue
        if is_solution(cell):
            solution = cell
            continue
        times.append(run_seconds(cell))
        for exercise in CHECK.findall(cell.source):
            exercises.append(exercise)
            if asks_for_code(solution):
                code.append(exercise)
            solution = None
    recorded = [t for t in times if t is not None]
    return Section(
        title=head.source.splitlines()[0][3:].strip(),
        lead=bool(meta.get("lead", False)),
        optional=bool(meta.get("optional", False)),
        words=words(text),
        exercises=tuple(exercises),
        code_exercises=tuple(code),
        predictions=text.count("**Prediction"),
        run_seconds=sum(recorded) if recorded or not times else None,
    )


def session_minutes(nb: nbformat.NotebookNode) -> int:
    """The computed minutes of the notebook's session: its sections outside "Going further"."""
    return sum(s.minutes for s in sections(nb) if not s.optional)


def lead_minutes(nb: nbformat.NotebookNode) -> int:
    """The computed minutes of the notebook's lead-track sections (course.lead)."""
    return sum(s.minutes for s in sections(nb) if s.lead and not s.optional)


RULES = (f"Minutes are computed, never typed: reading at {WORDS_PER_MINUTE} words a minute (Markdown and the "
         f"generated findings), {CODE_EXERCISE} minutes per exercise that asks for code and {ANSWER_EXERCISE} per "
         f"one answered with a number, the cells' recorded run time (solutions aside), and a talk allowance of "
         f"{TALK_PER_SECTION} minutes per section plus {TALK_PER_PREDICTION} per prediction; rounded up per section.")
