"""Checkpoints that outlive a failure: ``torchrun --max-restarts=1`` (``run``) against training without a crash
(``reference``); an FSDP2 state saved at one world size against what another loaded (``compare``), and DCP's files."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from course_utils import declare, display, timing, validate
from course_utils.beyond import multinode
from course_utils.distributed import launcher

LR, MOMENTUM = 0.05, 0.9


@dataclass(frozen=True, repr=False)
class ElasticRun(display.Tabled):
    """One elastic job: ``crash_at``, ``every``, the checkpoint it resumed from, steps per attempt, weights."""

    steps: int
    every: int
    crash_at: int
    resumed_from: int
    computed: dict[int, list[int]]
    weights: dict[int, np.ndarray]
    seconds: float
    result: Any
    timeline: dict[str, float] = field(default_factory=dict)

    @property
    def lost_steps(self) -> int:
        """Steps computed twice: done before the crash, but after the last checkpoint (measured)."""
        first, second = set(self.computed.get(0, [])), set(self.computed.get(1, []))
        return len(first & second)

    @property
    def attempts(self) -> int:
        return len(self.computed)

    def table(self) -> display.Table:
        ends = {a: "crashed" if a == 0 and self.attempts > 1 else "finished" for a in self.computed}
        rows = [(str(a), f"{steps[0]}-{steps[-1]}" if steps else "-", str(len(steps)), ends[a])
                for a, steps in sorted(self.computed.items())]
        return display.Table(("attempt", "steps computed", "count", "end"), tuple(rows),
                             title=f"{self.steps} steps, checkpoint every {self.every}, crash at step {self.crash_at}: "
                                   f"resumed from step {self.resumed_from}, {self.lost_steps} step(s) computed twice")


@declare.checked
def facts(crash: ElasticRun) -> dict[str, float]:
    """What the elastic finding quotes: the crash step, the resumed step, where the wall time went (to 0.1 s)."""
    spent = crash.timeline
    seconds = {"seconds": crash.seconds, "startup0": spent["startup 0"], "startup1": spent["startup 1"],
               "outside": spent["outside"], "training": spent["training 0"] + spent["training 1"]}
    return {"crash_at": crash.crash_at, "resumed": crash.resumed_from, **{k: round(v, 1) for k, v in seconds.items()}}


@declare.checked
def run(steps: launcher.Steps = 12, every: launcher.Steps = 3, crash_at: launcher.Steps = 8, nprocs: launcher.Ranks = 2,
        timeout: launcher.JobTimeout = 240.0, **launch_options: Any) -> ElasticRun:
    """Launch the elastic job (one node, ``nprocs`` ranks, ``--max-restarts=1``) with rank 1 dying at ``crash_at``."""
    validate.number("every", every, high=steps)
    validate.number("crash_at", crash_at, high=steps - 1)
    with tempfile.TemporaryDirectory(prefix="course_ckpt_") as folder:
        result = multinode.launch_nodes(
            "elastic_train.py", nnodes=1, nproc_per_node=nprocs, timeout=timeout, max_restarts=1,
            args=["--checkpoint-dir", folder, "--steps", steps, "--every", every, "--crash-at", crash_at,
                  "--lr", LR], **launch_options)
    crashed = result.record("crash", 1)
    finished = result.record("finished", 1)
    return ElasticRun(steps, every, crash_at, finished["started_at"],
                      {crashed["attempt"]: crashed["computed"], finished["attempt"]: finished["computed"]},
                      {r: per["weights"] for r, per in result.arrays["elastic"].items()}, result.seconds, result,
                      timing.time_split(result.seconds, {**startups(result), "training 0": crashed["seconds"],
                                                            "training 1": finished["seconds"]}))


@declare.checked
def startups(result: launcher.LaunchResult) -> dict[str, float]:
    """The slowest rank's process start to joined group per attempt ("startup 0", "startup 1", seconds on the
    ranks' clocks; NaN where none reported one): the wall's rest is torchrun's start, the restart, exit."""
    return {f"startup {attempt}": max((r["seconds"] for per in result.records.values() for r in per
                                       if r.get("kind") == "startup" and r.get("attempt") == attempt),
                                      default=float("nan")) for attempt in (0, 1)}


@declare.checked
def reference(steps: launcher.Steps = 12, batch: launcher.Batch = 64) -> np.ndarray:
    """The uninterrupted training in this process: one process, whole batches, the same SGD with momentum."""
    return multinode.ddp_reference(steps, batch, steps, LR, seed=7, momentum=MOMENTUM)[f"step{steps}"]


@declare.checked
def lost_steps(crash_at: Annotated[int, declare.Range(0, 10**9)],
               every: Annotated[int, declare.Range(1, 10**9)]) -> int:
    """Steps recomputed after a crash at step ``crash_at`` with a checkpoint every ``every`` steps (computed)."""
    return crash_at % every


def _state(result: Any, name: str, argument: str) -> dict[str, np.ndarray]:
    validate.instance(argument, result, launcher.LaunchResult)
    state = result.arrays.get(name, {}).get(0)
    if not state:
        raise ValueError(f"{argument} holds no {name!r} state on rank 0: launch fsdp_checkpoint.py with "
                         f"{'--save' if name == 'saved' else '--load'}")
    return state


def compare(saved_by: Any, loaded_by: Any) -> dict[str, Any]:
    """What ``saved_by`` saved against what ``loaded_by`` loaded: "tensors", "same names" (weights and Adam tensors),
    "max diff" (inf when names or shapes differ), "world" (saving, loading ranks)."""
    saved, loaded = _state(saved_by, "saved", "saved_by"), _state(loaded_by, "loaded", "loaded_by")
    same = sorted(saved) == sorted(loaded) and all(saved[k].shape == loaded[k].shape for k in saved)
    diff = max((float(np.max(np.abs(saved[k] - loaded[k]), initial=0.0)) for k in saved), default=0.0) if same \
        else float("inf")
    return {"tensors": len(saved), "same names": same, "max diff": diff,
            "world": (saved_by.record("checkpoint")["world"], loaded_by.record("checkpoint")["world"])}


def changed(before: Any, after: Any) -> float:
    """The largest weight difference between the checkpoints ``before`` and ``after`` saved (computed): above 0, a
    second comparison tests new values. Adam's state is left out (its step counter always moves)."""
    a, b = _state(before, "saved", "before"), _state(after, "saved", "after")
    if sorted(a) != sorted(b):
        raise ValueError("before and after saved different tensors: pass two launches of fsdp_checkpoint.py")
    return max((float(np.max(np.abs(a[k] - b[k]), initial=0.0)) for k in a if k.startswith("model/")), default=0.0)


@declare.checked
def files(folder: str | os.PathLike) -> dict[str, int]:
    """The files a ``dcp.save`` wrote into ``folder`` with their bytes: a ``__<rank>_0.distcp`` per rank, a
    ``.metadata``."""
    path = Path(folder)
    if not (path / ".metadata").is_file():
        raise ValueError(f"folder must hold a DCP checkpoint (a .metadata file); got {str(folder)!r}")
    return {f.name: f.stat().st_size for f in sorted(path.iterdir()) if f.is_file()}


@declare.checked
def files_table(folders: Annotated[Mapping[str, str | os.PathLike], declare.NonEmpty]) -> display.Table:
    """One row per file of each checkpoint folder (``{"saved at 2 ranks": path, ...}``)."""
    rows = tuple((label, name, display.format_bytes(size))
                 for label, folder in folders.items() for name, size in files(folder).items())
    return display.Table(("checkpoint", "file", "bytes"), rows, title="What dcp.save wrote (one folder per checkpoint)",
                         note="__<rank>_0.distcp: the shards that rank held; .metadata: which slice of which tensor "
                              "sits in which file. A load at any world size reads the slices its shards need.")
