"""The worker scripts as a notebook shows them (``show_worker``), and what a launched script calls: ``emit`` records,
``save`` arrays, ``progress``, the process-group timeout the launch chose, the one timing loop (``timed_rounds``)."""

from __future__ import annotations

import ast
import datetime
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from course_utils import declare, validate

OUT_ENV = "COURSE_DIST_OUT"  # the folder where launch() collects records and arrays
ID_ENV = "COURSE_LAUNCH_ID"  # marks every process of one launch, so that none is left behind
PROGRESS_PREFIX = "@@progress"  # a line the launcher turns into its progress bar (never shown as output)
PG_TIMEOUT_ENV = "COURSE_PG_TIMEOUT"  # seconds a rank waits in a collective before it raises (set by launch())
WORKERS = Path(__file__).resolve().parent.parent / "workers"


def rank() -> int:
    """This worker's global rank (0 outside torchrun)."""
    return int(os.environ.get("RANK", "0"))


def local_rank() -> int:
    """This worker's rank on its own machine: the GPU index it should use (0 outside torchrun)."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def world_size() -> int:
    """How many workers the job has (1 outside torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def pg_timeout() -> datetime.timedelta | None:
    """The process-group timeout ``launch`` chose, for ``init_process_group(backend, timeout=pg_timeout())``; None
    outside a launch (torch's default: 30 minutes for gloo, 10 for NCCL)."""
    value = os.environ.get(PG_TIMEOUT_ENV)
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{PG_TIMEOUT_ENV} must be a number of seconds; got {value!r}") from None
    return datetime.timedelta(seconds=validate.number(PG_TIMEOUT_ENV, seconds, low=1, high=86400))


def emit(**record: Any) -> None:
    """Record one JSON-ready dict for the notebook (``LaunchResult.records[rank]``); printed outside launch()."""
    validate.non_empty("record", record)
    line = json.dumps(record)
    target = os.environ.get(OUT_ENV)
    if target is None:
        print(line, flush=True)
        return
    with open(Path(target) / f"rank{rank()}.jsonl", "a") as f:
        f.write(line + "\n")


def save(name: str, **arrays: Any) -> None:
    """Save NumPy arrays for the notebook (``LaunchResult.arrays[name][rank]``)."""
    validate.text("name", name)
    if "." in name or "/" in name:
        raise ValueError(f"name must be a plain word without '.' or '/'; got {name!r}")
    validate.non_empty("arrays", arrays)
    folder = os.environ.get(OUT_ENV)
    if folder is None:
        raise RuntimeError(f"save({name!r}) outside cu.distributed.launch has no folder to write into: launch the "
                           f"script with cu.distributed.launch, or set {OUT_ENV} to a folder (ddp_train.py's --out)")
    target = Path(folder)
    if not target.is_dir():
        raise ValueError(f"{OUT_ENV} must name an existing folder; got {folder!r}")
    np.savez(target / f"{name}.rank{rank()}.npz", **{k: np.asarray(v) for k, v in arrays.items()})


@declare.checked
def progress(step: Annotated[int, declare.Range(0, 10**6)], total: Annotated[int, declare.Range(1, 10**6)],
             text: str = "") -> None:
    """On rank 0: advance the notebook's progress bar (a line never shown) and print ``text`` if any."""
    validate.number("step", step, high=total)
    if rank() == 0:
        print(f"{PROGRESS_PREFIX} {step} {total}" + (f"\n{text}" if text else ""), flush=True)


def sync_device(device: Any) -> None:
    """Wait for the GPU's queued work (nothing to wait for on a CPU)."""
    if getattr(device, "type", None) == "cuda":
        import torch

        torch.cuda.synchronize(device)


@declare.checked
def timed_rounds(device: Any, calls: Annotated[Mapping[str, Sequence[Any]], declare.NonEmpty],
                 n_rounds: Annotated[int, declare.Range(1, 1000)], repeats: Annotated[int, declare.Range(1, 10**6)],
                 together: bool = True, *, warmup: bool = True,
                 offset: Annotated[int, declare.Range(0, 10**6)] = 0) -> dict:
    """Each call (name -> (fn, *args)) timed ``repeats`` times over ``n_rounds`` rounds, in turns from ``offset``, ranks
    aligned at a barrier (``together``): {name: [seconds], "rounds": {name: [medians]}, "per_round": {name: [[s]]}}."""
    if together:
        import torch.distributed as dist
    names = list(calls)
    per_round = -(-repeats // n_rounds)  # at least ``repeats`` calls in all, the same number each round
    for fn, *args in calls.values() if warmup else ():
        fn(*args)
    found: dict = {name: [] for name in names}
    found["rounds"] = {name: [] for name in names}
    found["per_round"] = {name: [] for name in names}  # every round's own times, for ``records.from_rounds``
    for r in range(offset, offset + n_rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, *args = calls[name]
            times = []
            for _ in range(per_round):
                if together:
                    dist.barrier()
                sync_device(device)
                start = time.perf_counter()
                fn(*args)
                sync_device(device)
                times.append(time.perf_counter() - start)
            found[name] += times
            found["rounds"][name].append(float(np.median(times)))
            found["per_round"][name].append(times)
    return found


@declare.checked
def worker_path(script: str | os.PathLike) -> Path:
    """A worker script: a path that exists, or the name of one in ``course_utils/workers``."""
    path = Path(script)
    if path.is_file():
        return path.resolve()
    if (WORKERS / path.name).is_file():
        return WORKERS / path.name
    known = sorted(p.name for p in WORKERS.glob("*.py") if not p.name.startswith("_"))
    raise ValueError(f"script must be an existing file or one of {known}; got {str(script)!r}")


@declare.checked
def worker_source(script: str | os.PathLike, only: Annotated[Sequence[str], declare.NonEmpty] | None = None) -> str:
    """The worker's source, or only the top-level functions named in ``only`` (in file order)."""
    path = worker_path(script)
    try:
        source = path.read_text()
        tree = ast.parse(source) if only is not None else None
    except (UnicodeDecodeError, SyntaxError, ValueError) as error:  # binary content, or not Python
        raise ValueError(f"script {str(path)!r} must be a Python source file; reading it failed: "
                         f"{type(error).__name__}: {error}") from None
    if only is None:
        return source
    wanted = set(only)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for name in wanted:
        validate.choice("only", name, sorted(defs))
    lines = source.splitlines()
    parts = []
    for node in tree.body:
        if getattr(node, "name", None) in wanted:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            parts.append("\n".join(lines[start - 1:node.end_lineno]))
    return "\n\n\n".join(parts)


@dataclass(frozen=True, repr=False)
class WorkerSource:
    """A worker's lines as a notebook shows them: a Python code block (Markdown, highlighted by Jupyter), plain text
    in a terminal; the text is the file's own, so what the cell shows is what the ranks run."""

    name: str
    text: str

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return f"`{self.name}`:\n\n```python\n{self.text}\n```"


@declare.checked
def show_worker(script: str | os.PathLike, only: Annotated[Sequence[str], declare.NonEmpty] | None = None
                ) -> WorkerSource:
    """The worker's source (or the functions in ``only``), shown in a notebook as a highlighted code block."""
    return WorkerSource(worker_path(script).name, worker_source(script, only))
