"""What a slide keeps of a notebook cell so that the deck reads as a talk: the rules tools/build_slides.py applies
to every cell it shows (the notebook itself keeps everything).

- Test markers go: a code line that is only a ``# NBVAL_...`` comment is for nbval, not for the room.
- Warnings and logs go: stderr streams (where Python's warnings and library logs write), lines of a
  ``...Warning:`` and the source line printed under it, and glog-style lines (``W1205 13:07:56.59 ...``).
- Local paths go: an absolute path under a home, work or temporary folder is shortened to what the room
  needs: from the repository's own folders on (``course_utils/workers/ddp_train.py``), a program in a
  ``bin/`` folder to its name (``torchrun``), anything else to its last component.
- Log lines are cut: a line of an output stream longer than ``LOG_LINE_CHARS`` characters (what a 20 px
  monospace line holds across a 1280 px slide) ends in an ellipsis; the notebook keeps the whole line.
- Type readable from the back of a room: at 1280x720, prose is never below ``READABLE_TEXT_PX`` and code,
  outputs and tables never below ``READABLE_CODE_PX``. The deck's CSS sets ``TEXT_PX`` and ``CODE_PX``, and the
  shrink-to-fit of a slide the build's estimate overfilled stops at ``FIT_FLOOR``, which keeps both rules.
- A taught call stays whole: when a long cell is cut to an excerpt, the statements that hold one of the
  lesson's taught calls (course.toml) are kept in full (``taught_lines``).
"""

from __future__ import annotations

import ast
import copy
import re

READABLE_TEXT_PX, READABLE_CODE_PX = 21, 15.5  # the rule: about 1/34 and 1/46 of a 720 px screen's height
TEXT_PX, CODE_PX = 24, 18  # what the deck's CSS sets (the template reads them from here)
FIT_FLOOR = 0.875  # the smallest zoom a slide may take to fit: 24 px x 0.875 = 21 px, 18 px x 0.875 = 15.75 px
LOG_LINE_CHARS = 110  # 16.6 px monospace is about 10 px a character: 110 fill a 1280 px slide's text width
REPOSITORY_FOLDERS = ("course_utils", "notebooks", "tools", "tests", "build", "slides", "benchmarks")
_MARKER = re.compile(r"^\s*#\s*NBVAL_[A-Z_]+\s*$")
_WARNING = re.compile(r"\b\w*Warning: ")
_GLOG = re.compile(r"^(?:\[rank \d+\]\s*)?[IWEF]\d{4} \d\d:\d\d:\d\d")
_LOCAL_PATH = re.compile(r"(?<![\w.:/~-])/(?:work|root|home|Users|tmp|var|opt|usr|private|mnt|content)"
                         r"(?:/[\w.+@-]+)+")


def without_markers(source: str) -> str:
    """``source`` without its nbval marker lines (``# NBVAL_CHECK_OUTPUT`` and the others)."""
    return "\n".join(line for line in source.splitlines() if not _MARKER.match(line))


def short_path(path: str) -> str:
    """An absolute local path as a slide shows it (see the module's rules)."""
    parts = path.strip("/").split("/")
    for i, part in enumerate(parts):
        if part in REPOSITORY_FOLDERS:
            return "/".join(parts[i:])
    return parts[-1]


def without_local_paths(text: str) -> str:
    """``text`` with every absolute local path shortened by ``short_path``."""
    return _LOCAL_PATH.sub(lambda m: short_path(m.group(0)), text)


def _talk_lines(text: str) -> str:
    kept, skip_next = [], False
    for line in text.splitlines():
        if skip_next:  # the source line Python's warnings print under the warning
            skip_next = False
            continue
        if _WARNING.search(line):
            skip_next = True
            continue
        if _GLOG.match(line):
            continue
        line = without_local_paths(line)
        kept.append(line if len(line) <= LOG_LINE_CHARS else line[:LOG_LINE_CHARS - 1] + "…")
    return "\n".join(kept) + ("\n" if kept else "")


def for_talk(outputs: list[dict]) -> list[dict]:
    """A cell's outputs as a slide shows them: no stderr, warnings or glog lines, no local paths, log lines cut."""
    shown = []
    for output in outputs:
        if output.get("output_type") == "stream":
            if output.get("name") == "stderr":
                continue
            output = copy.deepcopy(output)
            output["text"] = _talk_lines("".join(output.get("text", "")))
            if not output["text"].strip():
                continue
        elif output.get("data"):
            output = copy.deepcopy(output)
            for kind in ("text/plain", "text/html", "text/markdown"):
                if kind in output["data"]:
                    output["data"][kind] = without_local_paths("".join(output["data"][kind]))
        shown.append(output)
    return shown


def taught_lines(source: str, calls: list[str] | tuple[str, ...]) -> set[int]:
    """Indices of the lines of ``source`` that show a taught call whole: the statement holding it (a simple
    statement whole, a compound one such as ``with torch.autocast(...):`` by its header) and the headers of the
    blocks around it (the ``def`` and ``if`` it sits in)."""
    lines = source.splitlines()
    hits = {i + 1 for i, line in enumerate(lines) if any(call in line for call in calls)}
    if not hits:
        return set()
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: keep the lines themselves
        return {hit - 1 for hit in hits}
    keep: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        header_end = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno or node.lineno
        if any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in hits):
            keep.update(range(node.lineno - 1, header_end))  # the statement's header, or all of a simple one
    return keep
