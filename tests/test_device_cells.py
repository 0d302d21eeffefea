"""Issue 38.6: each notebook's device-dependent cells (tagged ``device``: set-up, sizes, dtype and precision
choices, mesh, skip sentences) run under the T4 and TPU v5e-1 plans at smoke size on this CPU, so that a branch a
Colab runtime takes and that raises is found here. ``COURSE_DEVICE`` makes ``cu.devices.describe()`` answer the
rehearsed device (its dtypes, tolerances, mesh and skips; torch stays on this CPU); the TPU rehearsal also blocks
TensorFlow (Colab's TPU runtimes ship none). Whole notebooks per profile belong to ``make colab-check``.

Run as a script (``python tests/test_device_cells.py PROFILE``) it is the driver: the tagged cells of each
notebook, in order, in one forked process per notebook (one interpreter per profile: its imports are paid once),
the last expression shown as a kernel would, and one JSON line of results at the end.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
TAG = "device"
PROFILES = {"T4": "", "TPU v5e-1": "tensorflow"}  # profile -> COURSE_BLOCK (the frameworks that runtime lacks)
# The skip sentences the tagged cells print, where the plan has that skip: {capability: notebooks}
PRINTED = {"several devices": ("05_data_parallel", "06_beyond_one_machine"), "fp8": ("03_mixed_precision",)}
# the sentence cu.notebook.needs prints for TensorFlow on a runtime without it
NO_TENSORFLOW = "not installed in this runtime (Colab TPU runtimes ship none)"


def tagged_cells(path: Path) -> list[str]:
    """The sources of the code cells tagged ``device`` in ``path``'s notebook, in order (read from the .ipynb, in
    sync with the .py: plain JSON, so the driver runs in any environment, Colab's versions included)."""
    cells = json.loads(path.with_suffix(".ipynb").read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code" and TAG in c["metadata"].get("tags", [])]


def _run_cell(source: str, namespace: dict, label: str) -> None:
    """Execute ``source`` as a kernel would: its last expression's value is shown."""
    tree = ast.parse(source, label)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, label, "exec"), namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), label, "eval"), namespace)
        if value is not None:
            print(repr(value))


def _child(path: Path) -> None:
    os.chdir(path.parent)  # a notebook's kernel starts in notebooks/
    namespace: dict = {"__name__": "__main__"}
    for i, source in enumerate(tagged_cells(path)):
        print(f"--- {path.stem} device cell {i + 1}", flush=True)
        _run_cell(source, namespace, f"{path.stem} device cell {i + 1}")
        sys.stdout.flush()


def drive(paths: list[Path]) -> dict[str, dict]:
    """Run each notebook's tagged cells in a forked child; {notebook: {"ok", "seconds", "cells"}}."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy  # noqa: F401  (imported once, before the forks: importing starts no framework's runtime)
    import torch  # noqa: F401

    from course_utils import env

    for name in ("jax", "tensorflow"):
        if env.available(name):
            env.import_tensorflow() if name == "tensorflow" else __import__(name)

    results = {}
    for path in paths:
        start = time.perf_counter()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _child(path)
            except BaseException:
                traceback.print_exc(file=sys.stdout)
                code = 1
            sys.stdout.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        results[path.stem] = {"ok": os.waitstatus_to_exitcode(status) == 0, "cells": len(tagged_cells(path)),
                              "seconds": round(time.perf_counter() - start, 1)}
    return results


if __name__ == "__main__":  # the driver: before pytest's import, so it runs where pytest is absent (Colab's versions)
    print(json.dumps(drive(NOTEBOOKS)))
    sys.exit(0)

import pytest  # noqa: E402


def test_every_notebook_tags_its_set_up_and_sizes_cells() -> None:
    for path in NOTEBOOKS:
        cells = tagged_cells(path)
        assert any("cu.notebook.setup()" in c for c in cells), f"{path.stem}: its set-up cell is not tagged"
        assert any("cu.env.sizes(" in c for c in cells), f"{path.stem}: its sizes cell is not tagged"


@pytest.mark.slow
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_device_cells_run_under_the_profile_at_smoke_size(profile: str) -> None:
    from course_utils import devices

    blocker = ROOT / "tools" / "blocker"
    env = {**os.environ, "COURSE_DEVICE": profile, "COURSE_SIZE": "smoke", "MPLBACKEND": "Agg",
           "COURSE_BLOCK": PROFILES[profile], "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}
    env.pop("COURSE_ACCELERATOR", None)
    out = subprocess.run([sys.executable, __file__, profile], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    tail = out.stdout[-6000:] + out.stderr[-3000:]
    assert out.returncode == 0 and out.stdout.strip(), tail
    results = json.loads(out.stdout.strip().splitlines()[-1])
    failed = [nb for nb, r in results.items() if not r["ok"]]
    assert not failed, f"{profile}: device cells raised in {failed}:\n{tail}"
    assert set(results) == {p.stem for p in NOTEBOOKS}
    plan = devices.plan(devices.simulated(profile))
    printed = _parts(out.stdout)
    for capability, notebooks in PRINTED.items():
        sentence = plan.skip(capability)
        for nb in notebooks if sentence else ():
            assert sentence in printed[nb], f"{profile} {nb}: the {capability!r} skip's sentence is not printed"
    # the dtype branch taken: 03's autocast runs its linear layer in the plan's fast format (fp16 on a T4)
    assert f"'linear': '{plan.fast_dtype}'" in printed["03_mixed_precision"], printed["03_mixed_precision"]
    if "tensorflow" in PROFILES[profile]:  # every notebook whose tagged cells ask for a framework says why
        asking = [p.stem for p in NOTEBOOKS if any("cu.notebook.needs(" in c for c in tagged_cells(p))]
        assert asking and all(NO_TENSORFLOW in printed[nb] for nb in asking), (asking, tail)


def _parts(stdout: str) -> dict[str, str]:
    """A driver's output, split by notebook."""
    parts: dict[str, str] = {}
    for line in stdout.splitlines():
        if line.startswith("--- ") and " device cell " in line:
            current = line[4:].split(" device cell ")[0]
            parts.setdefault(current, "")
        elif parts:
            parts[current] += line + "\n"
    return parts
