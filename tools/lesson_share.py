"""How much of each notebook a learner can copy, and how much there is to read: one line per notebook.

    python tools/lesson_share.py                 # every course notebook
    python tools/lesson_share.py notebooks/01_dynamic_vs_static.ipynb
    python tools/lesson_share.py --package       # and the size of course_utils: lines, story layer, public names

Columns: visible code lines (code cells whose source is not hidden, blank and comment lines left out), the
share of them that is lesson code as a reader sees it: everything but plumbing, which is the lines of statements
that score or word a finding (``.score(``, ``.not_tested(``, ``cu.findings.``, ``verdict(``), print prose, or only
display something (a bare name, ``cu.display.``, ``Markdown(``, a lesson's ``story``), and lines that only hold
string literals; then the words of prose before the
``## Going further`` heading (markdown cells plus the Markdown that code cells generated, tables and code blocks
left out), and the longest paragraph of prose in words (in the whole notebook, "Going further" included).
``tests/test_recipe.py`` holds every notebook to the course's limits with the same functions.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import subprocess
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
PROSE_CALL = re.compile(r"\bMarkdown\(|\.story\w*\.|\.prose\(")
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


PLUMBING_CALL = re.compile(r"\.score\(|\.not_tested\(|\bcu\.findings\.|\bverdict\(|\bcu\.display\.|"
                           r"\bMarkdown\(|\bdisplay\(|\.story\w*\.|\.prose\(")


PROSE_PRINT_WORDS = 8  # a print whose literal text holds more words than a label is prose, not a fact


def _prints_text(node: ast.stmt) -> bool:
    """A ``print`` of prose (more words than a label): a fact printed under its label ("ranks identical: True") is
    the lesson's fact cell, and a file or a command line printed alone is the recipe."""
    call = node.value if isinstance(node, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"):
        return False
    literal = " ".join(n.value for a in call.args for n in ast.walk(a)
                       if isinstance(n, ast.Constant) and isinstance(n.value, str))
    return len(literal.split()) > PROSE_PRINT_WORDS


def plumbing_rows(text: str) -> set[int]:
    """Rows (1-based) of the statements in ``text`` that only score, word or display: what a reader skips."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    rows: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(node, (ast.For, ast.While, ast.If, ast.With, ast.Try,
                                                                ast.FunctionDef, ast.ClassDef)):
            continue
        segment = ast.get_source_segment(text, node) or ""
        bare = isinstance(node, ast.Expr) and isinstance(node.value, (ast.Name, ast.Attribute, ast.Subscript))
        if bare or PLUMBING_CALL.search(segment) or _prints_text(node):
            rows.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return rows


def code_lines(text: str) -> tuple[int, int]:
    """(lines of code, lines of plumbing) of a cell: blank and comment lines are not code; plumbing is lines that
    hold only string literals and the statements ``plumbing_rows`` finds."""
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
    plumbing = plumbing_rows(text)
    strings = sum(1 for row, k in kinds.items() if row in plumbing or ("string" in k and "code" not in k))
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


# Issue 35's limit is 20,000 lines "when this issue lands (later issues add what their features need, and say how
# much)": the commits that brought each later issue's features into course_utils, counted net (lines added less lines
# removed in course_utils' .py files) from git itself. Later edits to these features (and the rest of those issues'
# commits) are not counted, so the allowance is a lower bound.
LINE_LIMIT = 20_000
LATER_FEATURES = (
    ("36", "63cd9204e0d98c5e04536dc2dde3d2a9a294e1b2", "cu.fresh: headlines replicated across fresh processes"),
    ("37", "4452e1c6252d0bc65f6cafc6c133094303e3c904", "assess --nproc-per-node: DDP ranks through torchrun"),
    ("37", "e530d31587d72d32d2630ed9ab0bcb1a572d7cc8", "assess: dropout judged with the random state matched"),
    ("37", "fe54e325f329b2f6a10369072c485915bf541ea6", "assess price: a saved report priced again"),
    ("38", "c612a611a65934a79e85cec71df21accc833709a", "the device plan as data (course_utils.devices)"),
    ("40", "12ee02fcb2450b708960c129c84238595c3c65b5", "argument checks by declaration (@checked)"),
    ("40", "c24c5762296ff53977a6435b08f7977c6266eeec", "the declarations in their own module (declare.py)"),
)


def net_python_lines(numstat: str) -> int:
    """Lines added less lines removed in the .py files of ``git show --numstat`` output (binary files show '-')."""
    rows = (line.split("\t") for line in numstat.splitlines() if line.count("\t") == 2)
    return sum(int(a) - int(d) for a, d, name in rows if name.endswith(".py") and a != "-")


def later_features() -> dict[str, int] | None:
    """Net course_utils lines of each later issue's feature commits (``LATER_FEATURES``), by issue; None without the
    git history (a copy that is not a clone)."""
    by_issue: dict[str, int] = {}
    for issue, commit, _ in LATER_FEATURES:
        shown = subprocess.run(["git", "show", "--numstat", "--format=", commit, "--", "course_utils"], cwd=ROOT,
                               capture_output=True, text=True)
        if shown.returncode != 0:
            return None
        by_issue[issue] = by_issue.get(issue, 0) + net_python_lines(shown.stdout)
    return by_issue


def package_measures() -> dict[str, int]:
    """The size of course_utils as issue 35 counts it: lines, the story layer (``story*.py`` and ``findings.py`` of
    the lessons), public names of the lesson packages and how many no notebook uses, reaches past the public face
    (``cu.<package>.<module>.<name>``), and the files that name the last notebook (what a new one must touch)."""
    package = ROOT / "course_utils"
    lines = {p: len(p.read_text().splitlines()) for p in package.rglob("*.py")}
    story = sum(n for p, n in lines.items() if p.parent != package and (p.stem.startswith("story")
                                                                          or p.stem == "findings"))
    notebooks = "\n".join(p.read_text() for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")))
    public = unused = 0
    for init in sorted(package.glob("*/__init__.py")):
        names = re.search(r"__all__\s*=\s*\[(.*?)\]", init.read_text(), re.S)
        for name in re.findall(r"[\"']([A-Za-z_]\w*)[\"']", names.group(1) if names else ""):
            public += 1
            unused += not re.search(rf"\bcu\.{init.parent.name}\.{name}\b", notebooks)
    modules = {p.stem for p in package.glob("*/*.py")} - {"__init__"}
    past = sum(1 for m in re.finditer(r"\bcu\.(\w+)\.(\w+)\.(\w+)", notebooks)
               if (package / m.group(1)).is_dir() and m.group(2) in modules
               and not m.group(2).startswith(("story", "findings")))
    last = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))[-1].stem
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    naming = [f for f in tracked if not f.startswith("notebooks/") and (ROOT / f).is_file()
              and last in (ROOT / f).read_text(errors="ignore")]
    return {"course_utils lines": sum(lines.values()), "story layer lines": story,
            "lesson public names": public, "public names no notebook uses": unused,
            "notebook reaches past the public face": past, "files naming the last notebook": len(naming)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: all course notebooks)")
    parser.add_argument("--package", action="store_true", help="also print the size of course_utils (issue 35)")
    args = parser.parse_args()
    if args.package:
        for name, value in package_measures().items():
            print(f"{name:<40} {value:,}")
        later = later_features()
        if later is None:
            print(f"{'lines later issues features added':<40} not counted here (no git history)")
        else:
            each, allowed = ", ".join(f"issue {n}: {v:,}" for n, v in sorted(later.items())), sum(later.values())
            print(f"{'lines later issues features added':<40} {allowed:,} ({each}; net, their introducing commits)")
            print(f"{'course_utils limit (issue 35)':<40} {LINE_LIMIT + allowed:,} ({LINE_LIMIT:,} plus those)")
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
