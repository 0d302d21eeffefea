"""Sharded data parallelism measured: DDP vs ZeRO-1 vs FSDP2 on real ranks, and FSDP-style sharding in JAX.

``run`` launches ``workers/fsdp_train.py``; ``memory_table`` sets the bytes each rank really held against the
ZeRO formula (labelled computed), ``rank_table`` shows every rank; ``comm_table`` lists the collectives counted
and timed in one step, ``profiled_steps`` how much the profiler slowed each kind's step; ``gathered`` the most
layers FSDP2 held unsharded at once; ``weight_diffs`` checks ZeRO-1 and FSDP2 against DDP. ``jax_sharding``
(defined in ``jaxmulti``, re-exported here) compiles the same step in JAX with the parameters replicated and
sharded over a mesh, and reads the per-device memory and the collectives from XLA. ``step_predictions``
predicts every measured multi-process step from its compute alone plus 05's ring model of the collectives it
issued (computed), next to the measurement; ``reduce_scatter_finding`` judges the reduce-scatter alone
against an all-reduce with ``cu.timing.apart``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils import display, timing, validate
from course_utils.distributed import launcher
from course_utils.beyond.jaxmulti import jax_sharding, spread  # noqa: F401  (re-exported for 06)
from course_utils.distributed.memory import memory_per_device

KINDS = {"ddp": ("DDP", 0), "zero1": ("ZeRO-1", 1), "fsdp2": ("FSDP2 (ZeRO-3)", 3)}
FP32_ADAM = {"weight_bytes": 4, "grad_bytes": 4, "optimizer_bytes": 8}  # 16 B/param: fp32 weights, grads, 2 moments


def ring_cost(op: str, n: int) -> tuple[int, float]:
    """(latency steps per call, share of the full buffer's bytes on the slowest link) of a ring collective.

    All-reduce: 2(N-1) steps, 2(N-1)/N; all-gather and reduce-scatter: half of that, (N-1) and (N-1)/N; a
    broadcast pipelined along the ring: (N-1) steps, the whole buffer over each link.
    """
    n = validate.number("n", n, low=2, integer=True)
    costs = {"allreduce": (2 * (n - 1), 2 * (n - 1) / n), "allgather": (n - 1, (n - 1) / n),
             "reduce_scatter": (n - 1, (n - 1) / n), "broadcast": (n - 1, 1.0)}
    return costs[validate.choice("op", op, tuple(costs))]


def model_comm_seconds(fit: Any, calls: dict[str, int], nbytes: dict[str, float], n: int) -> float:
    """Seconds the fitted ring model gives for a step's collectives (computed): α per latency step of every
    call, plus each operator's bytes (summed over its calls) times its ring share over β."""
    _check_fit(fit)
    total = 0.0
    for op, count in calls.items():
        steps, share = ring_cost(op, n)
        total += count * steps * fit.latency + share * nbytes.get(op, 0) / fit.bandwidth
    return total


def _check_fit(fit: Any) -> None:
    if not hasattr(fit, "bandwidth") or not hasattr(fit, "latency"):
        raise TypeError(f"fit must be an AllReduceModel (cu.distributed.fit_allreduce); got {type(fit).__name__}")


def run(steps: int = 5, batch: int = 64, repeats: int = 10, nprocs: int = 2, timeout: float = 180.0,
        **launch_options: Any) -> Any:
    """Launch DDP, ZeRO-1 and FSDP2 training on ``nprocs`` ranks; returns the ``LaunchResult`` (no bar unless
    ``progress=True``)."""
    steps = validate.positive("steps", steps, integer=True)
    batch = validate.positive("batch", batch, integer=True)
    repeats = validate.positive("repeats", repeats, integer=True)
    nprocs = validate.number("nprocs", nprocs, low=2, high=64, integer=True)
    if batch % nprocs:
        raise ValueError(f"batch must be divisible by nprocs = {nprocs}; got {batch}")
    launch_options.setdefault("progress", False)  # a stored notebook would keep the bar frozen at its start
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


def rank_table(result: Any) -> display.Table:
    """Model-state bytes every rank held (measured), per kind, and the largest over the smallest rank."""
    held = held_bytes(result)
    ranks = sorted(next(iter(held.values())))
    rows = []
    for kind, (label, _) in KINDS.items():
        totals = [sum(held[kind][r].values()) for r in ranks]
        rows.append((label, *(display.format_bytes(t) for t in totals), f"{max(totals) / min(totals):.3f}"))
    return display.Table(("training", *(f"rank {r}" for r in ranks), "largest / smallest"), tuple(rows),
                         title="Model state held by every rank (measured: params + grads + Adam state)")


def comm_seconds(result: Any) -> dict[str, float]:
    """Seconds per step rank 0 had a collective running, per kind (measured: the union of the backend's own
    profiler events, ``gloo:all_reduce`` etc., over 3 profiled steps; no barrier, no forced wait)."""
    return {kind: float(r["comm_seconds"]["busy"]) for kind, r in _records(result).items()}


def comm_share(result: Any) -> dict[str, float]:
    """The share of a profiled step during which a collective ran on rank 0, per kind (measured)."""
    return {kind: float(r["comm_seconds"]["busy"] / r["comm_seconds"]["step"]) for kind, r in _records(result).items()}


def profiled_steps(result: Any) -> dict[str, dict[str, float]]:
    """The profiled steps against the plain ones, per kind (rank 0): "share" of the profiled step with a
    collective running and "profiled" (its seconds), both measured; "plain" (the median unprofiled step);
    "slowdown" (profiled / plain, computed): how much the profiler itself slowed that kind's step; "scaled"
    (share x plain, computed): the collectives' time if the profiler slowed them and the rest alike."""
    seconds, share, plain = comm_seconds(result), comm_share(result), step_medians(result)
    out = {}
    for kind in KINDS:
        profiled = seconds[kind] / share[kind] if share[kind] else float("nan")
        out[kind] = {"share": share[kind], "profiled": profiled, "plain": plain[kind],
                     "slowdown": profiled / plain[kind], "scaled": share[kind] * plain[kind]}
    return out


def gathered(result: Any) -> dict[str, Any] | None:
    """The most layers FSDP2 held unsharded at once on rank 0 (measured from FSDP2's own profiler labels over 3
    steps: from a layer's all-gather to its reshard): {"layers", "bytes", "names", "largest" (the largest layer's
    full bytes), "all" (every layer's)}; None when the trace had no FSDP2 labels."""
    rec = _records(result)["fsdp2"]
    peak = rec["comm_seconds"].get("gathered")
    if not peak:
        return None
    sizes = rec.get("layer_bytes", {})
    return {**peak, "largest": max(sizes.values(), default=0), "all": int(sum(sizes.values()))}


def backend_events(result: Any) -> dict[str, dict[str, float]]:
    """The backend's collective events per step in rank 0's profile, per kind: {"gloo:all_gather": 8.0, ...}."""
    return {kind: dict(sorted(r["comm_seconds"]["events"].items())) for kind, r in _records(result).items()}


def phase_medians(result: Any) -> dict[str, dict[str, float]]:
    """Median seconds of each part of a timed step, per kind (rank 0): "zero_grad", "forward_backward" (with
    DDP's all-reduce and FSDP2's gathers and reduce-scatters), "optimizer_step" (with ZeRO-1's broadcasts)."""
    return {kind: {part: float(np.median(t)) for part, t in r["phase_times"].items()}
            for kind, r in _records(result).items()}


def comm_table(result: Any) -> display.Table:
    """Collectives of one training step (counted and timed on rank 0) and the ring traffic each rank sends."""
    records = _records(result)
    n = records["ddp"]["world"]
    seconds, share, steps = comm_seconds(result), comm_share(result), step_medians(result)
    rows = []
    for kind, (label, _) in KINDS.items():
        calls, nbytes = records[kind]["calls"], records[kind]["comm_bytes"]
        described = ", ".join(f"{c} x {op}" for op, c in sorted(calls.items()))
        factor = {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
                  "broadcast": 1.0 / n}
        sent = sum(factor.get(op, 1.0) * b for op, b in nbytes.items())
        profiled = seconds[kind] / share[kind] if share[kind] else float("nan")
        rows.append((label, described, display.format_bytes(sum(nbytes.values())), display.format_bytes(sent),
                     f"{display.format_time(seconds[kind])} of {display.format_time(profiled)} "
                     f"({display.percent(share[kind])})", display.format_time(steps[kind])))
    return display.Table(("training", "collectives per step (counted)", "buffer bytes", "sent per rank (computed)",
                          "in collectives, of a profiled step (measured)", "step (measured)"),
                         tuple(rows), title=f"Communication of one step on {n} ranks (rank 0)",
                         note="sent per rank: ring algorithms, all-reduce 2(N-1)/N, all-gather and reduce-scatter "
                              "(N-1)/N of the full buffer; a broadcast's owner sends its share. In collectives: wall "
                              "time per step with a gloo collective running, of the profiled step's time, from "
                              "profiler events over 3 profiled steps; step: median of the unprofiled steps")


def step_medians(result: Any) -> dict[str, float]:
    """Median step seconds per kind (rank 0)."""
    return {kind: float(np.median(r["step_times"])) for kind, r in _records(result).items()}


def compute_median(result: Any) -> float:
    """Median seconds of the step without communication (rank 0: same model and Adam, its rows, no group)."""
    return float(np.median(launcher.LaunchResult.record(result, "compute")["step_times"]))


def reduce_scatter_trace(result: Any) -> list[str]:
    """The c10d and gloo operators rank 0's profiler recorded during one reduce-scatter, in time order."""
    return list(launcher.LaunchResult.record(result, "collectives")["reduce_scatter_trace"])


def collective_medians(result: Any, q: float = 50) -> dict[str, float]:
    """Seconds (percentile ``q``, the median by default) of the collectives alone on a buffer of all parameters:
    allreduce, allgather, reducescatter; "nbytes" the buffer's size."""
    q = validate.number("q", q, low=0, high=100)
    rec = launcher.LaunchResult.record(result, "collectives")
    return {op: float(np.percentile(t, q)) for op, t in rec["times"].items()} | {"nbytes": float(rec["nbytes"])}


def collectives_alone(result: Any) -> dict[str, timing.Measurement]:
    """The collectives alone on a buffer of all parameters (rank 0), as Measurements: allreduce, allgather,
    reducescatter; compare two with ``cu.timing.apart``."""
    rec = launcher.LaunchResult.record(result, "collectives")
    return {op: timing.Measurement.from_times(op, t) for op, t in rec["times"].items()}


def reduce_scatter_finding(result: Any, model_ratio: float) -> str:
    """What the reduce-scatter alone says against an all-reduce of the same buffer and the ring model's ratio
    ``model_ratio`` (computed): the trace's operators, then the measured ratio judged by ``timing.apart``."""
    model_ratio = validate.positive("model_ratio", model_ratio)
    alone = collectives_alone(result)
    rs, ar = alone["reducescatter"], alone["allreduce"]
    ratio, inside = rs.median / ar.median, "gloo:all_reduce" in reduce_scatter_trace(result)
    near = abs(np.log(ratio / model_ratio)) < np.log(1.25)  # within 25% of the model's ratio
    said = ("The trace shows `gloo:all_reduce` under `c10d::_reduce_scatter_base_`: gloo runs an all-reduce inside "
            "each reduce-scatter. " if inside else "The trace shows no all-reduce under the reduce-scatter. ")
    versus = f"{spread(rs)} vs {spread(ar)}"
    if not timing.apart(rs, ar):
        return said + (f"Alone, the two overlap in their quartiles ({versus}): the reduce-scatter's {ratio:.2f}x of an "
                       "all-reduce" + (f", near the model's {model_ratio:.2f}x," if near else "") + " is within this "
                       f"run's noise, so neither the model's {model_ratio:.2f}x nor a full all-reduce's 1x is "
                       "established. ")
    if rs.median < ar.median:
        return said + (f"Alone, it cost {ratio:.2f}x an all-reduce, beyond the noise ({versus})"
                       + (f", as the ring model's {model_ratio:.2f}x says" if near else
                          f", between the model's {model_ratio:.2f}x and 1x")
                       + ("; so the all-reduce inside does not cost a full one: how gloo does it is not established "
                          "by this run. " if inside else ". "))
    return said + (f"Alone, it cost {ratio:.2f}x an all-reduce, beyond the noise ({versus}): the model's "
                   f"{model_ratio:.2f}x is not reached on gloo" + (", as an all-reduce inside explains. " if inside
                                                                  else ". "))


def weight_diffs(result: Any) -> dict[str, float]:
    """Max |weight difference| after training: ZeRO-1 and FSDP2 vs DDP, and between ranks of each."""
    validate.instance("result", result, launcher.LaunchResult)
    saved = {kind: result.arrays[kind] for kind in KINDS}
    ddp = saved["ddp"][0]["weights"]
    out = {f"{kind} vs ddp": float(np.max(np.abs(saved[kind][0]["weights"] - ddp))) for kind in ("zero1", "fsdp2")}
    out["between ranks"] = max(float(np.max(np.abs(per[r]["weights"] - per[0]["weights"])))
                               for per in saved.values() for r in per)
    return out


def step_predictions(fit: Any, result: Any, ddp_timing: dict[str, Any] | None = None,
                     jax_record: dict[str, Any] | None = None,
                     jax_ranks: int | None = None) -> dict[str, dict[str, float]]:
    """Each measured multi-process step against compute alone + the ring model of its collectives (computed).

    Per row (seconds): "compute" (measured, no communication), "comm model" (computed from the counted calls
    and bytes with ``fit``, 05's ``AllReduceModel``), "predicted" (their sum), "measured" (the step), "comm
    measured" (time with a collective running: the profiled share of the step times the step; for the wide
    DDP step and the JAX step their all-reduce measured alone, NaN if not recorded), "optimizer" (``zero_grad``
    + ``optimizer.step()``, NaN if not measured); the JAX row adds "operands" (of its all-reduce). Sources:
    ``result`` (DDP, ZeRO-1, FSDP2 from ``fsdp_train.py``; compute: the full model and Adam on the rank's rows),
    ``ddp_timing`` (the wide DDP step of ``ddp_train.py``'s timing phase, compute = its ``no_sync`` step),
    ``jax_record`` (the 2-process JAX step, compute = one device on its process's rows; its all-reduce
    spans ``jax_ranks`` gloo ranks, default one per device).
    """
    _check_fit(fit)
    if ddp_timing is not None:
        validate.instance("ddp_timing", ddp_timing, dict)
    if jax_record is not None:
        validate.instance("jax_record", jax_record, dict)
    records = _records(result)
    n = records["ddp"]["world"]
    compute, share, steps = compute_median(result), comm_share(result), step_medians(result)
    parts = phase_medians(result)
    rows = {}

    def row(c: float, comm: float, measured: float, in_comm: float, optimizer: float) -> dict[str, float]:
        return {"compute": c, "comm model": comm, "predicted": c + comm, "measured": measured,
                "comm measured": in_comm, "optimizer": optimizer}

    for kind, (label, _) in KINDS.items():
        comm = model_comm_seconds(fit, records[kind]["calls"], records[kind]["comm_bytes"], n)
        optimizer = parts[kind]["zero_grad"] + parts[kind]["optimizer_step"]
        rows[f"{label} step"] = row(compute, comm, steps[kind], share[kind] * steps[kind], optimizer)
    if ddp_timing is not None:
        comm = model_comm_seconds(fit, {"allreduce": 1}, {"allreduce": 4 * ddp_timing["params"]}, n)
        rows[f"wide DDP step, {ddp_timing['params']:,} params"] = row(
            float(np.median(ddp_timing["compute"])), comm, float(np.median(ddp_timing["ddp"])),
            float(np.median(ddp_timing["allreduce"])), float("nan"))
    if jax_record is not None:
        ranks = validate.number("jax_ranks", jax_ranks if jax_ranks is not None else jax_record["devices"],
                                low=2, integer=True)
        comm = model_comm_seconds(fit, {"allreduce": len(jax_record["allreduces"])},
                                  {"allreduce": jax_record["param_bytes"]}, ranks)
        operands = jax_record.get("allreduce_operands", [])
        alone = jax_record.get("allreduce_alone", {}).get("operands")
        rows[f"JAX step, {jax_record['processes']} processes"] = {
            **row(float(np.median(jax_record["compute_times"])), comm, float(np.median(jax_record["step_times"])),
                  float(np.median(alone)) if alone else float("nan"), float("nan")),
            "operands": float(len(operands)) if alone else float("nan")}
    return rows


def prediction_table(rows: dict[str, dict[str, float]]) -> display.Table:
    """The rows of ``step_predictions`` in milliseconds, measured / predicted last."""
    validate.non_empty("rows", rows)

    def ms(v: float) -> str:
        return "-" if np.isnan(v) else f"{v * 1e3:.2f}"

    body = tuple((name, ms(r["compute"]), ms(r["comm model"]), ms(r["predicted"]), ms(r["measured"]),
                  ms(r["comm measured"]), f"{r['measured'] / r['predicted']:.2f}") for name, r in rows.items())
    return display.Table(("step", "compute (measured)", "comm (model, computed)", "predicted", "measured",
                          "in collectives (share x step)", "measured / predicted"), body,
                         title="Multi-process steps: compute alone + ring model of the collectives, ms",
                         note="compute: the step with no communication; comm: the fitted ring model for the calls "
                              "and bytes counted in the step; in collectives: the profiled share of the step with a "
                              "collective running, times the step (wide DDP and JAX steps: their all-reduce measured "
                              "alone)")


def prediction_why(name: str, row: dict[str, float]) -> str:
    """What the step spent instead of the prediction, from the row's own numbers (for a failed verdict)."""
    def ms(v: float) -> str:
        return f"{v * 1e3:.2f} ms"

    extra = row["measured"] - row["compute"]
    if np.isnan(row["comm measured"]):
        return f"{name} spent {ms(extra)} beyond its compute alone, where the model allows {ms(row['comm model'])}"
    if not np.isnan(row.get("operands", float("nan"))):  # JAX: the step's own all-reduce, timed alone
        said = (f"its all-reduce alone, with the step's {row['operands']:.0f} operands, took "
                f"{ms(row['comm measured'])} where the ring model prices the one call at {ms(row['comm model'])} "
                "(what each operand costs: below)")
        rest = extra - row["comm measured"]
        return said + (f"; the other {ms(rest)} beyond compute alone and that all-reduce: not established by this run"
                       if rest > 0 else f"; the step took {ms(-rest)} less than compute plus that all-reduce")
    said = (f"{name}: {ms(row['comm measured'])} in collectives against the model's {ms(row['comm model'])}")
    other = extra - row["comm measured"]
    if other > 0:
        said += f", and {ms(other)} of the step is neither compute alone nor collectives"
        if not np.isnan(row["optimizer"]):
            said += f" (its zero_grad + optimizer step took {ms(row['optimizer'])})"
    else:
        said += f"; collectives overlapped {ms(-other)} of the compute"
    return said
