"""Checkers of notebook 00's exercises: each compares the learner's answer with this run's measurements."""

from __future__ import annotations

from typing import Any

from course_utils import exercises, roofline, timing, validate
from course_utils.measuring.speedups import amdahl

PREDICT_N = 512
PREDICT_BAND = (0.5, 4.0)  # measured / predicted: the roofline is a lower bound, and the run is noisy


def measured_matmul_seconds(n: int = PREDICT_N) -> float:
    """Median time of torch.mm on two n x n fp32 matrices (the reference measurement of exercise 00.1)."""
    import torch

    n = validate.number("n", n, low=2, high=8192, integer=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(n, n, device=device)
    return timing.benchmark(torch.mm, a, a, min_time=0.1).median


@exercises.register("00.1", hint="predict with machine.roofline_time(2 * n**3, 3 * 4 * n * n): the FLOPs of an "
                    "n x n matmul over the compute roof, or its bytes over the bandwidth, whichever is longer")
def _predict_matmul(answer: Any, *, machine: roofline.Machine, measured: float | None = None) -> str | None:
    """Right when the prediction lands within 0.5-4x of the measured time, or is this run's roofline time
    (within 15%): a roofline prediction the measurement then disagrees with is still the right prediction."""
    validate.instance("machine", machine, roofline.Machine)
    predicted = float(validate.number("answer", answer))
    if predicted <= 0:
        return "a time must be positive (seconds)"
    model = machine.roofline_time(2 * PREDICT_N**3, 3 * 4 * PREDICT_N**2)
    if abs(predicted - model) <= 0.15 * model:
        return None
    seconds = measured if measured is not None else measured_matmul_seconds()
    ratio = seconds / predicted
    low, high = PREDICT_BAND
    if low <= ratio <= high:
        return None
    return (f"this run measured {seconds * 1e3:.3g} ms, {ratio:.3g}x your prediction of {predicted * 1e3:.3g} ms "
            f"(a roofline prediction lands within {low}-{high}x)")


@exercises.register("00.2", hint="copying the result to the host, np.asarray(...), must wait for it: time "
                    "lambda: np.asarray(matmul(x)) with benchmark(..., sync=False)")
def _host_copy(answer: Any, *, synchronised: float, naive: float) -> str | None:
    seconds = float(validate.number("answer", answer))
    validate.positive("synchronised", synchronised)
    validate.positive("naive", naive)
    if seconds < max(0.1 * synchronised, 10 * naive):  # an unsynchronised clock reads about the naive time
        return (f"{seconds * 1e6:.3g} µs is far shorter than the work itself ({synchronised * 1e6:.3g} µs "
                "synchronised): the clock stopped before the result was ready")
    if seconds > 20 * synchronised:
        return f"{seconds * 1e6:.3g} µs is over 20x the synchronised time: time one call, not a loop"
    return None


@exercises.register("00.3", hint="Amdahl: 1 / (share / kernel speed-up + (1 - share) / 1), a time-weighted "
                    "harmonic mean, not the kernel's speed-up")
def _amdahl(answer: Any, *, share: float, kernel_speedup: float) -> str | None:
    value = float(validate.number("answer", answer))
    expected = amdahl([share, 1 - share], [kernel_speedup, 1.0])
    if abs(value - kernel_speedup) < 1e-6 * kernel_speedup and abs(value - expected) > 0.02 * expected:
        return "that is the kernel's speed-up; the step also spends time in parts that do not speed up"
    return exercises.close(value, expected, rel=0.02)
