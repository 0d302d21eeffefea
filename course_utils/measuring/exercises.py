"""Checkers of notebook 00's exercises: each compares the learner's answer with this run's measurements."""

from __future__ import annotations

import re
from typing import Any

from course_utils import exercises, roofline, timing, validate
from course_utils.measuring.speedups import amdahl

PREDICT_N = 512
# measured / predicted, once the prediction is scaled for how fast the machine runs now (``drift``). A roofline time
# is a lower bound, so a right prediction sits at or below the measurement; 0.5 leaves room for timing noise. Up
# to 8: a 512 matmul does far less work per call than the roof's matmul probe (n = roofline.default_matmul_n()), so
# the library's blocking and thread hand-offs weigh more and it reaches a smaller share of that roof (and the roof
# may come from a faster framework's library than torch's).
PREDICT_BAND = (0.5, 8.0)
_TORCH_PROBE = re.compile(r"^(?:torch )?matmul fp32 n=(\d+)$")


def _torch_mm_seconds(n: int) -> float:
    """Median seconds of torch.mm at n x n: the statistic the roof's probe used, for ``drift``."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(n, n, device=device)
    return timing.benchmark(torch.mm, a, a, min_time=0.1).median


def measured_matmul_seconds(n: int = PREDICT_N) -> float:
    """Fastest block's time per call of torch.mm on two n x n fp32 matrices (the reference of exercise 00.1):
    the fastest, because other processes only ever slow a call down."""
    import torch

    n = validate.number("n", n, low=2, high=8192, integer=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(n, n, device=device)
    return min(timing.benchmark(torch.mm, a, a, min_time=0.1).times)


def drift(machine: roofline.Machine) -> float:
    """How much slower the machine's torch matmul probe ran when the roof was measured than it runs now (the
    same probe timed again: 2 means twice as slow then); 1.0 when ``machine`` holds no torch matmul probe.
    Other processes come and go: a roof measured in a busy moment is low, and a prediction from it long."""
    validate.instance("machine", machine, roofline.Machine)
    for name, then in machine.flops_probes.items():
        found = _TORCH_PROBE.match(name)
        if found:
            n = int(found.group(1))
            return (2 * n**3 / _torch_mm_seconds(n)) / then
    return 1.0


@exercises.register("00.1", hint="predict with machine.roofline_time(2 * n**3, 3 * 4 * n * n): the FLOPs of an "
                    "n x n matmul over the compute roof, or its bytes over the bandwidth, whichever is longer; "
                    f"the check accepts a measurement {PREDICT_BAND[0]}x to {PREDICT_BAND[1]:g}x your prediction")
def _predict_matmul(answer: Any, *, machine: roofline.Machine, measured: float | None = None,
                    drift_now: float | None = None) -> str | None:
    """Right when this run's measurement (``measured``, else ``measured_matmul_seconds()``) lands within
    ``PREDICT_BAND`` of the prediction scaled by ``drift_now`` (else ``drift(machine)``, timed right before):
    both sides of the comparison then come from the same moment of the machine."""
    validate.instance("machine", machine, roofline.Machine)
    predicted = float(validate.number("answer", answer))
    if predicted <= 0:
        return "a time must be positive (seconds)"
    scale = drift(machine) if drift_now is None else float(validate.positive("drift_now", drift_now))
    seconds = measured if measured is not None else measured_matmul_seconds()
    ratio = seconds * scale / predicted
    low, high = PREDICT_BAND
    if low <= ratio <= high:
        return None
    why = ("the machine beat your prediction by more than 2x, and a roofline time is a lower bound: check the units "
           "(seconds) and the FLOP count" if ratio < low else
           f"the measurement is over {high:g}x your prediction: check the FLOP count (2n³) and the roof you divided by")
    return (f"this run measured {seconds * 1e3:.3g} ms, {ratio:.3g}x your prediction of {predicted * 1e3:.3g} ms "
            f"(scaled by {1 / scale:.2f} for how fast the machine runs now): {why}")


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
