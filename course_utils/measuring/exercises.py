"""Checkers of notebook 00's exercises, none of which may flip with the machine's load (nbval compares them): 00.1
against the roofline's own bound, 00.2 against the fastest synchronised call of section 2, 00.3 against Amdahl."""

from __future__ import annotations

from typing import Annotated, Any

from course_utils import declare, devices, exercises, roofline, timing, validate
from course_utils.declare import PositiveFloat
from course_utils.measuring.speedups import amdahl

PREDICT_N = 512


@declare.checked
def measured_matmul_seconds(n: Annotated[int, declare.Range(2, 8192)] = PREDICT_N) -> float:
    """Fastest block's time per call of torch.mm on two n x n fp32 matrices (load only ever slows a call down)."""
    import torch

    a = torch.randn(n, n, device=devices.current().torch_device)
    return min(timing.benchmark(torch.mm, a, a, min_time=0.1).times)


@exercises.register("00.1", hint="predict with machine.roofline_time(2 * n**3, 3 * 4 * n * n): the FLOPs of an "
                    "n x n matmul over the compute roof, or its bytes over the bandwidth, whichever is longer")
@declare.checked
def _predict_matmul(answer: Any, *, machine: roofline.Machine,
                    n: Annotated[int, declare.Range(2, 65536)] = PREDICT_N) -> str | None:
    """Right within 5% of the roofline's bound for an n x n fp32 matmul on ``machine``; the usual slips (n³ FLOPs,
    the memory time where the compute time is longer, milliseconds) are named."""
    predicted = float(validate.number("answer", answer))
    if predicted <= 0:
        return "a time must be positive (seconds)"
    flops, moved = 2 * n**3, 3 * 4 * n * n
    expected = machine.roofline_time(flops, moved)
    if abs(predicted / expected - 1) <= 0.05:
        return None
    slips = {"counts n³ FLOPs; a multiply-add is two": machine.roofline_time(n**3, moved),
             "is the memory time; the compute time is longer here": moved / machine.bandwidth,
             "is the compute time; the memory time is longer here": flops / machine.peak_flops,
             "looks like milliseconds; answer in seconds": expected * 1e3}
    for slip, value in slips.items():
        if value != expected and abs(predicted / value - 1) <= 0.05:
            return f"{predicted:.3g} s {slip}"
    return f"{predicted:.3g} s is {predicted / expected:.3g}x the roofline's bound for this machine"


@exercises.register("00.2", hint="copying the result to the host, np.asarray(...), must wait for it: time "
                    "lambda: np.asarray(matmul(x)) with benchmark(..., sync=False)")
@declare.checked
def _host_copy(answer: Any, *, fastest_ready: PositiveFloat, typical_ready: PositiveFloat) -> str | None:
    """Right when the answer is at least half the fastest synchronised call of section 2 (the work cannot take less;
    load only adds) and at most 20x its median (one call, not a loop)."""
    seconds = float(validate.number("answer", answer))
    validate.number("typical_ready", typical_ready, low=fastest_ready)
    if seconds < 0.5 * fastest_ready:
        return (f"{seconds * 1e6:.3g} µs is under half the fastest synchronised call ({fastest_ready * 1e6:.3g} µs): "
                "the clock stopped before the result was ready")
    if seconds > 20 * typical_ready:
        return f"{seconds * 1e6:.3g} µs is over 20x the synchronised time: time one call, not a loop"
    return None


@exercises.register("00.3", hint="Amdahl: 1 / (share / kernel speed-up + (1 - share) / 1), a time-weighted "
                    "harmonic mean, not the kernel's speed-up")
@declare.checked
def _amdahl(answer: Any, *, share: Annotated[float, declare.Range(0, 1)], kernel_speedup: PositiveFloat) -> str | None:
    value = float(validate.number("answer", answer))
    expected = amdahl([share, 1 - share], [kernel_speedup, 1.0])
    if abs(value - kernel_speedup) < 1e-6 * kernel_speedup and abs(value - expected) > 0.02 * expected:
        return "that is the kernel's speed-up; the step also spends time in parts that do not speed up"
    return exercises.close(value, expected, rel=0.02)
