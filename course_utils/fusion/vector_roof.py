"""The vector units' roof of each framework: its compiled elementwise rate on data in cache (multiply-adds, its own
tanh), and the table that sets a chain's arithmetic against its bytes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from course_utils import declare, display, env, interop, timing, validate
from course_utils.declare import NonEmpty, NonNegativeFloat, PositiveFloat, PositiveInt, Range
from course_utils.fusion.variants import into_buffer
from course_utils.measuring.workloads import array_ops


@declare.checked
@dataclass(frozen=True)
class VectorRoof:
    """One framework's compiled elementwise code in cache: multiply-add FLOP/s, tanh per second, its tanh's largest
    error against float64's on [-5, 5], and the fit's intercept (what a call costs besides its work)."""

    flops_per_second: PositiveFloat
    tanh_per_second: PositiveFloat
    elements: PositiveInt
    framework: Literal["torch", "jax", "tensorflow"] = "torch"
    tanh_error: NonNegativeFloat | None = None
    intercept_seconds: NonNegativeFloat | None = None

    @declare.checked
    def chain_seconds(self, elements: PositiveInt, *, flops: NonNegativeFloat, tanh: NonNegativeFloat) -> float:
        """Time the arithmetic alone needs: ``flops`` multiply-add FLOPs and ``tanh`` tanhs *per element*."""
        return elements * (flops / self.flops_per_second + tanh / self.tanh_per_second)

    def chain_flops_per_second(self, *, flops: float, tanh: float) -> float:
        """The FLOP/s ceiling of a kernel doing ``flops`` + ``tanh`` per element (a tanh counted as 1 FLOP, as
        ``trace_traffic`` counts it): where a point of that kernel sits under this roof on a roofline plot."""
        return (flops + tanh) / self.chain_seconds(1, flops=flops, tanh=tanh)


def _per_element(framework: str, fn: Callable[[Any], Any], xs: tuple[Any, Any], min_time: float,
                 ) -> tuple[float, float]:
    """Seconds per element of ``fn`` and the intercept, from its best time at two sizes (the slope takes out what a
    call costs besides its work); ``fn`` writes into a buffer it keeps, so no fresh output's page faults enter."""
    times = []
    for x in xs:
        into = into_buffer(framework, lambda v, _unused: fn(v), x)
        times.append(timing.benchmark(into, x, x, min_time=min_time, min_repeats=5).min)
    n_small, n_large = (int(x.shape[0]) for x in xs)
    slope = (times[1] - times[0]) / (n_large - n_small)
    slope = max(slope, 0.5 * times[1] / n_large)  # noise can shrink the difference: at most twice the plain rate
    return slope, max(times[1] - slope * n_large, 0.0)


@declare.checked
def measure_vector_roof(framework: str = "torch", *, elements: Annotated[int, Range(8192, 2**26)] | None = None,
                        steps: Annotated[int, Range(1, 64)] = 8, chains: Annotated[int, Range(1, 16)] = 4,
                        tanhs: Annotated[int, Range(1, 64)] = 8,
                        min_time: Annotated[float, Range(1e-3, 10)] = 0.1) -> VectorRoof:
    """One framework's compiled elementwise throughput in cache: ``chains`` Horner chains of ``steps`` multiply-adds
    and ``tanhs`` tanhs per element, timed at ``elements`` (default: LLC / 8) and an eighth as many (slope: rate)."""
    framework = validate.framework(framework)
    if elements is None:
        elements = min(max(2**16, (env.last_level_cache_bytes() or 2**23) // 32), 2**20)
    import numpy as np

    tanh = array_ops(framework).tanh
    grid = np.linspace(-5.0, 5.0, elements)
    values = (np.random.default_rng(0).random(elements) * 0.5).astype(np.float32)
    xs = (interop.to_framework(framework, values[: elements // 8]), interop.to_framework(framework, values))

    def horner(v: Any) -> Any:
        total = None
        for j in range(chains):
            acc = v + 0.1 * j
            for k in range(steps):
                acc = acc * v + (0.5 + 0.01 * k)
            total = acc if total is None else total + acc
        return total

    def tanh_sum(v: Any) -> Any:
        total = tanh(v)
        for k in range(1, tanhs):
            total = total + tanh(v + 0.01 * k)
        return total

    fma_flops = chains * (1 + 2 * steps) + chains - 1
    fma_slope, intercept_seconds = _per_element(framework, horner, xs, min_time)
    tanh_slope, _ = _per_element(framework, tanh_sum, xs, min_time)
    fma_rate = fma_flops / fma_slope
    adds = (2 * tanhs - 1) / fma_rate
    tanh_rate = tanhs / max(tanh_slope - adds, tanh_slope / 2)
    grid32 = grid.astype(np.float32)
    # XLA's tanh as its fused code computes it; Inductor's C++ and eager torch call the same at::vec tanh (SLEEF),
    # so torch is read eagerly, which saves a compile
    compiled_tanh = tanh if framework == "torch" else interop.compile_default(framework, tanh)
    got = interop.to_numpy(compiled_tanh(interop.to_framework(framework, grid32))).astype(np.float64)
    error = float(np.max(np.abs(got - np.tanh(grid32.astype(np.float64)))))
    return VectorRoof(fma_rate, tanh_rate, elements, framework, tanh_error=error, intercept_seconds=intercept_seconds)


@declare.checked
@dataclass(frozen=True)
class ChainRoof:
    """What can limit one framework's fused chain written into a reused buffer, in seconds: its arithmetic at the
    in-cache rates and its bytes at the memory roof, both computed."""

    arithmetic: PositiveFloat
    bytes: PositiveFloat

    @property
    def limit(self) -> str:
        """'arithmetic' or 'bytes': the larger part, which everything else can hide under."""
        return "arithmetic" if self.arithmetic >= self.bytes else "bytes"

    @property
    def seconds(self) -> float:
        """The roof time: the limiting part (everything else overlapping with it)."""
        return max(self.arithmetic, self.bytes)

    @property
    def serial(self) -> float:
        """Nothing overlapping: the two parts added up."""
        return self.arithmetic + self.bytes


Roofs = Annotated[Mapping[str, VectorRoof], NonEmpty]


@declare.checked
def chain_roofs(roofs: Roofs, *, elements: PositiveInt, flops: NonNegativeFloat, tanh: NonNegativeFloat,
                memory_seconds: PositiveFloat) -> dict[str, ChainRoof]:
    """Per framework: the ``ChainRoof`` of ``elements`` x (``flops`` + ``tanh``) moving ``memory_seconds`` of bytes."""
    return {name: ChainRoof(roof.chain_seconds(elements, flops=flops, tanh=tanh), memory_seconds)
            for name, roof in roofs.items()}


@declare.checked
def vector_roof_table(roofs: Roofs, *, elements: PositiveInt, flops: NonNegativeFloat, tanh: NonNegativeFloat,
                      memory_seconds: PositiveFloat, call_cost: Mapping[str, PositiveFloat] | None = None
                      ) -> display.Table:
    """Per framework: its in-cache rates, the intercept of their fit beside the machine figures' compiled call cost
    (``call_cost``), the arithmetic and the bytes' time of the chain (computed), and which one is larger."""
    limits = chain_roofs(roofs, elements=elements, flops=flops, tanh=tanh, memory_seconds=memory_seconds)
    rows = []
    for name, roof in roofs.items():
        cost = (call_cost or {}).get(name)
        rows.append((name, f"{roof.flops_per_second / 1e9:.1f}", f"{roof.tanh_per_second / 1e9:.2f}",
                     "-" if roof.tanh_error is None else f"{roof.tanh_error:.1e}",
                     "-" if roof.intercept_seconds is None else display.format_time(roof.intercept_seconds),
                     "-" if cost is None else display.format_time(cost),
                     display.format_time(limits[name].arithmetic), display.format_time(limits[name].bytes),
                     limits[name].limit))
    return display.table(["framework", "multiply-adds (GFLOP/s)", "tanh (G/s)", "tanh max error",
                          "intercept of the fit", "compiled call (machine figures)", "arithmetic (computed)",
                          "bytes (computed)", "limit"], rows,
                         title="The vector units' roof of each framework (measured in cache), and the chain's limits",
                         note=f"per element: {flops:g} FLOPs + {tanh:g} tanh; rates from two in-cache sizes (slope), "
                              "the intercept is what a call on those sizes costs besides them; the machine figures' "
                              "call cost is a compiled x + 1 on 16 elements; bytes at the memory roof; tanh error: "
                              "largest |tanh - float64 tanh| on [-5, 5]")
