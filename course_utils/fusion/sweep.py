"""Fused against eager across tensor sizes, each size compiled on its own.

Reusing one ``torch.compile`` object across sizes is not like for like: at the second shape Dynamo's automatic
dynamic recompiles the function as one shape-generic graph, which then serves every later size. Here each size
gets a fresh, static compile in every framework (``jax.jit`` and ``tf.function`` specialise per shape anyway),
and the compiles are counted, so the sweep shows how many graphs it really ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import env, interop, timing, validate
from course_utils.fusion.variants import chain
from course_utils.graphs.capture import fresh_function


@dataclass(frozen=True)
class SizeSweep:
    """Per framework and size (rows of the input): eager and fused timings, their ratio, and whether every fused
    result matched the reference; ``compiles``: graphs compiled per framework over the sweep (one per size)."""

    rows: tuple[int, ...]
    eager: dict[str, list[timing.Measurement]]
    fused: dict[str, list[timing.Measurement]]
    equal: dict[str, bool]
    compiles: dict[str, int]

    @property
    def speedups(self) -> dict[str, list[float]]:
        """Eager median over fused median, per framework, smallest size first."""
        return {fw: [e.median / f.median for e, f in zip(self.eager[fw], self.fused[fw])] for fw in self.eager}


def _static(framework: str, fn: Any) -> tuple[Any, Any]:
    """``fn`` compiled afresh for one shape, and a function that says how many graphs it has compiled so far."""
    if framework == "torch":
        import torch

        counters = torch._dynamo.utils.counters["stats"]
        before = counters["unique_graphs"]
        return torch.compile(fresh_function(fn), dynamic=False), lambda: counters["unique_graphs"] - before
    if framework == "jax":
        import jax

        traced = [0]

        def counted(*args: Any) -> Any:
            traced[0] += 1  # runs only while tracing
            return fn(*args)

        return jax.jit(counted), lambda: traced[0]
    compiled = env.import_tensorflow().function(fn, jit_compile=True)
    return compiled, lambda: int(compiled.experimental_get_tracing_count())


def size_sweep(data: Mapping[str, tuple[Any, Any]], rows: Sequence[int], reference: Any, *, min_time: float = 0.05,
               atol: float = 1e-4) -> SizeSweep:
    """Time the chain eager and fused at each row count of ``rows`` (slices of ``data[fw] = (x, bias)``), the fused
    one compiled fresh and static for that size; each fused result is checked against ``reference[:rows]``
    (a NumPy array of the full-size result) within ``atol``."""
    import numpy as np

    validate.instance("data", data, Mapping)
    validate.non_empty("data", data)
    validate.non_empty("rows", rows)
    for n in rows:
        validate.positive("rows", n, integer=True)
    validate.positive("min_time", min_time)
    eager: dict[str, list[timing.Measurement]] = {fw: [] for fw in data}
    fused: dict[str, list[timing.Measurement]] = {fw: [] for fw in data}
    equal = {fw: True for fw in data}
    compiles = {fw: 0 for fw in data}
    for n in rows:
        for fw, (x, bias) in data.items():
            xs, fn = x[:n], chain(validate.framework(fw, "data key"))
            compiled, count = _static(fw, fn)
            equal[fw] &= bool(np.allclose(interop.to_numpy(compiled(xs, bias)), reference[:n], atol=atol))
            for found, f, kind in ((eager, fn, "eager"), (fused, compiled, "fused")):
                found[fw].append(timing.benchmark(f, xs, bias, min_time=min_time, min_repeats=3, label=f"{fw} {kind}"))
            compiles[fw] += count()
    return SizeSweep(tuple(rows), eager, fused, equal, compiles)
