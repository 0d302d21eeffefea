"""Execute the course notebooks headless: into build/ (make course) or in place (make execute).

build/notebooks/   the executed notebooks
build/figures/     every image output, as PNG, one folder per notebook
build/summary.md   per notebook: status, minutes against its budget, and the numbers it measured

COURSE_BLOCK=tensorflow (or jax) runs the notebooks as in a runtime without that framework (tools/blocker).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
import psutil
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def course_notebooks() -> list[Path]:
    """The course notebooks in order: notebooks/NN_name.ipynb."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


class KernelWatch:
    """Keeps the kernel's process and samples its memory (with its children) every half second while a notebook
    runs, so that a kernel that dies is reported with its exit status, the signal that ended it and its peak. A
    cell that runs past ``hang_after`` seconds is taken for a hang: its process tree is listed and each process is
    sent SIGABRT, which the faulthandler (PYTHONFAULTHANDLER, set by ``execute``) turns into every thread's Python
    stack on the kernel's stderr, so a hang in CI names the line it waited on."""

    def __init__(self, hang_after: float | None = None) -> None:
        self.process: Any = None
        self.peak = 0
        self.hang_after = hang_after
        self.hung = ""
        self._cell: tuple[int, float] | None = None
        self._stop = threading.Event()

    def start(self, client: NotebookClient) -> None:
        self.process = getattr(client.km.provisioner, "process", None)
        if self.process is not None:
            threading.Thread(target=self._sample, daemon=True).start()

    def cell_started(self, cell_index: int, **_: Any) -> None:
        self._cell = cell_index, time.monotonic()

    def stop(self) -> None:
        self._stop.set()

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            try:
                kernel = psutil.Process(self.process.pid)
                tree = [kernel, *kernel.children(recursive=True)]
                rss = sum(p.memory_info().rss for p in tree)
            except (psutil.Error, OSError):
                return
            self.peak = max(self.peak, rss)
            if self.hang_after and self._cell and not self.hung and time.monotonic() - self._cell[1] > self.hang_after:
                self.hung = self._abort(tree)

    def _abort(self, tree: list[psutil.Process]) -> str:
        """List ``tree`` (pid, state, CPU seconds, command) and send each process SIGABRT; the listing."""
        rows = []
        for p in tree:
            try:
                cpu = sum(p.cpu_times()[:2])
                rows.append(f"{p.pid} {p.status()} {cpu:.1f} cpu-s {' '.join(p.cmdline())[:120]}")
                p.send_signal(signal.SIGABRT)
            except psutil.Error:
                continue
        return (f"cell {self._cell[0]} ran past {self.hang_after:.0f} s: taken for a hang; its processes (each sent "
                "SIGABRT, their Python stacks are on stderr):\n  " + "\n  ".join(rows))

    def why(self) -> str:
        """What ended the kernel: its exit status (a negative one names the signal) and its sampled peak memory."""
        code = self.process.poll() if self.process is not None else None
        ended = ("the kernel process is still running (it stopped answering)" if code is None else
                 f"the kernel exited with {signal.Signals(-code).name}" + (" (the Linux OOM killer, or a kill -9)"
                                                                          if code == -signal.SIGKILL else "")
                 if code < 0 else f"the kernel exited with status {code}")
        available = psutil.virtual_memory().available
        return (f"{ended}; peak memory of the kernel and its children {self.peak / 2**30:.2f} GiB (sampled every "
                f"0.5 s), {available / 2**30:.1f} GiB available on the machine now" + (f"; {self.hung}" if self.hung
                                                                                        else ""))


def execute(path: Path, kernel: str, timeout: int) -> tuple[nbformat.NotebookNode, float, str | None]:
    """Run one notebook top to bottom in its own folder; return it, the seconds it took and any error (a kernel
    that died says how: exit status or signal, and peak memory; a cell that hangs, where it waited)."""
    os.environ.setdefault("PYTHONFAULTHANDLER", "1")  # the kernel and its children print their stacks on SIGABRT
    nb = nbformat.read(path, as_version=4)
    watch = KernelWatch(hang_after=max(1.0, timeout - 30.0))
    client = NotebookClient(nb, kernel_name=kernel, timeout=timeout, resources={"metadata": {"path": str(path.parent)}})
    client.on_notebook_start = lambda notebook: watch.start(client)
    client.on_cell_start = watch.cell_started
    start = time.perf_counter()
    error = None
    try:
        client.execute()
    except CellExecutionError as exc:
        error = str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
    except DeadKernelError:
        error = f"DeadKernelError: {watch.why()}"
    except TimeoutError:  # nbclient's CellTimeoutError; the watch aborts a hung kernel first, so this is rare
        error = f"a cell ran past timeout={timeout} s: {watch.why()}"
    finally:
        watch.stop()
    return nb, time.perf_counter() - start, error


def cell_seconds(nb: nbformat.NotebookNode) -> list[tuple[int, float]]:
    """(cell index, seconds) for every cell the run timed (nbclient's timing metadata), slowest first."""
    from datetime import datetime

    def when(stamp: str) -> datetime:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    times = []
    for index, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            times.append((index, (when(timing["shell.execute_reply"]) - when(timing["iopub.execute_input"]))
                          .total_seconds()))
    return sorted(times, key=lambda t: -t[1])


def slowest(nb: nbformat.NotebookNode, count: int = 5) -> str:
    """The ``count`` slowest cells of an executed notebook, e.g. "cell 14 (times = cu.graphs...) 48 s": where a
    run's time goes, printed beside each notebook's total."""
    def first_line(index: int) -> str:
        return next((line for line in nb.cells[index].source.splitlines() if line and line[0] != "#"), "")[:32]

    return ", ".join(f"cell {i} ({first_line(i)}) {s:.0f} s" for i, s in cell_seconds(nb)[:count])


def save_figures(nb: nbformat.NotebookNode, folder: Path) -> int:
    """Write each PNG output of ``nb`` to ``folder``; return how many."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                count += 1
                (folder / f"cell{index:03d}_{count:02d}.png").write_bytes(base64.b64decode(png))
    return count


def budget_minutes(nb: nbformat.NotebookNode, size: str) -> float | None:
    minutes = nb.metadata.get("course", {}).get("minutes", {})
    return minutes.get("ci" if size in ("ci", "smoke") else "laptop")


def block_frameworks() -> None:
    """Make the kernels started from here import tools/blocker/sitecustomize.py (it reads COURSE_BLOCK)."""
    blocker = str(ROOT / "tools" / "blocker")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (blocker, os.environ.get("PYTHONPATH", "")) if p)


def write_summary(out: Path, results: list[dict]) -> None:
    lines = ["# Measured in this run", ""]
    lines += ["| notebook | status | minutes | budget |", "|---|---|---|---|"]
    for r in results:
        budget = "-" if r["budget_minutes"] is None else f"{r['budget_minutes']:g}"
        lines.append(f"| {r['notebook']} | {r['status']} | {r['minutes']:.1f} | {budget} |")
    for r in results:
        summary_file = out / "summary" / f"{r['notebook']}.json"
        if summary_file.exists():
            data = json.loads(summary_file.read_text())
            r["measured"] = data["rows"]
            lines += ["", f"## {r['notebook']}", "", "| quantity | measured | unit | note |", "|---|---|---|---|"]
            lines += [
                f"| {row['quantity']} | {row['value']:.4g} | {row['unit']} | {row['note']} |" for row in data["rows"]
            ]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps(results, indent=2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: all course notebooks)")
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel name")
    parser.add_argument("--out", type=Path, default=ROOT / "build", help="output folder")
    parser.add_argument("--in-place", action="store_true", help="write outputs back into notebooks/ instead")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds allowed per cell")
    args = parser.parse_args()

    paths = [p.resolve().with_suffix(".ipynb") for p in args.notebooks] or course_notebooks()
    if os.environ.get("COURSE_BLOCK"):
        if args.in_place:
            parser.error("COURSE_BLOCK rehearses a runtime without some frameworks: write to --out, not --in-place")
        block_frameworks()
    out = args.out.resolve()
    os.environ["COURSE_SUMMARY_DIR"] = str(out / "summary")
    size = os.environ.get("COURSE_SIZE", "auto")
    results = []
    try:
        for path in paths:
            print(f"running {path.name} (COURSE_SIZE={size}) ...", flush=True)
            nb, seconds, error = execute(path, args.kernel, args.timeout)
            target = path if args.in_place else out / "notebooks" / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
            figures = save_figures(nb, out / "figures" / path.stem)
            status = "ok" if error is None else f"FAILED: {error}"
            results.append({"notebook": path.stem, "status": status, "minutes": seconds / 60,
                            "budget_minutes": budget_minutes(nb, size), "figures": figures})
            print(f"  {status} in {seconds:.0f} s, {figures} figures -> {target}; slowest: {slowest(nb)}",
                  flush=True)
            if not args.in_place:
                write_summary(out, results)  # after every notebook: a run cut short keeps what it finished
    except KeyboardInterrupt:  # Ctrl-C, or the time budget of tools/device_check.sh
        done = {r["notebook"] for r in results}
        results += [{"notebook": p.stem, "status": "FAILED: not run (interrupted)", "minutes": 0.0,
                     "budget_minutes": None, "figures": 0} for p in paths if p.stem not in done]
    if not args.in_place:
        write_summary(out, results)
        print(f"\nExecuted notebooks: {out / 'notebooks'}\nFigures: {out / 'figures'}\nSummary: {out / 'summary.md'}")
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
