"""Compile time as a cost you can cut: ``stack(depth, width)`` compiled whole, by region and with a
``nested_compile_region`` (caches off); one job's compile in three fresh processes: cold, artifacts loaded, warm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from course_utils import calls, declare, display, timing
from course_utils.declare import NonEmpty, NonNegativeFloat, Range

MAX_DEPTH, MAX_WIDTH = 64, 4096


@declare.checked
def stack(depth: Annotated[int, Range(1, MAX_DEPTH)] = 4, width: Annotated[int, Range(1, MAX_WIDTH)] = 32, *,
          block_call: Callable[[Any, Any], Any] | None = None, seed: Annotated[int, Range(0, 2**32 - 1)] = 0) -> Any:
    """A ``torch.nn.Module`` of ``depth`` identical residual blocks (``.blocks``) and a linear head to 10 classes;
    ``block_call(block, x)`` is how ``forward`` calls each block (a ``nested_compile_region`` function, say)."""
    import torch
    from torch import nn

    call = block_call or (lambda block, x: block(x))

    class Block(nn.Module):
        """x + down(gelu(up(norm(x)))): one layer of the stack."""

        def __init__(self) -> None:
            super().__init__()
            self.norm, self.up = nn.LayerNorm(width), nn.Linear(width, 4 * width)
            self.down = nn.Linear(4 * width, width)

        def forward(self, x: Any) -> Any:
            return x + self.down(nn.functional.gelu(self.up(self.norm(x))))

    class Stack(nn.Module):
        """``depth`` blocks, then a linear head."""

        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(depth))
            self.head = nn.Linear(width, 10)

        def forward(self, x: Any) -> Any:
            for block in self.blocks:
                x = call(block, x)
            return self.head(x)

    torch.manual_seed(seed)
    return Stack()


@declare.checked
def first_call_seconds(fn: Callable[..., Any], *args: Any, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> float:
    """Seconds of ``fn(*args)``'s first call (its compile), synchronised, with Inductor's caches off
    (``force_disable_caches``) so that it pays its whole compile whatever an earlier run left on disk."""
    from torch._inductor import config

    limit = calls.time_limit(timeout, calls.describe(fn))
    with config.patch(force_disable_caches=True), limit, warnings.catch_warnings():
        # "dynamo_pgo force disabled by torch.compiler.config.force_disable_caches": that is the point here
        warnings.filterwarnings("ignore", message=".*force_disable_caches.*")
        start = time.perf_counter()
        timing.sync(fn(*args))
        return time.perf_counter() - start


@declare.checked
def forward_step(model: Callable[..., Any]) -> Callable[[Any], Any]:
    """``step(x)``: a forward pass of ``model`` under ``torch.no_grad``, what the regional section times."""
    import torch

    def step(x: Any) -> Any:
        with torch.no_grad():
            return model(x)

    return step


@declare.checked
def call_times(steps: Annotated[dict[str, Callable[[Any], Any]], NonEmpty], x: Any, *,
               rounds: Annotated[int, Range(2, 100)] = 6, min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.3,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, timing.Measurement]:
    """Each step's time per call on ``x`` in ``rounds`` alternating rounds; each is called once first (untimed)."""
    for step in steps.values():
        with calls.time_limit(timeout, calls.describe(step)):
            timing.sync(step(x))
    with calls.time_limit(timeout, calls.describe(next(iter(steps.values())))):
        return timing.interleaved({name: (lambda s=step: s(x)) for name, step in steps.items()}, rounds=rounds,
                                  min_time=min_time)


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
class CacheTimes(display.Tabled):
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


@declare.checked
def compile_cache_times(depth: Annotated[int, Range(1, MAX_DEPTH)] = 4, width: Annotated[int, Range(1, MAX_WIDTH)] = 32,
                        *, timeout: Annotated[float, Range(1, 3600)] | None = calls.DEFAULT_TIMEOUT) -> CacheTimes:
    """The first call of ``torch.compile(stack(depth, width))`` in three fresh processes (module docstring), each
    within ``timeout`` s (None: ``PROCESS_TIMEOUTS`` x the size's default: a fresh process imports, compiles cold)."""
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
