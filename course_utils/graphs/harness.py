"""One speed-up, several harnesses: notebook 01's size sweep against notebook 00's measurement of the same chain.

The sweep passes ``bias`` as a full array and compiles a fresh static graph per size; notebook 00 passes a
scalar ``bias``. ``compare_harnesses`` warms the C allocator as notebook 00 does, then times, in one set of
alternating rounds, the eager and the learner's compiled chain under the sweep's harness, the same with a
shape-generic graph (``dynamic=True``), and under 00's harness, each with both chains' page faults per call: each
factor is then measured on its own, like for like, and every ratio has its interval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from course_utils import calls, display, intervals, timing, validate
from course_utils.measuring.allocator import outputs_worth, tensor_bytes, warm_allocator

SWEEP = "this sweep's harness: static graph, `bias` array"
GENERIC = "shape-generic graph (dynamic=True), `bias` array"
OTHER = "notebook 00's harness: static graph, scalar `bias`"
HARNESSES = (SWEEP, GENERIC, OTHER)


@dataclass(frozen=True)
class Harness:
    """Eager and compiled times of the chain under one harness (timed in the same rounds), and the eager and
    the compiled chain's page faults per call in outputs' worth (nan where the OS does not count them)."""

    label: str
    eager: timing.Measurement
    compiled: timing.Measurement
    faults: float
    compiled_faults: float

    @property
    def speedup(self) -> intervals.Speedup:
        """Eager time over compiled time, with its interval over the paired rounds."""
        return intervals.speedup(self.eager, self.compiled)

    def row(self) -> tuple[str, ...]:
        return (self.label, display.format_time(self.eager.median), display.format_time(self.compiled.median),
                str(self.speedup), _faults(self.faults), _faults(self.compiled_faults))


def _faults(value: float) -> str:
    return "-" if value != value else f"{value:.1f}"


def compare_harnesses(chain: Callable[..., Any], compiled: Mapping[str, Callable[..., Any]],
                      sweep_args: Sequence[Any], other_args: Sequence[Any], *, min_time: float = 0.4,
                      rounds: int = 6, timeout: float = 600.0) -> dict[str, Harness]:
    """The harnesses of the module docstring. ``compiled`` maps ``SWEEP``, ``GENERIC`` and ``OTHER`` to the
    learner's compiled chains (each fresh: static, ``dynamic=True``, static); ``sweep_args`` carry a ``bias``
    array, ``other_args`` notebook 00's scalar ``bias``. All six calls are timed in the same rounds."""
    validate.function("chain", chain)
    validate.instance("compiled", compiled, Mapping)
    missing = [h for h in HARNESSES if h not in compiled]
    if missing:
        raise ValueError(f"compiled must map each of {HARNESSES} to a compiled chain; missing {missing}")
    for h in HARNESSES:
        validate.function(f"compiled[{h!r}]", compiled[h])
    validate.instance("sweep_args", sweep_args, (tuple, list))
    validate.instance("other_args", other_args, (tuple, list))
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    timeout = validate.seconds("timeout", timeout)
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
                           outputs_worth(chain, *args[h], output_bytes=tensor_bytes(args[h][0])),
                           outputs_worth(compiled[h], *args[h], output_bytes=tensor_bytes(args[h][0])))
                for h in HARNESSES}


def factors(found: Mapping[str, Harness]) -> dict[str, intervals.Speedup]:
    """Each factor that separates the harnesses, timed in the same rounds: a ``bias`` array against a scalar
    (compiled), a shape-generic graph against a static one (compiled), and the eager side (array against scalar):
    each as the time without the change over the time with it (below 1: the change costs time), with its interval."""
    validate.instance("found", found, Mapping)
    return {"a `bias` array instead of a scalar, compiled": intervals.speedup(found[OTHER].compiled,
                                                                              found[SWEEP].compiled),
            "a shape-generic graph instead of a static one": intervals.speedup(found[SWEEP].compiled,
                                                                               found[GENERIC].compiled),
            "a `bias` array instead of a scalar, eager": intervals.speedup(found[OTHER].eager, found[SWEEP].eager)}


def gap(found: Mapping[str, Harness]) -> intervals.Speedup:
    """Notebook 00's speed-up over this sweep's, round by round (both timed in the same rounds), with its interval:
    what "the two harnesses agree within a margin" is tested on."""
    validate.instance("found", found, Mapping)
    other, sweep = (validate.instance(f"found[{h!r}]", found.get(h), Harness) for h in (OTHER, SWEEP))
    each = [[e / c for e, c in zip(h.eager.rounds, h.compiled.rounds)] for h in (other, sweep)]
    s = intervals.speedup(*each)  # paired sequences: the rounds of one interleaved call
    return replace(s, baseline="notebook 00's speed-up", candidate="this sweep's", unit=intervals.ROUNDS)


def factor_table(factors: Mapping[str, intervals.Speedup]) -> display.Table:
    """Each factor that separates the harnesses (``factors``): the time without it over the time with it, with its
    interval and the outcome that interval gives."""
    validate.instance("factors", factors, Mapping)
    validate.non_empty("factors", factors)
    return display.table(["factor", "time without it / time with it", "outcome"],
                         [(name, str(s), s.outcome) for name, s in factors.items()],
                         title="What separates the two harnesses, each factor timed apart",
                         note="below 1x the factor costs time; within the noise: the interval reaches 1x")


def harness_table(found: Mapping[str, Harness]) -> display.Table:
    """One row per harness: eager and compiled medians, the speed-up with its interval, both chains' page faults."""
    validate.instance("found", found, Mapping)
    validate.non_empty("found", found)
    for h in found.values():
        validate.instance("found", h, Harness)
    return display.table(["harness", "eager chain", "compiled chain", "speed-up over eager",
                          "eager page faults / call (outputs' worth)", "compiled page faults / call"],
                         [h.row() for h in found.values()],
                         title="The same chain at one size, measured several ways in one set of rounds",
                         note="page faults from getrusage around 3 calls; one output's worth = the chain's "
                              "output size in 4 KiB pages")
