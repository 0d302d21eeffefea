"""Speed-ups that name their baseline, what a kernel's speed-up is worth to a whole step (Amdahl: parts taking shares
``w_i`` of its time, sped up by ``s_i``, speed it up by ``1 / sum(w_i / s_i)``), and notebook 00's summary rows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from course_utils import declare, display, intervals, machine, timing
from course_utils.declare import NonEmpty, PositiveFloat, Range, SameLength

Fraction = Annotated[float, Range(0, 1)]
_NAMES = {"torch": ("torch eager", "torch.compile"), "jax": ("jax op-by-op", "jax.jit"),
          "tensorflow": ("tensorflow eager", "tf.function(jit_compile)")}


@declare.checked
def variant_name(framework: Literal["torch", "jax", "tensorflow"], compiled: bool) -> str:
    """The display name of a framework's eager or compiled variant ('torch eager', 'jax.jit', ...)."""
    return _NAMES[framework][int(compiled)]


@declare.checked
def amdahl(shares: Annotated[Sequence[Fraction], NonEmpty],
           speedups: Annotated[Sequence[PositiveFloat], SameLength("shares")]) -> float:
    """The whole step's speed-up when parts taking ``shares`` of its time (adding up to 1) speed up by ``speedups``."""
    if not math.isclose(sum(shares), 1.0, rel_tol=1e-6, abs_tol=1e-9):
        raise ValueError(f"shares must add up to 1; they add up to {sum(shares):.6g}")
    return 1.0 / sum(w / s for w, s in zip(shares, speedups))


EAGER, COMPILED = "eager", "compiled"
EAGER_POLY, COMPILED_POLY = "eager, no tanh", "compiled, no tanh"
ESTIMATE = "geometric mean of the {n} per-round ratios"  # what the tables' speed-ups are, said where they print


@declare.checked
def short(s: intervals.Speedup) -> str:
    """'3.04x (2.95x to 3.12x)': a speed-up and its interval, for a table cell."""
    return f"{s.ratio:.3g}x ({s.low:.3g}x to {s.high:.3g}x)"


@declare.checked
@dataclass(frozen=True, repr=False)
class ChainRuns(display.Tabled):
    """The chain's times from one ``timing.interleaved`` call: variant ("eager", "compiled", optionally "eager, no
    tanh", "compiled, no tanh") -> framework -> Measurement; any two pair by round into an interval."""

    runs: Annotated[Mapping[str, Annotated[Mapping[str, timing.Measurement], NonEmpty]], NonEmpty]

    def __post_init__(self) -> None:
        frameworks = set(self.runs.get(EAGER, ()))
        if EAGER not in self.runs or COMPILED not in self.runs:
            raise ValueError(f"runs must hold {EAGER!r} and {COMPILED!r}; got {sorted(self.runs)}")
        for variant, found in self.runs.items():
            if set(found) != frameworks:
                raise ValueError(f"runs[{variant!r}] must hold the frameworks of runs['eager'] {sorted(frameworks)}; "
                                 f"got {sorted(found)}")
        counts = {len(m.rounds) for found in self.runs.values() for m in found.values()}
        if min(counts) < 2 or len(counts) > 1:
            raise ValueError(f"runs must come from one cu.timing.interleaved call (the same rounds, at least 2); "
                             f"got round counts {sorted(counts)}")

    @property
    def frameworks(self) -> list[str]:
        return list(self.runs[EAGER])

    @property
    def has_polynomial(self) -> bool:
        return EAGER_POLY in self.runs and COMPILED_POLY in self.runs

    @property
    def rounds(self) -> int:
        return len(next(iter(self.runs[EAGER].values())).rounds)

    def _pair(self, tanh: bool) -> tuple[str, str]:
        if not tanh and not self.has_polynomial:
            raise ValueError(f"tanh=False needs runs for {EAGER_POLY!r} and {COMPILED_POLY!r}")
        return (EAGER, COMPILED) if tanh else (EAGER_POLY, COMPILED_POLY)

    def time(self, variant: str, framework: str) -> timing.Measurement:
        return self.runs[variant][framework]

    def own(self, framework: str, *, tanh: bool = True) -> intervals.Speedup:
        """Compiled over the same framework's eager (baseline: that framework's eager)."""
        eager, compiled = self._pair(tanh)
        return intervals.speedup(self.time(eager, framework), self.time(compiled, framework))

    def best(self, variant: str) -> str:
        """The framework with the shortest median for ``variant``."""
        return min(self.frameworks, key=lambda fw: self.time(variant, fw).median)

    def best_vs_best(self, *, tanh: bool = True) -> intervals.Speedup:
        """Fastest compiled over fastest eager: what compiling buys a team free to pick any framework."""
        eager, compiled = self._pair(tanh)
        return intervals.speedup(self.time(eager, self.best(eager)), self.time(compiled, self.best(compiled)))

    def eager_spread(self) -> intervals.Speedup | None:
        """The slowest eager runtime's time over the fastest's (baseline: the slowest); None with one framework."""
        if len(self.frameworks) < 2:
            return None
        slow = max(self.frameworks, key=lambda fw: self.time(EAGER, fw).median)
        return intervals.speedup(self.time(EAGER, slow), self.time(EAGER, self.best(EAGER)))

    def first_call_ratio(self, framework: str) -> float:
        """The compiled chain's first call (its compile) over its steady median call."""
        m = self.time(COMPILED, framework)
        return float(m.first_call) / m.median

    def table(self) -> display.Table:
        fmt = display.format_time
        pairs = [(variant_name(fw, True), variant_name(fw, False), fw, fw) for fw in self.frameworks]
        pairs.append((f"best compiled ({variant_name(self.best(COMPILED), True)})",
                      f"best eager ({variant_name(self.best(EAGER), False)})", self.best(EAGER), self.best(COMPILED)))
        rows = []
        for i, (compiled, baseline, fw_e, fw_c) in enumerate(pairs):
            best = i == len(pairs) - 1
            row = [compiled, baseline, fmt(self.time(EAGER, fw_e).median), fmt(self.time(COMPILED, fw_c).median),
                   short(self.best_vs_best() if best else self.own(fw_e))]
            if self.has_polynomial:
                row.append(short(self.best_vs_best(tanh=False) if best else self.own(fw_e, tanh=False)))
            rows.append(tuple(row))
        columns = ["compiled", "baseline", "baseline time (median)", "compiled time (median)",
                   "speed-up (geometric mean)", *(["speed-up without tanh"] if self.has_polynomial else [])]
        return display.table(columns, rows, title="Steady state: each compiled chain against a named baseline",
                             note=f"the speed-up is the {ESTIMATE.format(n=self.rounds)} (not the ratio of the two "
                                  "medians), with its 95% interval in this process (cu.intervals.speedup); the last "
                                  "column times the chain with tanh replaced by the identity")


@declare.checked
def amdahl_table(kernels: Annotated[Mapping[declare.Text, PositiveFloat], NonEmpty],
                 shares: Annotated[Sequence[Fraction], NonEmpty] = (0.1, 0.3, 0.5, 0.9)) -> display.Table:
    """Computed step speed-ups when a kernel (label -> its speed-up) takes each share of the eager step (Amdahl)."""
    rows = [(display.percent(w), *(display.ratio(amdahl([w, 1 - w], [s, 1.0])) for s in kernels.values()))
            for w in shares]
    return display.table(["kernel's share of the eager step",
                          *(f"step speed-up, {k} ({display.ratio(s)}; computed)" for k, s in kernels.items())], rows,
                         title="A kernel's speed-up inside a step (Amdahl's law, computed)")


@declare.checked
def cache_state(before: Mapping[str, Annotated[int, Range(0)]], after: Mapping[str, Annotated[int, Range(0)]]) -> str:
    """'warm' when the compiles between two snapshots (``cu.compiled.inductor_cache_counts``) all hit
    torch.compile's on-disk cache, 'cold' when any missed, 'unknown' when none was counted."""
    hits, misses = (after[k] - before[k] for k in ("hits", "misses"))
    if hits < 0 or misses < 0:
        raise ValueError("after must be taken after before: its counts are smaller")
    return "cold" if misses > 0 else "warm" if hits > 0 else "unknown"


@declare.checked
def summary_rows(trap: Annotated[Mapping[str, tuple[timing.Measurement, timing.Measurement]], NonEmpty],
                 runs: ChainRuns, figures: machine.MachineFigures, adds: Mapping[str, timing.Measurement],
                 cache: Literal["warm", "cold", "unknown"],
                 fresh_best: intervals.Speedup) -> list[tuple[str, float, str, str]]:
    """(quantity, value, unit, note) rows for ``cu.notebook.summary_table``; ``fresh_best`` is the best-vs-best
    speed-up across fresh processes (``cu.fresh.replicate``), the headline."""
    rows = [(f"{fw}: matmul, time until ready / until return", intervals.speedup(ready, returned).ratio, "x",
             "1.0: computed before returning; more: returned early") for fw, (returned, ready) in trap.items()]
    for fw in runs.frameworks:
        first = runs.time("compiled", fw).first_call or 0.0
        rows.append((f"{variant_name(fw, True)} first call", first, "s",
                     f"reported apart; torch.compile cache {cache}" if fw == "torch" else "reported apart"))
    rows += [(f"chain: {variant_name(fw, True)} over {variant_name(fw, False)}", runs.own(fw).ratio, "x",
              "baseline: own eager; geometric mean, interval in section 3") for fw in runs.frameworks]
    rows.append(("chain: best compiled over best eager", fresh_best.ratio, "x",
                 f"with tanh; geometric mean, {fresh_best.interval}; in this process {runs.best_vs_best().ratio:.3g}x"))
    if runs.has_polynomial:
        rows.append(("chain without tanh: best compiled over best eager", runs.best_vs_best(tanh=False).ratio, "x",
                     "compilation alone, each compiler's tanh left out; in this process"))
    rows.append(("step speed-up if the chain is 30% of it", amdahl([0.3, 0.7], [fresh_best.ratio, 1.0]), "x",
                 "computed (Amdahl); the seed claims 1.43x (30% less compute)"))
    if "4 elements" in adds:
        rows.append(("per-call overhead, torch add on 4 elements", adds["4 elements"].median * 1e6, "µs", ""))
    rows.append(("memory roof", figures.bandwidth / 1e9, "GB/s", f"{figures.bandwidth_probe}; machine figure"))
    rows.append(("compute roof", figures.peak_flops / 1e9, "GFLOP/s", f"{figures.flops_probe}; machine figure"))
    rows += [(f"{fw}: best bandwidth probe / matmul probe", m.bandwidth / 1e9, "GB/s",
              f"matmul {m.peak_flops / 1e9:.0f} GFLOP/s") for fw, m in figures.roofs.items()]
    rows.append(("page faults of a fresh output", figures.fault_seconds(2**20) * 1e6, "µs per MiB", "machine figure"))
    rows += [(f"{fw}: one compiled call's fixed cost", c * 1e6, "µs", "machine figure")
             for fw, c in figures.call_cost.items()]
    return rows
