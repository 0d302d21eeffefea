"""Checkpoints that survive a changed cluster: the full state ``workers/fsdp_checkpoint.py`` saved at one world size
(rank 0, "saved") against what the next launch loaded at another ("loaded"), and the files ``dcp.save`` wrote.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from course_utils import declare, display, validate
from course_utils.distributed import launcher


def _state(result: Any, name: str, argument: str) -> dict[str, np.ndarray]:
    validate.instance(argument, result, launcher.LaunchResult)
    state = result.arrays.get(name, {}).get(0)
    if not state:
        raise ValueError(f"{argument} holds no {name!r} state on rank 0: launch fsdp_checkpoint.py with "
                         f"{'--save' if name == 'saved' else '--load'}")
    return state


def compare(saved_by: Any, loaded_by: Any) -> dict[str, Any]:
    """The state ``saved_by`` saved against the state ``loaded_by`` loaded (two ``LaunchResult``): "tensors" (how
    many were saved), "same names" (the same weights and Adam tensors on both sides), "max diff" (the largest
    absolute difference over all of them; inf when the names or shapes differ), "world" (saving, loading ranks)."""
    saved, loaded = _state(saved_by, "saved", "saved_by"), _state(loaded_by, "loaded", "loaded_by")
    same = sorted(saved) == sorted(loaded) and all(saved[k].shape == loaded[k].shape for k in saved)
    diff = max((float(np.max(np.abs(saved[k] - loaded[k]), initial=0.0)) for k in saved), default=0.0) if same \
        else float("inf")
    return {"tensors": len(saved), "same names": same, "max diff": diff,
            "world": (saved_by.record("checkpoint")["world"], loaded_by.record("checkpoint")["world"])}


def changed(before: Any, after: Any) -> float:
    """The largest absolute difference between the weights ``before`` saved and those ``after`` saved (computed):
    above 0 when training moved the weights between two checkpoints, so a second comparison tests new values. The
    Adam state is left out: its step counter moves with every step whatever the weights do."""
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
