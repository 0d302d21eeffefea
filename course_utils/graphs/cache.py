"""One job's compile, cold and warm, each in a fresh process (``workers/compile_cache.py``): **cold** in an empty
``TORCHINDUCTOR_CACHE_DIR``, then saving the portable artifacts; **portable** in another empty folder filled by
``load_cache_artifacts``; **local** in the cold run's own folder. Seconds are the model's first call (Inductor's lazy
imports and start-up included, the worker's imports not); notebook 07's cost model reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from course_utils import calls, declare, display
from course_utils.declare import NonNegativeFloat, Range
from course_utils.graphs.regional import MAX_DEPTH, MAX_WIDTH

WORKER = Path(__file__).resolve().parent.parent / "workers" / "compile_cache.py"
COLD, PORTABLE, LOCAL = "cold", "portable", "local"
PROCESS_TIMEOUTS = 4  # a fresh process's default limit, in the size's default limits for learner code
_HOW = {COLD: "empty cache folder; then save_cache_artifacts()",
        PORTABLE: "another empty folder + load_cache_artifacts()",
        LOCAL: "the cold run's own folder (persistent cache)"}


Count = Annotated[int, Range(0)]


@declare.checked
@dataclass(frozen=True)
class Run:
    """One fresh process's first call: seconds, FX-graph cache hits and misses, compiled libraries (``*.so``) in
    its cache folder before and after the first call, and the seconds ``load_cache_artifacts`` took (0 if none)."""

    seconds: NonNegativeFloat
    hits: Count
    misses: Count
    libraries_before: Count
    libraries_after: Count
    load_seconds: NonNegativeFloat = 0.0

    @property
    def libraries_built(self) -> int:
        """Compiled libraries the first call had to build (the C++ compiler ran for each, on a CPU)."""
        return self.libraries_after - self.libraries_before


@declare.checked
@dataclass(frozen=True, repr=False)
class CacheTimes:
    """The three runs of ``compile_cache_times``; ``cold``, ``portable`` and ``local`` are seconds of the first
    call, ``runs`` the details; ``artifact_bytes`` the size of the saved artifacts."""

    runs: dict[str, Run]
    artifact_bytes: int

    @property
    def cold(self) -> float:
        return self.runs[COLD].seconds

    @property
    def portable(self) -> float:
        return self.runs[PORTABLE].seconds

    @property
    def local(self) -> float:
        return self.runs[LOCAL].seconds

    def facts(self) -> dict[str, str | int]:
        """The numbers ``graphs.findings.CACHE`` quotes: the cold seconds, the artifacts' load time and the compiled
        libraries each first call built (and those the portable folder held before it)."""
        cold, portable, local = self.runs[COLD], self.runs[PORTABLE], self.runs[LOCAL]
        return {"cold": display.format_time(cold.seconds), "load": display.format_time(portable.load_seconds),
                "cold_built": cold.libraries_built, "portable_built": portable.libraries_built,
                "local_built": local.libraries_built, "before": portable.libraries_before}

    def table(self) -> display.Table:
        rows = [(name, _HOW[name], display.format_time(r.seconds), f"{r.hits} / {r.misses}", str(r.libraries_built),
                 display.format_time(r.load_seconds) if name == PORTABLE else "-") for name, r in self.runs.items()]
        return display.table(["process", "its Inductor cache", "first call (compile)", "FX-graph cache hits / misses",
                              "compiled libraries built", "load_cache_artifacts"], rows,
                             title="One job's compile in three fresh processes",
                             note=f"artifacts saved by the cold process: {display.format_bytes(self.artifact_bytes)}; "
                                  "the first call includes Inductor's lazy imports and start-up; the worker's own "
                                  "imports and model building are not counted")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


@declare.checked
def compile_cache_times(depth: Annotated[int, Range(1, MAX_DEPTH)] = 4, width: Annotated[int, Range(1, MAX_WIDTH)] = 32,
                        *, timeout: Annotated[float, Range(1, 3600)] | None = calls.DEFAULT_TIMEOUT) -> CacheTimes:
    """The first call of ``torch.compile(stack(depth, width))`` in three fresh processes (module docstring), each
    under ``timeout`` seconds (None: ``PROCESS_TIMEOUTS`` x the size's default for learner code: a fresh process
    imports torch and compiles cold, a few times one compile in a warm process)."""
    timeout = PROCESS_TIMEOUTS * calls.default_timeout() if timeout is None else timeout
    runs: dict[str, Run] = {}
    with tempfile.TemporaryDirectory(prefix="compile-cache-") as tmp:
        first, other, artifacts = Path(tmp, "cold"), Path(tmp, "portable"), Path(tmp, "artifacts.bin")
        plan = ((COLD, "save", first), (PORTABLE, "load", other), (LOCAL, "local", first))
        for name, mode, folder in plan:
            folder.mkdir(exist_ok=True)
            found = _run(mode, artifacts, folder, depth, width, timeout)
            runs[name] = Run(float(found["first_call_s"]), int(found["hits"]), int(found["misses"]),
                             int(found["libraries_before"]), int(found["libraries_after"]),
                             float(found.get("load_s", 0.0)))
        size = artifacts.stat().st_size
    return CacheTimes(runs, size)


def _run(mode: str, artifacts: Path, folder: Path, depth: int, width: int, timeout: float) -> dict[str, Any]:
    environ = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(folder)}
    command = [sys.executable, str(WORKER), mode, str(artifacts), "--depth", str(depth), "--width", str(width)]
    try:
        done = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"the {mode} run of {WORKER.name} ran past timeout={timeout:g} s and was stopped; pass a "
                           "larger timeout to allow more") from None
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} run of {WORKER.name} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raise RuntimeError(f"the {mode} run of {WORKER.name} printed no result:\n{done.stdout[-1000:]}") from None


@declare.checked
def cache_worker() -> Any:
    """The worker's source, syntax-highlighted in a notebook: what each of the three processes runs."""
    from IPython.display import Code

    return Code(WORKER.read_text(), language="python")
