"""What several of notebook 06's measurements add up to (numbers only; ``findings`` words them): FSDP2's traffic and
collectives over DDP's, as the ring prices them and as gloo runs them, and the part of a step nothing explains.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np

from course_utils import declare
from course_utils.beyond import predict, sharded
from course_utils.distributed import launcher
from course_utils.distributed.comms import AllReduceModel


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
    """FSDP2's bytes sent per step over DDP's, computed from the counted calls and bytes (rank 0): "ring" with the
    ring factors ((N-1)/N for all-gather and reduce-scatter, 2(N-1)/N for all-reduce), "gloo" with each
    reduce-scatter priced as the all-reduce gloo runs inside it when the trace shows one ("inside")."""
    ddp, fsdp = result.record("ddp"), result.record("fsdp2")
    n, inside = ddp["world"], gloo_inside(result)
    ddp_sent = predict.ring_cost("allreduce", n)[1] * ddp["comm_bytes"]["allreduce"]

    def sent(per_op: dict[str, float]) -> float:
        return sum(predict.ring_cost(op, n)[1] * b for op, b in per_op.items())

    return {"ring": sent(fsdp["comm_bytes"]) / ddp_sent,
            "gloo": sent(_as_gloo(fsdp["comm_bytes"]) if inside else fsdp["comm_bytes"]) / ddp_sent, "inside": inside}


@declare.checked
def collective_ratios(fit: AllReduceModel, result: launcher.LaunchResult) -> dict[str, float]:
    """FSDP2's collectives over DDP's as the fitted ring model prices them, latency included (computed): "model"
    with the ring factors, "as gloo" with the reduce-scatters priced as all-reduces where the trace shows gloo
    running one inside (else equal to "model"); "calls": FSDP2's collectives per step (counted)."""
    ddp, fsdp = result.record("ddp"), result.record("fsdp2")
    n = ddp["world"]
    base = predict.model_comm_seconds(fit, ddp["calls"], ddp["comm_bytes"], n)
    model = predict.model_comm_seconds(fit, fsdp["calls"], fsdp["comm_bytes"], n) / base
    as_gloo = (predict.model_comm_seconds(fit, _as_gloo(fsdp["calls"]), _as_gloo(fsdp["comm_bytes"]), n) / base
               if gloo_inside(result) else model)
    return {"model": model, "as gloo": as_gloo, "calls": float(sum(fsdp["calls"].values()))}


def traffic_facts(fit: AllReduceModel, result: Any) -> dict[str, float]:
    """What the traffic finding quotes: FSDP2's and DDP's collectives per step (counted), FSDP2's bytes as gloo
    runs them (``traffic``), each kind's milliseconds with a collective running, and the model's
    ``collective_ratios`` (rounded as quoted)."""
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
