"""Speed-ups that name their baseline, and what a kernel's speed-up is worth to a whole step (Amdahl).

A step whose parts take shares ``w_i`` of its time and speed up by ``s_i`` speeds up by the time-weighted
harmonic mean ``1 / sum(w_i / s_i)``: the parts the compiler leaves alone cap the whole.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from course_utils import display, timing, validate

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


def share_needed(target: float, speedup: float) -> float:
    """The share of step time that must speed up by ``speedup`` for the whole step to speed up by ``target``
    (the rest unchanged): (1 - 1/target) / (1 - 1/speedup). Above 1 means impossible."""
    target = validate.number("target", target, low=1, low_open=True)
    speedup = validate.number("speedup", speedup, low=1, low_open=True)
    return (1 - 1 / target) / (1 - 1 / speedup)


@dataclass(frozen=True, repr=False)
class ChainSpeedups:
    """Eager and compiled times of one kernel per framework, and the speed-ups between them, baselines named."""

    eager: Mapping[str, timing.Measurement]
    compiled: Mapping[str, timing.Measurement]
    # framework -> (eager, compiled) page faults per call in outputs' worth (``chain_faults``), where measured
    faults: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate.non_empty("eager", self.eager)
        if set(self.eager) != set(self.compiled):
            raise ValueError(f"compiled must have the frameworks of eager {sorted(self.eager)}; "
                             f"got {sorted(self.compiled)}")

    def own(self, framework: str) -> float:
        """Compiled over the same framework's eager (baseline: that framework's eager)."""
        framework = validate.choice("framework", validate.framework(framework), tuple(self.eager))
        return self.eager[framework].median / self.compiled[framework].median

    @property
    def best_eager(self) -> str:
        return min(self.eager, key=lambda f: self.eager[f].median)

    @property
    def best_compiled(self) -> str:
        return min(self.compiled, key=lambda f: self.compiled[f].median)

    @property
    def best_vs_best(self) -> float:
        """Fastest compiled over fastest eager: what compiling buys a team free to pick any framework."""
        return self.eager[self.best_eager].median / self.compiled[self.best_compiled].median

    def table(self) -> display.Table:
        def faults(*frameworks: str) -> str:
            found = [self.faults.get(f) for f in frameworks]
            return " / ".join("-" if p is None else f"{p[int(i)]:.1f}" for p, i in zip(found, (0, 1)))

        rows = [(variant_name(f, True), variant_name(f, False), display.format_time(self.eager[f].median),
                 display.format_time(self.compiled[f].median), display.ratio(self.own(f)), faults(f, f))
                for f in self.eager]
        rows.append((f"best compiled ({variant_name(self.best_compiled, True)})",
                     f"best eager ({variant_name(self.best_eager, False)})",
                     display.format_time(self.eager[self.best_eager].median),
                     display.format_time(self.compiled[self.best_compiled].median), display.ratio(self.best_vs_best),
                     faults(self.best_eager, self.best_compiled)))
        return display.table(["compiled", "baseline", "baseline time", "compiled time", "speed-up",
                              "page faults / call, baseline / compiled"], rows,
                             title="Steady-state speed-ups, each against a named baseline (median per call)",
                             note="page faults in outputs' worth (the chain's output in 4 KiB pages, from getrusage): "
                                  "fresh memory each call; '-' where not measured")

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def amdahl_table(kernel_speedup: float, shares: Sequence[float] = (0.1, 0.3, 0.5, 0.9)) -> display.Table:
    """Computed step speed-ups when the kernel takes each share of the eager step and the rest runs as before."""
    kernel_speedup = validate.positive("kernel_speedup", kernel_speedup)
    validate.non_empty("shares", shares)
    rows = [(display.percent(w), display.ratio(amdahl([w, 1 - w], [kernel_speedup, 1.0]))) for w in shares]
    return display.table(["kernel's share of the eager step", "step speed-up (computed, Amdahl)"], rows,
                         title=f"A {kernel_speedup:.2f}x kernel inside a step")


def cache_state(before: Mapping[str, int], after: Mapping[str, int]) -> str:
    """'warm' when the compiles between two snapshots all hit Inductor's cache, 'cold' when any missed."""
    hits = validate.non_negative("after['hits']", after["hits"]) - before["hits"]
    misses = validate.non_negative("after['misses']", after["misses"]) - before["misses"]
    if misses > 0:
        return "cold"
    return "warm" if hits > 0 else "unknown"


_PHASES = (("_compile.compile_inner", "Dynamo's whole compile"), ("bytecode_tracing", "tracing the bytecode"),
           ("build_guards", "building guards"), ("OutputGraph.call_user_compiler", "the backend"),
           ("PyCodeCache.load_by_key_path", "loading the generated code"), ("compile_file", "C++ compiles"))


def compile_phase_times() -> dict[str, float]:
    """Seconds per torch.compile phase so far in this process, from Dynamo's own timers (summed per phase);
    {} where this torch keeps none (snapshot before and after a first call)."""
    try:
        from torch._dynamo.utils import compilation_time_metrics
    except ImportError:
        return {}
    return {name: float(sum(times)) for name, times in compilation_time_metrics.items()}


def first_call_text(first_call: float, cache: str, before: Mapping[str, float], after: Mapping[str, float]) -> str:
    """One sentence: torch.compile's first call, the Inductor cache state (``cache_state``) and what Dynamo's
    timers (``compile_phase_times`` snapshots ``before`` and ``after`` it) say it spent; where they say nothing,
    what else the first call paid is not established."""
    first_call = validate.positive("first_call", first_call)
    cache = validate.choice("cache", cache, ("warm", "cold", "unknown"))
    spent = {name: after.get(name, 0.0) - before.get(name, 0.0) for name, _ in _PHASES}
    words = {"warm": "a **warm** Inductor cache (every graph was found in the cache an earlier run left on disk)",
             "cold": "a **cold** Inductor cache (the code was generated in this call)",
             "unknown": "an Inductor cache state this run could not tell"}
    text = f"torch.compile's first call took {display.format_time(first_call)} with {words[cache]}"
    if spent["_compile.compile_inner"] <= 0:
        return text + (". What it paid beside the cache (Dynamo's tracing and guards, starting compile workers are "
                       "candidates) is not established by this run: this torch's Dynamo timers recorded nothing. ")
    parts = ", ".join(f"{label} {display.format_time(spent[name])}" for name, label in _PHASES[1:] if spent[name] > 0)
    text += (f". Dynamo's own timers put {display.format_time(spent['_compile.compile_inner'])} of it in compiling "
             f"({parts}; the phases nest, so they do not add up)")
    if cache == "warm" and spent["compile_file"] > 0:
        text += (f": even with the cache warm, {display.format_time(spent['compile_file'])} went to C++ compiles, "
                 "which the cache lookup did not spare; why is not established by this run")
    rest = first_call - spent["_compile.compile_inner"]
    return text + (f". The remaining {display.format_time(rest)} is the call itself and what the timers do not "
                   "cover. " if rest > 0 else ". ")
