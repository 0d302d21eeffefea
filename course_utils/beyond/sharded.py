"""DDP vs ZeRO-1 vs FSDP2 on real ranks (``workers/fsdp_train.py``): bytes held against the ZeRO formula, step times
in rounds, the collectives of one step and alone, and the weights against DDP's."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from course_utils import declare, display, timing
from course_utils.distributed import launcher
from course_utils.distributed.breakdown import from_rounds
from course_utils.distributed.comms import memory_per_device

KINDS = {"ddp": ("DDP", 0), "zero1": ("ZeRO-1", 1), "fsdp2": ("FSDP2 (ZeRO-3)", 3)}
DEFAULT_DDP = "ddp_default"  # DDP as constructed by default: the gradients and a copy of them in its buckets
LABELS = {"ddp": "DDP, gradient_as_bucket_view=True", DEFAULT_DDP: "DDP, default buckets", "zero1": "ZeRO-1",
          "fsdp2": "FSDP2 (ZeRO-3)"}
FP32_ADAM = {"weight_bytes": 4, "grad_bytes": 4, "optimizer_bytes": 8}  # 16 B/param: fp32 weights, grads, 2 moments


@declare.checked
def run(steps: launcher.Steps = 5, batch: launcher.Batch = 64, rounds: launcher.Rounds = 6,
        per_round: launcher.PerRound = 3, nprocs: launcher.Ranks = 2, timeout: launcher.JobTimeout = 180.0,
        **launch_options: Any) -> Any:
    """Launch DDP, ZeRO-1 and FSDP2 training on ``nprocs`` ranks (steps timed in ``rounds`` rounds of ``per_round``,
    the kinds in turns); returns the ``LaunchResult`` (no bar unless ``progress=True``)."""
    if batch % nprocs:
        raise ValueError(f"batch must be divisible by nprocs = {nprocs}; got {batch}")
    return launcher.launch("fsdp_train.py", nprocs, timeout=timeout, args=[
        "--steps", steps, "--batch", batch, "--rounds", rounds, "--per-round", per_round], **launch_options)


@declare.checked
def _records(result: launcher.LaunchResult, rank: int = 0) -> dict[str, dict[str, Any]]:
    return {kind: result.record(kind, rank) for kind in KINDS}


def params(result: Any) -> int:
    """The model's parameter count (as the worker counted it)."""
    return int(_records(result)["ddp"]["params"])


def world(result: Any) -> int:
    """The number of ranks that trained."""
    return int(_records(result)["ddp"]["world"])


@declare.checked
def held_bytes(result: launcher.LaunchResult) -> dict[str, dict[int, dict[str, int]]]:
    """Measured bytes per kind and rank ("params", "grads", "optimizer", from the real tensors); ``DEFAULT_DDP`` adds
    "buckets", the bucket bytes DDP reports for its default construction."""
    held = {kind: {r: dict(result.record(kind, r)["held"]) for r in sorted(result.records)} for kind in KINDS}
    held[DEFAULT_DDP] = {r: {**h, "buckets": int(result.record("ddp", r)["default_bucket_bytes"])}
                         for r, h in held["ddp"].items()}
    return held


def largest_rank(result: Any) -> dict[str, float]:
    """Model-state bytes on each kind's largest rank (measured: the sum of what ``held_bytes`` counts)."""
    return {kind: float(max(sum(h.values()) for h in per.values())) for kind, per in held_bytes(result).items()}


@declare.checked
def formula_bytes(n_params: Annotated[int, declare.Range(1, 10**13)],
                  n: Annotated[int, declare.Range(1, 10**6)]) -> dict[str, float]:
    """Bytes per device by the ZeRO formula for fp32 Adam (16 B/param split over N by stage; default DDP 20 B/param,
    its gradients twice: in ``.grad`` and in its buckets). Computed, not measured."""
    out = {kind: memory_per_device(n_params, n, stage, **FP32_ADAM) for kind, (_, stage) in KINDS.items()}
    out[DEFAULT_DDP] = memory_per_device(n_params, n, 0, **{**FP32_ADAM, "grad_bytes": 8})
    return out


def memory_ratios(result: Any) -> dict[str, float]:
    """Measured bytes on each kind's largest rank over the formula's (computed from both)."""
    formula = formula_bytes(params(result), world(result))
    return {kind: b / formula[kind] for kind, b in largest_rank(result).items()}


def memory_table(result: Any) -> display.Table:
    """Per-rank model-state bytes measured (largest rank) next to the formula's (computed)."""
    held, formula = held_bytes(result), formula_bytes(params(result), world(result))
    rows = []
    for kind in ("ddp", DEFAULT_DDP, "zero1", "fsdp2"):
        worst = max(held[kind].values(), key=lambda h: sum(h.values()))
        total = sum(worst.values())
        rows.append((LABELS[kind], display.format_bytes(worst["params"]), display.format_bytes(worst["grads"]),
                     display.format_bytes(worst.get("buckets", 0)), display.format_bytes(worst["optimizer"]),
                     display.format_bytes(total), display.format_bytes(formula[kind]),
                     f"{total / formula[kind]:.3f}"))
    return display.Table(("training", "params", "grads", "extra buckets", "Adam state", "total measured",
                          "formula (computed)", "measured / formula"), tuple(rows),
                         title=f"Model state per rank, {params(result):,} fp32 parameters on {world(result)} ranks "
                               "(largest rank shown)",
                         note="measured: bytes of the tensors each rank holds (a shard counts only its local part); "
                              "extra buckets: DDP's own bucket sizes when its gradients are not views of them; "
                              "formula: 16 B/param split over N (ZeRO stage 0, 1, 3), 20 B/param for default DDP")


def steps(result: Any) -> dict[str, timing.Measurement]:
    """Step times of rank 0 per kind and of the compute alone ("compute": the same model and Adam on the rank's
    rows, no process group), measured in rounds (the four in turns): pair any two with ``cu.intervals.speedup``."""
    records = _records(result)
    found = {kind: from_rounds(kind, r["round_times"]) for kind, r in records.items()}
    found["compute"] = from_rounds("compute", result.record("compute")["round_times"])
    return found


def step_medians(result: Any) -> dict[str, float]:
    """Median step seconds per kind and of the compute alone (rank 0)."""
    return {kind: m.median for kind, m in steps(result).items()}


def comm_seconds(result: Any) -> dict[str, float]:
    """Seconds per step rank 0 had a collective running, per kind (measured: the union of the backend's own
    profiler events, ``gloo:all_reduce`` etc., over 3 profiled steps; no barrier, no forced wait)."""
    return {kind: float(r["comm_seconds"]["busy"]) for kind, r in _records(result).items()}


def comm_share(result: Any) -> dict[str, float]:
    """The share of a profiled step during which a collective ran on rank 0, per kind (measured)."""
    return {kind: float(r["comm_seconds"]["busy"] / r["comm_seconds"]["step"]) for kind, r in _records(result).items()}


def in_collectives(result: Any) -> dict[str, float]:
    """Seconds of a plain step spent with a collective running, per kind (computed: the profiled share times the
    median plain step; it assumes the profiler slowed collectives and the rest of the step alike)."""
    share, plain = comm_share(result), step_medians(result)
    return {kind: share[kind] * plain[kind] for kind in KINDS}


def gathered(result: Any) -> dict[str, Any] | None:
    """The most layers FSDP2 held unsharded at once on rank 0, from its profiler labels (all-gather to reshard):
    {"layers", "bytes", "names", "largest", "all"}; None when the trace had no FSDP2 labels."""
    rec = _records(result)["fsdp2"]
    peak = rec["comm_seconds"].get("gathered")
    if not peak:
        return None
    sizes = rec.get("layer_bytes", {})
    return {**peak, "largest": max(sizes.values(), default=0), "all": int(sum(sizes.values()))}


def facts(result: Any) -> dict[str, str]:
    """What the model-state finding quotes: default DDP's bucket bytes, ZeRO-1's and FSDP2's bytes per rank, and how
    many layers FSDP2 held whole at once by its own profiler labels ("peak"; said unmeasured when it has none)."""
    held, found = held_bytes(result), gathered(result)
    ranks = {k: ", ".join(display.format_bytes(sum(h.values())) for h in held[k].values()) for k in ("zero1", "fsdp2")}
    peak = (f"its own profiler labels show at most {found['layers']} layer(s) held whole at once (modules "
            f"{', '.join(found['names'])}: {display.format_bytes(found['bytes'])}, against "
            f"{display.format_bytes(found['all'])} for all weights)" if found else
            "this run's trace had no FSDP2 labels, so how many layers at once is not measured here")
    buckets = display.format_bytes(result.record("ddp")["default_bucket_bytes"])
    return {"buckets": buckets, "zero1": ranks["zero1"], "fsdp2": ranks["fsdp2"], "peak": peak}


def phase_medians(result: Any) -> dict[str, dict[str, float]]:
    """Median seconds of each part of a timed step, per kind (rank 0): "zero_grad", "forward_backward" (with
    DDP's all-reduce and FSDP2's gathers and reduce-scatters), "optimizer_step" (with ZeRO-1's broadcasts)."""
    return {kind: {part: float(np.median(t)) for part, t in r["phase_times"].items()}
            for kind, r in _records(result).items()}


def calls(result: Any) -> dict[str, dict[str, int]]:
    """The collectives of one training step per kind (counted on rank 0), sorted by name."""
    return {kind: dict(sorted(r["calls"].items())) for kind, r in _records(result).items()}


def comm_table(result: Any) -> display.Table:
    """Collectives of one training step (counted and timed on rank 0) and the ring traffic each rank sends."""
    records, n = _records(result), world(result)
    seconds, share, plain = comm_seconds(result), comm_share(result), step_medians(result)
    factor = {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "broadcast": 1.0 / n}
    rows = []
    for kind, (label, _) in KINDS.items():
        nbytes = records[kind]["comm_bytes"]
        sent = sum(factor.get(op, 1.0) * b for op, b in nbytes.items())
        profiled = seconds[kind] / share[kind] if share[kind] else float("nan")
        rows.append((label, ", ".join(f"{c} x {op}" for op, c in calls(result)[kind].items()),
                     display.format_bytes(sum(nbytes.values())), display.format_bytes(sent),
                     f"{display.format_time(seconds[kind])} of {display.format_time(profiled)} "
                     f"({display.percent(share[kind])})", display.format_time(plain[kind])))
    return display.Table(("training", "collectives per step (counted)", "buffer bytes", "sent per rank (computed)",
                          "in collectives, of a profiled step (measured)", "step (measured)"),
                         tuple(rows), title=f"Communication of one step on {n} ranks (rank 0)",
                         note="sent per rank: ring algorithms, all-reduce 2(N-1)/N, all-gather and reduce-scatter "
                              "(N-1)/N of the full buffer; a broadcast's owner sends its share. In collectives: wall "
                              "time per step with a gloo collective running, of the profiled step's time, from "
                              "profiler events over 3 profiled steps; step: median of the unprofiled steps")


@declare.checked
def reduce_scatter_trace(result: launcher.LaunchResult) -> list[str]:
    """The c10d and gloo operators rank 0's profiler recorded during one reduce-scatter, in time order."""
    return list(result.record("collectives")["reduce_scatter_trace"])


@declare.checked
def collectives_alone(result: launcher.LaunchResult) -> dict[str, timing.Measurement]:
    """The collectives alone on a buffer of all parameters (rank 0), timed in rounds: allreduce, allgather,
    reducescatter; pair two with ``cu.intervals.speedup``."""
    rec = result.record("collectives")
    return {op: from_rounds(op, t) for op, t in rec["round_times"].items()}


@declare.checked
def weight_diffs(result: launcher.LaunchResult) -> dict[str, float]:
    """Max |weight difference| after training: ZeRO-1 and FSDP2 vs DDP, and between ranks of each."""
    saved = {kind: result.arrays[kind] for kind in KINDS}
    ddp = saved["ddp"][0]["weights"]
    out = {f"{kind} vs ddp": float(np.max(np.abs(saved[kind][0]["weights"] - ddp))) for kind in ("zero1", "fsdp2")}
    out["between ranks"] = max(float(np.max(np.abs(per[r]["weights"] - per[0]["weights"])))
                               for per in saved.values() for r in per)
    return out
