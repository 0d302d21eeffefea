"""Write the learner edition: every course notebook without stored outputs, its solution cells (tagged
``solution``) hidden the way Colab hides a cell: a form (``cellView: form``) whose first line is
``#@title Solution (run to check, open to read)``, collapsed in Colab as in JupyterLab (``source_hidden``). Its
title badge opens the edition itself in Colab (``notebooks/learner/NN_name.ipynb`` at the release tag, where the
edition is published: ``PUBLISHED``).

    python tools/learner_edition.py --out build/learner            # write the edition
    python tools/learner_edition.py --out build/learner --execute  # and run it at the current COURSE_SIZE
    COURSE_BLOCK=tensorflow python tools/learner_edition.py --out /tmp/e --execute  # as in a runtime without TF

With ``--execute`` each notebook of the edition runs top to bottom as a learner who opened no solution runs it
(its solution cells left out of the run); the run fails when a cell raises or when an exercise check prints
anything but ``not attempted`` (a learner who has not answered yet must see exactly that, and nothing may break
before they start).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from minutes import is_solution  # noqa: E402  (a code cell tagged ``solution``)
from run_course import block_frameworks, course_notebooks, execute, slowest  # noqa: E402

from course_utils import notebook  # noqa: E402  (the badge: the one place that builds Colab links)

CHECK_LINE = re.compile(r"^exercise (\d\d\.\d+): (.*)$", re.M)
FORM_TITLE = "#@title Solution (run to check, open to read)"
PUBLISHED = "learner"  # the edition's folder under notebooks/ at the release tag: what its badges open
_BADGE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*/notebooks/([^)/]+\.ipynb)\)")


def colab_form(cell: nbformat.NotebookNode) -> None:
    """Hide a solution cell in Colab (a form titled ``FORM_TITLE``: code collapsed until opened, run as it is)
    and in JupyterLab (``source_hidden``)."""
    if not cell.source.startswith(FORM_TITLE):
        cell.source = f"{FORM_TITLE}\n{cell.source}"
    cell.metadata["cellView"] = "form"
    cell.metadata.setdefault("jupyter", {})["source_hidden"] = True


def learner_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without stored outputs (nor their run's timestamps), its solutions Colab forms, its badges
    opening the published edition."""
    copy = nbformat.from_dict(nb)
    for cell in copy.cells:
        if cell.cell_type == "markdown":
            cell.source = _BADGE.sub(lambda m: notebook.badge(f"{PUBLISHED}/{m.group(1)}"), cell.source)
            continue
        cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)  # the timestamps of the run whose outputs went
        if is_solution(cell):
            colab_form(cell)
    return copy


def unanswered(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` as a learner who opened no solution runs it: without its solution cells."""
    copy = nbformat.from_dict(nb)
    copy.cells = [c for c in copy.cells if not is_solution(c)]
    return copy


def run_unanswered(target: Path, kernel: str, timeout: int) -> tuple[nbformat.NotebookNode, float, str | None]:
    """Run the edition at ``target`` without its solution cells; write it back with the outputs of that run."""
    edition = nbformat.read(target, as_version=4)
    nbformat.write(unanswered(edition), target)
    ran, seconds, error = execute(target, kernel, timeout)
    outputs = {cell.get("id"): cell for cell in ran.cells}
    for cell in edition.cells:
        if cell.cell_type == "code" and cell.get("id") in outputs:
            cell.outputs, cell.execution_count = outputs[cell.id].outputs, outputs[cell.id].execution_count
    nbformat.write(edition, target)
    return ran, seconds, error


def check_lines(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(exercise id, status) for every check line the executed notebook printed."""
    found = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            found += CHECK_LINE.findall("".join(output.get("text", "")))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: all course notebooks)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the learner edition")
    parser.add_argument("--execute", action="store_true", help="run the edition and check what the learner sees")
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel name")
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed per cell")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if os.environ.get("COURSE_BLOCK"):
        block_frameworks()
    failures = []
    for path in [p.resolve().with_suffix(".ipynb") for p in args.notebooks] or course_notebooks():
        target = args.out / path.name
        nbformat.write(learner_copy(nbformat.read(path, as_version=4)), target)
        if not args.execute:
            print(f"wrote {target}")
            continue
        nb, seconds, error = run_unanswered(target, args.kernel, args.timeout)
        lines = check_lines(nb)
        wrong = [f"{i}: {status}" for i, status in lines if status != "not attempted"]
        problem = error or (f"checks that are not 'not attempted': {wrong}" if wrong else None) or (
            None if lines else "no exercise check printed anything")
        print(f"{path.stem}: {'ok' if problem is None else 'FAILED: ' + problem} "
              f"({len(lines)} checks, {seconds:.0f} s; slowest: {slowest(nb)})", flush=True)
        if problem:
            failures.append(path.stem)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
