"""Speed-ups that name their baseline, and what a kernel's speed-up is worth to a whole step (Amdahl).

A step whose parts take shares ``w_i`` of its time and speed up by ``s_i`` speeds up by the time-weighted
harmonic mean ``1 / sum(w_i / s_i)``: the parts the compiler leaves alone cap the whole.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from course_utils import display, intervals, timing, validate

_NAMES = {"torch": ("torch eager", "torch.compile"), "jax": ("jax op-by-op", "jax.jit"),
          "tensorflow": ("tensorflow eager", "tf.function(jit_compile)")}


def variant_name(framework: str, compiled: bool) -> str:
    """The display name of a framework's eager or compiled variant ('torch eager', 'jax.jit', ...)."""
    framework = validate.framework(framework)
    validate.instance("compiled", compiled, bool)
    return _NAMES[framework][int(compiled)]


def amdahl(shares: Sequence[float], speedups: Sequence[float]) -> float:
    """The whole step's speed-up when parts taking ``shares`` of its time speed up by ``speedups``:
    1 / sum(share / speed-up), the time-weighted harmonic mean. ``shares`` must add up to 1."""
    validate.non_empty("shares", shares)
    validate.non_empty("speedups", speedups)
    if len(shares) != len(speedups):
        raise ValueError(f"speedups must have one value per share ({len(shares)}); got {len(speedups)}")
    checked = [validate.fraction(f"shares[{i}]", w) for i, w in enumerate(shares)]
    rates = [validate.positive(f"speedups[{i}]", s) for i, s in enumerate(speedups)]
    if not math.isclose(sum(checked), 1.0, rel_tol=1e-6, abs_tol=1e-9):
        raise ValueError(f"shares must add up to 1; they add up to {sum(checked):.6g}")
    return 1.0 / sum(w / s for w, s in zip(checked, rates))


EAGER, COMPILED = "eager", "compiled"
EAGER_POLY, COMPILED_POLY = "eager, no tanh", "compiled, no tanh"


def short(s: intervals.Speedup) -> str:
    """'3.04x (2.95x to 3.12x)': a speed-up and its interval, for a table cell."""
    validate.instance("s", s, intervals.Speedup)
    return f"{s.ratio:.3g}x ({s.low:.3g}x to {s.high:.3g}x)"


@dataclass(frozen=True, repr=False)
class ChainRuns:
    """The chain's times from one ``timing.interleaved`` call: variant ("eager", "compiled", and optionally
    "eager, no tanh", "compiled, no tanh") -> framework -> Measurement. Any two pair by round, so every speed-up
    here comes with its interval (``cu.intervals.speedup``), its baseline named."""

    runs: Mapping[str, Mapping[str, timing.Measurement]]

    def __post_init__(self) -> None:
        validate.instance("runs", self.runs, Mapping)
        for variant in (EAGER, COMPILED):
            if variant not in self.runs:
                raise ValueError(f"runs must hold {variant!r}; got {sorted(self.runs)}")
        frameworks = set(validate.non_empty(f"runs[{EAGER!r}]", self.runs[EAGER]))
        counts = set()
        for variant, found in self.runs.items():
            validate.instance(f"runs[{variant!r}]", found, Mapping)
            if set(found) != frameworks:
                raise ValueError(f"runs[{variant!r}] must hold the frameworks of runs['eager'] {sorted(frameworks)}; "
                                 f"got {sorted(found)}")
            for fw, m in found.items():
                validate.instance(f"runs[{variant!r}][{fw!r}]", m, timing.Measurement)
                counts.add(len(m.rounds))
        if min(counts) < 2 or len(counts) > 1:
            raise ValueError(f"runs must come from one cu.timing.interleaved call (the same rounds, at least 2); "
                             f"got round counts {sorted(counts)}")

    @property
    def frameworks(self) -> list[str]:
        return list(self.runs[EAGER])

    @property
    def has_polynomial(self) -> bool:
        return EAGER_POLY in self.runs and COMPILED_POLY in self.runs

    def _pair(self, tanh: bool) -> tuple[str, str]:
        validate.instance("tanh", tanh, bool)
        if not tanh and not self.has_polynomial:
            raise ValueError(f"tanh=False needs runs for {EAGER_POLY!r} and {COMPILED_POLY!r}")
        return (EAGER, COMPILED) if tanh else (EAGER_POLY, COMPILED_POLY)

    def _fw(self, framework: str) -> str:
        return validate.choice("framework", validate.framework(framework), tuple(self.frameworks))

    def time(self, variant: str, framework: str) -> timing.Measurement:
        variant = validate.choice("variant", variant, tuple(self.runs))
        return self.runs[variant][self._fw(framework)]

    def own(self, framework: str, *, tanh: bool = True) -> intervals.Speedup:
        """Compiled over the same framework's eager (baseline: that framework's eager)."""
        eager, compiled = self._pair(tanh)
        fw = self._fw(framework)
        return intervals.speedup(self.runs[eager][fw], self.runs[compiled][fw])

    def best(self, variant: str) -> str:
        """The framework with the shortest median for ``variant``."""
        found = self.runs[validate.choice("variant", variant, tuple(self.runs))]
        return min(found, key=lambda fw: found[fw].median)

    def best_vs_best(self, *, tanh: bool = True) -> intervals.Speedup:
        """Fastest compiled over fastest eager: what compiling buys a team free to pick any framework."""
        eager, compiled = self._pair(tanh)
        return intervals.speedup(self.runs[eager][self.best(eager)], self.runs[compiled][self.best(compiled)])

    def eager_spread(self) -> intervals.Speedup | None:
        """How many times longer the slowest eager runtime took than the fastest (baseline: the slowest); None
        with one framework."""
        found = self.runs[EAGER]
        if len(found) < 2:
            return None
        slow = max(found, key=lambda fw: found[fw].median)
        return intervals.speedup(found[slow], found[self.best(EAGER)])

    def first_call_ratio(self, framework: str) -> float:
        """The compiled chain's first call (its compile) over its steady median call."""
        m = self.runs[COMPILED][self._fw(framework)]
        if m.first_call is None:
            raise ValueError(f"the compiled {framework} chain has no first call recorded")
        return m.first_call / m.median

    def table(self) -> display.Table:
        fmt = display.format_time
        rows = []
        for fw in self.frameworks:
            row = [variant_name(fw, True), variant_name(fw, False), fmt(self.runs[EAGER][fw].median),
                   fmt(self.runs[COMPILED][fw].median), short(self.own(fw))]
            if self.has_polynomial:
                row.append(short(self.own(fw, tanh=False)))
            rows.append(tuple(row))
        best = [f"best compiled ({variant_name(self.best(COMPILED), True)})",
                f"best eager ({variant_name(self.best(EAGER), False)})",
                fmt(self.runs[EAGER][self.best(EAGER)].median), fmt(self.runs[COMPILED][self.best(COMPILED)].median),
                short(self.best_vs_best())]
        if self.has_polynomial:
            best.append(short(self.best_vs_best(tanh=False)))
        rows.append(tuple(best))
        n = len(next(iter(self.runs[EAGER].values())).rounds)
        columns = ["compiled", "baseline", "baseline time", "compiled time", "speed-up"]
        if self.has_polynomial:
            columns.append("speed-up without tanh")
        return display.table(columns, rows, title="Steady state: each compiled chain against a named baseline",
                             note=f"median per call; speed-ups with their 95% interval over {n} paired rounds "
                                  "(cu.intervals.speedup); the last column times the same chain with tanh replaced by "
                                  "the identity (its best-vs-best row pairs the fastest of those)")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def amdahl_table(kernels: Mapping[str, float], shares: Sequence[float] = (0.1, 0.3, 0.5, 0.9)) -> display.Table:
    """Computed step speed-ups when a kernel (label -> its measured speed-up) takes each share of the eager step
    and the rest runs as before: one column per kernel."""
    validate.instance("kernels", kernels, Mapping)
    validate.non_empty("kernels", kernels)
    speeds = {validate.text("kernels key", k): validate.positive(f"kernels[{k!r}]", v) for k, v in kernels.items()}
    if isinstance(shares, (str, bytes)):
        raise TypeError(f"shares must be a list or tuple of fractions; got str {shares!r}")
    validate.non_empty("shares", shares)
    checked = [validate.fraction(f"shares[{i}]", w) for i, w in enumerate(shares)]
    rows = [(display.percent(w), *(display.ratio(amdahl([w, 1 - w], [s, 1.0])) for s in speeds.values()))
            for w in checked]
    return display.table(["kernel's share of the eager step",
                          *(f"step speed-up, {k} ({display.ratio(s)}; computed)" for k, s in speeds.items())], rows,
                         title="A kernel's speed-up inside a step (Amdahl's law, computed)")


def cache_state(before: Mapping[str, int], after: Mapping[str, int]) -> str:
    """'warm' when the compiles between two snapshots (``cu.compiled.inductor_cache_counts``) all hit
    torch.compile's on-disk cache, 'cold' when any missed, 'unknown' when none was counted."""
    counts = {}
    for name, found in (("before", before), ("after", after)):
        validate.instance(name, found, Mapping)
        for key in ("hits", "misses"):
            if key not in found:
                raise ValueError(f"{name} must hold 'hits' and 'misses' (cu.compiled.inductor_cache_counts()); "
                                 f"got {sorted(found)}")
            counts[name, key] = validate.non_negative(f"{name}[{key!r}]", found[key], integer=True)
    hits = counts["after", "hits"] - counts["before", "hits"]
    misses = counts["after", "misses"] - counts["before", "misses"]
    if hits < 0 or misses < 0:
        raise ValueError("after must be taken after before: its counts are smaller")
    if misses > 0:
        return "cold"
    return "warm" if hits > 0 else "unknown"
