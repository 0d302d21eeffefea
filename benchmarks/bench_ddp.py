"""Data parallelism: DDP step time on 1 vs 2 torchrun processes, and the ring all-reduce model fitted on 2
processes and scored on 4 (out of sample; oversubscribed on a 2-core machine).

The launches run ``course_utils/workers/ddp_train.py`` (gloo on CPU, NCCL where every rank has a GPU) through
``cu.distributed.launch``. Run alone: ``python benchmarks/run_all.py --only ddp``.
"""

from __future__ import annotations

import statistics

from course_utils import distributed

ARGS = ["--repeats", 20, "--wide-batch", 512, "--max-bytes", 2**24]
ONE_THREAD = {"OMP_NUM_THREADS": "1"}  # a "device" is one core, in both runs (OpenMP spinning under load distorts)


def _timing(result: distributed.launcher.LaunchResult) -> dict:
    out = {}
    for name in ("tiny", "wide"):
        r = result.record(f"timing_{name}")
        out[name] = {
            "params": r["params"],
            "global_batch": r["global_batch"],
            "ddp_step_seconds": statistics.median(r["ddp"]),
            "compute_only_seconds": statistics.median(r["compute"]),
            "allreduce_seconds": statistics.median(r["allreduce"]),
            "single_process_seconds": statistics.median(r["single"]),
            "single_process_half_batch_seconds": statistics.median(r["single_half"]),
        }
    return out


def _sweep(result: distributed.launcher.LaunchResult) -> tuple[list[int], list[float]]:
    """Rank 0's all-reduce sweep: message sizes and the lower quartile of each size's times."""
    sweep = [r for r in result.records[0] if r["kind"] == "allreduce"]
    return [r["nbytes"] for r in sweep], [sorted(r["times"])[len(r["times"]) // 4] for r in sweep]


def run() -> dict:
    one = distributed.launch("ddp_train.py", 1, timeout=300, args=["--phases", "timing", *ARGS],
                             env=ONE_THREAD, echo=False, progress=False)
    two = distributed.launch("ddp_train.py", 2, timeout=600, args=["--phases", "timing,allreduce", *ARGS],
                             env=ONE_THREAD, echo=False, progress=False)
    t1, t2 = _timing(one), _timing(two)
    four = distributed.launch("ddp_train.py", 4, timeout=300, args=["--phases", "allreduce", *ARGS],
                              env=ONE_THREAD, echo=False, progress=False)
    sizes, quartile = _sweep(two)
    fit = distributed.comms.fit_allreduce(sizes, quartile, n=2)
    sizes4, quartile4 = _sweep(four)
    score4 = distributed.score(fit, sizes4, quartile4, 4)
    return {
        "ddp_step_seconds_1_process": {k: v["ddp_step_seconds"] for k, v in t1.items()},
        "ddp_step_seconds_2_processes": {k: v["ddp_step_seconds"] for k, v in t2.items()},
        "speedup_2_over_1": {k: t1[k]["ddp_step_seconds"] / t2[k]["ddp_step_seconds"] for k in t1},
        "communication_share_2_processes": {
            k: max(v["ddp_step_seconds"] - v["compute_only_seconds"], 0.0) / v["ddp_step_seconds"]
            for k, v in t2.items()
        },
        "allreduce_fit": {"bandwidth_bytes_per_second": fit.bandwidth, "latency_seconds": fit.latency, "nprocs": 2},
        "allreduce_sweep": {"nbytes": sizes, "lower_quartile_seconds": quartile},
        "allreduce_4_processes_measured_over_model": {"min": float(score4.min()), "max": float(score4.max())},
        "launch_seconds": {"1_process": one.seconds, "2_processes": two.seconds, "4_processes": four.seconds},
        "details": {"1_process": t1, "2_processes": t2},
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
