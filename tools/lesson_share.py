"""How much of each notebook a learner can copy, and how much there is to read: one line per notebook.

    python tools/lesson_share.py                 # every course notebook
    python tools/lesson_share.py notebooks/01_dynamic_vs_static.ipynb

Columns: visible code lines (code cells whose source is not hidden, blank and comment lines left out), the
share of them that is lesson code (everything but lines that only hold string literals and lines of cells that
build prose: ``Markdown(`` or a call into a lesson's ``story*`` module), the words of prose before the
``## Going further`` heading (markdown cells plus the Markdown that code cells generated, tables and code blocks
left out), and the longest paragraph of prose in words (in the whole notebook, "Going further" included).
``tests/test_recipe.py`` holds every notebook to the course's limits with the same functions.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIN_LESSON_SHARE = 0.60
MAX_WORDS = 3000
MAX_PARAGRAPH_WORDS = 120
MAX_HIDDEN_LINES = 10
GOING_FURTHER = re.compile(r"^#+\s*Going further", re.M)
PROSE_CALL = re.compile(r"\bMarkdown\(|\.story\w*\.")
# an f-string is one STRING token up to Python 3.11, three kinds of token from 3.12
_STRING_TOKENS = {tokenize.STRING, *(getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                                     if hasattr(tokenize, n))}


@dataclass(frozen=True)
class Share:
    """The reading and copying measures of one notebook."""

    notebook: str
    visible_lines: int
    lesson_lines: int
    words: int
    longest_paragraph: int

    @property
    def lesson_share(self) -> float:
        return self.lesson_lines / self.visible_lines if self.visible_lines else 1.0

    def line(self) -> str:
        return (f"{self.notebook:<28} visible code lines {self.visible_lines:4d}, lesson code {self.lesson_share:4.0%}"
                f" | prose before 'Going further' {self.words:5d} words; longest paragraph {self.longest_paragraph}")


def source(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def hidden(cell: dict) -> bool:
    return bool(cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"))


def builds_prose(cell: dict) -> bool:
    """A code cell that turns results into prose: it calls ``Markdown(`` or a lesson's ``story``."""
    return cell.get("cell_type") == "code" and bool(PROSE_CALL.search(source(cell)))


def code_lines(text: str) -> tuple[int, int]:
    """(lines of code, lines that hold only string literals) of a cell: blank and comment lines are not code."""
    kinds: dict[int, set[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
                continue
            kind = "string" if tok.type in _STRING_TOKENS else "code"
            if kind == "code" and tok.type == tokenize.OP and tok.string in "()[]{},+":
                kind = "punctuation"
            for row in range(tok.start[0], tok.end[0] + 1):
                kinds.setdefault(row, set()).add(kind)
    except (tokenize.TokenError, SyntaxError, IndentationError):  # a magic or shell line: count lines as code
        lines = [line for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
        return len(lines), 0
    strings = sum(1 for k in kinds.values() if "string" in k and "code" not in k)
    return len(kinds), strings


def prose_paragraphs(nb: dict, main_path: bool = True) -> list[str]:
    """Paragraphs of prose (before the 'Going further' heading when ``main_path``): markdown cells and generated
    Markdown outputs, with tables, code blocks, headings and images left out."""
    texts = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            if main_path and GOING_FURTHER.search(source(cell)):
                break
            texts.append(source(cell))
        elif cell["cell_type"] == "code":
            for output in cell.get("outputs", []):
                markdown = output.get("data", {}).get("text/markdown")
                if markdown:
                    texts.append("".join(markdown) if isinstance(markdown, list) else markdown)
    paragraphs = []
    for text in texts:
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for para in re.split(r"\n\s*\n", text):
            lines = [line for line in para.splitlines()
                     if line.strip() and not line.lstrip().startswith(("|", "#", "![", "[!["))]
            if lines:
                paragraphs.append(" ".join(lines))
    return paragraphs


def words(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9][\w'’.,:/%-]*", text))


def measure(path: Path) -> Share:
    nb = json.loads(path.read_text())
    visible = lesson = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or hidden(cell) or "google.colab" in source(cell):
            continue
        total, strings = code_lines(source(cell))
        visible += total
        lesson += 0 if builds_prose(cell) else total - strings
    return Share(path.stem, visible, lesson, sum(words(p) for p in prose_paragraphs(nb)),
                 max((words(p) for p in prose_paragraphs(nb, main_path=False)), default=0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: all course notebooks)")
    args = parser.parse_args()
    paths = [p.with_suffix(".ipynb") for p in args.notebooks] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    failed = False
    for path in paths:
        share = measure(path)
        ok = (share.lesson_share >= MIN_LESSON_SHARE and share.words <= MAX_WORDS
              and share.longest_paragraph <= MAX_PARAGRAPH_WORDS)
        failed |= not ok
        print(share.line() + ("" if ok else "   <- over a limit"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
