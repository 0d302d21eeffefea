"""The ring all-reduce cost model: T(N) = 2(N-1)·latency + 2(N-1)/N · bytes / bandwidth, fitted to measured
times, scored out of sample, and the traffic of ZeRO stages against plain DDP.

All numbers here are *computed* from the formula (a notebook labels them so); only the times passed to
``fit_allreduce``/``score`` are measured, one statistic of the repeats per size (``allreduce_sweep``, the
median by default) for the fit and the scores alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_utils import display, validate


def _array(name: str, value: Any, *, low: float, low_open: bool = False) -> np.ndarray:
    """``value`` (a number or a sequence of numbers) as a float array, every element finite and >= low."""
    if isinstance(value, (str, bytes, bool)) or value is None:
        raise TypeError(f"{name} must be a number or a sequence of numbers; got {type(value).__name__} {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number or a sequence of numbers; got {value!r}") from exc
    if arr.ndim > 0 and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if np.any(arr <= low if low_open else arr < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low:g}; got {value!r}")
    return arr


def ring_allreduce_time(nbytes: Any, n: Any, bandwidth: float, latency: float) -> Any:
    """Seconds for a ring all-reduce of ``nbytes`` over ``n`` devices: 2(n-1)·latency + 2(n-1)/n·bytes/bandwidth.

    ``nbytes`` and ``n`` may be arrays (broadcast); a scalar in gives a float out. One device: 0 s.
    """
    b = _array("nbytes", nbytes, low=0)
    devices = _array("n", n, low=1)
    if np.any(devices != np.round(devices)):
        raise ValueError(f"n must be whole device counts; got {n!r}")
    bandwidth = validate.positive("bandwidth", bandwidth)
    latency = validate.non_negative("latency", latency)
    out = 2 * (devices - 1) * latency + 2 * (devices - 1) / devices * b / bandwidth
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True, repr=False)
class AllReduceModel:
    """A fitted ring model: ``bandwidth`` (bytes/s per link) and ``latency`` (s per ring step)."""

    bandwidth: float
    latency: float
    fitted_on: int = 2

    def __post_init__(self) -> None:
        validate.positive("bandwidth", self.bandwidth)
        validate.non_negative("latency", self.latency)
        validate.number("fitted_on", self.fitted_on, low=2, integer=True)

    def time(self, nbytes: Any, n: Any) -> Any:
        """Predicted seconds for ``nbytes`` over ``n`` devices (computed)."""
        return ring_allreduce_time(nbytes, n, self.bandwidth, self.latency)

    def table(self) -> display.Table:
        return display.Table(("parameter", "value"), (
            ("bandwidth β", display.format_rate(self.bandwidth)),
            ("latency α per ring step", display.format_time(self.latency)),
            ("fitted on", f"{self.fitted_on} processes")), title="Ring all-reduce model (fitted)")

    def __repr__(self) -> str:
        return (f"AllReduceModel(bandwidth={self.bandwidth / 1e9:.3g} GB/s, latency={self.latency * 1e6:.3g} us, "
                f"fitted on {self.fitted_on} processes)")

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def fit_allreduce(nbytes: Sequence[float], seconds: Sequence[float], n: int) -> AllReduceModel:
    """Least-squares fit (relative errors) of latency and bandwidth to times measured on ``n`` processes
    over a sweep of message sizes: small messages pin the latency, large ones the bandwidth. ``seconds``: one
    statistic per size (``allreduce_sweep``), the same one every later ``score`` uses.

    A negative latency (the data shows none) is refitted as bandwidth alone; times that do not grow with the
    message size raise ``ValueError``.
    """
    b = _array("nbytes", nbytes, low=0)
    t = _array("seconds", seconds, low=0, low_open=True)
    n = validate.number("n", n, low=2, integer=True)
    if b.ndim != 1 or b.shape != t.shape or b.size < 2:
        raise ValueError(f"nbytes and seconds must have the same length >= 2; got {b.size} and {t.size}")
    if np.ptp(b) == 0:
        raise ValueError("nbytes must hold at least two different message sizes")
    design = np.stack([np.full_like(b, 2 * (n - 1)), 2 * (n - 1) / n * b], axis=1) / t[:, None]
    (latency, inv_bw), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if latency < 0:  # the data says "no latency": refit the bandwidth alone
        latency = 0.0
        inv_bw = float(np.linalg.lstsq(design[:, 1:], np.ones_like(t), rcond=None)[0][0])
    if inv_bw <= 0:
        raise ValueError("seconds do not grow with the message size: no bandwidth can be fitted")
    return AllReduceModel(bandwidth=float(1.0 / inv_bw), latency=float(latency), fitted_on=int(n))


FIT_QUANTILE = 50  # the statistic of the repeats that both the fit and every score use: the median


def allreduce_sweep(records: Sequence[Mapping[str, Any]], q: float = FIT_QUANTILE) -> tuple[list[int], list[float]]:
    """(message bytes, seconds) of one rank's all-reduce sweep (records of kind "allreduce", each with "nbytes"
    and its repeated "times"): each size's ``q``-th percentile, the median by default.

    Fit (``fit_allreduce``) and score (``score``) with the same ``q``: a model fitted on the fast quartile and
    scored against medians calls every measurement slow, by construction.
    """
    validate.number("q", q, low=0, high=100)
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
        raise TypeError(f"records must be a sequence of record dicts; got {type(records).__name__} {records!r:.60}")
    rows = [r for r in records if isinstance(r, Mapping) and r.get("kind") == "allreduce"]
    if not rows:
        raise ValueError("records hold no 'allreduce' record: launch ddp_train.py with the allreduce phase")
    return ([int(r["nbytes"]) for r in rows],
            [float(np.percentile(_array("times", r["times"], low=0, low_open=True), q)) for r in rows])


def score(model: AllReduceModel, nbytes: Sequence[float], seconds: Sequence[float], n: int) -> np.ndarray:
    """Measured over predicted time at each message size on ``n`` processes (1.0 = the model is exact).

    ``seconds`` must be the statistic the model was fitted on (``allreduce_sweep`` with the same ``q``)."""
    validate.instance("model", model, AllReduceModel)
    b = _array("nbytes", nbytes, low=0)
    t = _array("seconds", seconds, low=0, low_open=True)
    if b.shape != t.shape:
        raise ValueError(f"nbytes and seconds must have the same length; got {b.size} and {t.size}")
    n = validate.number("n", n, low=2, integer=True)
    return t / model.time(b, n)


def zero_traffic(nbytes: float, n: int, stage: int) -> float:
    """Bytes each device sends per step under ZeRO ``stage`` (computed, ring collectives, bandwidth term only).

    Stages 0-2 move what DDP moves, 2(N-1)/N x gradient bytes: stage 0 as one all-reduce, stages 1 and 2 as a
    reduce-scatter of the gradients plus an all-gather of the updated weights (same volume, differently
    split). Stage 3 gathers the weights again for the backward pass: 3(N-1)/N, about 1.5x DDP.
    """
    nbytes = validate.non_negative("nbytes", nbytes)
    n = validate.number("n", n, low=1, integer=True)
    stage = validate.choice("stage", validate.number("stage", stage, integer=True), (0, 1, 2, 3))
    passes = 3 if stage == 3 else 2
    return float(passes * (n - 1) / n * nbytes)
