"""The generated parts of slides/instructor_guide.md beyond the agendas: minutes per section computed from the
material (tools/minutes.py), the lead track, and the exercise answers taken from the
executed course (never typed).

A section is a Markdown cell that starts with '## '; its metadata ``course.lead`` (true/false) marks the sections
a product or tech lead needs and ``course.optional`` the reading after the session ("Going further"), outside
the session's minutes. Answers and run times come from build/notebooks/ (make course) when asked, else from the
stored notebooks.
"""

from __future__ import annotations

from pathlib import Path

import answer_key  # tools/answer_key.py: the answer key the answers link to
import minutes  # tools/minutes.py: minutes computed from the material
import nbformat

ROOT = Path(__file__).resolve().parents[1]
SECTIONS_BEGIN = "<!-- BEGIN generated sections: python tools/build_slides.py --update-guide -->"
SECTIONS_END = "<!-- END generated sections -->"
ANSWERS_BEGIN = "<!-- BEGIN generated answers: python tools/build_slides.py --update-guide -->"
ANSWERS_END = "<!-- END generated answers -->"


def sections_markdown(notebooks: dict[str, nbformat.NotebookNode], source: str) -> str:
    """Per notebook: its sections with the minutes computed from the material (tools/minutes.py), what each
    computed number is made of, and the lead track."""
    parts = [SECTIONS_BEGIN, "", minutes.RULES, f"Run times: {source}.", ""]
    for name, nb in notebooks.items():
        found = minutes.sections(nb)
        optional = sum(s.minutes for s in found if s.optional)
        extra = f"; Going further (after the session) {optional} minutes" if optional else ""
        parts += [f"#### `{name}`: {minutes.session_minutes(nb)} minutes computed; "
                  f"lead track {minutes.lead_minutes(nb)} minutes{extra}", "",
                  "| section | computed | words | exercises (code) | predictions | run s | lead track |",
                  "|---|---|---|---|---|---|---|"]
        for s in found:
            run = "not recorded" if s.run_seconds is None else f"{s.run_seconds:.0f}"
            exercises = f"{len(s.exercises)} ({len(s.code_exercises)})" if s.exercises else ""
            parts.append(f"| {s.title}{' (optional)' if s.optional else ''} | {s.minutes} | {s.words} | "
                         f"{exercises} | {s.predictions or ''} | {run} | {'yes' if s.lead else ''} |")
        parts.append("")
    return "\n".join(parts + [SECTIONS_END])


def _text(cell: nbformat.NotebookNode) -> str:
    out = []
    for output in cell.get("outputs", []):
        out.append("".join(output.get("text", "")) or "".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(t.rstrip() for t in out if t.strip())


def answers(nb: nbformat.NotebookNode) -> list[tuple[str, str, str]]:
    """(exercise id, the solution's output, the check's line) for each checked exercise, in notebook order."""
    found, solution = [], ""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "solution" in cell.metadata.get("tags", []):
            solution = _text(cell)
        for exercise in minutes.CHECK.findall(cell.source):
            found.append((exercise, solution, _text(cell)))
            solution = ""
    return found


def answers_markdown(notebooks: dict[str, nbformat.NotebookNode], source: str) -> str:
    """The answers block: each exercise's solution output as this run printed it."""
    parts = [ANSWERS_BEGIN, "", f"Generated from {source}: the solutions' own output, as measured in that run. "
             "Each exercise's question, method and the wrong answers its checker names: the answer key "
             "(`make slides` writes `build/slides/answer_key.html` beside this guide's HTML; each id below links "
             "to it).",
             ""]
    for name, nb in notebooks.items():
        parts += [f"#### `{name}`", ""]
        for exercise, output, check in answers(nb):
            shown = "\n".join(output.splitlines()[-8:]) or "(the solution prints nothing; see its code in the notes)"
            key = f"{answer_key.PAGE}#{answer_key.anchor(exercise)}"
            parts += [f"- [**{exercise}**]({key}) ({check or 'not checked'})", "", "  ```text",
                      *[f"  {line}" for line in shown.splitlines()], "  ```", ""]
    return "\n".join(parts + [ANSWERS_END])


def executed_notebooks(names: list[str], from_build: bool = False) -> tuple[dict[str, nbformat.NotebookNode], str]:
    """The notebooks the answers are read from: the stored ones (what the repository ships, so the committed
    guide can be checked against them), or with ``from_build`` those of the last ``make course`` (build/)."""
    if from_build:
        built = [ROOT / "build" / "notebooks" / f"{n}.ipynb" for n in names]
        missing = [p.name for p in built if not p.exists()]
        if missing:
            raise FileNotFoundError(f"from_build: run `make course` first; build/notebooks lacks {missing}")
        return {p.stem: nbformat.read(p, as_version=4) for p in built}, "the last `make course` (build/notebooks)"
    stored = [ROOT / "notebooks" / f"{n}.ipynb" for n in names]
    return {p.stem: nbformat.read(p, as_version=4) for p in stored}, "the notebooks' stored outputs (ci size)"


def replace_block(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with the block between ``begin`` and ``end`` replaced (appended when the markers are missing)."""
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        return text.rstrip() + "\n\n" + block + "\n"
    return text[:start] + block + text[stop + len(end):]
