"""The checkers of notebook 06's exercises (registered on import: 06.1, 06.2, 06.3)."""

from __future__ import annotations

import json
from typing import Any

from course_utils import exercises


@exercises.register("06.1", hint="16 B/param for fp32 Adam; FSDP (ZeRO-3) splits all of it over N ranks")
def _predict_fsdp_bytes(answer: Any, *, measured: float, **_: Any) -> str | None:
    """The prediction of FSDP2's per-rank model-state bytes, scored against the run's measurement (within 10%)."""
    return exercises.close(answer, measured, rel=0.10)


@exercises.register("06.2", hint="the steps since the last checkpoint are computed again: crash_at % every")
def _lost_steps(answer: Any, *, measured: int, **_: Any) -> str | None:
    """Steps recomputed after the crash, scored against the steps the run really computed twice (``measured``)."""
    return exercises.exact(answer, measured)


@exercises.register("06.3", hint='json.dumps({"cluster": {"worker": hosts}, "task": {"type": "worker", "index": i}})')
def _tf_config(answer: Any, *, hosts: list[str], index: int, **_: Any) -> str | None:
    """A TF_CONFIG string for worker ``index`` of the cluster ``hosts``."""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a JSON string; got {type(answer).__name__}")
    config = json.loads(answer)
    if config.get("cluster", {}).get("worker") != list(hosts):
        return "cluster.worker must list every worker's host:port, in the same order on every machine"
    if config.get("task") != {"type": "worker", "index": index}:
        return f"task must be {{'type': 'worker', 'index': {index}}}"
    return None
