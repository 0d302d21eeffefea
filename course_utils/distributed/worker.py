"""The worker side: what a script started by ``launch()`` calls to report back to the notebook.

A worker records JSON-ready dicts with ``emit`` and NumPy arrays with ``save``; ``launch`` collects them per
rank into ``LaunchResult.records`` and ``LaunchResult.arrays``. Outside ``launch`` (a script run by hand),
``emit`` prints its JSON line and ``save`` writes into the current directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from course_utils import validate

OUT_ENV = "COURSE_DIST_OUT"  # the folder where launch() collects records and arrays
ID_ENV = "COURSE_LAUNCH_ID"  # marks every process of one launch, so that none is left behind
PROGRESS_PREFIX = "@@progress"  # a line the launcher turns into its progress bar (never shown as output)


def rank() -> int:
    """This worker's global rank (0 outside torchrun)."""
    return int(os.environ.get("RANK", "0"))


def local_rank() -> int:
    """This worker's rank on its own machine: the GPU index it should use (0 outside torchrun)."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def world_size() -> int:
    """How many workers the job has (1 outside torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


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
    target = Path(os.environ.get(OUT_ENV, "."))
    np.savez(target / f"{name}.rank{rank()}.npz", **{k: np.asarray(v) for k, v in arrays.items()})


def progress(step: int, total: int) -> None:
    """Advance the notebook's progress bar (call it from rank 0); the line never reaches the cell's output."""
    total = validate.positive("total", total, integer=True)
    step = validate.number("step", step, low=0, high=total, integer=True)
    print(f"{PROGRESS_PREFIX} {step} {total}", flush=True)
