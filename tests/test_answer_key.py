"""The answer key (tools/answer_key.py): every exercise a notebook checks has its four parts, the checkers' named
wrong answers are read from their source, and the links to the key from the decks' speaker notes and the guide
resolve to an entry of build/slides/answer_key.html."""

from __future__ import annotations

import importlib
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
answer_key = importlib.import_module("answer_key")
build_slides = importlib.import_module("build_slides")
course_file = importlib.import_module("course_file")
minutes = importlib.import_module("minutes")


def _used_ids() -> list[str]:
    """Every exercise id a notebook checks, read from the notebooks' Python sources."""
    return [i for name in course_file.notebooks() for i in
            minutes.CHECK.findall((ROOT / "notebooks" / f"{name}.py").read_text())]


def _stored() -> dict[str, Path]:
    return {name: ROOT / "notebooks" / f"{name}.ipynb" for name in course_file.notebooks()}


def test_every_exercise_has_its_four_parts() -> None:
    found, sources = answer_key.entries(_stored())
    assert sources == ["the stored notebooks (ci size)"]
    assert [e.exercise for e in found] == _used_ids()
    for e in found:
        assert e.question.startswith("**") and len(e.question.split()) > 8, f"{e.exercise}: question {e.question!r}"
        assert e.method.strip(), f"{e.exercise}: no solution code"
        assert e.expected.strip() and e.check == f"exercise {e.exercise}: correct", f"{e.exercise}: {e.check!r}"
        assert e.checker is not None and e.checker.hint, f"{e.exercise}: no registered checker"
        assert e.wrong_answers and all(w.strip() for w in e.wrong_answers), e.exercise
    page = answer_key.markdown(found, sources)
    for e in found:
        entry = page.split(f'id="{answer_key.anchor(e.exercise)}"')[1].split("<h3 ")[0]
        for part in ("**Question**", "**Method**", "**Expected answer**", "**Common wrong answers"):
            assert part in entry, f"{e.exercise}: the key lacks {part}"


def test_wrong_answers_are_read_from_the_checkers_source(tmp_path: Path) -> None:
    source = tmp_path / "exercises.py"
    source.write_text('''
from course_utils import exercises

@exercises.register("98.1", hint="multiply")
def _a(answer, *, expected):
    if not isinstance(answer, int):
        raise TypeError(f"the answer should be an int; got {answer!r}")
    slips = {"forgot the factor of two": expected / 2}
    for slip, value in slips.items():
        if answer == value:
            return f"{answer} {slip}"
    if answer < 0:
        return f"{answer} is negative: a count never is"
    return f"{answer} is not what this run gives"

@exercises.register("98.2", hint="just count")
def _b(answer, *, measured):
    return exercises.exact(answer, measured)
''')
    read = answer_key.checkers([source])
    assert read["98.1"].named == ("forgot the factor of two", "… is negative: a count never is")
    assert read["98.1"].wrong_kind == ("the answer should be an int; got …",)
    assert read["98.2"].named == () and read["98.2"].scoring == ("exercises.exact(answer, measured)",)
    entry = answer_key.Entry("98.2", "98_x", "q", "m", "e", "c", read["98.2"])
    assert entry.wrong_answers == [answer_key.NONE_NAMED]


class _Links(HTMLParser):
    """The ids of a page, and the answer-key links inside its speaker notes (<aside class="notes">)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.note_links: list[str] = []
        self.links: list[str] = []
        self._aside = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "aside" and "notes" in (a.get("class") or ""):
            self._aside += 1
        if tag == "a" and (a.get("href") or "").startswith(answer_key.PAGE):
            self.links.append(a["href"])
            if self._aside:
                self.note_links.append(a["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "aside" and self._aside:
            self._aside -= 1


def _parsed(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text())
    return parser


@pytest.mark.integration
def test_links_from_the_notes_and_the_guide_resolve() -> None:
    manifest = build_slides.ensure_built()
    key = build_slides.OUT / answer_key.PAGE
    ids = _parsed(key).ids
    for deck in manifest["decks"]:
        links = _parsed(build_slides.OUT / deck["file"]).note_links
        checked = minutes.CHECK.findall((ROOT / "notebooks" / f"{deck['name']}.py").read_text())
        assert {f"{answer_key.PAGE}#{answer_key.anchor(i)}" for i in checked} <= set(links), \
            f"{deck['name']}: an exercise without its answer-key link in the speaker notes"
        assert f"{answer_key.PAGE}#notebook-{deck['name']}" in links, f"{deck['name']}: the title notes lack the key"
        dead = [link for link in links if link.partition("#")[2] not in ids]
        assert not dead, f"{deck['name']}: links to entries the key does not have: {dead}"
    guide = _parsed(build_slides.OUT / "instructor_guide.html").links
    assert len(guide) >= len(_used_ids()), "the guide's answers do not link to the key"
    assert all(link.partition("#")[2] in ids | {""} for link in guide), "the guide links to entries the key lacks"
    assert re.search(r"<h3 id=\"exercise-00-1\">", key.read_text())
