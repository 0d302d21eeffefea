"""The vector units' roof of each framework: what its compiled elementwise code does per second on data that
stays in cache (multiply-adds, its own tanh), and the table that sets a chain's arithmetic against its bytes.

A fused elementwise kernel with a transcendental can be limited by arithmetic rather than memory; which one
depends on the implementation: Inductor calls SLEEF's 1-ULP tanh, XLA inlines a rational approximation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from course_utils import display, env, interop, timing, validate
from course_utils.fusion.variants import into_buffer


@dataclass(frozen=True)
class VectorRoof:
    """What one framework's compiled elementwise code does on data that stays in cache: FLOP/s of
    multiply-adds, tanh per second, how far its tanh is from float64's (max absolute error on [-5, 5]), and the
    intercept of the fit (``intercept_seconds``): what one call on those in-cache sizes costs besides its work,
    which the rates leave out."""

    flops_per_second: float
    tanh_per_second: float
    elements: int
    framework: str = "torch"
    tanh_error: float | None = None
    threads: int | None = None
    intercept_seconds: float | None = None

    def __post_init__(self) -> None:
        validate.positive("flops_per_second", self.flops_per_second)
        validate.positive("tanh_per_second", self.tanh_per_second)
        validate.positive("elements", self.elements, integer=True)
        validate.framework(self.framework, "framework")
        if self.tanh_error is not None:
            validate.non_negative("tanh_error", self.tanh_error)
        if self.threads is not None:
            validate.positive("threads", self.threads, integer=True)
        if self.intercept_seconds is not None:
            validate.non_negative("intercept_seconds", self.intercept_seconds)

    def chain_seconds(self, elements: int, *, flops: float, tanh: float) -> float:
        """Time the arithmetic alone needs: ``flops`` multiply-add FLOPs and ``tanh`` tanhs *per element*."""
        validate.positive("elements", elements, integer=True)
        validate.non_negative("flops", flops)
        validate.non_negative("tanh", tanh)
        return elements * (flops / self.flops_per_second + tanh / self.tanh_per_second)

    def chain_flops_per_second(self, *, flops: float, tanh: float) -> float:
        """The FLOP/s ceiling of a kernel doing ``flops`` + ``tanh`` per element (a tanh counted as 1 FLOP, as
        ``trace_traffic`` counts it): where a point of that kernel sits under this roof on a roofline plot."""
        return (flops + tanh) * 1.0 / self.chain_seconds(1, flops=flops, tanh=tanh)


def _tanh_of(framework: str) -> Callable[[Any], Any]:
    if framework == "torch":
        import torch

        return torch.tanh
    if framework == "jax":
        import jax.numpy as jnp

        return jnp.tanh
    return env.import_tensorflow().math.tanh


def _in_cache_kernel(framework: str, fn: Callable[[Any], Any], x: Any) -> Callable[[], Any]:
    """The probe's own kernel: ``fn(x)`` compiled by ``framework`` into a buffer it keeps (``into_buffer``), so that
    no fresh output's page faults enter a rate."""
    into = into_buffer(framework, lambda v, _unused: fn(v), x)
    return lambda: into(x, x)


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _per_element(framework: str, fn: Callable[[Any], Any], xs: tuple[Any, Any], min_time: float,
                 ) -> tuple[float, float]:
    """Seconds per element of ``fn`` and the intercept, from its best time at two sizes: the slope of time
    against elements is the kernel's rate with what a call costs besides its work taken out."""
    times = []
    for x in xs:
        times.append(timing.benchmark(_in_cache_kernel(framework, fn, x), min_time=min_time, min_repeats=5).min)
    n_small, n_large = (int(x.shape[0]) for x in xs)
    slope = (times[1] - times[0]) / (n_large - n_small)
    slope = max(slope, 0.5 * times[1] / n_large)  # noise can shrink the difference: at most twice the plain rate
    return slope, max(times[1] - slope * n_large, 0.0)


def measure_vector_roof(framework: str = "torch", *, elements: int | None = None, steps: int = 8, chains: int = 4,
                        tanhs: int = 8, min_time: float = 0.1, threads: int | None = None) -> VectorRoof:
    """Measure one framework's compiled elementwise *throughput* on in-cache tensors (its own tanh, its own code).

    Multiply-adds: ``chains`` independent Horner chains of ``steps`` multiply-adds per element, summed; tanh:
    the sum of ``tanhs`` independent tanhs per element (the adds' share, timed at the multiply-add rate, taken
    off). Independent work, because a fused elementwise kernel overlaps neighbouring elements: a chain of
    *dependent* tanhs would time the latency of one, not the rate. Each kernel is timed (best of its repeats:
    a roof is a best case, as in STREAM) on ``elements`` and on an eighth as many, and the rate is the slope
    between the two: a call on these sizes also costs something besides its work (``intercept_seconds``: guards,
    dispatch, waking the threads of a parallel loop), which on a small tensor can be as long as the work and would
    otherwise be charged to the vector units. It is the intercept of this fit, not the machine figures' call cost
    (``cu.machine.figures().call_cost``: a compiled ``x + 1`` on 16 elements, which runs on one thread). By default
    ``elements`` is an eighth of the last-level cache per tensor (input and output stay in cache; 2^16 to 2^20
    elements), so these are the vector units' rates, not memory's. ``tanh_error``: the largest absolute
    difference of the framework's tanh from float64's on [-5, 5]. ``threads`` (torch only) compiles and runs
    the kernels with that many OpenMP threads (default: torch's own setting).
    """
    framework = validate.framework(framework)
    if threads is not None:
        validate.number("threads", threads, low=1, high=1024, integer=True)
        if framework != "torch":
            raise ValueError(f"threads is a torch setting; got threads={threads} for framework {framework!r}")
    validate.number("steps", steps, low=1, high=64, integer=True)  # each is an op in the probe's graph
    validate.number("chains", chains, low=1, high=16, integer=True)
    validate.number("tanhs", tanhs, low=1, high=64, integer=True)
    validate.number("min_time", min_time, low=0, high=10, low_open=True)
    if elements is None:
        elements = min(max(2**16, (env.last_level_cache_bytes() or 2**23) // 32), 2**20)
    validate.number("elements", elements, low=8192, high=2**26, integer=True)
    import numpy as np

    tanh = _tanh_of(framework)
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
    with _torch_threads(threads):
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
    return VectorRoof(fma_rate, tanh_rate, elements, framework, error, threads, intercept_seconds)


@dataclass(frozen=True)
class ChainRoof:
    """What can limit one framework's fused chain written into a reused buffer, in seconds: its arithmetic at the
    in-cache rates and its bytes at the memory roof, both computed."""

    arithmetic: float
    bytes: float

    def __post_init__(self) -> None:
        validate.positive("arithmetic", self.arithmetic)
        validate.positive("bytes", self.bytes)

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


def chain_roofs(roofs: Mapping[str, VectorRoof], *, elements: int, flops: float, tanh: float,
                memory_seconds: float) -> dict[str, ChainRoof]:
    """Per framework of ``roofs``: the ``ChainRoof`` of a chain of ``elements`` x (``flops`` + ``tanh``) that
    moves ``memory_seconds`` of bytes at the memory roof."""
    validate.instance("roofs", roofs, Mapping)
    validate.non_empty("roofs", roofs)
    validate.positive("memory_seconds", memory_seconds)
    found = {}
    for name, roof in roofs.items():
        validate.instance(f"roofs[{name!r}]", roof, VectorRoof)
        found[name] = ChainRoof(roof.chain_seconds(elements, flops=flops, tanh=tanh), memory_seconds)
    return found


def vector_roof_table(roofs: Mapping[str, VectorRoof], *, elements: int, flops: float, tanh: float,
                      memory_seconds: float, call_cost: Mapping[str, float] | None = None) -> display.Table:
    """Per framework: its in-cache rates and the intercept of their fit, the machine figures' compiled call cost
    beside it (``call_cost``, where given), the arithmetic time of ``elements`` x (``flops`` + ``tanh``) at those
    rates and the bytes' time at the memory roof (``memory_seconds``), both computed, and which one is larger."""
    limits = chain_roofs(roofs, elements=elements, flops=flops, tanh=tanh, memory_seconds=memory_seconds)
    call_cost = {} if call_cost is None else validate.instance("call_cost", call_cost, Mapping)
    rows = []
    for name, roof in roofs.items():
        cost = call_cost.get(name)
        rows.append((name, f"{roof.flops_per_second / 1e9:.1f}", f"{roof.tanh_per_second / 1e9:.2f}",
                     "-" if roof.tanh_error is None else f"{roof.tanh_error:.1e}",
                     "-" if roof.intercept_seconds is None else display.format_time(roof.intercept_seconds),
                     "-" if cost is None else display.format_time(validate.positive(f"call_cost[{name!r}]", cost)),
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
