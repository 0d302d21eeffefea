"""The release checklist's checks (``make release``; README, "Publishing a release").

Checked: the tag ``RELEASE`` is ``v`` + pyproject's version and ``REPO_URL`` is pyproject's Repository (the address
and tag live in ``course_utils/notebook.py`` only); the git remote ``origin`` is that address; the tag exists and
points at HEAD; every notebook (both files of its jupytext pair) opens with the current badge and install cell; the
README shows the current badges. Each problem is printed with the command that fixes it; exit 1 when there is one.

``--write`` rewrites every notebook pair's badge and install cell from ``course_utils.notebook`` (after the
address, the tag or the install cell changed), then run ``make sync`` and the checks again.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from course_utils import notebook  # noqa: E402

BADGE = re.compile(r"\[!\[Open In Colab\]\(https://colab\.research\.google\.com/assets/colab-badge\.svg\)\]"
                   r"\(https://colab\.research\.google\.com/github/[^)\s]*/notebooks/(\d\d_\w+\.ipynb)\)")


def course_notebooks(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _git(root: Path, *args: str) -> str | None:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def version_problems(root: Path) -> list[str]:
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    found = []
    if notebook.RELEASE != f"v{project['version']}":
        found.append(f"RELEASE {notebook.RELEASE} is not v + pyproject's version {project['version']}: set RELEASE in "
                     "course_utils/notebook.py")
    if notebook.REPO_URL != project["urls"]["Repository"]:
        found.append(f"REPO_URL {notebook.REPO_URL} differs from pyproject's Repository "
                     f"{project['urls']['Repository']}: make them one address")
    return found


def git_problems(root: Path) -> list[str]:
    found = []
    origin = _git(root, "remote", "get-url", "origin")
    if origin is None or origin.removesuffix(".git") != notebook.REPO_URL:
        found.append(f"the remote origin is {origin or 'not set'}, not {notebook.REPO_URL}: "
                     f"git remote add origin {notebook.REPO_URL}.git")
    tagged = _git(root, "rev-parse", "--verify", "--quiet", f"{notebook.RELEASE}^{{commit}}")
    if tagged is None:
        found.append(f"no tag {notebook.RELEASE}: git tag -a {notebook.RELEASE} -m 'Eager to Compiled "
                     f"{notebook.RELEASE}' && git push origin {notebook.RELEASE}")
    elif tagged != _git(root, "rev-parse", "HEAD"):
        found.append(f"the tag {notebook.RELEASE} is not HEAD: release from the tagged commit, or bump the version")
    return found


def notebook_problems(root: Path) -> list[str]:
    found = []
    for path in course_notebooks(root):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        if not nb.cells or notebook.badge(path.name) not in nb.cells[0].source:
            found.append(f"{path.name}: the title cell lacks {notebook.badge(path.name)}")
        if not code or code[0].source != notebook.install_cell():
            found.append(f"{path.name}: the first code cell is not notebook.install_cell()")
        text = path.with_suffix(".py").read_text()
        if notebook.badge(path.name) not in text or notebook.install_cell() not in text:
            found.append(f"{path.with_suffix('.py').name}: badge or install cell out of date")
    readme = (root / "README.md").read_text()
    stale = [m.group(0) for m in BADGE.finditer(readme) if m.group(0) != notebook.badge(m.group(1))]
    found += [f"README.md: a badge is out of date: {badge}" for badge in stale]
    if found:
        found.append("fix the notebooks with: python tools/release_check.py --write && make sync")
    return found


def write_notebooks(root: Path) -> list[Path]:
    """Rewrite each notebook pair's badge and install cell from course_utils.notebook; return the files changed."""
    changed = []
    for path in course_notebooks(root):
        nb = nbformat.read(path, as_version=4)
        old_cell = next(c for c in nb.cells if c.cell_type == "code").source
        script = path.with_suffix(".py")
        for target, text in ((path, path.read_text()), (script, script.read_text())):
            new = BADGE.sub(lambda m: notebook.badge(m.group(1)), text)
            if target == path:
                new = nbformat.writes(_with_install_cell(nbformat.reads(new, as_version=4))) + "\n"
            else:
                new = new.replace(old_cell, notebook.install_cell())
            if new != text:
                target.write_text(new)
                changed.append(target)
    return changed


def _with_install_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    next(c for c in nb.cells if c.cell_type == "code").source = notebook.install_cell()
    return nb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite every notebook pair's badge and install cell")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    args = parser.parse_args()
    if args.write:
        for path in write_notebooks(args.root):
            print(f"rewrote {path.relative_to(args.root)}")
    found = version_problems(args.root) + git_problems(args.root) + notebook_problems(args.root)
    for problem in found:
        print(f"- {problem}")
    print("release checks: " + ("all passed" if not found else f"{len(found)} to fix"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
