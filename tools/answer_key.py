"""The answer key, generated, never typed: for every checked exercise of the course its question (the exercise's
Markdown), its method (the solution cell's code and the hint its checker gives), the expected answer (what the
solution cell and the check printed in the executed notebook: build/notebooks/ after `make course`, else the
stored notebooks/) and the wrong answers its checker recognises and names in its messages (read from the source
of course_utils/*/exercises.py, never imported: a message written under a condition, a named slip).

    python tools/answer_key.py --out build/slides   # answer_key.md there (make slides also writes the HTML)

Each deck's speaker notes link to the key at every exercise (``note_links``); the guide links to it too.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_file  # noqa: E402  (tools/course_file.py: the lessons of course.toml)
import minutes  # noqa: E402  (tools/minutes.py: the CHECK pattern and is_solution)

ROOT = Path(__file__).resolve().parents[1]
CHECKERS = sorted((ROOT / "course_utils").glob("*/exercises.py"))
PAGE = "answer_key.html"  # beside the decks in build/slides
NONE_NAMED = "none named: the checker only says the answer differs from this run's"
_QUESTION_START = re.compile(r"^\*\*(?:Exercise\s+)?\d", re.M)  # "**2.", "**Exercise 04.1", "**05.2"
_MIN_WORDS = 3  # a message with fewer words of its own (e.g. "{value} s {slip}") names nothing by itself


@dataclass(frozen=True)
class Checker:
    """What the source of one registered checker says: its hint, the wrong answers it names, how it scores."""

    hint: str
    named: tuple[str, ...]  # messages written under a condition, and the slips it names
    wrong_kind: tuple[str, ...]  # answers of the wrong kind it describes (raised, shown as "could not read")
    scoring: tuple[str, ...]  # the shared comparisons it calls, as written (tolerances included)


@dataclass(frozen=True)
class Entry:
    """One exercise of the key: the four parts, and where they come from."""

    exercise: str
    notebook: str
    question: str
    method: str
    expected: str
    check: str
    checker: Checker | None

    @property
    def wrong_answers(self) -> list[str]:
        """The common wrong answers its checker detects, or the one line that says it names none."""
        if self.checker is None:
            return ["no checker is registered for this id"]
        named = list(self.checker.named) + [f"wrong kind: {m}" for m in self.checker.wrong_kind]
        return named or [NONE_NAMED]


def anchor(exercise: str) -> str:
    """The id of an exercise's entry on the key's page ('01.2' -> 'exercise-01-2')."""
    return "exercise-" + exercise.replace(".", "-")


# --- the checkers' source ---------------------------------------------------------------------------------------
def _message(node: ast.expr) -> str | None:
    """A string literal or f-string as a reader sees it, each substituted value shown as '…'."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    return None


def _names_something(text: str) -> bool:
    return len(re.findall(r"[A-Za-z]{2,}", text.replace("…", " "))) >= _MIN_WORDS


def _walk(nodes: list[ast.stmt], guarded: bool, found: dict[str, list[str]]) -> None:
    """Collect the messages of ``nodes``: a returned string under an if, loop or except names a wrong answer."""
    for node in nodes:
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            conditional = guarded or isinstance(node.value, ast.IfExp)
            for value in values:
                text = _message(value)
                if text and conditional and _names_something(text):
                    found["named"].append(text)
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            text = _message(node.exc.args[0])
            if text and "answer" in text:
                found["wrong_kind"].append(text)
        for child in ast.walk(node):
            if isinstance(child, ast.Dict):  # a table of slips: each key names a wrong answer
                found["named"] += [k.value for k in child.keys if isinstance(k, ast.Constant)
                                   and isinstance(k.value, str) and _names_something(k.value)]
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                    and ast.unparse(child.func.value) == "exercises" and child.func.attr != "register"):
                found["scoring"].append(ast.unparse(child))
        inner = guarded or isinstance(node, (ast.If, ast.For, ast.While))
        for field in ("body", "orelse", "finalbody"):
            _walk(getattr(node, field, []) if not isinstance(node, ast.FunctionDef) else [], inner, found)
        for handler in getattr(node, "handlers", []):
            _walk(handler.body, True, found)


def _registered(function: ast.FunctionDef) -> tuple[str, str] | None:
    """(exercise id, hint) when ``function`` is decorated with ``exercises.register(id, hint=...)``."""
    for deco in function.decorator_list:
        if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "exercises.register" and deco.args:
            hint = next((k.value.value for k in deco.keywords if k.arg == "hint"), "")
            return deco.args[0].value, hint
    return None


def checkers(paths: list[Path] = CHECKERS) -> dict[str, Checker]:
    """Every registered checker of ``paths`` (lesson packages' exercises.py), read from the source."""
    found = {}
    for path in paths:
        for node in ast.parse(path.read_text()).body:
            registered = isinstance(node, ast.FunctionDef) and _registered(node)
            if not registered:
                continue
            parts: dict[str, list[str]] = {"named": [], "wrong_kind": [], "scoring": []}
            _walk(node.body, False, parts)
            found[registered[0]] = Checker(hint=registered[1], **{k: tuple(dict.fromkeys(v)) for k, v in parts.items()})
    return found


# --- the notebooks ----------------------------------------------------------------------------------------------
def printed(cell: nbformat.NotebookNode) -> str:
    """What a code cell printed or displayed as text."""
    texts = ["".join(out.get("text", "")) or "".join(out.get("data", {}).get("text/plain", ""))
             for out in cell.get("outputs", [])]
    return "\n".join(t.rstrip() for t in texts if t.strip())


def question_of(markdown: str) -> str:
    """The exercise's own Markdown: from its bold number on (a section's heading and preamble left out)."""
    start = _QUESTION_START.search(markdown)
    return (markdown[start.start():] if start else markdown).strip()


def entries_of(name: str, nb: nbformat.NotebookNode, known: dict[str, Checker]) -> list[Entry]:
    """The notebook's exercises in order: each check cell with the solution and the Markdown before it."""
    found, markdown, solution, asked = [], "", None, ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            markdown = cell.source
            continue
        if minutes.is_solution(cell):
            solution, asked = cell, markdown
            continue
        for exercise in minutes.CHECK.findall(cell.source):
            found.append(Entry(exercise=exercise, notebook=name, question=question_of(asked or markdown),
                               method=solution.source.strip() if solution else "",
                               expected=printed(solution) if solution else "", check=printed(cell),
                               checker=known.get(exercise)))
            solution, asked = None, ""
    return found


def entries(sources: dict[str, Path]) -> tuple[list[Entry], list[str]]:
    """Every exercise of the notebooks ``sources`` (name -> executed or stored .ipynb, in course order), and
    where the outputs came from."""
    known, found, origins = checkers(), [], set()
    for name, path in sources.items():
        found += entries_of(name, nbformat.read(path, as_version=4), known)
        origins.add("the last `make course` (build/notebooks)" if path.parent.name == "notebooks"
                    and path.parent.parent.name == "build" else "the stored notebooks (ci size)")
    return found, sorted(origins)


# --- the page ---------------------------------------------------------------------------------------------------
def _code(text: str, language: str = "") -> list[str]:
    return [f"```{language}", text or "(prints nothing)", "```"]


def markdown(found: list[Entry], sources: list[str]) -> str:
    """The key as one Markdown page, an anchor per exercise (``anchor``) and per notebook."""
    parts = ["# Answer key", "",
             "Generated by `tools/answer_key.py` (`make slides`), never typed: each exercise's question from its "
             "notebook, the method from its solution cell, the expected answer as the executed notebook printed "
             "it (this run's numbers: another machine's differ, and the check scores against its own run), and "
             "the wrong answers its checker recognises and names (from `course_utils/*/exercises.py`).", "",
             "Outputs from " + " and ".join(sources) + ".", ""]
    notebook = None
    for e in found:
        if e.notebook != notebook:
            notebook = e.notebook
            parts += [f'<h2 id="notebook-{notebook}"><code>{notebook}</code></h2>', ""]
        parts += [f'<h3 id="{anchor(e.exercise)}">Exercise {e.exercise}</h3>', "",
                  "**Question**", "", e.question, "",
                  "**Method** (the solution cell)", "", *_code(e.method, "python"), ""]
        if e.checker and e.checker.hint:
            parts += [f"The checker's hint: {e.checker.hint}", ""]
        parts += ["**Expected answer** (printed by the solution, then the check)", "",
                  *_code("\n".join(t for t in (e.expected, e.check) if t)), "",
                  "**Common wrong answers the checker detects**", "",
                  *[f"- {w}" for w in e.wrong_answers], ""]
        if e.checker and e.checker.scoring:
            parts += ["Scored with " + "; ".join(f"`{s}`" for s in e.checker.scoring) + ".", ""]
    return "\n".join(parts)


def note_links(cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """``cells`` with a speaker-notes cell after each check cell, linking to that exercise in the key."""
    out = []
    for cell in cells:
        out.append(cell)
        if cell.cell_type != "code":
            continue
        for exercise in minutes.CHECK.findall(cell.source):
            link = nbformat.v4.new_markdown_cell(
                f"[Answer key, exercise {exercise}]({PAGE}#{anchor(exercise)}): question, method, expected "
                "answer and the wrong answers the checker names.",
                metadata={"slideshow": {"slide_type": "notes"}})
            link["id"] = f"answer-key-{anchor(exercise)}"
            out.append(link)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for answer_key.md")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    target = args.out / "answer_key.md"
    target.write_text(markdown(*entries({name: course_file.source_for(name) for name in course_file.notebooks()})))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
