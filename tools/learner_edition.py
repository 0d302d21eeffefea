"""Write the learner edition: every course notebook with its solution cells (tagged ``solution``) removed.

    python tools/learner_edition.py --out build/learner            # write the edition
    python tools/learner_edition.py --out build/learner --execute  # and run it at the current COURSE_SIZE
    COURSE_BLOCK=tensorflow python tools/learner_edition.py --out /tmp/e --execute  # as in a runtime without TF

With ``--execute`` each notebook of the edition runs top to bottom; the run fails when a cell raises or when
an exercise check prints anything but ``not attempted`` (a learner who has not answered yet must see exactly
that, and nothing may break before they start).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_course import block_frameworks, course_notebooks, execute  # noqa: E402

CHECK_LINE = re.compile(r"^exercise (\d\d\.\d+): (.*)$", re.M)


def learner_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without solution cells and without stored outputs."""
    copy = nbformat.from_dict(nb)
    copy.cells = [c for c in copy.cells if "solution" not in c.get("metadata", {}).get("tags", [])]
    for cell in copy.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return copy


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
        nb, seconds, error = execute(target, args.kernel, args.timeout)
        nbformat.write(nb, target)
        lines = check_lines(nb)
        wrong = [f"{i}: {status}" for i, status in lines if status != "not attempted"]
        problem = error or (f"checks that are not 'not attempted': {wrong}" if wrong else None) or (
            None if lines else "no exercise check printed anything")
        print(f"{path.stem}: {'ok' if problem is None else 'FAILED: ' + problem} "
              f"({len(lines)} checks, {seconds:.0f} s)", flush=True)
        if problem:
            failures.append(path.stem)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
