"""What a measuring process of ``assess`` reads of its machine and its steps: the calibration matmul and the CPU
steal (the quiet-machine guard), the matmul roof (MFU's peak on a CPU), the share of a step inside compiled graphs."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

ROOF_N, ROOF_REPEATS = 1024, 8  # the matmul that measures MFU's peak on a CPU
CALIBRATION_N, CALIBRATION_REPEATS = 384, 20  # the fixed matmul timed before and after each process
CALIBRATION_WARMUP_S = 0.2  # untimed matmuls first


def calibrate() -> float:
    """Seconds of the best of ``CALIBRATION_REPEATS`` fixed fp32 matmuls after ``CALIBRATION_WARMUP_S`` of untimed
    ones: the same work before and after a process, so a difference is other work on the machine."""
    import torch

    a = torch.ones(CALIBRATION_N, CALIBRATION_N)
    best, warm = float("inf"), time.perf_counter() + CALIBRATION_WARMUP_S
    while time.perf_counter() < warm:
        torch.matmul(a, a)
    for _ in range(CALIBRATION_REPEATS):
        start = time.perf_counter()
        torch.matmul(a, a)
        best = min(best, time.perf_counter() - start)
    return best


def cpu_times() -> list[int] | None:
    """The machine's CPU times (``/proc/stat``'s first line: user ... steal), or None where there is none."""
    try:
        return [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None


def machine(start: dict[str, Any]) -> dict[str, Any]:
    """Load averages and CPU steal at the start (``start``) and now (the end); the calibration matmul timed just
    before and just after the timed rounds (a cold process start timed it up to 1.8x slower on a quiet machine)."""
    times, spent = cpu_times(), None
    if times is not None and start["times"] is not None and len(times) == 8:
        total = sum(times) - sum(start["times"])
        spent = (times[7] - start["times"][7]) / total if total > 0 else 0.0
    return {"start": start["load"], "end": list(os.getloadavg()), "steal": spent,
            "calibration": {"before": start["calibration"], "after": start["after"], "n": CALIBRATION_N}}


def matmul_roof(spec: dict[str, Any]) -> dict[str, Any]:
    """This process's best matmul FLOP/s for the dtype that ran: MFU's peak on a CPU, measured, not from a cache."""
    import torch

    dtype = getattr(torch, spec["amp"]) if spec["amp"] else torch.float32
    a, b = (torch.randn(ROOF_N, ROOF_N).to(dtype) for _ in range(2))
    best = float("inf")
    for i in range(ROOF_REPEATS + 2):  # two untimed first
        start = time.perf_counter()
        torch.matmul(a, b)
        if i >= 2:
            best = min(best, time.perf_counter() - start)
    return {"flops": 2 * ROOF_N**3 / best, "dtype": str(dtype).removeprefix("torch."), "n": ROOF_N,
            "repeats": ROOF_REPEATS, "threads": torch.get_num_threads()}


def compiled_share(run: Any, batches: list[Any]) -> float | None:
    """The share of a few steps' host time spent inside compiled graphs (the profiler's ``## Call CompiledFxGraph``
    ranges, forward and backward) on a CPU; None on a GPU, where host time is not where the step runs."""
    if run.device.type != "cpu":
        return None
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        begin = time.perf_counter()
        for batch in batches:
            run.step(batch, keep=False)
        wall = time.perf_counter() - begin
    inside = sum(e.cpu_time_total for e in prof.key_averages() if e.key.startswith("## Call CompiledFxGraph"))
    return min(1.0, inside / 1e6 / wall)
