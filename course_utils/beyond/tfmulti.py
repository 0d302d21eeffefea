"""TensorFlow multi-worker training from a notebook: ``MultiWorkerMirroredStrategy`` over ``TF_CONFIG``, two workers of
``workers/tf_multiworker.py``, checked against each other and against one worker."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np

from course_utils import declare, timing, validate
from course_utils.distributed import launcher

QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2"}
CPU_ONLY = {"CUDA_VISIBLE_DEVICES": ""}  # two workers on one machine would both claim all of one GPU's memory


_HostPort = Annotated[str, declare.Matches(r"[^\s:]+:\S+", "a 'host:port' string")]


@declare.checked
def tf_config(hosts: Annotated[Sequence[_HostPort], declare.NonEmpty, declare.MaxItems(4096)],
              index: Annotated[int, declare.Range(0, 4095)]) -> str:
    """The TF_CONFIG JSON of worker ``index`` in a cluster of ``hosts`` ("host:port" strings)."""
    validate.number("index", index, high=len(hosts) - 1)
    return json.dumps({"cluster": {"worker": list(hosts)}, "task": {"type": "worker", "index": index}})


@declare.checked
def run(steps: launcher.Steps = 8, batch: launcher.Batch = 64, workers: Annotated[int, declare.Range(1, 16)] = 2,
        timeout: launcher.JobTimeout = 240.0, **launch_options: Any) -> Any:
    """Launch the multi-worker TF script; returns the ``LaunchResult`` (arrays "multiworker", "one_worker")."""
    if batch % workers:
        raise ValueError(f"batch must be divisible by workers = {workers}; got {batch}")
    ports = ",".join(str(launcher.free_port()) for _ in range(workers))
    env = {**QUIET, **CPU_ONLY, **launch_options.pop("env", {})}
    return launcher.launch("tf_multiworker.py", workers, timeout=timeout,
                          args=["--ports", ports, "--steps", steps, "--batch", batch], env=env, **launch_options)


@declare.checked
def compare(result: launcher.LaunchResult) -> dict[str, float]:
    """Max |weight difference| between workers ("workers") and worker 0 vs one worker alone ("single")."""
    multi, single = result.arrays.get("multiworker"), result.arrays.get("one_worker")
    if not multi or not single:
        raise ValueError("result holds no 'multiworker'/'one_worker' arrays: pass what tfmulti.run returned")
    keys = sorted(multi[0])
    between = max(float(np.max(np.abs(multi[r][k] - multi[0][k]))) for r in multi for k in keys)
    alone = max(float(np.max(np.abs(multi[0][k] - single[0][k]))) for k in keys)
    return {"workers": between, "single": alone}


@declare.checked
def facts(result: launcher.LaunchResult) -> dict[str, float]:
    """Where the job's wall time went (to 0.1 s, the slowest worker's clock): "import" (TensorFlow), "joined" (start
    to a joined strategy), "work" (training and the reference), "outside" (torchrun's own start and shut-down)."""
    found = [result.record("timeline", r) for r in sorted(result.records)]
    parts = {"import": max(f["import_seconds"] for f in found), "joined": max(f["joined_seconds"] for f in found),
             "work": max(f["work_seconds"] for f in found)}
    inside = max(f["joined_seconds"] + f["work_seconds"] for f in found)
    return {k: round(v, 1) for k, v in timing.time_split(result.seconds, parts, inside=inside).items()}
