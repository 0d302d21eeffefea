"""05's ring model prices this notebook's measured multi-process steps (compute alone plus the ring cost of the
collectives issued), FSDP2's traffic over DDP's as the ring prices it and as gloo runs it, and the unexplained rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import declare, display
from course_utils.beyond import sharded
from course_utils.distributed import launcher
from course_utils.distributed.comms import AllReduceModel

_Ops = Literal["allreduce", "allgather", "reduce_scatter", "broadcast"]
_Ranks = Annotated[int, declare.Range(2, 10**6)]


@declare.checked
def ring_cost(op: _Ops, n: _Ranks) -> tuple[int, float]:
    """(latency steps per call, share of the buffer's bytes on the slowest link) of a ring collective: all-reduce
    2(N-1), 2(N-1)/N; all-gather and reduce-scatter N-1, (N-1)/N; a pipelined broadcast N-1, the whole buffer."""
    return {"allreduce": (2 * (n - 1), 2 * (n - 1) / n), "allgather": (n - 1, (n - 1) / n),
            "reduce_scatter": (n - 1, (n - 1) / n), "broadcast": (n - 1, 1.0)}[op]


@declare.checked
def model_comm_seconds(fit: AllReduceModel, calls: Mapping[_Ops, Annotated[int, declare.Range(0, 10**9)]],
                       nbytes: Mapping[_Ops, Annotated[float, declare.NonNegative]], n: _Ranks) -> float:
    """Seconds the fitted ring model gives for a step's collectives (computed): α per latency step of every call,
    plus each operator's bytes (summed over its calls) times its ring share over β."""
    total = 0.0
    for op, count in calls.items():
        steps, share = ring_cost(op, n)
        total += count * steps * fit.latency + share * nbytes.get(op, 0) / fit.bandwidth
    return total


def _row(compute: float, comm: float, measured: float, in_comm: float, optimizer: float) -> dict[str, float]:
    return {"compute": compute, "comm model": comm, "predicted": compute + comm, "measured": measured,
            "comm measured": in_comm, "optimizer": optimizer}


@declare.checked
def step_predictions(fit: AllReduceModel, result: launcher.LaunchResult, ddp_timing: Mapping[str, Any] | None = None,
                     jax_record: Mapping[str, Any] | None = None,
                     jax_ranks: Annotated[int, declare.Range(2, 10**6)] | None = None) -> dict[str, dict[str, float]]:
    """Each measured multi-process step (``fsdp_train.py``'s, the wide DDP step, the JAX step) against compute alone +
    the ring model of its collectives, seconds: "compute", "comm model", "predicted", "measured", "comm measured"."""
    n, medians = sharded.world(result), sharded.step_medians(result)
    busy, parts, calls = sharded.in_collectives(result), sharded.phase_medians(result), sharded.calls(result)
    rows = {}
    for kind, (label, _) in sharded.KINDS.items():
        comm = model_comm_seconds(fit, calls[kind], result.record(kind)["comm_bytes"], n)
        optimizer = parts[kind]["zero_grad"] + parts[kind]["optimizer_step"]
        rows[f"{label} step"] = _row(medians["compute"], comm, medians[kind], busy[kind], optimizer)
    if ddp_timing is not None:
        comm = model_comm_seconds(fit, {"allreduce": 1}, {"allreduce": 4 * ddp_timing["params"]}, n)
        rows[f"wide DDP step, {ddp_timing['params']:,} params"] = _row(
            float(np.median(ddp_timing["compute"])), comm, float(np.median(ddp_timing["ddp"])),
            float(np.median(ddp_timing["allreduce"])), float("nan"))
    if jax_record is not None:
        ranks = jax_ranks if jax_ranks is not None else int(jax_record["devices"])
        comm = model_comm_seconds(fit, {"allreduce": len(jax_record["allreduces"])},
                                  {"allreduce": jax_record["param_bytes"]}, ranks)
        operands = jax_record.get("allreduce_operands", [])
        alone = jax_record.get("allreduce_alone", {}).get("operands")
        flat = [t for times in alone for t in times] if alone else []
        rows[f"JAX step, {jax_record['processes']} processes"] = {
            **_row(float(np.median(jax_record["compute_times"])), comm, float(np.median(jax_record["step_times"])),
                   float(np.median(flat)) if flat else float("nan"), float("nan")),
            "operands": float(len(operands)) if flat else float("nan")}
    return rows


_Rows = Annotated[Mapping[str, Mapping[str, Any]], declare.NonEmpty]  # NaN: not recorded


@declare.checked
def ratios(rows: _Rows) -> dict[str, float]:
    """Measured over predicted seconds per step (computed)."""
    return {name: r["measured"] / r["predicted"] for name, r in rows.items()}


@declare.checked
def prediction_table(rows: _Rows) -> display.Table:
    """The rows of ``step_predictions`` in milliseconds, measured / predicted last (the ratio of the printed two)."""

    def ms(v: float) -> str:
        return "-" if np.isnan(v) else f"{v * 1e3:.2f}"

    body = tuple((name, ms(r["compute"]), ms(r["comm model"]), ms(r["predicted"]), ms(r["measured"]),
                  ms(r["comm measured"]), f"{r['measured'] / r['predicted']:.2f}") for name, r in rows.items())
    return display.Table(("step", "compute (measured)", "comm (model, computed)", "predicted", "measured",
                          "in collectives (share x step)", "measured / predicted"), body,
                         title="Multi-process steps: compute alone + ring model of the collectives, ms",
                         note="compute: the step with no communication; comm: 05's ring model, fitted on this run's "
                              "all-reduce sweep, for the calls and bytes counted in the step; in collectives: the "
                              "profiled share of the step with a collective running, times the step (wide DDP and "
                              "JAX steps: their all-reduce measured alone)")


def gloo_inside(result: Any) -> bool:
    """True when rank 0's trace of one reduce-scatter shows gloo running an all-reduce under it (measured)."""
    return "gloo:all_reduce" in sharded.reduce_scatter_trace(result)


def _as_gloo(per_op: dict[str, float]) -> dict[str, float]:
    """A step's calls or bytes with each reduce-scatter counted as the all-reduce gloo runs for it."""
    out: dict[str, float] = {}
    for op, value in per_op.items():
        key = "allreduce" if op == "reduce_scatter" else op
        out[key] = out.get(key, 0) + value
    return out


@declare.checked
def traffic(result: launcher.LaunchResult) -> dict[str, Any]:
    """FSDP2's bytes sent per step over DDP's (computed, rank 0): "ring" with the ring factors, "gloo" with each
    reduce-scatter priced as the all-reduce gloo runs inside it when the trace shows one ("inside")."""
    ddp, fsdp = result.record("ddp"), result.record("fsdp2")
    n, inside = ddp["world"], gloo_inside(result)
    ddp_sent = ring_cost("allreduce", n)[1] * ddp["comm_bytes"]["allreduce"]

    def sent(per_op: dict[str, float]) -> float:
        return sum(ring_cost(op, n)[1] * b for op, b in per_op.items())

    return {"ring": sent(fsdp["comm_bytes"]) / ddp_sent,
            "gloo": sent(_as_gloo(fsdp["comm_bytes"]) if inside else fsdp["comm_bytes"]) / ddp_sent, "inside": inside}


@declare.checked
def collective_ratios(fit: AllReduceModel, result: launcher.LaunchResult) -> dict[str, float]:
    """FSDP2's collectives over DDP's as the fitted ring model prices them (computed): "model", "as gloo"
    (reduce-scatters as all-reduces where gloo runs one inside), "calls" (FSDP2's per step, counted)."""
    ddp, fsdp = result.record("ddp"), result.record("fsdp2")
    n = ddp["world"]
    base = model_comm_seconds(fit, ddp["calls"], ddp["comm_bytes"], n)
    model = model_comm_seconds(fit, fsdp["calls"], fsdp["comm_bytes"], n) / base
    as_gloo = (model_comm_seconds(fit, _as_gloo(fsdp["calls"]), _as_gloo(fsdp["comm_bytes"]), n) / base
               if gloo_inside(result) else model)
    return {"model": model, "as gloo": as_gloo, "calls": float(sum(fsdp["calls"].values()))}


def traffic_facts(fit: AllReduceModel, result: Any) -> dict[str, float]:
    """What the traffic finding quotes: collectives per step (counted), FSDP2's bytes as gloo runs them, milliseconds
    with a collective running, and ``collective_ratios``, rounded as quoted."""
    calls, busy, ratios = sharded.calls(result), sharded.in_collectives(result), collective_ratios(fit, result)
    return {"gathers": calls["fsdp2"].get("allgather", 0), "scatters": calls["fsdp2"].get("reduce_scatter", 0),
            "allreduces": calls["ddp"].get("allreduce", 0), "gloo": round(traffic(result)["gloo"], 2),
            "ddp_ms": round(busy["ddp"] * 1e3, 2), "fsdp_ms": round(busy["fsdp2"] * 1e3, 2),
            "calls": int(ratios["calls"]), "model": round(ratios["model"], 1), "as_gloo": round(ratios["as gloo"], 1)}


@declare.checked
def unexplained(rows: Annotated[Mapping[str, Mapping[str, Any]], declare.NonEmpty]) -> dict[str, float]:
    """Seconds of each step (``predict.step_predictions`` rows) that neither its compute alone nor its measured time
    in collectives covers, for the steps where that rest exceeds the model's whole communication."""
    out = {}
    for name, r in rows.items():
        rest = r["measured"] - r["compute"] - r["comm measured"]
        if not np.isnan(rest) and rest > r["comm model"]:
            out[name] = float(rest)
    return out
