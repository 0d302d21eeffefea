"""Build one reveal.js deck per course notebook, working offline (make slides).

Source of each deck: build/notebooks/NN_name.ipynb when `make course` has executed it, else
notebooks/NN_name.ipynb (which stores ci-size outputs). The decks, an index page and the instructor
guide as HTML are written to build/slides/; reveal.js (and MathJax, only where a slide has math) are
copied next to them from the exact versions of slides/package.json, installed with `npm ci` into
build/vendor/. No page loads anything from the network.

Slides come from the cells' slide metadata (slide / subslide / fragment / skip / notes). The deck
configuration (theme, title slide, order, agendas) is slides/deck.toml. Exercise solutions (code cells
hidden in the notebook) become speaker notes with a link to their entry of the answer key (tools/answer_key.py,
written beside the decks), and the title slide's speaker notes are the notebook's section of
slides/instructor_guide.md.

    python tools/build_slides.py                 # all decks into build/slides
    python tools/build_slides.py --update-guide  # rewrite the agendas in slides/instructor_guide.md
    python tools/build_slides.py --readme        # rewrite the course map in README.md
"""

from __future__ import annotations

import argparse
import ast
import copy
import html
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agendas  # noqa: E402  (tools/agendas.py: the agendas of the guide)
import answer_key  # noqa: E402  (tools/answer_key.py: the answer key, linked from the notes)
import course_file  # noqa: E402  (tools/course_file.py: the lessons of course.toml)
import guide  # noqa: E402  (tools/guide.py: the guide's generated sections and answers)
import minutes  # noqa: E402  (tools/minutes.py: workshop minutes computed from the material)
import talk  # noqa: E402  (tools/talk.py: what a slide keeps of a cell)

ROOT = Path(__file__).resolve().parents[1]
SLIDES = ROOT / "slides"
CONFIG = SLIDES / "deck.toml"
GUIDE = SLIDES / "instructor_guide.md"
HELPERS = SLIDES / "helpers.md"
TEMPLATES = SLIDES / "templates"
TEMPLATE = "course_reveal"
VENDOR = ROOT / "build" / "vendor"
OUT = ROOT / "build" / "slides"
STATIC = "_static"  # folder next to the decks, referenced by relative paths only
MANIFEST = "manifest.json"

AGENDA_BEGIN, AGENDA_END = agendas.AGENDA_BEGIN, agendas.AGENDA_END

_REMOTE_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\((https?://[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_REMOTE_HTML_IMAGE = re.compile(r"<img\b[^>]*\bsrc=[\"'](https?://[^\"']+)[\"'][^>]*>", re.IGNORECASE)
_BADGE = re.compile(r"\[!\[[^\]]*\]\(https://colab\.research\.google\.com/assets/colab-badge\.svg\)\]\(([^)\s]+)\)")
_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$[^\s$][^$\n]*\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)
_REMOTE_REF = re.compile(
    r"<(?:script|img|iframe|source|video|audio|embed)\b[^>]*\bsrc=[\"'](?:https?:)?//[^\"']*[\"']"
    r"|<link\b[^>]*\bhref=[\"'](?:https?:)?//[^\"']*[\"']"
    r"|@import\s+(?:url\()?[\"']?(?:https?:)?//"
    r"|\bimport\s[^;]*from\s+[\"'](?:https?:)?//",
    re.IGNORECASE,
)


# --- configuration and notebooks -------------------------------------------------------------------
def load_config(path: Path = CONFIG) -> dict:
    """The deck configuration (slides/deck.toml) as a dict."""
    config = tomllib.loads(path.read_text())
    solutions = config.get("deck", {}).get("solutions", "notes")
    if solutions not in ("notes", "show"):
        raise ValueError(f"[deck] solutions must be 'notes' or 'show'; got {solutions!r}")
    return config


def course_notebooks() -> list[Path]:
    """The course notebooks that exist: notebooks/NN_name.ipynb, sorted."""
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def planned(config: dict) -> dict[str, dict]:
    """name -> the lesson of the course file (question, planned minutes, accelerators); a ``notebook`` list in
    ``config`` (a test's synthetic configuration) takes its place."""
    entries = config.get("notebook") or [{**lesson, "name": lesson["notebook"]} for lesson in course_file.lessons()]
    return {entry["name"]: entry for entry in entries}


def deck_order(config: dict, names: list[str]) -> list[str]:
    """``names`` in the configured order; notebooks missing from the configuration follow, sorted."""
    listed = [name for name in planned(config) if name in names]
    return listed + sorted(name for name in names if name not in listed)


def slide_type(cell: dict) -> str:
    """The cell's slideshow slide_type ('-' when it has none)."""
    return (cell.get("metadata", {}).get("slideshow") or {}).get("slide_type", "-") or "-"


is_solution = minutes.is_solution  # an exercise's solution cell: speaker notes on the slides


def title_of(nb: dict, fallback: str) -> str:
    """The first Markdown heading of the notebook."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            match = re.search(r"^#{1,6}\s+(.+?)\s*$", "".join(cell.get("source", "")), re.MULTILINE)
            if match:
                return match.group(1).strip()
    return fallback


def accelerators_of(nb: dict) -> str | None:
    """The text of the title cell's "Accelerators" paragraph (first sentence), or None."""
    for cell in nb.get("cells", [])[:3]:
        text = "".join(cell.get("source", "")) if cell.get("cell_type") == "markdown" else ""
        match = re.search(r"\*\*Accelerators:?\*\*:?\s*(.+?)(?:\n\s*\n|\*\*[A-Z]|\Z)", text, re.DOTALL)
        if match:
            return " ".join(match.group(1).split())
    return None


def expected_slides(nb: dict, solutions: str = "notes", title_slide: bool = True) -> int:
    """How many slides reveal.js should count for ``nb``: one per slide/subslide start, plus the title."""
    types = ["notes" if solutions == "notes" and is_solution(c) else slide_type(c) for c in nb["cells"]]
    visible = [i for i, t in enumerate(types) if t not in ("skip", "notes")]
    count = 0 if not visible else 1 + sum(t in ("slide", "subslide") for t in types[visible[0] + 1 :])
    return count + int(title_slide)


# --- preparing a notebook for the deck -----------------------------------------------------------
def _offline_markdown(text: str) -> str:
    """Markdown with the Colab badge pointing at the local badge and other remote images made links."""
    badge = f'<img class="course-badge" src="{STATIC}/assets/open-in-colab.svg" alt="Open in Colab">'
    text = _BADGE.sub(lambda m: f'<a href="{m.group(1)}">{badge}</a>', text)
    text = _REMOTE_MD_IMAGE.sub(lambda m: f"[{m.group(1) or 'image'}]({m.group(2)})", text)
    return _REMOTE_HTML_IMAGE.sub(lambda m: f'<a href="{m.group(1)}">{m.group(1)}</a>', text)


def has_math(nb: dict) -> bool:
    """True when a visible Markdown cell or a LaTeX output holds math for MathJax."""
    for cell in nb["cells"]:
        if slide_type(cell) == "skip":
            continue
        if cell["cell_type"] == "markdown" and _MATH.search("".join(cell["source"])):
            return True
        if any("text/latex" in out.get("data", {}) and "text/html" not in out.get("data", {})
               for out in cell.get("outputs", [])):  # HTML wins over LaTeX in the deck: only then is it shown
            return True
    return False


SLIDE_CODE_LINES = 15  # a longer code cell shows an excerpt on its slide; the notebook keeps the whole cell
SLIDE_BUDGET_PX = 640  # content height a 1280x720 slide holds (the template's type sizes; measured in Chromium)
# Per-unit heights at the deck's type sizes (talk.TEXT_PX text, talk.CODE_PX code): a code or output line is
# CODE_PX x 1.25 high; a character of prose takes its share of a ~90-character line of TEXT_PX x 1.3, with the
# slack the 21 px calibration in Chromium needed (x 1.65) for wrapping and paragraph margins.
LINE_PX = round(talk.CODE_PX * 1.25) + 1
CHAR_PX = round(1.65 * talk.TEXT_PX * 1.3 / (1180 / (talk.TEXT_PX * 0.5)), 2)
ROW_PX = round(talk.CODE_PX * 1.55)  # a table row: a line plus its cell padding
CODE_CHARS = int(1180 / (talk.CODE_PX * 0.62))  # monospace characters a code line holds before it wraps
_OUTPUT_LINES = 14  # a longer text output shows its first lines on the slide


def generates_prose(cell: dict) -> bool:
    """True for a code cell whose output is Markdown: the rendered text belongs on the slide, not its f-string."""
    return cell.get("cell_type") == "code" and any(
        "text/markdown" in out.get("data", {}) for out in cell.get("outputs", []))


def builds_summary(cell: dict) -> bool:
    """True for the code cell that assembles a notebook's summary table: plumbing; the table is what the room reads."""
    return cell.get("cell_type") == "code" and "summary_table(" in cell.get("source", "")


def asserts(cell: dict) -> bool:
    """True for a code cell with an ``assert`` statement: a check for the notebook, not for the projector."""
    if cell.get("cell_type") != "code":
        return False
    try:
        tree = ast.parse(cell.get("source", ""))
    except SyntaxError:  # IPython magics
        return False
    return any(isinstance(node, ast.Assert) for node in ast.walk(tree))


def slide_excerpt(source: str, limit: int = SLIDE_CODE_LINES, keep: frozenset[int] = frozenset()) -> str:
    """The first lines of a long code cell and pointers to the rest; the lines in ``keep`` (a taught call's
    statement, see talk.taught_lines) are shown whatever the limit. Short cells are left as they are."""
    lines = source.rstrip().splitlines()
    if len(lines) <= limit:
        return source
    first = max(1, limit - 1 - len(keep - set(range(limit - 1))))
    shown = set(range(first)) | set(keep)
    out, hidden = [], 0
    for i, line in enumerate(lines):
        if i in shown:
            if hidden:
                indent = line[:len(line) - len(line.lstrip())]
                out.append(f"{indent}# ... {hidden} line{'s' if hidden > 1 else ''}")
                hidden = 0
            out.append(line)
        else:
            hidden += 1
    if hidden:
        out.append(f"# ... {hidden} more lines in the notebook")
    return "\n".join(out)


def _short_output(output: dict, taught: tuple[str, ...] = ()) -> dict:
    """A stream or plain-text output cut to its first lines (the notebook keeps all of it); a long code listing
    (a worker file the cell prints) to the lines around its first taught call, or its first lines."""
    text = "".join(output.get("text", ""))
    lines = text.rstrip().splitlines()
    if output.get("output_type") == "stream" and len(lines) > _OUTPUT_LINES:
        kept = lines[: _OUTPUT_LINES - 1] + [f"... {len(lines) - _OUTPUT_LINES + 1} more lines in the notebook"]
        output["text"] = "\n".join(kept) + "\n"
    data = output.get("data", {})
    plain = "".join(data.get("text/plain", "")).rstrip().splitlines()
    if "<pre" in "".join(data.get("text/html", "")) and len(plain) > _OUTPUT_LINES:  # a long code listing
        output["data"] = {"text/plain": _listing_excerpt(plain, taught)}
    markdown = "".join(data.get("text/markdown", ""))
    fenced = re.fullmatch(r"(.*?```\w*\n)(.*?)(\n```\s*)", markdown, re.S)  # a file shown as a code block
    if fenced and len(fenced.group(2).splitlines()) > _OUTPUT_LINES:
        output["data"] = {"text/markdown": fenced.group(1) + _listing_excerpt(fenced.group(2).splitlines(), taught)
                          + fenced.group(3)}
    return output


def _listing_excerpt(lines: list[str], taught: tuple[str, ...]) -> str:
    """``_OUTPUT_LINES`` lines of a code listing: the window that shows the most taught calls (else its first lines)."""
    def calls_shown(begin: int) -> int:
        return sum(any(call in line for line in lines[begin:begin + _OUTPUT_LINES]) for call in taught)
    starts = [max(0, min(i - 3, len(lines) - _OUTPUT_LINES)) for i, line in enumerate(lines)
              if any(call in line for call in taught)] or [0]
    start = max(starts, key=lambda begin: (calls_shown(begin), -begin))  # the window showing most taught calls
    rest = len(lines) - start - _OUTPUT_LINES
    above = [f"# ... {start} lines above, in the notebook"] if start else []
    below = [f"# ... {rest} more lines in the notebook"] if rest > 0 else []
    return "\n".join(above + lines[start:start + _OUTPUT_LINES] + below)


def estimated_height(cell: dict) -> float:
    """Pixels a cell takes on a slide, estimated from its text (calibrated on the template in Chromium)."""
    if cell.get("cell_type") == "markdown":
        text = "".join(cell.get("source", ""))
        images = len(re.findall(r"<img(?![^>]*course-badge)", text))
        images += len(re.findall(r"!\[[^\]]*\]\((?!https?:)", text))
        shown = re.sub(r"\]\([^)]*\)", "]", re.sub(r"<[^>]+>", "", text))  # tags and link targets take no room
        return 50 + CHAR_PX * len(shown) + 18 * text.count("\n- ") + 440 * images
    height = 0.0 if cell.get("metadata", {}).get("transient", {}).get("remove_source") else \
        25 + LINE_PX * _wrapped("".join(cell.get("source", "")))
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "image/png" in data or "image/svg+xml" in data:
            height += 450
        elif "text/html" in data:
            html = "".join(data["text/html"])
            shown = re.sub(r"<[^>]+>", "", html)
            rows = 40 + max(ROW_PX * html.count("<tr"), 1.3 * LINE_PX * len(shown) / CODE_CHARS)  # cells wrap
            height += max(rows, 30 + LINE_PX * _wrapped(shown))  # tables by rows, listings (<pre>) by wrapped lines
        elif "text/markdown" in data:
            markdown = "".join(data["text/markdown"])
            height += 50 + (LINE_PX * _wrapped(markdown) if "```" in markdown else CHAR_PX * len(markdown))
        else:
            text = "".join(out.get("text", "")) or "".join(data.get("text/plain", ""))
            height += 20 + LINE_PX * min(_wrapped(text), _OUTPUT_LINES + 2)
    return height + 10


def _wrapped(text: str) -> int:
    """Lines ``text`` takes on a slide: a line longer than the slide is wide wraps onto more."""
    return sum(max(1, -(-len(line) // CODE_CHARS)) for line in text.splitlines())


def _fitting_excerpt(cell: nbformat.NotebookNode, taught: tuple[str, ...] = ()) -> str:
    """The cell's code, cut until code and output fit one slide (outputs matter more on a slide than code); the
    statements holding a taught call stay whole."""
    source = talk.without_markers(cell.source)
    keep = frozenset(talk.taught_lines(source, taught))
    for limit in (SLIDE_CODE_LINES, 10, 6, 3):
        cell.source = slide_excerpt(source, limit, keep)
        if estimated_height(cell) <= SLIDE_BUDGET_PX:
            break
    return cell.source


def _split_markdown(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """A Markdown cell too tall for one slide, as several cells of whole paragraphs (the first keeps its type)."""
    paragraphs = [p for p in cell.source.split("\n\n") if p.strip()]
    pieces: list[list[str]] = [[]]
    for paragraph in paragraphs:
        if pieces[-1] and 50 + CHAR_PX * len("\n\n".join(pieces[-1] + [paragraph])) > SLIDE_BUDGET_PX:
            pieces.append([])
        pieces[-1].append(paragraph)
    cells = []
    for i, piece in enumerate(pieces):
        part = copy.deepcopy(cell)
        part.source = "\n\n".join(piece)
        if i:
            part.metadata["slideshow"] = {"slide_type": "subslide"}
            if "id" in part:
                part["id"] = f"{cell['id']}-{i}"[:64]  # cell ids must stay unique
        cells.append(part)
    return cells


def _split_outputs(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """A code cell whose outputs do not fit one slide, as the code with its first outputs, then the rest on
    subslides of their own (outputs only)."""
    groups: list[list[dict]] = [[]]
    for output in cell.outputs:
        trial = copy.deepcopy(cell)
        trial.outputs = groups[-1] + [output]
        if len(groups) > 1:
            trial.metadata["transient"] = {"remove_source": True}
        if groups[-1] and estimated_height(trial) > SLIDE_BUDGET_PX:
            groups.append([])
        groups[-1].append(output)
    pieces = []
    for i, group in enumerate(groups):
        part = copy.deepcopy(cell)
        part.outputs = group
        if i:
            part.metadata["slideshow"] = {"slide_type": "subslide"}
            part.metadata["transient"] = {"remove_source": True}
            if "id" in part:
                part["id"] = f"{cell['id']}-out{i}"[:64]
        pieces.append(part)
    return pieces


_TABLE_ROWS = 7  # a longer HTML table is shown in parts of this many rows, each with the header row


def _split_table(output: dict) -> list[dict]:
    """An HTML table output longer than ``_TABLE_ROWS`` data rows, as several outputs of consecutive rows (the
    caption and the header row repeated, "continued" on the later parts); other outputs are returned as they are."""
    html = "".join(output.get("data", {}).get("text/html", ""))
    match = re.fullmatch(r"(?s)(<table>(?:<caption[^>]*>.*?</caption>)?)(<tr>.*?</tr>)((?:<tr>.*?</tr>)+)</table>(.*)",
                         html.strip())
    rows = re.findall(r"(?s)<tr>.*?</tr>", match.group(3)) if match else []
    if len(rows) <= _TABLE_ROWS:
        return [output]
    head, header, after = match.group(1), match.group(2), match.group(4)
    parts = []
    for start in range(0, len(rows), _TABLE_ROWS):
        caption = head if not start else head.replace("</caption>", " (continued)</caption>")
        last = start + _TABLE_ROWS >= len(rows)
        part = copy.deepcopy(output)
        part["data"] = {"text/html": caption + header + "".join(rows[start:start + _TABLE_ROWS]) + "</table>"
                        + (after if last else "")}
        parts.append(part)
    return parts


def paginate(cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Open a new subslide wherever the cells so far would not fit the slide: a projector cannot scroll."""
    paged: list[nbformat.NotebookNode] = []
    used = 0.0
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs = [part for output in cell.outputs for part in _split_table(output)]
        too_tall = estimated_height(cell) > SLIDE_BUDGET_PX and slide_type(cell) not in ("skip", "notes")
        if too_tall and cell.cell_type == "markdown":
            pieces = _split_markdown(cell)
        elif too_tall and len(cell.get("outputs", [])) > 1:
            pieces = _split_outputs(cell)
        else:
            pieces = [cell]
        for piece in pieces:
            kind = slide_type(piece)
            if kind in ("skip", "notes"):
                paged.append(piece)
                continue
            height = estimated_height(piece)
            if kind in ("slide", "subslide"):
                used = height
            elif used and used + height > SLIDE_BUDGET_PX:
                piece.metadata["slideshow"] = {"slide_type": "subslide"}
                used = height
            else:
                used += height
            paged.append(piece)
    return paged


def plumbing(cell: dict, taught: tuple[str, ...] = ()) -> bool:
    """True for a code cell a talk skips: it shows nothing (no output) and teaches no call of the lesson, such as
    the definitions and set-up between two measurements. The notebook keeps it; the slide keeps the result."""
    return (cell.get("cell_type") == "code" and not cell.get("outputs") and not is_solution(cell)
            and not any(call in cell.get("source", "") for call in taught))


def is_finding(cell: dict) -> bool:
    """True for a finding: a hidden code cell (not a solution) whose output is the generated sentence that
    explains a verdict. On a slide it would repeat what the presenter says: it becomes the speaker notes."""
    return (cell.get("cell_type") == "code" and not is_solution(cell) and generates_prose(cell)
            and bool(cell.get("metadata", {}).get("jupyter", {}).get("source_hidden")))


def taught_calls() -> tuple[str, ...]:
    """Every call the course teaches (course.toml's ``taught``, all lessons): a slide keeps them whole."""
    return tuple(dict.fromkeys(call for lesson in course_file.lessons() for call in lesson["taught"]))


def prepare(nb: nbformat.NotebookNode, solutions: str = "notes") -> nbformat.NotebookNode:
    """A copy of ``nb`` ready for the deck: asserts and plumbing skipped, "Going further" (its heading aside),
    solutions (if asked) and findings as speaker notes, no remote images,
    the code of prose-generating and summary-building cells hidden (their rendered output stays), outputs made
    fit for a talk (tools/talk.py), long code cut to an excerpt that keeps the taught calls' statements whole,
    and the cells paged so that no slide is taller than the screen."""
    nb = copy.deepcopy(nb)
    taught = taught_calls()
    carried = None  # a slide break that sat on a skipped cell moves to the next cell shown
    further = False  # inside "Going further": reading after the session, only its heading is a slide
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            further = bool(cell.metadata.get("course", {}).get("optional"))
        elif further and not is_solution(cell):  # the presenter can glance at it in the speaker view
            cell.metadata.setdefault("slideshow", {})["slide_type"] = "notes"
        elif (asserts(cell) and not is_solution(cell)) or plumbing(cell, taught):
            kind = slide_type(cell)
            carried = kind if kind in ("slide", "subslide") else carried
            cell.metadata.setdefault("slideshow", {})["slide_type"] = "skip"
            continue
        if carried and slide_type(cell) not in ("skip", "notes"):
            if slide_type(cell) not in ("slide", "subslide"):
                cell.metadata.setdefault("slideshow", {})["slide_type"] = carried
            carried = None
        if cell.cell_type == "markdown":
            cell.source = talk.without_local_paths(_offline_markdown(cell.source))
            continue
        cell.outputs = talk.for_talk(cell.get("outputs", []))
        if solutions == "notes" and is_solution(cell):
            cell.metadata.setdefault("slideshow", {})["slide_type"] = "notes"
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = False  # the instructor sees the code
        elif is_finding(cell):
            cell.metadata.setdefault("slideshow", {})["slide_type"] = "notes"
            cell.metadata["transient"] = {"remove_source": True}
        elif generates_prose(cell) or builds_summary(cell):
            cell.metadata["transient"] = {"remove_source": True}
            cell.outputs = [_short_output(o, taught) for o in cell.outputs]  # a file shown whole: its taught part
        else:
            cell.outputs = [_short_output(o, taught) for o in cell.outputs]
            cell.source = _fitting_excerpt(cell, taught)
    nb.cells = paginate(answer_key.note_links(nb.cells))
    return nb


# --- instructor guide ---------------------------------------------------------------------------
def guide_section(name: str, guide: Path = GUIDE) -> str:
    """The Markdown of the guide's level-2 section whose heading names ``name`` in backticks."""
    if not guide.exists():
        return ""
    lines = guide.read_text().splitlines()
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("## "):
            inside = f"`{name}`" in line
            continue
        if inside:
            out.append(line)
    return "\n".join(out).strip()


def agenda_markdown(config: dict) -> str:
    """The agendas (tools/agendas.py) of the stored notebooks, minutes computed from each one's material."""
    notebooks = {p.stem: nbformat.read(p, as_version=4) for p in course_notebooks()}
    titles = {name: title_of(nb, name) for name, nb in notebooks.items()}
    return agendas.agenda_markdown(config, notebooks, titles, planned(config))


def guide_with_agenda(config: dict, text: str) -> str:
    """``text`` (the guide) with its generated agenda block replaced by the current one."""
    begin, end = text.find(AGENDA_BEGIN), text.find(AGENDA_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{GUIDE.name} lacks the agenda markers {AGENDA_BEGIN!r} ... {AGENDA_END!r}")
    return text[:begin] + agenda_markdown(config) + text[end + len(AGENDA_END) :]


def updated_guide(config: dict, text: str, from_build: bool = False) -> str:
    """The guide with every generated block rewritten: agendas, minutes per section, exercise answers (from the
    stored notebooks, or with ``from_build`` from the last ``make course``)."""
    names = deck_order(config, [p.stem for p in course_notebooks()])
    text = guide_with_agenda(config, text)
    executed, source = guide.executed_notebooks(names, from_build)
    sections = guide.sections_markdown(executed, source)
    text = guide.replace_block(text, guide.SECTIONS_BEGIN, guide.SECTIONS_END, sections)
    return guide.replace_block(text, guide.ANSWERS_BEGIN, guide.ANSWERS_END, guide.answers_markdown(executed, source))


# --- README sections ------------------------------------------------------------------------------
def course_map(config: dict) -> str:
    """The README's course map: notebook, question, minutes, Colab badge, accelerators."""
    from course_utils import notebook

    rows = ["| # | notebook | the question | minutes (laptop run budget / workshop, computed) | Colab | accelerators |",
            "|---|---|---|---|---|---|"]
    existing = {p.stem: p for p in course_notebooks()}
    for name in deck_order(config, sorted(set(planned(config)) | set(existing))):
        entry = planned(config).get(name, {})
        if name in existing:
            nb = nbformat.read(existing[name], as_version=4)
            budget = nb.metadata.get("course", {}).get("minutes", {}).get("laptop", "?")
            when = f"{budget} / {minutes.session_minutes(nb)}"
            accel = entry.get("accelerators") or accelerators_of(nb) or "CPU"
            link = f"[`{name}.ipynb`](notebooks/{name}.ipynb)"
            badge = notebook.badge(f"{name}.ipynb")
        else:
            when = f"- / {entry.get('minutes', '?')} (planned)"
            accel = entry.get("accelerators", "")
            link = f"`{name}.ipynb` (in preparation)"
            badge = "-"
        rows.append(f"| {name[:2]} | {link} | {entry.get('question', '')} | {when} | {badge} | {accel} |")
    rows += ["", "Which sections use which accelerator, in each notebook's own words (its title cell):", "",
             "| notebook | CPU, GPU and TPU runtimes |", "|---|---|"]
    for name in deck_order(config, sorted(existing)):
        text = accelerators_of(nbformat.read(existing[name], as_version=4)) or "CPU only"
        rows.append(f"| `{name}` | {text} |")
    return "\n".join(rows)


# --- building -------------------------------------------------------------------------------------
def _locked_versions() -> dict[str, str]:
    lock = json.loads((SLIDES / "package-lock.json").read_text())
    return {key.split("node_modules/")[-1]: value["version"] for key, value in lock["packages"].items() if key}


def ensure_vendor(vendor: Path = VENDOR) -> Path:
    """build/vendor/node_modules with the exact reveal.js and MathJax of slides/package-lock.json."""
    modules = vendor / "node_modules"
    wanted = _locked_versions()

    def installed(name: str) -> str | None:
        package = modules / name / "package.json"
        return json.loads(package.read_text())["version"] if package.exists() else None

    if all(installed(name) == version for name, version in wanted.items()):
        return modules
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is needed once to install reveal.js into build/vendor (Debian: apt-get install npm)")
    vendor.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(SLIDES / name, vendor / name)
    cmd = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]
    result = subprocess.run(cmd, cwd=vendor, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"npm ci in {vendor} failed:\n{result.stdout}\n{result.stderr}")
    missing = {name: installed(name) for name, version in wanted.items() if installed(name) != version}
    if missing:
        raise RuntimeError(f"npm ci did not install the locked versions: {missing} (wanted {wanted})")
    return modules


def install_static(out: Path, theme: str, math: bool, modules: Path) -> None:
    """Copy reveal.js (dist), the badge and, if ``math``, MathJax into out/_static."""
    static = out / STATIC
    reveal = static / "reveal.js"
    if reveal.exists():
        shutil.rmtree(reveal)
    src = modules / "reveal.js"
    theme_css = src / "dist" / "theme" / f"{theme}.css"
    if not theme_css.exists():
        raise ValueError(f"[reveal] theme {theme!r} is not a reveal.js theme ({theme_css} is missing)")
    if "@import" in theme_css.read_text():
        raise ValueError(f"[reveal] theme {theme!r} imports web fonts; choose one that works offline")
    (reveal / "dist" / "theme").mkdir(parents=True)
    (reveal / "dist" / "plugin").mkdir(parents=True)
    for name in ("reveal.js", "reveal.css", "reset.css"):
        shutil.copyfile(src / "dist" / name, reveal / "dist" / name)
    shutil.copyfile(theme_css, reveal / "dist" / "theme" / theme_css.name)
    shutil.copyfile(src / "dist" / "plugin" / "notes.js", reveal / "dist" / "plugin" / "notes.js")
    shutil.copyfile(src / "LICENSE", reveal / "LICENSE")
    shutil.copytree(SLIDES / "assets", static / "assets", dirs_exist_ok=True)
    mathjax = static / "mathjax"
    if mathjax.exists():
        shutil.rmtree(mathjax)
    if math:
        es5 = modules / "mathjax" / "es5"
        (mathjax / "output" / "chtml").mkdir(parents=True)
        shutil.copyfile(es5 / "tex-chtml-full.js", mathjax / "tex-chtml-full.js")
        shutil.copytree(es5 / "output" / "chtml" / "fonts", mathjax / "output" / "chtml" / "fonts")
        shutil.copyfile(modules / "mathjax" / "LICENSE", mathjax / "LICENSE")


def remote_references(text: str) -> list[str]:
    """Every tag or import in ``text`` that would load something from the network."""
    return [m.group(0)[:160] for m in _REMOTE_REF.finditer(text)]


def _exporter(config: dict):
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    reveal = config.get("reveal", {})
    c = Config()
    c.SlidesExporter.reveal_url_prefix = f"{STATIC}/reveal.js"
    c.SlidesExporter.reveal_theme = reveal.get("theme", "white")
    c.SlidesExporter.reveal_transition = reveal.get("transition", "slide")
    c.SlidesExporter.reveal_number = reveal.get("slide_number", "c/t")
    c.SlidesExporter.reveal_width = str(reveal.get("width", 1280))
    c.SlidesExporter.reveal_height = str(reveal.get("height", 800))
    # Nothing from a CDN: the template loads no jQuery/RequireJS/Mermaid/widgets; empty them anyway.
    for trait in ("require_js_url", "jquery_url", "mermaid_js_url", "mathjax_url", "widget_renderer_url"):
        setattr(c.SlidesExporter, trait, "")
    c.SlidesExporter.exclude_input_prompt = True
    c.SlidesExporter.exclude_output_prompt = True
    return SlidesExporter(config=c, template_name=TEMPLATE, extra_template_basedirs=[str(TEMPLATES)])


def render_deck(name: str, config: dict, part: int, parts: int, exporter=None, source: Path | None = None) -> dict:
    """Render one notebook's deck; return {'html', 'math', 'expected_slides', ...} (html not written)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    source = source or course_file.source_for(name)
    nb = nbformat.read(source, as_version=4)
    deck = config.get("deck", {})
    solutions = deck.get("solutions", "notes")
    prepared = prepare(nb, solutions)
    math = has_math(prepared)
    course = config.get("course", {})
    title = title_of(nb, name)
    title_slide = None
    if deck.get("title_slide", True):
        notes = guide_section(name)
        title_slide = {
            "course": course.get("title", ""),
            "subtitle": course.get("subtitle", ""),
            "presenter": course.get("presenter", ""),
            "title": title,
            "question": planned(config).get(name, {}).get("question", ""),
            "minutes": minutes.session_minutes(nb),
            "part": part,
            "parts": parts,
            "notes_html": markdown2html_mistune(notes) if notes else "",
        }
    resources = {
        "metadata": {"name": title},
        "course": {"static": STATIC, "math": math, "title_slide": title_slide, "type": {
            "text_px": talk.TEXT_PX, "code_px": talk.CODE_PX, "fit_floor": talk.FIT_FLOOR}, "reveal": {
            "transition": config.get("reveal", {}).get("transition", "slide"),
            "slide_number": config.get("reveal", {}).get("slide_number", "c/t"),
            "width": config.get("reveal", {}).get("width", 1280),
            "height": config.get("reveal", {}).get("height", 800),
        }},
    }
    body, _ = (exporter or _exporter(config)).from_notebook_node(prepared, resources=resources)
    remote = remote_references(body)
    if remote:
        raise RuntimeError(f"{name}: the deck would load from the network: {remote}")
    pngs = sum(
        "image/png" in out.get("data", {})
        for cell in nb.cells if slide_type(cell) != "skip"
        for out in cell.get("outputs", [])
    )
    return {
        "name": name,
        "title": title,
        "html": body,
        "source": str(source.relative_to(ROOT)) if source.is_relative_to(ROOT) else str(source),
        "math": math,
        "expected_slides": expected_slides(prepared, solutions, bool(title_slide)),
        "png_outputs": pngs,
        "workshop_minutes": minutes.session_minutes(nb),
    }


def _index_html(config: dict, decks: list[dict]) -> str:
    course = config.get("course", {})
    items = "\n".join(
        f'<li><a href="{d["file"]}">{html.escape(d["title"])}</a> '
        f'<small>({d["expected_slides"]} slides, {d["workshop_minutes"] or "?"} min)</small></li>'
        for d in decks
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(course.get("title", "Slides"))}: slides</title>
<style>body {{ font-family: sans-serif; max-width: 46em; margin: 3em auto; line-height: 1.5; }}</style></head>
<body><h1>{html.escape(course.get("title", ""))}</h1><p>{html.escape(course.get("subtitle", ""))}</p>
<ol start="0">
{items}
</ol>
<p><a href="instructor_guide.html">Instructor guide</a> &middot; <a href="helpers.html">Helpers' page</a>
&middot; <a href="{answer_key.PAGE}">Answer key</a>
&middot; in a deck: <kbd>S</kbd> speaker notes,
<kbd>Esc</kbd> overview, <kbd>F</kbd> full screen.</p>
</body></html>
"""


def _page_html(title: str, markdown: str) -> str:
    """A Markdown page of the workshop (the guide, the helpers' page) as one offline HTML file; links between
    them point at their HTML."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    markdown = markdown.replace("](helpers.md)", "](helpers.html)")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>\n'
        "<style>body { font-family: sans-serif; max-width: 60em; margin: 2em auto; line-height: 1.5; }"
        " table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 0.2em 0.5em; }"
        " pre { background: #f5f5f5; padding: 0.5em; overflow-x: auto; }</style></head><body>\n"
        + markdown2html_mistune(markdown)
        + "\n</body></html>\n"
    )


def _guide_html(config: dict) -> str:
    text = GUIDE.read_text() if GUIDE.exists() else "# Instructor guide\n\n(missing)"
    if AGENDA_BEGIN in text:
        text = guide_with_agenda(config, text)
    return _page_html("Instructor guide", text)


def _inputs(names: list[str]) -> list[Path]:
    fixed = [CONFIG, GUIDE, HELPERS, SLIDES / "package-lock.json", Path(__file__).resolve()]
    fixed += [p for p in TEMPLATES.rglob("*") if p.is_file()] + [p for p in (SLIDES / "assets").glob("*")]
    fixed += [ROOT / "tools" / "answer_key.py", *answer_key.CHECKERS]
    return [p for p in fixed if p.exists()] + [course_file.source_for(name) for name in names]


def build(out: Path = OUT, names: list[str] | None = None, quiet: bool = False) -> dict:
    """Build the decks of ``names`` (default: every course notebook) into ``out``; return the manifest."""
    start = time.perf_counter()
    config = load_config()
    existing = [p.stem for p in course_notebooks()]
    order = deck_order(config, existing)
    course_order = deck_order(config, sorted(set(existing) | set(planned(config))))  # "part N of M"
    names = order if names is None else [n for n in order if n in names] + [n for n in names if n not in order]
    missing = [n for n in names if not course_file.source_for(n).exists()]
    if missing:
        raise FileNotFoundError(f"no notebook for {missing}; course notebooks: {existing}")
    if not names:
        raise FileNotFoundError("no course notebooks in notebooks/")
    modules = ensure_vendor()
    out.mkdir(parents=True, exist_ok=True)
    exporter = _exporter(config)
    decks = []
    for name in names:
        t0 = time.perf_counter()
        part = course_order.index(name) + 1 if name in course_order else 0
        deck = render_deck(name, config, part, len(course_order), exporter)
        deck["file"] = f"{name}.slides.html"
        (out / deck["file"]).write_text(deck.pop("html"))
        deck["seconds"] = round(time.perf_counter() - t0, 2)
        decks.append(deck)
        if not quiet:
            print(f"  {deck['file']}: {deck['expected_slides']} slides, {deck['png_outputs']} plots "
                  f"from {deck['source']} ({deck['seconds']:.1f} s)", flush=True)
    install_static(out, config.get("reveal", {}).get("theme", "white"), any(d["math"] for d in decks), modules)
    (out / "index.html").write_text(_index_html(config, decks))
    (out / "instructor_guide.html").write_text(_guide_html(config))
    (out / "helpers.html").write_text(_page_html("Helpers' page", HELPERS.read_text()))
    key = answer_key.markdown(*answer_key.entries({name: course_file.source_for(name) for name in names}))
    (out / "answer_key.md").write_text(key)
    (out / answer_key.PAGE).write_text(_page_html("Answer key", key))
    manifest = {
        "decks": decks,
        "reveal.js": _locked_versions().get("reveal.js"),
        "seconds": round(time.perf_counter() - start, 2),
        "inputs": [str(p) for p in _inputs(names)],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def ensure_built(out: Path = OUT) -> dict:
    """The manifest of an up-to-date build of every course notebook's deck, rebuilding when stale."""
    manifest_file = out / MANIFEST
    names = deck_order(load_config(), [p.stem for p in course_notebooks()])
    if manifest_file.exists():
        manifest = json.loads(manifest_file.read_text())
        built = manifest_file.stat().st_mtime
        same = [d["name"] for d in manifest["decks"]] == names and all(
            d["source"] == str(course_file.source_for(d["name"]).relative_to(ROOT)) for d in manifest["decks"]
        )
        fresh = all(p.stat().st_mtime <= built for p in _inputs(names))
        decks_there = all((out / d["file"]).exists() for d in manifest["decks"])
        if same and fresh and decks_there and (out / STATIC / "reveal.js").exists():
            return manifest
    return build(out, quiet=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", help="notebook names or paths (default: every course notebook)")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default build/slides)")
    parser.add_argument("--update-guide", action="store_true", help="rewrite the agendas in the instructor guide")
    parser.add_argument("--answers-from-build", action="store_true",
                        help="with --update-guide: read the answers from build/notebooks (make course), not the "
                             "stored notebooks")
    parser.add_argument("--readme", action="store_true", help="rewrite the course map in README.md")
    args = parser.parse_args()
    config = load_config()
    if args.update_guide:
        GUIDE.write_text(updated_guide(config, GUIDE.read_text(), args.answers_from_build))
        print(f"updated the agendas, sections and answers in {GUIDE.relative_to(ROOT)}")
    if args.readme:
        path = ROOT / "README.md"
        text = path.read_text()
        begin, end = "<!-- BEGIN course map -->", "<!-- END course map -->"
        i, j = text.index(begin) + len(begin), text.index(end)
        path.write_text(text[:i] + "\n" + course_map(config) + "\n" + text[j:])
        print(f"updated the course map in {path.relative_to(ROOT)}")
    if args.update_guide or args.readme:
        return 0
    names = [Path(n).stem.removesuffix(".slides") for n in args.notebooks] or None
    start = time.perf_counter()
    print(f"building decks into {args.out} ...", flush=True)
    manifest = build(args.out.resolve(), names)
    print(f"{len(manifest['decks'])} decks, reveal.js {manifest['reveal.js']}, in {time.perf_counter() - start:.1f} s: "
          f"open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
