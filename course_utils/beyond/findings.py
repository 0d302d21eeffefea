"""Notebook 06's generated sentences that weigh several measurements at once, with a branch for each outcome.

``traffic``: FSDP2's bytes per step over DDP's, computed from the counted calls, with the ring factors the
prediction assumes and with what gloo really runs (a reduce-scatter as an all-reduce). ``profiled_finding``: the
profiled step against the plain one. ``collective_time_finding``: FSDP2's time in collectives over DDP's against
the fitted ring model's ratio (latency included). ``unexplained`` and ``unexplained_finding``: the part of a step
that neither its compute alone nor its time in collectives covers, where it exceeds the model's communication.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils import validate
from course_utils.beyond import sharded
from course_utils.distributed import launcher
from course_utils.distributed.comms import AllReduceModel


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def traffic(result: Any) -> dict[str, Any]:
    """FSDP2's bytes sent per step over DDP's, computed from the counted calls and bytes (rank 0): "ring" with the
    ring factors ((N-1)/N for all-gather and reduce-scatter, 2(N-1)/N for all-reduce), "gloo" with each
    reduce-scatter priced as the all-reduce gloo runs inside it when the trace shows one ("inside")."""
    validate.instance("result", result, launcher.LaunchResult)
    ddp, fsdp = result.record("ddp"), result.record("fsdp2")
    n = ddp["world"]
    inside = "gloo:all_reduce" in sharded.reduce_scatter_trace(result)
    ddp_sent = sharded.ring_cost("allreduce", n)[1] * ddp["comm_bytes"]["allreduce"]

    def sent(as_gloo: bool) -> float:
        return sum(sharded.ring_cost("allreduce" if as_gloo and op == "reduce_scatter" else op, n)[1] * b
                   for op, b in fsdp["comm_bytes"].items())

    return {"ring": sent(False) / ddp_sent, "gloo": sent(inside) / ddp_sent, "inside": inside}


def profiled_finding(prof: dict[str, dict[str, float]]) -> str:
    """The profiled step over the plain one per kind (``sharded.profiled_steps``, computed): a ratio below 1 is
    said to be no slowdown and unexplained; the kinds' ratios are not ranked (3 profiled steps, no spread)."""
    validate.non_empty("prof", prof)
    names = {"ddp": "DDP", "zero1": "ZeRO-1", "fsdp2": "FSDP2"}
    ratios = ", ".join(f"{names.get(k, k)} {v['slowdown']:.2f}x" for k, v in prof.items())
    below = [names.get(k, k) for k, v in prof.items() if v["slowdown"] < 1]
    said = (f"Against the plain step's median, a profiled step (the trace's span over 3 steps: one number, no spread) "
            f"took {ratios} (computed). ")
    if below:
        said += (f"Below 1 for {' and '.join(below)}: the profiled step was shorter than the plain one, which is no "
                 "slowdown by the profiler, and why is not established by this run (a candidate: the span runs from "
                 "the first recorded event to the last and may leave part of each step out). ")
    return said + "With no spread, whether profiling changed the kinds differently is not judged here. "


def collective_time_finding(slower: float, counted: float, fit: AllReduceModel, result: Any) -> str:
    """FSDP2's time in collectives over DDP's (``slower``) against its bytes ratio ``counted`` and the ratio the
    fitted ring model gives for the counted calls, latency included (computed), also with the reduce-scatters
    priced as all-reduces where gloo runs them so."""
    slower = validate.positive("slower", slower)
    counted = validate.positive("counted", counted)
    validate.instance("fit", fit, AllReduceModel)
    validate.instance("result", result, launcher.LaunchResult)
    ddp, fsdp = result.record("ddp"), result.record("fsdp2")
    n = ddp["world"]
    base = sharded.model_comm_seconds(fit, ddp["calls"], ddp["comm_bytes"], n)
    model = sharded.model_comm_seconds(fit, fsdp["calls"], fsdp["comm_bytes"], n) / base
    said = (f"{slower:.1f}x DDP's, against its {counted:.2f}x bytes and the fitted ring model's {model:.1f}x "
            f"(computed: the latency of each of its {sum(fsdp['calls'].values())} collectives included")
    top = model
    if traffic(result)["inside"]:
        as_gloo = {("allreduce" if op == "reduce_scatter" else op): v for op, v in fsdp["calls"].items()}
        as_bytes = {("allreduce" if op == "reduce_scatter" else op): v for op, v in fsdp["comm_bytes"].items()}
        top = max(top, sharded.model_comm_seconds(fit, as_gloo, as_bytes, n) / base)
        said += f"; {top:.1f}x with its reduce-scatters priced as the all-reduces gloo runs"
    said += ")"
    if slower > top:
        return said + (": the latency the model prices per collective does not account for it, and the rest is not "
                       "established by this run. ")
    if slower > counted:
        return said + ": more than its bytes, no more than the model with its latencies: consistent with the model. "
    return said + ": no more than its bytes: here the bytes, not the count of collectives, set the time. "


def unexplained(rows: dict[str, dict[str, float]]) -> dict[str, float]:
    """Seconds of each step (``sharded.step_predictions`` rows) that neither its compute alone nor its measured time
    in collectives covers, for the steps where that rest exceeds the model's whole communication."""
    validate.non_empty("rows", rows)
    out = {}
    for name, r in rows.items():
        rest = r["measured"] - r["compute"] - r["comm measured"]
        if not np.isnan(rest) and rest > r["comm model"]:
            out[name] = float(rest)
    return out


def unexplained_finding(rows: dict[str, dict[str, float]]) -> str:
    """One sentence per step whose unexplained rest exceeds the model's communication (``unexplained``); a step
    whose factor-2 verdict held is told that the band does not explain the rest. Empty when there is none."""
    said = []
    for name, rest in unexplained(rows).items():
        r = rows[name]
        held = 0.5 <= r["measured"] / r["predicted"] <= 2
        said.append(f"*{name}*: {_ms(r['measured'])} measured, less {_ms(r['compute'])} of compute alone and "
                    f"{_ms(r['comm measured'])} in collectives, leaves {_ms(rest)}, more than the model's whole "
                    f"communication ({_ms(r['comm model'])}); what the step spent it on is not established by this run"
                    + ("; its verdict held within a factor of 2, but a band that holds is not an explanation of "
                       "the rest" if held else ""))
    return ("Not accounted for: " + ". ".join(said) + ". ") if said else ""
