"""Multi-process JAX from a notebook: two processes joined by ``jax.distributed.initialize`` on 127.0.0.1.

``run`` starts ``workers/jax_multiprocess.py`` through the course launcher (torchrun only starts the
processes; JAX's own coordinator joins them), ``reference`` trains the same model in this process on one
device, and ``compare`` checks the processes against each other and against the reference.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from course_utils import data, models, validate
from course_utils.distributed import launcher

LR = 0.1


def run(steps: int = 10, batch: int = 64, devices_per_process: int = 2, processes: int = 2, repeats: int = 10,
        timeout: float = 180.0, **launch_options: Any) -> Any:
    """Launch the multi-process JAX worker; returns the ``LaunchResult`` (records "jax", arrays "jax"); no bar
    unless ``progress=True``."""
    steps = validate.positive("steps", steps, integer=True)
    batch = validate.positive("batch", batch, integer=True)
    devices_per_process = validate.number("devices_per_process", devices_per_process, low=1, high=64, integer=True)
    processes = validate.number("processes", processes, low=1, high=16, integer=True)
    repeats = validate.positive("repeats", repeats, integer=True)
    if batch % (processes * devices_per_process):
        raise ValueError(f"batch must be divisible by processes x devices_per_process = "
                         f"{processes * devices_per_process}; got {batch}")
    args = ["--port", launcher.free_port(), "--devices", devices_per_process, "--steps", steps, "--batch", batch,
            "--lr", LR, "--repeats", repeats]
    env = {"XLA_FLAGS": "", **launch_options.pop("env", {})}  # the notebook's simulated-device flag stays here
    launch_options.setdefault("progress", False)  # a stored notebook would keep the bar frozen at its start
    return launcher.launch("jax_multiprocess.py", processes, timeout=timeout, args=args, env=env, **launch_options)


def reference(steps: int = 10, batch: int = 64) -> list[np.ndarray]:
    """The same training in this process on one device, whole batches; leaves in ``jax.tree.leaves`` order."""
    import jax
    import jax.numpy as jnp

    steps = validate.positive("steps", steps, integer=True)
    batch = validate.positive("batch", batch, integer=True)
    x_all, y_all = data.classification(steps * batch, seed=6)
    device = jax.devices("cpu")[0]
    params = jax.device_put(models.jax_mlp_params(), device)
    step = models.jax_sgd_step(params, models.jax_mlp_apply, lr=LR)
    for s in range(steps):
        step((jax.device_put(jnp.asarray(x_all[s * batch:(s + 1) * batch]), device),
              jax.device_put(jnp.asarray(y_all[s * batch:(s + 1) * batch]), device)))
    return [np.asarray(leaf) for leaf in jax.tree.leaves(step.state["params"])]


def compare(result: Any, ref: list[np.ndarray]) -> dict[str, float]:
    """Max |difference| of the parameters: between processes ("processes") and process 0 vs ``ref`` ("single")."""
    validate.instance("result", result, launcher.LaunchResult)
    validate.non_empty("ref", ref)
    saved = result.arrays.get("jax")
    if not saved:
        raise ValueError("result holds no 'jax' arrays: pass what jaxmulti.run returned")
    leaves = {r: [per[f"p{i}"] for i in range(len(per))] for r, per in saved.items()}
    between = max(float(np.max(np.abs(a - b))) for r in leaves for a, b in zip(leaves[r], leaves[0]))
    single = max(float(np.max(np.abs(a - b))) for a, b in zip(leaves[0], ref))
    return {"processes": between, "single": single}


def allreduce_groups(result: Any) -> list[str]:
    """The all-reduces of the compiled step as 'shapes over replica groups' (from process 0's HLO)."""
    validate.instance("result", result, launcher.LaunchResult)
    lines = result.record("jax")["allreduces"]
    found = []
    for line in lines:
        shapes = re.findall(r"f32\[[\d,]*\]", line.split(" all-reduce", 1)[0])
        groups = re.search(r"replica_groups=(.*?), (?:use_global|to_apply|metadata)", line)
        listed = ", ".join(shapes[:4]) + (", ..." if len(shapes) > 4 else "")
        over = groups.group(1) if groups else "all devices"
        found.append(f"all-reduce of {len(shapes)} arrays ({listed}) over replica_groups={over}")
    return found


def gloo_ranks(result: Any) -> int:
    """How many gloo ranks JAX's CPU collectives formed, read from gloo's own "Rank k is connected" lines
    (one rank per device, not per process); 0 when gloo printed none."""
    validate.instance("result", result, launcher.LaunchResult)
    return len({int(m.group(1)) for _, text in result.lines
                for m in [re.search(r"Rank (\d+) is connected to \d+ peer ranks", text)] if m})
