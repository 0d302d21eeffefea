"""Eager against compiled across sizes (notebooks 01 and 02), each size compiled afresh, graphs counted; and one
speed-up under several harnesses (the sweep's ``bias`` array, 00's scalar, a shape-generic graph), timed apart."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

from course_utils import calls, declare, display, intervals, timing, validate
from course_utils.declare import NonEmpty, Range
from course_utils.graphs.breakeven import torch_graph_count
from course_utils.graphs.capture import fresh_if_function
from course_utils.graphs.fallback import max_abs_diff
from course_utils.measuring.workloads import outputs_worth, tensor_bytes, warm_allocator

MAX_SIZES = 32
MAX_SIZE = 2**28


@declare.checked
@dataclass(frozen=True)
class SizeSweep:
    """Per framework and size: eager and compiled timings, the largest difference between their results over
    the sweep, and the graphs compiled (one per size when nothing is shared)."""

    sizes: tuple[int, ...]
    eager: dict[str, list[timing.Measurement]]
    compiled: dict[str, list[timing.Measurement]]
    worst: dict[str, float]
    compiles: dict[str, int]

    @property
    def speedups(self) -> dict[str, list[float]]:
        """Eager median over compiled median, per framework, smallest size first."""
        return {fw: [e.median / c.median for e, c in zip(self.eager[fw], self.compiled[fw])] for fw in self.eager}

    @property
    def series(self) -> dict[str, list[timing.Measurement]]:
        """``{"<fw> eager": [...], "<fw> compiled": [...]}``: the curves of ``cu.plotting.sweep_plot``."""
        return {f"{fw} {kind}": found[fw] for fw in self.eager
                for kind, found in (("eager", self.eager), ("compiled", self.compiled))}


def _counted(framework: str, fn: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[[Any], int]]:
    """A fresh copy of ``fn`` whose traces can be counted, and how to read the count from what compile returned."""
    fn = fresh_if_function(fn)
    if framework == "torch":
        before = torch_graph_count()
        return fn, lambda compiled: torch_graph_count() - before
    if framework == "jax":
        traced = [0]

        def counted(*args: Any) -> Any:
            traced[0] += 1  # runs only while tracing
            return fn(*args)

        return counted, lambda compiled: traced[0]
    return fn, lambda compiled: int(compiled.experimental_get_tracing_count())


@declare.checked
def size_sweep(eager: Annotated[Mapping[Literal["torch", "jax", "tensorflow"], Callable[..., Any]], NonEmpty],
               compile: Callable[[str, Callable[..., Any]], Any],
               sizes: Annotated[Sequence[Annotated[int, Range(1, MAX_SIZE)]], NonEmpty, declare.MaxItems(MAX_SIZES)],
               make_inputs: Callable[[str, int], tuple], *,
               min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.05,
               timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> SizeSweep:
    """Time ``eager[fw](*make_inputs(fw, n))`` and the same compiled by ``compile(fw, fresh copy)`` at every size,
    each compiled result checked against eager, each compile and first run within ``timeout`` s (None: default)."""
    frameworks = dict(eager)
    eager_m: dict[str, list[timing.Measurement]] = {fw: [] for fw in frameworks}
    compiled_m: dict[str, list[timing.Measurement]] = {fw: [] for fw in frameworks}
    worst = {fw: 0.0 for fw in frameworks}
    compiles = {fw: 0 for fw in frameworks}
    for n in sizes:
        for fw, fn in frameworks.items():
            args = make_inputs(fw, n)
            wrapped, count = _counted(fw, fn)
            with calls.time_limit(timeout, f"{calls.describe(compile)} (compile) for {fw} at size {n}"):
                compiled = validate.function("compile(...)", compile(fw, wrapped))
                worst[fw] = max(worst[fw], max_abs_diff(fn(*args), compiled(*args)))
            eager_m[fw].append(timing.benchmark(fn, *args, min_time=min_time, min_repeats=3, label=f"{fw} eager"))
            compiled_m[fw].append(timing.benchmark(compiled, *args, min_time=min_time, min_repeats=3,
                                                   label=f"{fw} compiled"))
            compiles[fw] += count(compiled)
    return SizeSweep(tuple(int(n) for n in sizes), eager_m, compiled_m, worst, compiles)


SWEEP = "this sweep's harness: static graph, `bias` array"
GENERIC = "shape-generic graph (dynamic=True), `bias` array"
OTHER = "notebook 00's harness: static graph, scalar `bias`"
HARNESSES = (SWEEP, GENERIC, OTHER)


@declare.checked
@dataclass(frozen=True)
class Harness:
    """Eager and compiled times of the chain under one harness (same rounds), and both chains' page faults per
    call in outputs' worth (nan where the OS does not count them)."""

    label: declare.Text
    eager: timing.Measurement
    compiled: timing.Measurement
    faults: Annotated[float, Range(0)] | None
    compiled_faults: Annotated[float, Range(0)] | None

    @property
    def speedup(self) -> intervals.Speedup:
        """Eager time over compiled time, with its interval over the paired rounds."""
        return intervals.speedup(self.eager, self.compiled)

    def row(self) -> tuple[str, ...]:
        return (self.label, display.format_time(self.eager.median), display.format_time(self.compiled.median),
                str(self.speedup), _faults(self.faults), _faults(self.compiled_faults))


def _faults(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.1f}"


def _or_none(value: float) -> float | None:
    return None if value != value else value  # nan: the OS does not count faults


@declare.checked
def compare_harnesses(chain: Callable[..., Any], compiled: Mapping[str, Callable[..., Any]],
                      sweep_args: Sequence[Any], other_args: Sequence[Any], *,
                      min_time: Annotated[float, Range(0, 60, low_open=True)] = 0.4,
                      rounds: Annotated[int, Range(2, 100)] = 6,
                      timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, Harness]:
    """``compiled`` maps ``SWEEP``, ``GENERIC``, ``OTHER`` to the learner's fresh compiled chains (static, dynamic,
    static), ``sweep_args`` hold a ``bias`` array, ``other_args`` 00's scalar: six calls timed in the same rounds."""
    if set(HARNESSES) - set(compiled):
        raise ValueError(f"compiled must map each of {HARNESSES} to a compiled chain; got {sorted(compiled)}")
    args = {SWEEP: sweep_args, GENERIC: sweep_args, OTHER: other_args}
    warm_allocator()
    timed_calls = {}
    with calls.time_limit(timeout, calls.describe(compiled[SWEEP])):
        for h in HARNESSES:
            compiled[h](*args[h])  # compile outside the clock
            timed_calls[f"{h} eager"] = lambda a=args[h]: chain(*a)
            timed_calls[f"{h} compiled"] = lambda f=compiled[h], a=args[h]: f(*a)
        timed = timing.interleaved(timed_calls, rounds=rounds, min_time=min_time)
        return {h: Harness(h, timed[f"{h} eager"], timed[f"{h} compiled"],
                           *(_or_none(outputs_worth(f, *args[h], output_bytes=tensor_bytes(args[h][0])))
                             for f in (chain, compiled[h]))) for h in HARNESSES}


@declare.checked
def harness_factors(found: Mapping[str, Harness]) -> dict[str, intervals.Speedup]:
    """Each factor that separates the harnesses, as the time without the change over the time with it (below 1: the
    change costs time), with its interval: a ``bias`` array (compiled, eager) and a shape-generic graph."""
    return {"a `bias` array instead of a scalar, compiled": intervals.speedup(found[OTHER].compiled,
                                                                              found[SWEEP].compiled),
            "a shape-generic graph instead of a static one": intervals.speedup(found[SWEEP].compiled,
                                                                               found[GENERIC].compiled),
            "a `bias` array instead of a scalar, eager": intervals.speedup(found[OTHER].eager, found[SWEEP].eager)}


@declare.checked
def harness_gap(found: Mapping[str, Harness]) -> intervals.Speedup:
    """Notebook 00's speed-up over this sweep's, round by round (same rounds), with its interval."""
    each = [[e / c for e, c in zip(h.eager.rounds, h.compiled.rounds)] for h in (found[OTHER], found[SWEEP])]
    s = intervals.speedup(*each)  # paired sequences: the rounds of one interleaved call
    return replace(s, baseline="notebook 00's speed-up", candidate="this sweep's", unit=intervals.ROUNDS)


@declare.checked
def factor_table(factors: Annotated[Mapping[str, intervals.Speedup], NonEmpty]) -> display.Table:
    """Each factor (``harness_factors``): the time without it over the time with it, its interval and its outcome."""
    return display.table(["factor", "time without it / time with it", "outcome"],
                         [(name, str(s), s.outcome) for name, s in factors.items()],
                         title="What separates the two harnesses, each factor timed apart",
                         note="below 1x the factor costs time; within the noise: the interval reaches 1x")


@declare.checked
def harness_table(found: Annotated[Mapping[str, Harness], NonEmpty]) -> display.Table:
    """One row per harness: eager and compiled medians, the speed-up with its interval, both chains' page faults."""
    return display.table(["harness", "eager chain (median)", "compiled chain (median)",
                          "speed-up over eager (geometric mean of per-round ratios)",
                          "eager page faults / call (outputs' worth)", "compiled page faults / call"],
                         [h.row() for h in found.values()],
                         title="The same chain at one size, measured several ways in one set of rounds",
                         note="page faults from getrusage around 3 calls; one output's worth = the chain's "
                              "output size in 4 KiB pages; the speed-up is not the ratio of the two medians")
