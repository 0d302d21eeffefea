"""The ring all-reduce model, T(N) = 2(N-1)·latency + 2(N-1)/N · bytes / bandwidth, fitted per round of a sweep
(``allreduce_cost``, kept in ``build/machine/`` for later notebooks); ZeRO's traffic and model state (computed)."""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import declare, display, env, intervals, machine, validate
from course_utils.distributed import launcher, worker

_Bytes = Annotated[float, declare.NonNegative]
_Numbers = _Bytes | Annotated[Sequence[_Bytes], declare.NonEmpty]  # a number, or a sequence or array of them
_Count = Annotated[int, declare.Range(1, None)]
_Seconds = Annotated[Sequence[declare.PositiveFloat], declare.NonEmpty]


@declare.checked
def ring_allreduce_time(nbytes: _Numbers, n: _Count | Annotated[Sequence[_Count], declare.NonEmpty],
                        bandwidth: Annotated[float, declare.Positive], latency: _Bytes) -> Any:
    """Seconds for a ring all-reduce of ``nbytes`` over ``n`` devices (numbers or arrays, broadcast; one device:
    0 s): 2(n-1)·latency + 2(n-1)/n·bytes/bandwidth."""
    b, devices = np.asarray(nbytes, dtype=float), np.asarray(n, dtype=float)
    out = 2 * (devices - 1) * latency + 2 * (devices - 1) / devices * b / bandwidth
    return float(out) if out.ndim == 0 else out


@declare.checked
@dataclass(frozen=True, repr=False)
class AllReduceModel:
    """A fitted ring model: ``bandwidth`` (bytes/s per link) and ``latency`` (s per ring step)."""

    bandwidth: Annotated[float, declare.Positive]
    latency: Annotated[float, declare.NonNegative]
    fitted_on: Annotated[int, declare.Range(2, 1 << 20)] = 2

    def time(self, nbytes: Any, n: Any) -> Any:
        """Predicted seconds for ``nbytes`` over ``n`` devices (computed)."""
        return ring_allreduce_time(nbytes, n, self.bandwidth, self.latency)

    def __repr__(self) -> str:
        return (f"AllReduceModel(bandwidth={self.bandwidth / 1e9:.3g} GB/s, latency={self.latency * 1e6:.3g} us, "
                f"fitted on {self.fitted_on} processes)")

@declare.checked
def fit_allreduce(nbytes: Annotated[Sequence[_Bytes], declare.NonEmpty], seconds: _Seconds,
                  n: Annotated[int, declare.Range(2, 1 << 20)]) -> AllReduceModel:
    """Least-squares fit (relative errors) of latency and bandwidth to one statistic per message size measured on
    ``n`` processes (``allreduce_sweep``); a negative latency is refitted as bandwidth alone."""
    b, t = np.asarray(nbytes, dtype=float), np.asarray(seconds, dtype=float)
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


@declare.checked
def allreduce_sweep(records: Sequence[Any], q: Annotated[float, declare.Range(0, 100)] = FIT_QUANTILE
                    ) -> tuple[list[int], list[float]]:
    """(message bytes, seconds) of one rank's all-reduce sweep (records of kind "allreduce"): each size's ``q``-th
    percentile, the median by default. Fit and score with the same ``q``, or every measurement looks slow."""
    rows = [r for r in records if isinstance(r, Mapping) and r.get("kind") == "allreduce"]
    if not rows:
        raise ValueError("records hold no 'allreduce' record: launch ddp_train.py with the allreduce phase")
    return ([int(r["nbytes"]) for r in rows],
            [float(np.percentile(np.asarray(r["times"], dtype=float), q)) for r in rows])


@declare.checked
def score(model: AllReduceModel, nbytes: Annotated[Sequence[_Bytes], declare.NonEmpty], seconds: _Seconds,
          n: Annotated[int, declare.Range(2, 1 << 20)]) -> np.ndarray:
    """Measured over predicted time at each message size on ``n`` processes (1.0: exact); ``seconds`` the statistic
    the model was fitted on."""
    b, t = np.asarray(nbytes, dtype=float), np.asarray(seconds, dtype=float)
    if b.shape != t.shape:
        raise ValueError(f"nbytes and seconds must have the same length; got {b.size} and {t.size}")
    return t / model.time(b, n)


@declare.checked
def zero_traffic(nbytes: Annotated[float, declare.NonNegative], n: Annotated[int, declare.Range(1, 1 << 20)],
                 stage: Literal[0, 1, 2, 3]) -> float:
    """Bytes each device sends per step under ZeRO ``stage`` (computed, ring collectives, bandwidth term): stages
    0-2 move DDP's 2(N-1)/N x gradient bytes (split differently); stage 3 gathers the weights again: 3(N-1)/N."""
    passes = 3 if stage == 3 else 2
    return float(passes * (n - 1) / n * nbytes)


@declare.checked
def sweep_sizes(min_bytes: Annotated[int, declare.Range(4, 2**34)], max_bytes: Annotated[int, declare.Range(4, 2**34)]
                ) -> list[int]:
    """The message sizes of a sweep: powers of two from ``min_bytes`` to ``max_bytes``, every factor of 4."""
    low, high = min_bytes, validate.number("max_bytes", max_bytes, low=min_bytes)
    return [2**p for p in range(low.bit_length() - 1, high.bit_length(), 2)]


def sweep_in_rank(sizes: Sequence[int], n_rounds: int, repeats: int, device: Any) -> None:
    """Inside every launched rank: ``dist.all_reduce`` of each message size, barrier-aligned, the sizes in turns over
    ``n_rounds`` rounds, ``repeats`` calls per size; emits one "allreduce" record per size (nbytes, times, rounds)."""
    import torch
    import torch.distributed as dist

    calls = {str(n): (dist.all_reduce, torch.zeros(max(1, int(n) // 4), device=device)) for n in sizes}
    found = worker.timed_rounds(device, calls, n_rounds, repeats)
    for n in sizes:
        worker.emit(kind="allreduce", nbytes=int(n), times=found[str(n)], rounds=found["rounds"][str(n)])


def _t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): a Student-t interval on the mean of ``values`` (replicates: one per round)."""
    v = np.asarray(values, dtype=float)
    half = intervals.t_quantile(0.5 + confidence / 2, len(v) - 1) * float(np.std(v, ddof=1)) / math.sqrt(len(v))
    return float(np.mean(v)), float(np.mean(v) - half), float(np.mean(v) + half)


@dataclass(frozen=True, repr=False)
class AllReduceCost(display.Tabled):
    """This machine's all-reduce: the ring model fitted per round of a sweep, their mean (``model``) with 95% Student-t
    intervals over the rounds; ``sweep``: (bytes, median seconds); ``source``: "measured" or "read"."""

    model: AllReduceModel
    per_round: tuple[AllReduceModel, ...]
    sweep: tuple[tuple[int, ...], tuple[float, ...]]
    nprocs: int
    measured_at: str
    source: str
    key: str

    @property
    def latency_interval(self) -> tuple[float, float]:
        """(low, high) seconds per ring step."""
        _, low, high = _t_interval([m.latency for m in self.per_round])
        return max(low, 0.0), high

    @property
    def bandwidth_interval(self) -> tuple[float, float]:
        """(low, high) bytes/s, from the interval on seconds per byte (the quantity the model is linear in); high is
        ``math.inf`` when that interval reaches 0 (the rounds do not bound the bandwidth from above)."""
        _, low, high = _t_interval([1 / m.bandwidth for m in self.per_round])
        return 1 / high, (1 / low if low > 0 else math.inf)

    @property
    def bandwidth_text(self) -> str:
        """The bandwidth interval in words: 'a GB/s to b GB/s', or 'a GB/s and above' when it has no upper end."""
        low, high = self.bandwidth_interval
        return (f"{display.format_rate(low)} to {display.format_rate(high)}" if math.isfinite(high) else
                f"{display.format_rate(low)} and above (no upper end over these rounds)")

    def predict(self, nbytes: float, n: int) -> tuple[float, float, float]:
        """(seconds, low, high) for an all-reduce of ``nbytes`` over ``n`` ranks (computed): the mean of the rounds'
        predictions and its 95% interval."""
        nbytes = validate.non_negative("nbytes", nbytes)
        n = validate.number("n", n, low=1, high=1 << 20, integer=True)
        mean, low, high = _t_interval([m.time(nbytes, n) for m in self.per_round])
        return mean, max(low, 0.0), high

    @property
    def how(self) -> str:
        """Where these figures come from, in one line."""
        verb = "measured by this notebook" if self.source == "measured" else "read from this run's build/machine/"
        return (f"all-reduce cost model of this machine ({self.nprocs} ranks, {len(self.per_round)} rounds, "
                f"{self.measured_at}): {verb}")

    def table(self) -> display.Table:
        lat = self.latency_interval
        return display.Table(("parameter", "value", "95% interval over rounds"), (
            ("latency α per ring step", display.format_time(self.model.latency),
             f"{display.format_time(lat[0])} to {display.format_time(lat[1])}"),
            ("bandwidth β", display.format_rate(self.model.bandwidth),
             self.bandwidth_text),
            ("fitted on", f"{self.nprocs} processes, {len(self.sweep[0])} message sizes", "")),
            title="Ring all-reduce model of this machine (fitted per round)", note=self.how)


def fit_rounds(records: Sequence[Mapping[str, Any]], n: int) -> tuple[list[AllReduceModel], tuple[list, list]]:
    """The ring model fitted on each round of a sweep's "allreduce" records (rounds whose times do not grow with the
    size left out; at least 2 needed), and the sweep as (bytes, median of every call)."""
    sizes, medians = allreduce_sweep(records)
    rows = [r for r in records if isinstance(r, Mapping) and r.get("kind") == "allreduce"]
    per = [list(r.get("rounds") or ()) for r in rows]
    if not per or any(len(p) != len(per[0]) for p in per) or len(per[0]) < 2:
        raise ValueError("records must hold an 'allreduce' record per size with the same number (>= 2) of 'rounds'")
    fits = []
    for k in range(len(per[0])):
        try:
            fits.append(fit_allreduce(sizes, [p[k] for p in per], n))
        except ValueError:
            continue
    if len(fits) < 2:
        raise ValueError(f"only {len(fits)} round(s) of the sweep could be fitted: the times do not grow with size")
    return fits, (sizes, medians)


@declare.checked
def combine(fits: Annotated[Sequence[AllReduceModel], declare.NonEmpty]) -> AllReduceModel:
    """The mean of several fits in the quantities the model is linear in: latency and seconds per byte."""
    return AllReduceModel(bandwidth=1 / float(np.mean([1 / f.bandwidth for f in fits])),
                          latency=float(np.mean([f.latency for f in fits])), fitted_on=fits[0].fitted_on)


_COSTS: dict[str, AllReduceCost] = {}


@declare.checked
def allreduce_cost(nprocs: launcher.Ranks = 2, *, rounds: launcher.Rounds,
                   repeats: Annotated[int, declare.Range(2, 10**4)],
                   max_bytes: Annotated[int, declare.Range(2**12, 2**30)], refresh: bool = False,
                   timeout: launcher.JobTimeout = 240.0) -> AllReduceCost:
    """This machine's all-reduce cost model on ``nprocs`` ranks: read from this run's ``build/machine/`` when a notebook
    measured it (same machine, boot, size), else measured by ``ddp_train.py --phases allreduce`` and stored there."""
    key = f"{machine.machine_key()}-n{nprocs}"
    if not refresh and key in _COSTS:
        return _COSTS[key]
    path = env.build_dir("machine", f"allreduce-{key}.json")
    found = None if refresh else _read(path, key)
    if found is None:
        run = launcher.launch("ddp_train.py", nprocs, timeout=timeout, echo=False, progress=False,
                              args=["--phases", "allreduce", "--rounds", rounds, "--repeats", repeats,
                                    "--min-bytes", 2**12, "--max-bytes", max_bytes])
        fits, sweep = fit_rounds(run.records[0], nprocs)
        found = AllReduceCost(combine(fits), tuple(fits), (tuple(sweep[0]), tuple(sweep[1])), nprocs,
                              datetime.datetime.now().isoformat(timespec="seconds"), "measured", key)
        machine.store(path, _to_json(found))
    _COSTS[key] = found
    return found


def _to_json(cost: AllReduceCost) -> dict[str, Any]:
    return {"key": cost.key, "nprocs": cost.nprocs, "measured_at": cost.measured_at,
            "per_round": [[m.bandwidth, m.latency] for m in cost.per_round],
            "sweep": [list(cost.sweep[0]), list(cost.sweep[1])]}


def _read(path: Any, key: str) -> AllReduceCost | None:
    """The cost model in ``path`` if it holds a whole record for ``key``; None otherwise (then it is measured)."""
    try:
        data = json.loads(path.read_text())
        if data["key"] != key:
            return None
        n = int(data["nprocs"])
        fits = tuple(AllReduceModel(float(b), float(lat), n) for b, lat in data["per_round"])
        sweep = (tuple(int(b) for b in data["sweep"][0]), tuple(float(t) for t in data["sweep"][1]))
        return AllReduceCost(combine(fits), fits, sweep, n, str(data["measured_at"]), "read", key)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


_Stage = Annotated[int, declare.Range(0, 3)]  # ZeRO stage 0-3 (3 = FSDP)


@declare.checked
def memory_per_device(params: _Bytes, n: Annotated[int, declare.Range(1, None)], stage: _Stage = 0, *,
                      weight_bytes: _Bytes = 2, grad_bytes: _Bytes = 2, optimizer_bytes: _Bytes = 12) -> float:
    """Bytes per device for weights + gradients + optimizer state under ZeRO ``stage`` 0-3 (3 = FSDP); defaults: mixed-
    precision Adam, 16 bytes per parameter. Activations are left out (they depend on the batch, not the sharding)."""
    opt = optimizer_bytes / (n if stage >= 1 else 1)
    grad = grad_bytes / (n if stage >= 2 else 1)
    weight = weight_bytes / (n if stage >= 3 else 1)
    return float(params * (opt + grad + weight))


@declare.checked
def largest_model(device_bytes: Annotated[float, declare.Positive], n: Annotated[int, declare.Range(1, None)],
                  stage: _Stage = 0) -> float:
    """The most parameters whose model state fits in ``device_bytes`` per device (computed; no activations)."""
    return device_bytes / memory_per_device(1.0, n, stage)
