"""Checkpoints that survive a changed cluster: what ``workers/fsdp_checkpoint.py`` saved at one world size
against what it loaded at another.

The worker's launches record, on rank 0, the full unsharded state (weights and Adam state) right before a save
("saved") and right after a load ("loaded"). ``compare`` sets one launch's saved state against the next
launch's loaded state, tensor by tensor; ``files`` lists what a ``dcp.save`` wrote into a folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from course_utils import display, validate
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


def files(folder: str | os.PathLike) -> dict[str, int]:
    """The files a ``dcp.save`` wrote into ``folder``, with their bytes: one ``__<rank>_0.distcp`` per rank and
    one ``.metadata`` (which slice of which tensor sits in which file)."""
    validate.instance("folder", folder, (str, os.PathLike))
    path = Path(folder)
    if not (path / ".metadata").is_file():
        raise ValueError(f"folder must hold a DCP checkpoint (a .metadata file); got {str(folder)!r}")
    return {f.name: f.stat().st_size for f in sorted(path.iterdir()) if f.is_file()}


def files_table(folders: dict[str, str | os.PathLike]) -> display.Table:
    """One row per file of each checkpoint folder (``{"saved at 2 ranks": path, ...}``)."""
    validate.non_empty("folders", validate.instance("folders", folders, dict))
    rows = tuple((label, name, display.format_bytes(size))
                 for label, folder in folders.items() for name, size in files(folder).items())
    return display.Table(("checkpoint", "file", "bytes"), rows, title="What dcp.save wrote (one folder per checkpoint)",
                         note="__<rank>_0.distcp: the shards that rank held; .metadata: which slice of which tensor "
                              "sits in which file. A load at any world size reads the slices its shards need.")
