"""Slides as a talk (issue 39): no test markers, warnings, local paths or overlong log lines on a slide; type readable
from the back of a room; every taught call of course.toml whole on a slide of its deck; the findings in the speaker
notes; about one slide per computed minute. Read from the prepared notebooks (no browser)."""

from __future__ import annotations

import importlib
import re
import sys

import nbformat
import pytest
from conftest import ROOT

pytestmark = pytest.mark.integration  # reads the notebooks

sys.path.insert(0, str(ROOT / "tools"))
build_slides = importlib.import_module("build_slides")
course_file = importlib.import_module("course_file")
minutes = importlib.import_module("minutes")
talk = importlib.import_module("talk")

LESSONS = course_file.lessons()
SLIDES_PER_MINUTE = 1.1  # "at most about one slide per minute of the plan"


def _prepared(lesson: dict) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    nb = nbformat.read(ROOT / "notebooks" / f"{lesson['notebook']}.ipynb", as_version=4)
    return nb, build_slides.prepare(nb, "notes")


def _shown(prepared: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in prepared.cells if build_slides.slide_type(c) not in ("skip", "notes")]


def _code(cell: nbformat.NotebookNode) -> str:
    return "" if cell.metadata.get("transient", {}).get("remove_source") else cell.source


def _output_text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        parts += ["".join(out.get("text", "")), *("".join(data.get(k, "")) for k in ("text/plain", "text/markdown"))]
        parts.append(re.sub(r"<[^>]+>", "", "".join(data.get("text/html", ""))))
    return "\n".join(parts)


def _whole(text: str, call: str) -> bool:
    """True when ``call`` appears in ``text`` with its brackets closed before any elision ('# ...' or '…')."""
    for start in (m.start() for m in re.finditer(re.escape(call), text)):
        depth, rest = 0, text[start:]
        for line in rest.splitlines():
            if line.lstrip().startswith("# ...") or line.endswith("…"):
                break
            depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
            if depth <= 0:
                return True
    return False


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson["notebook"])
def test_every_taught_call_is_whole_on_a_slide(lesson: dict) -> None:
    _, prepared = _prepared(lesson)
    shown = _shown(prepared)
    missing = []
    for call in lesson["taught"]:
        texts = [_code(c) for c in shown if c.cell_type == "code"]
        if lesson["shows_files"]:
            texts += [_output_text(c) for c in shown if c.cell_type == "code"]
        if not any(_whole(text, call) for text in texts):
            missing.append(call)
    assert not missing, f"{lesson['notebook']}: taught calls not whole on any slide: {missing}"


def test_the_compile_calls_of_all_three_frameworks_share_01s_slide() -> None:
    lesson = next(x for x in LESSONS if x["notebook"] == "01_dynamic_vs_static")
    _, prepared = _prepared(lesson)
    assert any(all(_whole(_code(c), call) for call in ("torch.compile(", "jax.jit(", "jit_compile=True"))
               for c in _shown(prepared) if c.cell_type == "code")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson["notebook"])
def test_slides_carry_no_markers_warnings_paths_or_long_log_lines(lesson: dict) -> None:
    _, prepared = _prepared(lesson)
    problems = []
    for cell in _shown(prepared):
        text = _code(cell) + "\n" + _output_text(cell) + ("\n" + cell.source if cell.cell_type == "markdown" else "")
        problems += [f"marker: {m}" for m in re.findall(r"NBVAL_[A-Z_]+", text)]
        problems += [f"warning: {m}" for m in re.findall(r"\w*Warning: .{0,60}", text)]
        problems += [f"path: {m}" for m in re.findall(r"/(?:work|root|home|Users|tmp)/[\w./-]+|\.venv/bin/\w+", text)]
        outputs = cell.get("outputs", [])
        streams = "".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
        problems += [f"long line: {line[:60]}" for line in streams.splitlines() if len(line) > talk.LOG_LINE_CHARS]
        problems += ["stderr" for o in cell.get("outputs", []) if o.get("name") == "stderr"]
    assert not problems, f"{lesson['notebook']}: {problems[:8]}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson["notebook"])
def test_findings_are_speaker_notes_and_slides_fit_the_minutes(lesson: dict) -> None:
    nb, prepared = _prepared(lesson)
    findings = [c for c in prepared.cells if build_slides.is_finding(c)]
    notes = [c for c in findings if build_slides.slide_type(c) == "notes"]  # the rest: "Going further", skipped
    assert notes and all(build_slides.slide_type(c) in ("notes", "skip") for c in findings)
    assert all(c.metadata["transient"] == {"remove_source": True} for c in notes), "notes show the sentence only"
    slides = build_slides.expected_slides(prepared)
    assert slides <= SLIDES_PER_MINUTE * minutes.session_minutes(nb), \
        f"{lesson['notebook']}: {slides} slides for {minutes.session_minutes(nb)} minutes"


def test_talk_rules_on_made_up_outputs() -> None:
    warning = "/work/main/.venv/lib/python3.11/site-packages/torch/x.py:12: UserWarning: careful\n  warnings.warn(\n"
    outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="some library log\n"),
        nbformat.v4.new_output("stream", name="stdout", text=warning + "kept\n" + "[rank 0] W1205 13:07:56.591000 "
                               "24736 torch/_logging/_internal.py:1345] ignored\n" + "MKL_VERBOSE " + "x" * 150 + "\n"
                               "/work/main/.venv/bin/torchrun /work/main/course_utils/workers/ddp_train.py\n"),
        nbformat.v4.new_output("display_data", data={"text/plain": "see https://example.org/work/a/b"}),
    ]
    stream, display = talk.for_talk(outputs)
    lines = stream["text"].splitlines()
    assert lines[0] == "kept" and lines[1].endswith("…") and len(lines[1]) == talk.LOG_LINE_CHARS
    assert lines[2] == "torchrun course_utils/workers/ddp_train.py" and len(lines) == 3
    assert display["data"]["text/plain"] == "see https://example.org/work/a/b", "URLs are not local paths"
    assert talk.without_markers("# NBVAL_CHECK_OUTPUT\nx = 1") == "x = 1"


def test_type_is_readable_from_the_back_of_the_room() -> None:
    assert talk.TEXT_PX * talk.FIT_FLOOR >= talk.READABLE_TEXT_PX
    assert talk.CODE_PX * talk.FIT_FLOOR >= talk.READABLE_CODE_PX
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · T"), nbformat.v4.new_code_cell("x = 1")]
    path = ROOT / "build" / "test_workshop_talk" / "99_t.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    deck = build_slides.render_deck("99_t", build_slides.load_config(), 1, 1, source=path)
    css = deck["html"]
    assert f".jp-RenderedMarkdown {{ font-size: {talk.TEXT_PX}px" in css
    assert f".jp-OutputArea pre {{ font-size: {talk.CODE_PX}px" in css
    assert f"Math.max({talk.FIT_FLOOR}, room / need)" in css


def test_a_long_cell_keeps_its_taught_statement_whole() -> None:
    source = "\n".join([f"a{i} = {i}" for i in range(20)] + ["if ok:", "    y = torch.compile(f,", "        mode='x')"])
    excerpt = build_slides.slide_excerpt(source, 10, frozenset(talk.taught_lines(source, ["torch.compile("])))
    assert "if ok:\n    y = torch.compile(f,\n        mode='x')" in excerpt and "# ... " in excerpt
    assert _whole(excerpt, "torch.compile(")
