"""Faster, slower or within the noise: a Student-t interval on the paired log-ratios of a speed ratio, paired by
``timing.interleaved`` round or by fresh process (blocks within a round are not independent; few replicates: t)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import declare, timing, validate
from course_utils.declare import NonNegativeFloat, PositiveFloat, Range

FASTER, SLOWER, WITHIN_NOISE = "faster", "slower", "within the noise"
ROUNDS, PROCESSES = "rounds", "processes"
METHOD = "Student-t interval on paired log-ratios"
MIN_SECONDS, MAX_SECONDS = 1e-12, 1e7  # a picosecond to four months: outside it a "time" is a unit or a typo
MAX_P = 0.99999  # t_quantile's largest p: 0.5 + confidence / 2 at the highest confidence (0.999) is 0.9995


@declare.checked
@dataclass(frozen=True, repr=False)
class Speedup:
    """How many times faster ``candidate`` ran than ``baseline`` (baseline time over candidate time): the
    geometric mean over paired replicates, and its interval. Above 1: the candidate is faster."""

    baseline: str
    candidate: str
    ratio: PositiveFloat
    low: NonNegativeFloat  # exp() of a very wide interval may reach 0 or infinity
    high: Any  # infinity allowed: an unbounded interval
    n: Annotated[int, Range(1, 10**6)]
    unit: Literal["rounds", "processes"]
    confidence: Annotated[float, Range(0.5, 0.999)] = 0.95

    def __post_init__(self) -> None:
        if isinstance(self.high, bool) or not isinstance(self.high, numbers.Real):
            raise TypeError(f"high must be a number; got {type(self.high).__name__} {self.high!r}")
        if math.isnan(self.high):
            raise ValueError(f"high must be a number (infinity allowed: an unbounded interval); got {self.high!r}")
        if not self.low <= self.ratio <= self.high:
            raise ValueError(f"ratio must lie within its interval [low, high]; got {self.ratio!r} outside "
                             f"[{self.low!r}, {self.high!r}]")

    @property
    def outcome(self) -> str:
        """"faster" when the whole interval lies above 1, "slower" below it, else "within the noise"."""
        if self.low > 1:
            return FASTER
        if self.high < 1:
            return SLOWER
        return WITHIN_NOISE

    @property
    def faster(self) -> bool:
        return self.outcome == FASTER

    @property
    def slower(self) -> bool:
        return self.outcome == SLOWER

    def above(self, threshold: float) -> bool:
        """True when the whole interval lies above ``threshold`` (e.g. a break-even speed-up)."""
        return self.low > validate.positive("threshold", threshold)

    def below(self, threshold: float) -> bool:
        """True when the whole interval lies below ``threshold``."""
        return self.high < validate.positive("threshold", threshold)

    @property
    def scope(self) -> str:
        """Where the replicates came from: 'over 6 paired rounds in this process' or 'across 5 fresh processes'."""
        if self.unit == ROUNDS:
            return f"over {self.n} paired round{'s' if self.n != 1 else ''} in this process"
        return f"across {self.n} fresh process{'es' if self.n != 1 else ''}"

    @property
    def estimate(self) -> str:
        """What the point estimate is: the geometric mean of the paired ratios, not a ratio of pooled medians."""
        return f"geometric mean of the per-{'round' if self.unit == ROUNDS else 'process'} ratios"

    @property
    def interval(self) -> str:
        """'95% interval 1.21x to 1.58x over 6 paired rounds in this process', written to the digits it supports."""
        _, low, high = self.printed()
        return f"{self.confidence:.0%} interval {low} to {high} {self.scope}"

    def printed(self) -> tuple[str, str, str]:
        """(ratio, low, high) as printed: decimals from the interval's width (a wide interval gets fewer), the
        bounds rounded outward, so the printed ratio always lies inside the printed interval."""
        decimals = _decimals(self.low, self.high)
        low = _bound(self.low, _needed(self.low, decimals), -1)
        point = _needed(self.ratio, decimals)
        if float(f"{self.ratio:.{point}f}") < float(low.rstrip("x")):  # never print the ratio below its own interval
            point = _needed(self.low, decimals)
        return f"{self.ratio:.{point}f}x", low, _bound(self.high, decimals, +1)

    def __str__(self) -> str:
        """'1.42x (geometric mean; 95% interval 1.2x to 1.6x over 6 paired rounds in this process)'."""
        ratio, _, _ = self.printed()
        return f"{ratio} (geometric mean; {self.interval})"

    __repr__ = __str__

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "candidate": self.candidate, "ratio": self.ratio, "low": self.low,
                "high": self.high, "n": self.n, "unit": self.unit, "confidence": self.confidence,
                "outcome": self.outcome, "method": METHOD}


MAX_DECIMALS = 3


def _decimals(low: float, high: float) -> int:
    """Decimals an interval supports: one more than the decade of its width, from 1 to ``MAX_DECIMALS``."""
    width = high - low
    if not math.isfinite(width):
        return 1
    if width <= 0:
        return MAX_DECIMALS
    return min(MAX_DECIMALS, max(1, 1 - math.floor(math.log10(width))))


def _bound(value: float, decimals: int, direction: int) -> str:
    """A bound rounded outward (down for a low bound, up for a high one); an infinite one is 'unbounded'."""
    if not math.isfinite(value):
        return "unbounded"
    scaled = value * 10**decimals
    rounded = (math.floor(scaled + 1e-9) if direction < 0 else math.ceil(scaled - 1e-9)) / 10**decimals
    return f"{rounded:.{decimals}f}x"


def _needed(value: float, decimals: int) -> int:
    """``decimals``, or more for a value under 1 so that it keeps two significant digits rather than printing 0."""
    if 0 < value < 1:
        return max(decimals, min(12, 1 - math.floor(math.log10(value))))
    return decimals


def speedup(baseline: Any, candidate: Any, *, confidence: float = 0.95) -> Speedup:
    """The speed-up of ``candidate`` over ``baseline`` with its interval: two Measurements of one ``timing.interleaved``
    call (paired by round), or two equally long sequences of seconds measured in pairs (one per fresh process)."""
    confidence = validate.number("confidence", confidence, low=0.5, high=0.999)
    base, cand, names, unit = _paired(baseline, candidate)
    logs = np.log(base) - np.log(cand)
    n = len(logs)
    centre = float(np.mean(logs))
    half = t_quantile(0.5 + confidence / 2, n - 1) * float(np.std(logs, ddof=1)) / math.sqrt(n)
    return Speedup(names[0], names[1], math.exp(centre), math.exp(centre - half), math.exp(centre + half), n, unit,
                   confidence)


def _paired(baseline: Any, candidate: Any) -> tuple[np.ndarray, np.ndarray, tuple[str, str], str]:
    if isinstance(baseline, timing.Measurement) or isinstance(candidate, timing.Measurement):
        validate.instance("baseline", baseline, timing.Measurement)
        validate.instance("candidate", candidate, timing.Measurement)
        for name, m in (("baseline", baseline), ("candidate", candidate)):
            if len(m.rounds) < 2:
                raise ValueError(f"{name} ({m.label!r}) has {len(m.rounds)} timed round(s); an interval needs the "
                                 "per-round medians of at least 2 rounds: time both in one cu.timing.interleaved()")
        if len(baseline.rounds) != len(candidate.rounds):
            raise ValueError(f"baseline has {len(baseline.rounds)} rounds, candidate {len(candidate.rounds)}: pair "
                             "rounds of the same cu.timing.interleaved() call")
        return (np.array(baseline.rounds), np.array(candidate.rounds), (baseline.label, candidate.label), ROUNDS)
    values = []
    for name, seq in (("baseline", baseline), ("candidate", candidate)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence | np.ndarray):
            raise TypeError(f"{name} must be a timing.Measurement or a sequence of seconds; got {type(seq).__name__}")
        if len(seq) < 2:
            raise ValueError(f"{name} holds {len(seq)} value(s); an interval needs at least 2 paired replicates")
        values.append(np.array([validate.number(f"{name}[{i}]", v, low=MIN_SECONDS, high=MAX_SECONDS)
                                for i, v in enumerate(seq)], dtype=float))
    if len(values[0]) != len(values[1]):
        raise ValueError(f"baseline holds {len(values[0])} values, candidate {len(values[1])}: they must be paired")
    return values[0], values[1], ("baseline", "candidate"), PROCESSES


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (p in (0.5, 0.99999]) of Student's t with ``df`` degrees of freedom, by integrating its
    density and bisecting: no SciPy needed (nearer 1 the numerical tail is not accurate, so such a p is refused)."""
    p = validate.number("p", p, low=0.5, high=MAX_P, low_open=True)
    df = validate.number("df", df, low=1, high=10**6, integer=True)
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        high *= 2
        if high > 2**40:  # t(1) at p = 0.99999 is ~31831: a bracket this wide means the integral went wrong
            raise RuntimeError(f"t_quantile({p!r}, {df!r}) found no bracket below {high:g}")
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if _t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2


def _t_cdf(t: float, df: int) -> float:
    """P(T <= t) for t >= 0. With t = sqrt(df)·tan(u) the density becomes c·cos(u)^(df-1) on [0, pi/2), smooth
    enough for Simpson's rule on a fixed grid at any t and df."""
    angle = math.atan(t / math.sqrt(df))
    grid = np.linspace(0.0, angle, 2001)
    values = np.cos(grid) ** (df - 1)
    weights = np.ones_like(grid)
    weights[1:-1:2], weights[2:-1:2] = 4, 2
    scale = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(math.pi)
    return 0.5 + scale * float(np.dot(weights, values)) * (grid[1] - grid[0]) / 3
