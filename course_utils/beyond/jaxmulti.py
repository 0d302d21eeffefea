"""Multi-process JAX from a notebook (``run``: ``workers/jax_multiprocess.py``) checked against one device here; and
``jax_sharding``: one step with replicated and FSDP-style sharded parameters, XLA's memory and collectives."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from course_utils import compiled, data, declare, models, timing
from course_utils.distributed import launcher
from course_utils.distributed.breakdown import from_rounds

LR = 0.1


@declare.checked
def run(steps: launcher.Steps = 10, batch: launcher.Batch = 64, processes: Annotated[int, declare.Range(1, 16)] = 2,
        devices_per_process: Annotated[int, declare.Range(1, 64)] = 2, rounds: launcher.Rounds = 6,
        per_round: launcher.PerRound = 3, timeout: launcher.JobTimeout = 180.0, **launch_options: Any) -> Any:
    """Launch the multi-process JAX worker; returns the ``LaunchResult`` (records "jax", arrays "jax")."""
    if batch % (processes * devices_per_process):
        raise ValueError(f"batch must be divisible by processes x devices_per_process = "
                         f"{processes * devices_per_process}; got {batch}")
    args = ["--port", launcher.free_port(), "--devices", devices_per_process, "--steps", steps, "--batch", batch,
            "--lr", LR, "--rounds", rounds, "--per-round", per_round]
    env = {"XLA_FLAGS": "", **launch_options.pop("env", {})}  # the notebook's simulated-device flag stays here
    return launcher.launch("jax_multiprocess.py", processes, timeout=timeout, args=args, env=env, **launch_options)


@declare.checked
def reference(steps: launcher.Steps = 10, batch: launcher.Batch = 64) -> list[np.ndarray]:
    """The same training in this process on one device, whole batches; leaves in ``jax.tree.leaves`` order."""
    import jax
    import jax.numpy as jnp

    x_all, y_all = data.classification(steps * batch, seed=6)
    device = jax.devices("cpu")[0]
    params = jax.device_put(models.jax_mlp_params(), device)
    step = models.jax_sgd_step(params, models.jax_mlp_apply, lr=LR)
    for s in range(steps):
        step((jax.device_put(jnp.asarray(x_all[s * batch:(s + 1) * batch]), device),
              jax.device_put(jnp.asarray(y_all[s * batch:(s + 1) * batch]), device)))
    return [np.asarray(leaf) for leaf in jax.tree.leaves(step.state["params"])]


@declare.checked
def compare(result: launcher.LaunchResult, ref: Annotated[Sequence[Any], declare.NonEmpty]) -> dict[str, float]:
    """Max |difference| of the parameters: between processes ("processes") and process 0 vs ``ref`` ("single")."""
    saved = result.arrays.get("jax")
    if not saved:
        raise ValueError("result holds no 'jax' arrays: pass what jaxmulti.run returned")
    leaves = {r: [per[f"p{i}"] for i in range(len(per))] for r, per in saved.items()}
    between = max(float(np.max(np.abs(a - b))) for r in leaves for a, b in zip(leaves[r], leaves[0]))
    single = max(float(np.max(np.abs(a - b))) for a, b in zip(leaves[0], ref))
    return {"processes": between, "single": single}


@declare.checked
def allreduce_groups(result: launcher.LaunchResult) -> list[str]:
    """The all-reduces of the compiled step as 'shapes over replica groups' (from process 0's HLO)."""
    lines = result.record("jax")["allreduces"]
    found = []
    for line in lines:
        if not re.search(r" all-reduce(-start)?\(", line):
            raise ValueError(f"result: not an all-reduce instruction of an HLO module: {line[:80]!r}")
        shapes = re.findall(r"f32\[[\d,]*\]", line.split(" all-reduce", 1)[0])
        groups = re.search(r"replica_groups=(.*?), (?:use_global|to_apply|metadata)", line)
        listed = ", ".join(shapes[:4]) + (", ..." if len(shapes) > 4 else "")
        over = groups.group(1) if groups else "all devices"
        found.append(f"all-reduce of {len(shapes)} arrays ({listed}) over replica_groups={over}")
    return found


@declare.checked
def gloo_ranks(result: launcher.LaunchResult) -> int:
    """How many gloo ranks JAX's CPU collectives formed, from gloo's own "Rank k is connected" lines (one per device,
    not per process); 0 when gloo printed none."""
    return len({int(m.group(1)) for _, text in result.lines
                for m in [re.search(r"Rank (\d+) is connected to \d+ peer ranks", text)] if m})


@declare.checked
def alone(record: Mapping[str, Any]) -> dict[str, timing.Measurement]:
    """The all-reduces process 0 timed alone over the global mesh, in rounds, as Measurements: "one float", "one array"
    (the step's bytes) and "operands" (the step's own operands)."""
    if "allreduce_alone" not in record:
        raise ValueError("record holds no 'allreduce_alone': pass jax_run.record('jax')")
    return {name: from_rounds(name, per_round) for name, per_round in record["allreduce_alone"].items()}


@declare.checked
def facts(result: launcher.LaunchResult) -> dict[str, Any]:
    """What the JAX finding quotes: device ids and count, gradient leaves, the step's all-reduces and operands,
    and gloo's ranks (where this JAX logs them)."""
    record = result.record("jax")
    return {"device_ids": ", ".join(map(str, record["device_ids"])), "devices": record["devices"],
            "leaves": len(result.arrays["jax"][0]), "allreduces": record["allreduce_count"],
            "operands": len(record["allreduce_operands"]),
            "gloo_ranks": gloo_ranks(result) or "an uncounted number of"}  # older JAX (Colab's 0.7) logs no rank lines


@declare.checked
def jax_sharding(devices: Annotated[Sequence[Any], declare.MinItems(2), declare.MaxItems(4096)],
                 sizes: Annotated[Sequence[Annotated[int, declare.Range(1, 8192)]], declare.MinItems(2),
                                  declare.MaxItems(16)] = (32, 512, 512, 10),
                 batch: Annotated[int, declare.Range(1, 4096)] = 64) -> dict[str, Any]:
    """Compile one SGD step with parameters replicated vs sharded (FSDP-style) over ``devices``; returns per-device
    bytes from ``memory_analysis()``, the collectives of each optimized HLO, and the two results' max difference."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    n = len(devices)
    if batch % n:
        raise ValueError(f"batch must be divisible by the {n} devices; got {batch}")
    mesh = jax.make_mesh((n,), ("data",), axis_types=(jax.sharding.AxisType.Explicit,), devices=list(devices))
    params = models.jax_mlp_params(tuple(sizes))
    x, y = data.classification(batch, features=sizes[0], classes=sizes[-1], seed=8)

    def loss_fn(p, x, y):
        logits = models.jax_mlp_apply(p, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def step(p, x, y):
        return jax.tree.map(lambda w, g: w - 0.1 * g, p, jax.grad(loss_fn)(p, x, y))

    def layout(leaf):  # FSDP-style: split each weight's first dimension when it divides evenly, else replicate
        return P("data") if leaf.ndim == 2 and leaf.shape[0] % n == 0 else P()

    batch_s = NamedSharding(mesh, P("data"))
    xs, ys = jax.device_put(x, batch_s), jax.device_put(y, batch_s)
    out = {"devices": n, "params": int(sum(leaf.size for leaf in jax.tree.leaves(params)))}
    results = {}
    for name, spec in (("replicated", lambda leaf: P()), ("sharded", layout)):
        placed = jax.tree.map(lambda leaf, spec=spec: jax.device_put(leaf, NamedSharding(mesh, spec(leaf))), params)
        executable = step.lower(placed, xs, ys).compile()
        mem, hlo = executable.memory_analysis(), compiled.hlo_summary(executable.as_text())
        out[name] = {"argument_bytes": int(mem.argument_size_in_bytes), "output_bytes": int(mem.output_size_in_bytes),
                     "temp_bytes": int(mem.temp_size_in_bytes), "collectives": hlo.collectives()}
        results[name] = executable(placed, xs, ys)
    out["max_diff"] = max(float(jnp.max(jnp.abs(a - b)))
                          for a, b in zip(jax.tree.leaves(results["replicated"]), jax.tree.leaves(results["sharded"])))
    return out
