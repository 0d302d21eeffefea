"""TensorFlow multi-worker training from a notebook: ``MultiWorkerMirroredStrategy`` over ``TF_CONFIG``.

``run`` starts ``workers/tf_multiworker.py`` on 2 workers through the course launcher, each with its own
free port in the cluster spec; ``compare`` checks the workers against each other and against the
one-worker reference that worker 0 trained after the multi-worker run; ``facts`` says where the job's
wall time went (importing TensorFlow, joining the cluster, training, torchrun's own start and shut-down).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from course_utils import validate, walltime
from course_utils.distributed import launcher

QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2"}
CPU_ONLY = {"CUDA_VISIBLE_DEVICES": ""}  # two workers on one machine would both claim all of one GPU's memory


def tf_config(hosts: Sequence[str], index: int) -> str:
    """The TF_CONFIG JSON of worker ``index`` in a cluster of ``hosts`` ("host:port" strings)."""
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, Sequence):
        raise TypeError(f"hosts must be a list of 'host:port' strings; got {type(hosts).__name__} {hosts!r:.60}")
    hosts = [validate.text("hosts", h) for h in validate.non_empty("hosts", list(hosts))]
    for h in hosts:
        if ":" not in h:
            raise ValueError(f"hosts must be 'host:port' strings; got {h!r}")
    index = int(validate.number("index", index, low=0, high=len(hosts) - 1, integer=True))
    return json.dumps({"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}})


def run(steps: int = 8, batch: int = 64, workers: int = 2, timeout: float = 240.0, **launch_options: Any) -> Any:
    """Launch the multi-worker TF script; returns the ``LaunchResult`` (arrays "multiworker", "one_worker"); no
    bar unless ``progress=True``."""
    steps = validate.number("steps", steps, low=1, high=10_000, integer=True)
    batch = validate.number("batch", batch, low=1, high=2**16, integer=True)
    workers = validate.number("workers", workers, low=1, high=16, integer=True)
    timeout = validate.number("timeout", timeout, low=1, high=3600)
    if batch % workers:
        raise ValueError(f"batch must be divisible by workers = {workers}; got {batch}")
    ports = ",".join(str(launcher.free_port()) for _ in range(workers))
    env = {**QUIET, **CPU_ONLY, **launch_options.pop("env", {})}
    launch_options.setdefault("progress", False)  # a stored notebook would keep the bar frozen at its start
    return launcher.launch("tf_multiworker.py", workers, timeout=timeout,
                          args=["--ports", ports, "--steps", steps, "--batch", batch], env=env, **launch_options)


def compare(result: Any) -> dict[str, float]:
    """Max |weight difference| between workers ("workers") and worker 0 vs one worker alone ("single")."""
    validate.instance("result", result, launcher.LaunchResult)
    multi, single = result.arrays.get("multiworker"), result.arrays.get("one_worker")
    if not multi or not single:
        raise ValueError("result holds no 'multiworker'/'one_worker' arrays: pass what tfmulti.run returned")
    keys = sorted(multi[0])
    between = max(float(np.max(np.abs(multi[r][k] - multi[0][k]))) for r in multi for k in keys)
    alone = max(float(np.max(np.abs(multi[0][k] - single[0][k]))) for k in keys)
    return {"workers": between, "single": alone}


def facts(result: Any) -> dict[str, float]:
    """What the TF finding quotes: where the job's wall time went (seconds to 0.1, the slowest worker of each,
    measured by the workers' clocks): "import" (importing TensorFlow), "joined" (process start to a joined
    strategy, the import included), "work" (training and the reference after that), "outside" (wall minus the
    slowest joined + work: torchrun's own start and shut-down)."""
    validate.instance("result", result, launcher.LaunchResult)
    found = [result.record("timeline", r) for r in sorted(result.records)]
    parts = {"import": max(f["import_seconds"] for f in found), "joined": max(f["joined_seconds"] for f in found),
             "work": max(f["work_seconds"] for f in found)}
    inside = max(f["joined_seconds"] + f["work_seconds"] for f in found)
    return {k: round(v, 1) for k, v in walltime.time_split(result.seconds, parts, inside=inside).items()}
