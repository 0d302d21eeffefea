"""The course file (course.toml): the lessons in order, each with its notebook, package, question, planned minutes,
accelerators and taught calls. The one list that tests, slides, the guide, the site and lesson_share read."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "course.toml"
FIELDS = {"notebook": str, "package": str, "question": str, "minutes": int, "accelerators": str, "taught": list,
          "shows_files": bool}


def lessons(path: Path = COURSE) -> list[dict]:
    """Every [[lesson]] of the course file, in order, each with every field of ``FIELDS`` of its type."""
    found = tomllib.loads(path.read_text()).get("lesson", [])
    if not found:
        raise ValueError(f"{path} lists no [[lesson]]")
    for i, lesson in enumerate(found):
        for field, kind in FIELDS.items():
            if not isinstance(lesson.get(field), kind):
                raise ValueError(f"{path}: lesson {i} needs {field} as {kind.__name__}; got {lesson.get(field)!r}")
    names = [lesson["notebook"] for lesson in found]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: a notebook is listed twice: {names}")
    return found


def notebooks() -> list[str]:
    """The lessons' notebook names, in course order."""
    return [lesson["notebook"] for lesson in lessons()]


def packages() -> list[str]:
    """The lessons' package names, in course order."""
    return [lesson["package"] for lesson in lessons()]


def source_for(name: str) -> Path:
    """The executed notebook in build/notebooks/ when there is one (after `make course`), else the stored one in
    notebooks/: what the decks, the guide and the answer key are built from."""
    executed = ROOT / "build" / "notebooks" / f"{name}.ipynb"
    return executed if executed.exists() else ROOT / "notebooks" / f"{name}.ipynb"
