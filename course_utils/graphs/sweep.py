"""Eager against compiled across sizes (notebooks 01 and 02), each size compiled afresh by the learner's compile
call: one ``torch.compile`` object reused across sizes would turn shape-generic at the second shape, so every size
hands a fresh copy of the function over, and the graphs compiled are counted."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from course_utils import calls, declare, timing, validate
from course_utils.declare import NonEmpty, Range
from course_utils.graphs.capture import fresh_if_function
from course_utils.graphs.fallback import max_abs_diff

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
        import torch._dynamo.utils

        counters = torch._dynamo.utils.counters["stats"]
        before = counters["unique_graphs"]
        return fn, lambda compiled: counters["unique_graphs"] - before
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
