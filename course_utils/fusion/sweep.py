"""Fused against eager across tensor sizes, each size compiled on its own with the compile call the learner
passes (``compile={"torch": lambda f: torch.compile(f, dynamic=False), "jax": jax.jit, ...}``).

Reusing one ``torch.compile`` object across sizes is not like for like: at the second shape Dynamo's automatic
dynamic recompiles the function as one shape-generic graph, which then serves every later size. Here every size
hands a fresh copy of the chain (its own code object) to the learner's compile call, and the graphs compiled are
counted, so the sweep shows how many it really ran.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import calls, interop, timing, validate
from course_utils.fusion.variants import chain
from course_utils.graphs.capture import fresh_function

MAX_SIZES = 32


@dataclass(frozen=True)
class SizeSweep:
    """Per framework and size (rows of the input): eager and fused timings, whether every fused result matched
    the reference, and the graphs compiled per framework over the sweep (one per size when nothing is shared)."""

    rows: tuple[int, ...]
    eager: dict[str, list[timing.Measurement]]
    fused: dict[str, list[timing.Measurement]]
    equal: dict[str, bool]
    compiles: dict[str, int]

    @property
    def speedups(self) -> dict[str, list[float]]:
        """Eager median over fused median, per framework, smallest size first."""
        return {fw: [e.median / f.median for e, f in zip(self.eager[fw], self.fused[fw])] for fw in self.eager}


def _counted(framework: str, fn: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[[Any], int]]:
    """``fn`` wrapped so that its traces can be counted, and how to read the count from what compile returned."""
    if framework == "torch":
        import torch

        counters = torch._dynamo.utils.counters["stats"]
        before = counters["unique_graphs"]
        return fresh_function(fn), lambda compiled: counters["unique_graphs"] - before
    if framework == "jax":
        traced = [0]

        def counted(*args: Any) -> Any:
            traced[0] += 1  # runs only while tracing
            return fn(*args)

        return counted, lambda compiled: traced[0]
    return fn, lambda compiled: int(compiled.experimental_get_tracing_count())


def size_sweep(data: Mapping[str, tuple[Any, Any]], rows: Sequence[int], reference: Any, *,
               compile: Mapping[str, Callable[[Callable[..., Any]], Callable[..., Any]]], min_time: float = 0.05,
               atol: float = 1e-4, timeout: float = 600) -> SizeSweep:
    """Time the chain eager and fused at each row count of ``rows`` (slices of ``data[fw] = (x, bias)``); at each
    size the chain is handed afresh to ``compile[fw]``, the learner's compile call for that framework. Each fused
    result is checked against ``reference[:rows]`` (the full-size result, NumPy) within ``atol``; each compile
    call and its first run must finish within ``timeout`` seconds."""
    import numpy as np

    validate.instance("data", data, Mapping)
    validate.non_empty("data", data)
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise TypeError(f"rows must be a sequence of row counts; got {type(rows).__name__}")
    validate.non_empty("rows", rows)
    if len(rows) > MAX_SIZES:
        raise ValueError(f"rows must hold at most {MAX_SIZES} sizes (each is compiled and timed); got {len(rows)}")
    for i, n in enumerate(rows):
        validate.number(f"rows[{i}]", n, low=1, high=2**24, integer=True)
    validate.instance("compile", compile, Mapping)
    validate.number("min_time", min_time, low=0, high=10, low_open=True)
    validate.number("atol", atol, low=0, high=1, low_open=True)
    frameworks = {validate.framework(fw, "data key"): value for fw, value in data.items()}
    for fw, value in frameworks.items():
        if not (isinstance(value, tuple) and len(value) == 2):
            raise TypeError(f"data[{fw!r}] must be an (x, bias) pair; got {type(value).__name__}")
        if fw not in compile:
            raise ValueError(f"compile must give a compile call for every framework of data; {fw!r} is missing")
        validate.function(f"compile[{fw!r}]", compile[fw])
    reference = np.asarray(reference)
    eager: dict[str, list[timing.Measurement]] = {fw: [] for fw in frameworks}
    fused: dict[str, list[timing.Measurement]] = {fw: [] for fw in frameworks}
    equal = {fw: True for fw in frameworks}
    compiles = {fw: 0 for fw in frameworks}
    for n in rows:
        for fw, (x, bias) in frameworks.items():
            xs, fn = x[:n], chain(fw)
            wrapped, count = _counted(fw, fn)
            with calls.time_limit(timeout, f"{calls.describe(compile[fw])} (compile[{fw!r}]) at {n} rows"):
                compiled = compile[fw](wrapped)
                result = interop.to_numpy(compiled(xs, bias))
            equal[fw] &= bool(np.allclose(result, reference[:n], atol=atol))
            for found, f, kind in ((eager, fn, "eager"), (fused, compiled, "fused")):
                found[fw].append(timing.benchmark(f, xs, bias, min_time=min_time, min_repeats=3, label=f"{fw} {kind}"))
            compiles[fw] += count(compiled)
    return SizeSweep(tuple(int(n) for n in rows), eager, fused, equal, compiles)
