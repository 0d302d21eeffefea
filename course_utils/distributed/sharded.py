"""Sharded data parallelism measured: DDP vs ZeRO-1 vs FSDP2 on real ranks, and FSDP-style sharding in JAX.

``run`` launches ``workers/fsdp_train.py``; ``memory_table`` sets the bytes each rank really held against the
ZeRO formula (labelled computed); ``comm_table`` lists the collectives counted in one step; ``weight_diffs``
checks ZeRO-1 and FSDP2 against DDP. ``jax_sharding`` compiles the same step in JAX with the parameters
replicated and sharded over a mesh, and reads the per-device memory and the collectives from XLA.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils import data, display, models, validate
from course_utils.distributed import launcher
from course_utils.distributed.memory import memory_per_device

KINDS = {"ddp": ("DDP", 0), "zero1": ("ZeRO-1", 1), "fsdp2": ("FSDP2 (ZeRO-3)", 3)}
FP32_ADAM = {"weight_bytes": 4, "grad_bytes": 4, "optimizer_bytes": 8}  # 16 B/param: fp32 weights, grads, 2 moments


def run(steps: int = 5, batch: int = 64, repeats: int = 10, nprocs: int = 2, timeout: float = 180.0,
        **launch_options: Any) -> Any:
    """Launch DDP, ZeRO-1 and FSDP2 training on ``nprocs`` ranks; returns the ``LaunchResult``."""
    steps = validate.positive("steps", steps, integer=True)
    batch = validate.positive("batch", batch, integer=True)
    repeats = validate.positive("repeats", repeats, integer=True)
    nprocs = validate.number("nprocs", nprocs, low=2, high=64, integer=True)
    if batch % nprocs:
        raise ValueError(f"batch must be divisible by nprocs = {nprocs}; got {batch}")
    return launcher.launch("fsdp_train.py", nprocs, timeout=timeout,
                          args=["--steps", steps, "--batch", batch, "--repeats", repeats], **launch_options)


def _records(result: Any, rank: int = 0) -> dict[str, dict[str, Any]]:
    validate.instance("result", result, launcher.LaunchResult)
    return {kind: result.record(kind, rank) for kind in KINDS}


def held_bytes(result: Any) -> dict[str, dict[int, dict[str, int]]]:
    """Measured bytes per kind, per rank: {"params", "grads", "optimizer"} counted from the real tensors."""
    validate.instance("result", result, launcher.LaunchResult)
    return {kind: {r: result.record(kind, r)["held"] for r in sorted(result.records)} for kind in KINDS}


def formula_bytes(params: int, n: int) -> dict[str, float]:
    """Bytes per device from the ZeRO formula for fp32 Adam, 16 B/param (computed, not measured)."""
    return {kind: memory_per_device(params, n, stage, **FP32_ADAM) for kind, (_, stage) in KINDS.items()}


def memory_table(result: Any) -> display.Table:
    """Per-rank model-state bytes measured (max over ranks) next to the formula's (computed)."""
    records = _records(result)
    held = held_bytes(result)
    params, n = records["ddp"]["params"], records["ddp"]["world"]
    formula = formula_bytes(params, n)
    rows = []
    for kind, (label, _) in KINDS.items():
        worst = max(held[kind].values(), key=lambda h: sum(h.values()))
        total = sum(worst.values())
        rows.append((label, display.format_bytes(worst["params"]), display.format_bytes(worst["grads"]),
                     display.format_bytes(worst["optimizer"]), display.format_bytes(total),
                     display.format_bytes(formula[kind]), f"{total / formula[kind]:.3f}"))
    return display.Table(("training", "params", "grads", "Adam state", "total measured", "formula (computed)",
                          "measured / formula"), tuple(rows),
                         title=f"Model state per rank, {params:,} fp32 parameters on {n} ranks (largest rank shown)",
                         note="measured: bytes of the tensors each rank holds (a shard counts only its local part); "
                              "formula: 16 B/param split over N (ZeRO stage 0, 1, 3)")


def comm_table(result: Any) -> display.Table:
    """Collectives of one training step (counted on rank 0) and the ring traffic each rank sends (computed)."""
    records = _records(result)
    n = records["ddp"]["world"]
    rows = []
    for kind, (label, _) in KINDS.items():
        calls, nbytes = records[kind]["calls"], records[kind]["comm_bytes"]
        described = ", ".join(f"{c} x {op}" for op, c in sorted(calls.items()))
        factor = {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
                  "broadcast": 1.0 / n}
        sent = sum(factor.get(op, 1.0) * b for op, b in nbytes.items())
        rows.append((label, described, display.format_bytes(sum(nbytes.values())), display.format_bytes(sent)))
    return display.Table(("training", "collectives per step (counted)", "buffer bytes", "sent per rank (computed)"),
                         tuple(rows), title=f"Communication of one step on {n} ranks",
                         note="sent per rank: ring algorithms, all-reduce 2(N-1)/N, all-gather and reduce-scatter "
                              "(N-1)/N of the full buffer; a broadcast's owner sends its share")


def step_medians(result: Any) -> dict[str, float]:
    """Median step seconds per kind (rank 0)."""
    return {kind: float(np.median(r["step_times"])) for kind, r in _records(result).items()}


def collective_medians(result: Any) -> dict[str, float]:
    """Median seconds of the collectives alone on a buffer of all parameters: allreduce, allgather, reducescatter."""
    rec = launcher.LaunchResult.record(result, "collectives")
    return {op: float(np.median(t)) for op, t in rec["times"].items()} | {"nbytes": float(rec["nbytes"])}


def weight_diffs(result: Any) -> dict[str, float]:
    """Max |weight difference| after training: ZeRO-1 and FSDP2 vs DDP, and between ranks of each."""
    validate.instance("result", result, launcher.LaunchResult)
    saved = {kind: result.arrays[kind] for kind in KINDS}
    ddp = saved["ddp"][0]["weights"]
    out = {f"{kind} vs ddp": float(np.max(np.abs(saved[kind][0]["weights"] - ddp))) for kind in ("zero1", "fsdp2")}
    out["between ranks"] = max(float(np.max(np.abs(per[r]["weights"] - per[0]["weights"])))
                               for per in saved.values() for r in per)
    return out


def jax_sharding(sizes: tuple[int, ...] = (32, 512, 512, 10), batch: int = 64) -> dict[str, Any]:
    """Compile one SGD step with parameters replicated vs sharded (FSDP-style) over all JAX devices.

    Returns per-device bytes from ``compiled.memory_analysis()`` (arguments, outputs, temporaries), the
    collectives counted in each optimized HLO, and the max difference between the two steps' results.
    """
    validate.instance("sizes", sizes, tuple)
    if len(sizes) < 2:
        raise ValueError(f"sizes must hold at least two layer widths; got {sizes!r}")
    batch = validate.positive("batch", batch, integer=True)
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    n = len(jax.devices())
    if batch % n:
        raise ValueError(f"batch must be divisible by the {n} devices; got {batch}")
    mesh = jax.make_mesh((n,), ("data",))
    params = models.jax_mlp_params(sizes)
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
        compiled = step.lower(placed, xs, ys).compile()
        mem, hlo = compiled.memory_analysis(), compiled.as_text()
        out[name] = {"argument_bytes": int(mem.argument_size_in_bytes), "output_bytes": int(mem.output_size_in_bytes),
                     "temp_bytes": int(mem.temp_size_in_bytes),
                     "collectives": {op: hlo.count(f" {op}(") + hlo.count(f" {op}-start(")
                                     for op in ("all-gather", "all-reduce", "reduce-scatter")}}
        results[name] = compiled(placed, xs, ys)
    out["max_diff"] = max(float(jnp.max(jnp.abs(a - b)))
                          for a, b in zip(jax.tree.leaves(results["replicated"]), jax.tree.leaves(results["sharded"])))
    return out


def cost_predictions(fit: Any, ddp_timing: dict[str, Any], fsdp_result: Any,
                     n: int = 2) -> dict[str, tuple[float, float]]:
    """(predicted, measured) seconds from a fitted ring model ``fit`` (05's ``AllReduceModel``).

    - a DDP step = its measured compute (``no_sync``) + one all-reduce of the gradient (model);
    - an all-gather and a reduce-scatter of all parameters, alone: each is half a ring all-reduce,
      (N-1) latencies + (N-1)/N x bytes / bandwidth (model), against the times ``fsdp_train.py`` measured.
    """
    validate.instance("ddp_timing", ddp_timing, dict)
    if not hasattr(fit, "time") or not hasattr(fit, "latency"):
        raise TypeError(f"fit must be an AllReduceModel (cu.distributed.fit_allreduce); got {type(fit).__name__}")
    n = validate.number("n", n, low=2, integer=True)
    grad_bytes = 4 * ddp_timing["params"]
    compute = float(np.median(ddp_timing["compute"]))
    rows = {f"DDP step, {ddp_timing['params']:,} params": (compute + float(fit.time(grad_bytes, n)),
                                                           float(np.median(ddp_timing["ddp"])))}
    coll = collective_medians(fsdp_result)
    half = (n - 1) * fit.latency + (n - 1) / n * coll["nbytes"] / fit.bandwidth
    rows[f"all-reduce of {display.format_bytes(coll['nbytes'])}"] = (float(fit.time(coll["nbytes"], n)),
                                                                     coll["allreduce"])
    rows[f"all-gather of {display.format_bytes(coll['nbytes'])}"] = (half, coll["allgather"])
    rows[f"reduce-scatter of {display.format_bytes(coll['nbytes'])}"] = (half, coll["reducescatter"])
    return rows
