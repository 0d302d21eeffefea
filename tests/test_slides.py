"""The workshop decks (tools/build_slides.py, make slides), their configuration and the instructor guide.

What a browser sees is tested in test_browser.py; here: the files. Every course notebook has a deck that
loads nothing from the network, carries speaker notes and its plots; the vendored reveal.js is pinned;
the guide covers the notebooks of the design and its
agendas take their minutes computed from the notebooks (tools/minutes.py).
"""

from __future__ import annotations

import base64
import importlib
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from conftest import COURSE_NOTEBOOKS, ROOT

from course_utils import notebook

pytestmark = pytest.mark.integration  # files, builds and notebooks: not in make test-unit

sys.path.insert(0, str(ROOT / "tools"))
build_slides = importlib.import_module("build_slides")
guide = importlib.import_module("guide")
minutes = importlib.import_module("minutes")

course_file = importlib.import_module("course_file")
DESIGN_NOTEBOOKS = course_file.notebooks()
# A 1x1 PNG, for the synthetic notebook.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a1e6e2f60000000049454e44ae426082"
    )
).decode()


@pytest.fixture(scope="module")
def manifest() -> dict:
    return build_slides.ensure_built()


@pytest.fixture(scope="module")
def config() -> dict:
    return build_slides.load_config()


class _Refs(HTMLParser):
    """Every resource a page loads: script/img/iframe src, stylesheet href."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "video", "audio", "embed") and a.get("src"):
            self.refs.append(a["src"])
        if tag == "link" and a.get("href"):
            self.refs.append(a["href"])


def _refs(html: str) -> list[str]:
    parser = _Refs()
    parser.feed(html)
    return parser.refs


# --- configuration and vendored reveal.js ---------------------------------------------------------
def test_reveal_and_mathjax_are_pinned_exactly() -> None:
    package = json.loads((ROOT / "slides" / "package.json").read_text())
    lock = json.loads((ROOT / "slides" / "package-lock.json").read_text())
    assert set(package["dependencies"]) == {"reveal.js", "mathjax"}
    for name, version in package["dependencies"].items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} must be an exact version, not {version!r}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
        assert lock["packages"][f"node_modules/{name}"]["integrity"].startswith("sha512-")
    assert "resolved" not in json.dumps(lock), "the lock file must not name a download host"


def test_deck_configuration(config: dict) -> None:
    names = list(build_slides.planned(config))
    assert names == DESIGN_NOTEBOOKS, "the decks follow the lessons of course.toml, in order"
    for entry in build_slides.planned(config).values():
        assert entry["question"].endswith("?") and entry["minutes"] > 0 and entry["accelerators"]
    assert config["deck"]["solutions"] in ("notes", "show")
    for day in ("full_day", "half_day"):
        agenda = config["agenda"][day]
        assert set(agenda["notebooks"]) <= set(names)
        assert set(agenda.get("breaks", {})) <= set(agenda["notebooks"])
    with pytest.raises(ValueError, match="solutions"):
        bad = ROOT / "build" / "bad_deck.toml"
        bad.parent.mkdir(exist_ok=True)
        bad.write_text('[deck]\nsolutions = "hide"\n')
        try:
            build_slides.load_config(bad)
        finally:
            bad.unlink()


def test_vendored_reveal_is_the_locked_version(manifest: dict) -> None:
    lock = json.loads((ROOT / "slides" / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/reveal.js"]["version"]
    assert manifest["reveal.js"] == version
    installed = json.loads((build_slides.VENDOR / "node_modules" / "reveal.js" / "package.json").read_text())
    assert installed["version"] == version
    assert (build_slides.OUT / "_static" / "reveal.js" / "dist" / "reveal.js").exists()


# --- the decks --------------------------------------------------------------------------------------
def test_every_notebook_has_a_deck(manifest: dict) -> None:
    assert [d["name"] for d in manifest["decks"]] == [p.stem for p in COURSE_NOTEBOOKS]
    for deck in manifest["decks"]:
        assert (build_slides.OUT / deck["file"]).exists()
        assert deck["source"] in (f"build/notebooks/{deck['name']}.ipynb", f"notebooks/{deck['name']}.ipynb")
    index = (build_slides.OUT / "index.html").read_text()
    assert all(f'href="{d["file"]}"' in index for d in manifest["decks"])
    assert (build_slides.OUT / "instructor_guide.html").exists()


@pytest.mark.parametrize("notebook", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_deck_works_offline_with_notes_and_plots(notebook: Path, manifest: dict) -> None:
    deck = next(d for d in manifest["decks"] if d["name"] == notebook.stem)
    html = (build_slides.OUT / deck["file"]).read_text()
    assert build_slides.remote_references(html) == []
    for ref in _refs(html):
        if ref.startswith("data:"):
            continue
        assert not re.match(r"^(https?:)?//", ref), f"{deck['file']} loads {ref} from the network"
        assert (build_slides.OUT / ref.split("#")[0].split("?")[0]).exists(), f"{deck['file']}: {ref} is missing"
    assert '<aside class="notes">' in html, "speaker notes missing"
    assert html.count('src="data:image/png') == deck["png_outputs"]
    assert deck["workshop_minutes"] == minutes.session_minutes(nbformat.read(ROOT / deck["source"], as_version=4))
    assert deck["expected_slides"] >= 2


def test_build_makes_one_deck_per_notebook(manifest: dict) -> None:
    """The session's build (ensure_built runs build() whenever an input, tools/build_slides.py included, is newer
    than build/slides: always on a fresh clone); a second full build into a temporary folder proved nothing more."""
    assert len(manifest["decks"]) == len(COURSE_NOTEBOOKS)


def _synthetic_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["course"] = {"minutes": {"ci": 1, "laptop": 2, "workshop": 25}}
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    png = nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})
    cells = [
        md("# 99 · A synthetic deck\n" + notebook.badge("99_synthetic.ipynb")
           + "\n\n![a remote plot](https://example.org/plot.png)\n\nEnergy $E = mc^2$."),
        code("import course_utils as cu  # plumbing"),
        code("plot()", outputs=[png]),
        md("A point that appears on click"),
        md("Say this, do not show it"),
        code("answer = 42", metadata={"jupyter": {"source_hidden": True}, "tags": ["solution"]}),
        md("## Exercises"),
        md("Second point"),
    ]
    kinds = ["slide", "skip", "subslide", "fragment", "notes", "-", "slide", "subslide"]
    for cell, kind in zip(cells, kinds, strict=True):
        if kind != "-":
            cell.metadata["slideshow"] = {"slide_type": kind}
    nb.cells = cells
    nbformat.write(nb, path)
    return path


def test_synthetic_notebook_deck(tmp_path: Path, config: dict) -> None:
    source = _synthetic_notebook(tmp_path / "99_synthetic.ipynb")
    deck = build_slides.render_deck("99_synthetic", config, 1, 1, source=source)
    html = deck["html"]
    # title + (slide, subslide) + (slide, subslide)
    assert deck["expected_slides"] == build_slides.expected_slides(nbformat.read(source, 4)) == 5
    assert html.count("<section") == 1 + 2 + 1 + 2 + 1  # title; each slide is a stack (2 tags) + 1 subslide
    assert 'class="fragment"' in html
    notes = re.findall(r'<aside class="notes">(.*?)</aside>', html, re.DOTALL)
    assert any("Say this, do not show it" in n for n in notes)
    assert any("answer" in n for n in notes), "the hidden solution must be a speaker note"
    assert "plumbing" not in html, "skip cells stay off the slides"
    assert deck["math"] and "mathjax/tex-chtml-full.js" in html
    assert "example.org/plot.png" in html and 'src="https://example.org' not in html  # link, not image
    assert 'src="_static/assets/open-in-colab.svg"' in html
    assert build_slides.remote_references(html) == []
    assert deck["png_outputs"] == 1 and html.count('src="data:image/png') == 1
    shown = build_slides.render_deck("99_synthetic", {**config, "deck": {"solutions": "show"}}, 1, 1, source=source)
    assert shown["expected_slides"] in (5, 6), "a shown solution may page onto a subslide of its own"
    assert not any("answer" in n for n in re.findall(r'<aside class="notes">(.*?)</aside>', shown["html"], re.DOTALL))


def test_static_files_for_math(tmp_path: Path, manifest: dict) -> None:
    modules = build_slides.ensure_vendor()
    build_slides.install_static(tmp_path, "white", True, modules)
    assert (tmp_path / "_static" / "mathjax" / "tex-chtml-full.js").exists()
    assert list((tmp_path / "_static" / "mathjax" / "output" / "chtml" / "fonts").rglob("*.woff"))
    with pytest.raises(ValueError, match="web fonts"):
        build_slides.install_static(tmp_path, "simple", False, modules)
    with pytest.raises(ValueError, match="not a reveal.js theme"):
        build_slides.install_static(tmp_path, "no-such-theme", False, modules)


# --- instructor guide and README text -----------------------------------------------------------------
def test_guide_covers_the_design_and_marks_missing_notebooks() -> None:
    text = build_slides.GUIDE.read_text()
    existing = {p.stem for p in COURSE_NOTEBOOKS}
    for name in DESIGN_NOTEBOOKS:
        section = build_slides.guide_section(name)
        assert section, f"the instructor guide has no section for {name}"
        for part in ("Live-run", "Show", "Where learners get stuck", "Exercise answers", "Hardware"):
            assert part in section, f"{name}'s section lacks {part!r}"
        if name not in existing:
            assert "not written yet" in section, f"{name} does not exist: its section must say so"
    for heading in ("Full day", "Half day", "Hardware advice"):
        assert heading in text


def test_guide_agendas_take_minutes_computed_from_the_notebooks(config: dict) -> None:
    text = build_slides.GUIDE.read_text()
    assert build_slides.guide_with_agenda(config, text) == text, (
        "the agendas in slides/instructor_guide.md are out of date: "
        "run .venv/bin/python tools/build_slides.py --update-guide"
    )
    agenda = build_slides.agenda_markdown(config)
    for path in COURSE_NOTEBOOKS:
        computed = minutes.session_minutes(nbformat.read(path, 4))
        rows = [line for line in agenda.splitlines() if f"`{path.stem}`" in line and "whole session" in line]
        assert rows and all(f"| {computed} |" in row for row in rows)


def test_readme_course_map_and_workshop_section() -> None:
    text = (ROOT / "README.md").read_text()
    for name in DESIGN_NOTEBOOKS:
        assert f"| {name[:2]} |" in text
    for path in COURSE_NOTEBOOKS:
        assert notebook.badge(path.name) in text
    assert "## Workshop" in text and "make slides" in text


def test_prose_generating_code_is_hidden_and_long_code_cut_on_slides() -> None:
    nb = nbformat.v4.new_notebook()
    prose = nbformat.v4.new_code_cell("text = f'{3:.1f}x faster'\nMarkdown(text)")
    prose.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": "**3.0x faster**",
                                                                   "text/plain": "<Markdown>"})]
    long = nbformat.v4.new_code_cell("\n".join(f"step_{i} = {i}" for i in range(40)))
    long.outputs = [nbformat.v4.new_output("stream", text="done\n")]  # a cell without output is plumbing: skipped
    summary = nbformat.v4.new_code_cell("rows = [1, 2]\ncu.notebook.summary_table('99_t', rows)")
    summary.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<table></table>"})]
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · T"), prose, long, summary]
    prepared = build_slides.prepare(nb)
    assert prepared.cells[1].metadata["transient"] == {"remove_source": True}
    assert prepared.cells[3].metadata["transient"] == {"remove_source": True}
    shown = prepared.cells[2].source.splitlines()
    assert len(shown) == build_slides.SLIDE_CODE_LINES and shown[-1] == "# ... 26 more lines in the notebook"
    assert nb.cells[2].source.count("\n") == 39, "the notebook itself keeps the whole cell"


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_assert_cells_stay_off_the_slides(ipynb: Path) -> None:
    """A cell that asserts (anywhere, indented too) is a check for the notebook, not a slide."""
    prepared = build_slides.prepare(nbformat.read(ipynb, as_version=4))
    shown = [c.source.splitlines()[0] for c in prepared.cells if build_slides.asserts(c)
             and build_slides.slide_type(c) not in ("skip", "notes")]
    assert not shown, f"{ipynb.name}: assert cells on slides: {shown}"


def test_asserts_are_found_in_blocks_and_their_slide_break_moves_on() -> None:
    check = nbformat.v4.new_code_cell("for x in range(2):\n    assert x < 2, x\nprint('ok')")
    check.metadata["slideshow"] = {"slide_type": "subslide"}
    after = nbformat.v4.new_code_cell("y = 1\ny")
    after.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1)]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · T"), check, after]
    prepared = build_slides.prepare(nb)
    assert build_slides.asserts(check) and not build_slides.asserts(after)
    assert build_slides.slide_type(prepared.cells[1]) == "skip"
    assert build_slides.slide_type(prepared.cells[2]) == "subslide"


@pytest.mark.parametrize("ipynb", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_sections_are_priced_and_marked(ipynb: Path) -> None:
    found = minutes.sections(nbformat.read(ipynb, as_version=4))
    assert found and all(s.minutes >= minutes.TALK_PER_SECTION for s in found)
    assert any(s.lead for s in found), f"{ipynb.name}: no section is marked for the lead track (course.lead)"
    further = [s for s in found if s.title.startswith("Going further")]
    assert all(s.optional for s in further), f"{ipynb.name}: 'Going further' is reading after the session (optional)"


def test_readme_course_map_is_generated_from_the_deck_and_notebooks(config: dict) -> None:
    text = (build_slides.ROOT / "README.md").read_text()
    begin, end = "<!-- BEGIN course map -->", "<!-- END course map -->"
    assert text[text.index(begin) + len(begin):text.index(end)].strip() == build_slides.course_map(config).strip(), \
        "the README's course map is stale: python tools/build_slides.py --readme"


def test_guide_blocks_are_generated_from_the_notebooks(config: dict) -> None:
    text = build_slides.GUIDE.read_text()
    fresh = build_slides.updated_guide(config, text)
    assert fresh.split(guide.ANSWERS_BEGIN)[0] == text.split(guide.ANSWERS_BEGIN)[0], \
        "agendas or sections are stale: python tools/build_slides.py --update-guide"
    assert fresh == text, "the exercise answers are stale (they follow the stored notebooks' solution outputs): " \
        "python tools/build_slides.py --update-guide"
    answers = text[text.index(guide.ANSWERS_BEGIN):text.index(guide.ANSWERS_END)]
    for ipynb in COURSE_NOTEBOOKS:
        for exercise, _, _ in guide.answers(nbformat.read(ipynb, as_version=4)):
            assert f"**{exercise}**" in answers, f"the guide has no generated answer for exercise {exercise}"
    for line in ("If the laptop is slow", "If the network is down"):
        assert text.count(line) >= len(COURSE_NOTEBOOKS), f"every notebook's section of the guide says: {line}"


def test_a_long_table_is_shown_in_parts_with_its_header_on_each() -> None:
    rows = "".join(f"<tr><td>q{i}</td><td>{i}</td></tr>" for i in range(30))
    html = f"<table><caption>Measured</caption><tr><th>quantity</th><th>value</th></tr>{rows}</table><p>7 held</p>"
    cell = nbformat.v4.new_code_cell("cu.summary_table(rows)")
    cell.outputs = [nbformat.v4.new_output("display_data", {"text/html": html})]
    cell.metadata["slideshow"] = {"slide_type": "slide"}
    paged = build_slides.paginate([cell])
    parts = ["".join(out["data"]["text/html"]) for piece in paged for out in piece.outputs]
    per = build_slides._TABLE_ROWS
    assert len(parts) == -(-30 // per) and all("<th>quantity</th>" in p for p in parts)
    assert [p.count("<td>q") for p in parts] == [min(per, 30 - i) for i in range(0, 30, per)]
    assert "(continued)" in parts[1]
    assert parts[-1].endswith("<p>7 held</p>") and not parts[0].endswith("</p>")
    assert all(build_slides.estimated_height(piece) <= build_slides.SLIDE_BUDGET_PX for piece in paged)
