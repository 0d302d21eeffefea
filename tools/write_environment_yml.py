"""Write environment.yml (conda, Binder) from requirements.txt, so that the two never disagree."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = """\
# Generated from requirements.txt by tools/write_environment_yml.py (make environment.yml).
# conda/Binder users: conda env create -f environment.yml
name: eager-to-compiled
channels:
  - conda-forge
dependencies:
  - python=3.11
  - pip
  - pip:
"""


def requirement_lines(path: Path = ROOT / "requirements.txt") -> list[str]:
    """Return the pin lines of a requirements file, without comments or blank lines."""
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def render() -> str:
    """Return the environment.yml text for the current requirements.txt."""
    pins = "".join(f"      - {line!r}\n" if ";" in line else f"      - {line}\n" for line in requirement_lines())
    return HEADER + pins


if __name__ == "__main__":
    (ROOT / "environment.yml").write_text(render())
