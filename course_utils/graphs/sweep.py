"""Eager against compiled across sizes, each size compiled on its own by the compile call the learner passes
(``compile(fw, fn)``: ``torch.compile``, ``jax.jit``, ``tf.function(jit_compile=True)``); notebooks 01 and 02.

Reusing one ``torch.compile`` object across sizes is not like for like: at the second shape Dynamo's automatic
dynamic recompiles the function as one shape-generic graph, which then serves every later size. Here every size
hands a fresh copy of the function (its own code object) to the learner's compile call, and the graphs compiled
are counted, so the sweep shows how many it really ran.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import calls, timing, validate
from course_utils.graphs.capture import fresh_if_function
from course_utils.graphs.fallback import max_abs_diff

MAX_SIZES = 32
MAX_SIZE = 2**28


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


def size_sweep(eager: Mapping[str, Callable[..., Any]], compile: Callable[[str, Callable[..., Any]], Any],
               sizes: Sequence[int], make_inputs: Callable[[str, int], tuple], *, min_time: float = 0.05,
               timeout: float = 600.0) -> SizeSweep:
    """Time ``eager[fw](*make_inputs(fw, n))`` and the same compiled by ``compile(fw, fresh copy of eager[fw])``
    (the learner's compile call) at every size ``n`` of ``sizes``; the compiled result is checked against eager at
    each size, and each compile call with its first run must finish within ``timeout`` seconds."""
    validate.instance("eager", eager, Mapping)
    validate.non_empty("eager", eager)
    frameworks = {validate.framework(fw, "eager"): validate.function(f"eager[{fw!r}]", fn) for fw, fn in eager.items()}
    validate.function("compile", compile)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence):
        raise TypeError(f"sizes must be a sequence of sizes; got {type(sizes).__name__}")
    validate.non_empty("sizes", sizes)
    if len(sizes) > MAX_SIZES:
        raise ValueError(f"sizes must hold at most {MAX_SIZES} sizes (each is compiled and timed); got {len(sizes)}")
    for i, n in enumerate(sizes):
        validate.number(f"sizes[{i}]", n, low=1, high=MAX_SIZE, integer=True)
    validate.function("make_inputs", make_inputs)
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    timeout = validate.seconds("timeout", timeout)
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
