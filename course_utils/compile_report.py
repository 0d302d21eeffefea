"""torch.compile's own account of a run: ``TORCH_TRACE`` logs of a fresh process (torch reads it at start) turned
into a ``tlparse`` report under ``build/tlparse/<name>``, with the compile, recompile and graph-break counts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from course_utils import calls, declare, display, env, validate

_Count = Annotated[int, declare.NonNegative]
_COMPILE_ID = re.compile(r"^\[(\d+)/(\d+)\]$")
_REPORT_ENTRIES = {"job.py", "logs", "report"}  # what torch_compile_report writes into folder/name


@declare.checked
@dataclass(frozen=True, repr=False)
class CompileReport(display.Tabled):
    """What tlparse found: frames compiled, compilations (first + recompiles), graph breaks and the reasons."""

    folder: Path
    frames: _Count
    compilations: _Count
    recompiles: _Count
    graph_breaks: _Count
    recompile_reasons: tuple[str, ...]
    break_reasons: tuple[str, ...]

    def __post_init__(self) -> None:
        validate.instance("folder", self.folder, Path)  # a str would pass the declaration, and not join paths
        if self.recompiles > self.compilations:
            raise ValueError(f"recompiles ({self.recompiles}) cannot exceed compilations ({self.compilations})")

    def table(self) -> display.Table:
        rows = [("frames compiled", str(self.frames)), ("compilations", str(self.compilations)),
                ("recompilations", str(self.recompiles)), ("graph breaks", str(self.graph_breaks))]
        rows += [("recompiled because", r) for r in self.recompile_reasons[:3]]
        rows += [("graph break", r) for r in self.break_reasons[:3]]
        return display.table(["tlparse", "found"], rows, note=f"report: {self.folder / 'index.html'}")


def tlparse_available() -> bool:
    """True where the tlparse executable can be found (the course's lock installs it; Colab does not)."""
    return _tlparse() is not None


def _tlparse() -> str | None:
    beside = Path(sys.executable).with_name("tlparse")
    return str(beside) if beside.exists() else shutil.which("tlparse")


@declare.checked
def torch_compile_report(code: declare.Text, name: declare.FileName = "compile", *,
                         folder: str | Path | None = None, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT,
                         ) -> CompileReport:
    """Run ``code`` as ``folder/name/job.py`` (default ``build/tlparse``) in a fresh process with ``TORCH_TRACE`` set,
    turn its logs into a tlparse report there (replacing only a report) and read the counts back."""
    limit = calls.Limit(timeout, f"code (run as {folder or 'build/tlparse'}/{name}/job.py)")
    if (tlparse := _tlparse()) is None:
        raise RuntimeError("tlparse is not installed: pip install tlparse (the course pins it in requirements.txt)")
    folder = env.build_dir("tlparse") if folder is None else validate.folder("folder", folder)
    out = folder / name
    logs = out / "logs"
    if out.exists():
        found = {p.name for p in out.iterdir()} if out.is_dir() else {"(a file)"}
        if not found <= _REPORT_ENTRIES:
            raise ValueError(f"folder/name {str(out)!r} exists and is not a report this function wrote (it holds "
                             f"{sorted(found - _REPORT_ENTRIES)[:3]}): choose another name or folder")
        shutil.rmtree(out)
    logs.mkdir(parents=True)
    environ = {**os.environ, "TORCH_TRACE": str(logs)}
    job = out / "job.py"
    job.write_text(code)
    run = _run([sys.executable, str(job)], limit, env=environ)
    if run.returncode != 0:
        raise RuntimeError(f"the traced code failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
    log_files = sorted(logs.glob("*.log"))
    if not log_files:
        raise RuntimeError("TORCH_TRACE wrote no log: did the code call a torch.compile'd function?")
    report = out / "report"
    parsed = _run([tlparse, str(log_files[-1]), "-o", str(report), "--no-browser", "--overwrite"], limit)
    if parsed.returncode != 0:
        raise RuntimeError(f"tlparse failed:\n{parsed.stderr[-2000:]}")
    return read_report(report)


def _run(command: list[str], limit: calls.Limit, **options: Any) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=limit.seconds, **options)
    except subprocess.TimeoutExpired:
        raise limit.expired() from None


def read_report(folder: str | Path) -> CompileReport:
    """Counts from a tlparse output folder (its ``compile_directory.json``)."""
    folder = Path(validate.instance("folder", folder, (str, Path)))
    index = folder / "compile_directory.json"
    if not index.is_file():
        raise ValueError(f"folder {str(folder)!r} holds no compile_directory.json: not a tlparse report")
    try:
        directory = json.loads(index.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"folder {str(folder)!r}: compile_directory.json is not JSON: {exc}") from None
    if not isinstance(directory, dict):
        raise ValueError(f"folder {str(folder)!r}: compile_directory.json must hold an object of compile ids; got "
                         f"{type(directory).__name__}")
    ids = {cid: m for cid in directory if (m := _COMPILE_ID.match(cid))}
    recompile_reasons, break_reasons = [], []
    for cid, match in ids.items():
        for name, url in _artifacts(folder, cid, directory[cid]):
            path = folder / url
            if name.startswith("recompile_reasons") and path.is_file():
                recompile_reasons.append(_first_line(path))
            if name.startswith("dynamo_graph_break_reason") and match.group(2) == "0" and path.is_file():
                break_reasons.append(_graph_break_reason(path))
    return CompileReport(
        folder=folder,
        frames=len({m.group(1) for m in ids.values()}),
        compilations=len(ids),
        recompiles=sum(m.group(2) != "0" for m in ids.values()),
        graph_breaks=len(break_reasons),
        recompile_reasons=tuple(recompile_reasons),
        break_reasons=tuple(break_reasons),
    )


def _artifacts(folder: Path, cid: str, entry: Any) -> list[tuple[str, str]]:
    """(name, url) of each artifact of one compile id; ValueError naming the field that is not what tlparse writes."""
    where = f"folder {str(folder)!r}: compile_directory.json entry {cid!r}"
    if not isinstance(entry, dict) or not isinstance(entry.get("artifacts", []), list):
        raise ValueError(f"{where} must be an object with an 'artifacts' list")
    found = []
    for i, artifact in enumerate(entry.get("artifacts", [])):
        if not isinstance(artifact, dict) or not isinstance(artifact.get("name"), str) \
                or not isinstance(artifact.get("url", ""), str):
            raise ValueError(f"{where}: artifacts[{i}] must be an object with a 'name' and a 'url' string; "
                             f"got {artifact!r:.80}")
        url = artifact.get("url", "")
        if Path(url).is_absolute() or ".." in Path(url).parts:
            raise ValueError(f"{where}: artifacts[{i}] field 'url' must stay inside the report folder; got {url!r}")
        found.append((artifact["name"], url))
    return found


def _first_line(path: Path) -> str:
    text = path.read_text(errors="replace").strip()
    try:  # recompile_reasons_N.json holds a JSON list of strings
        loaded = json.loads(text)
        text = loaded[0] if isinstance(loaded, list) and loaded else text
    except json.JSONDecodeError:
        pass
    return str(text).splitlines()[0][:160] if text else ""


def _graph_break_reason(path: Path) -> str:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("Graph Break Reason:"):
            return line.split(":", 1)[1].strip()[:160]
    return _first_line(path)
