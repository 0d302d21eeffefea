"""05's ring model prices this notebook's steps: each measured multi-process step against its compute alone plus
the ring cost of the collectives it issued (computed), next to what was measured.

``ring_cost`` gives each collective's latency steps and byte share on a ring, ``model_comm_seconds`` prices a
step's counted calls and bytes with a fitted ``AllReduceModel`` (05's, ``cu.distributed.fit_allreduce``), and
``step_predictions`` builds one row per step: DDP, ZeRO-1 and FSDP2 from ``fsdp_train.py``, the wide DDP step
of the two-node job, and the two-process JAX step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils import display, validate
from course_utils.beyond import sharded
from course_utils.distributed.comms import AllReduceModel


def ring_cost(op: str, n: int) -> tuple[int, float]:
    """(latency steps per call, share of the full buffer's bytes on the slowest link) of a ring collective.

    All-reduce: 2(N-1) steps, 2(N-1)/N; all-gather and reduce-scatter: half of that, (N-1) and (N-1)/N; a
    broadcast pipelined along the ring: (N-1) steps, the whole buffer over each link.
    """
    n = validate.number("n", n, low=2, high=1e6, integer=True)
    costs = {"allreduce": (2 * (n - 1), 2 * (n - 1) / n), "allgather": (n - 1, (n - 1) / n),
             "reduce_scatter": (n - 1, (n - 1) / n), "broadcast": (n - 1, 1.0)}
    return costs[validate.choice("op", op, tuple(costs))]


def model_comm_seconds(fit: AllReduceModel, calls: dict[str, int], nbytes: dict[str, float], n: int) -> float:
    """Seconds the fitted ring model gives for a step's collectives (computed): α per latency step of every
    call, plus each operator's bytes (summed over its calls) times its ring share over β."""
    _check_fit(fit)
    validate.instance("calls", calls, dict)
    validate.instance("nbytes", nbytes, dict)
    total = 0.0
    for op, count in calls.items():
        count = validate.number(f"calls[{op!r}]", count, low=0, high=1e9, integer=True)
        steps, share = ring_cost(op, n)
        moved = validate.non_negative(f"nbytes[{op!r}]", nbytes.get(op, 0))
        total += count * steps * fit.latency + share * moved / fit.bandwidth
    return total


def _check_fit(fit: Any) -> None:
    if not isinstance(fit, AllReduceModel):
        raise TypeError(f"fit must be an AllReduceModel (cu.distributed.fit_allreduce); got {type(fit).__name__}")


def _row(compute: float, comm: float, measured: float, in_comm: float, optimizer: float) -> dict[str, float]:
    return {"compute": compute, "comm model": comm, "predicted": compute + comm, "measured": measured,
            "comm measured": in_comm, "optimizer": optimizer}


def step_predictions(fit: AllReduceModel, result: Any, ddp_timing: dict[str, Any] | None = None,
                     jax_record: dict[str, Any] | None = None,
                     jax_ranks: int | None = None) -> dict[str, dict[str, float]]:
    """Each measured multi-process step against compute alone + the ring model of its collectives (computed).

    Per row (seconds): "compute" (measured, no communication), "comm model" (computed from the counted calls
    and bytes with ``fit``), "predicted" (their sum), "measured" (the step), "comm measured" (time with a
    collective running: ``sharded.in_collectives``; for the wide DDP step and the JAX step their all-reduce
    measured alone, NaN if not recorded), "optimizer" (``zero_grad`` + ``optimizer.step()``, NaN if not measured);
    the JAX row adds "operands" (of its all-reduce). Sources: ``result`` (DDP, ZeRO-1, FSDP2 from
    ``fsdp_train.py``), ``ddp_timing`` (the wide DDP step of ``ddp_train.py``'s timing phase, compute = its
    ``no_sync`` step), ``jax_record`` (the 2-process JAX step, compute = one device on its process's rows; its
    all-reduce spans ``jax_ranks`` gloo ranks, default one per device).
    """
    _check_fit(fit)
    if ddp_timing is not None:
        validate.instance("ddp_timing", ddp_timing, dict)
    if jax_record is not None:
        validate.instance("jax_record", jax_record, dict)
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
        ranks = validate.number("jax_ranks", jax_ranks if jax_ranks is not None else jax_record["devices"],
                                low=2, high=1e6, integer=True)
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


def ratios(rows: dict[str, dict[str, float]]) -> dict[str, float]:
    """Measured over predicted seconds per step (computed)."""
    validate.non_empty("rows", validate.instance("rows", rows, dict))
    return {name: r["measured"] / r["predicted"] for name, r in rows.items()}


def prediction_table(rows: dict[str, dict[str, float]]) -> display.Table:
    """The rows of ``step_predictions`` in milliseconds, measured / predicted last."""
    validate.non_empty("rows", validate.instance("rows", rows, dict))

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

