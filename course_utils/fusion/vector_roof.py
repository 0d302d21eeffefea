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
    multiply-adds, tanh per second, and how far its tanh is from float64's (max absolute error on [-5, 5])."""

    flops_per_second: float
    tanh_per_second: float
    elements: int
    framework: str = "torch"
    tanh_error: float | None = None
    threads: int | None = None

    def __post_init__(self) -> None:
        validate.positive("flops_per_second", self.flops_per_second)
        validate.positive("tanh_per_second", self.tanh_per_second)
        validate.positive("elements", self.elements, integer=True)
        validate.framework(self.framework, "framework")
        if self.tanh_error is not None:
            validate.non_negative("tanh_error", self.tanh_error)
        if self.threads is not None:
            validate.positive("threads", self.threads, integer=True)

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
    """``fn(x)`` compiled by ``framework``, writing into a reused buffer where the framework has one."""
    into = into_buffer(framework, lambda v, _unused: fn(v), x)
    if into is not None:
        return lambda: into(x, x)
    compiled = interop.compile_default(framework, fn)
    return lambda: compiled(x)


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


def measure_vector_roof(framework: str = "torch", *, elements: int | None = None, steps: int = 8, chains: int = 4,
                        tanhs: int = 8, min_time: float = 0.1, threads: int | None = None) -> VectorRoof:
    """Measure one framework's compiled elementwise *throughput* on an in-cache tensor (its own tanh, its own code).

    Multiply-adds: ``chains`` independent Horner chains of ``steps`` multiply-adds per element, summed; tanh:
    the sum of ``tanhs`` independent tanhs per element (the adds' share, timed at the multiply-add rate, taken
    off). Independent work, because a fused elementwise kernel overlaps neighbouring elements: a chain of
    *dependent* tanhs would time the latency of one, not the rate. Each rate is the best of its repeats (a
    roof is a best case, as in STREAM); the tensor (by default half of one L2 cache) never leaves the
    cache, so these are the vector units' rates, not memory's. ``tanh_error``: the largest absolute
    difference of the framework's tanh from float64's on [-5, 5]. ``threads`` (torch only) compiles and runs
    the kernels with that many OpenMP threads (default: torch's own setting).
    """
    framework = validate.framework(framework)
    if threads is not None:
        validate.positive("threads", threads, integer=True)
        if framework != "torch":
            raise ValueError(f"threads is a torch setting; got threads={threads} for framework {framework!r}")
    validate.positive("steps", steps, integer=True)
    validate.positive("chains", chains, integer=True)
    validate.positive("tanhs", tanhs, integer=True)
    validate.positive("min_time", min_time)
    if elements is None:
        elements = max(2**14, env.cache_sizes().get("L2", 2**20) // 8)
    validate.number("elements", elements, low=1024, high=2**26, integer=True)
    import numpy as np

    tanh = _tanh_of(framework)
    grid = np.linspace(-5.0, 5.0, elements)
    x = interop.to_framework(framework, (np.random.default_rng(0).random(elements) * 0.5).astype(np.float32))

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
        fma_time = timing.benchmark(_in_cache_kernel(framework, horner, x), min_time=min_time, min_repeats=5).min
        tanh_time = timing.benchmark(_in_cache_kernel(framework, tanh_sum, x), min_time=min_time, min_repeats=5).min
    fma_rate = fma_flops * elements / fma_time
    adds = (2 * tanhs - 1) * elements / fma_rate
    tanh_rate = tanhs * elements / max(tanh_time - adds, tanh_time / 2)
    grid32 = grid.astype(np.float32)
    # XLA's tanh as its fused code computes it; Inductor's C++ and eager torch call the same at::vec tanh (SLEEF),
    # so torch is read eagerly, which saves a compile
    compiled_tanh = tanh if framework == "torch" else interop.compile_default(framework, tanh)
    got = interop.to_numpy(compiled_tanh(interop.to_framework(framework, grid32))).astype(np.float64)
    error = float(np.max(np.abs(got - np.tanh(grid32.astype(np.float64)))))
    return VectorRoof(fma_rate, tanh_rate, elements, framework, error, threads)


def vector_roof_table(roofs: Mapping[str, VectorRoof], *, elements: int, flops: float, tanh: float,
                      memory_seconds: float) -> display.Table:
    """Per framework: its in-cache rates, the arithmetic time of ``elements`` x (``flops`` + ``tanh``) at those
    rates (computed), the bytes' time at the memory roof (``memory_seconds``, computed) and which one is larger."""
    validate.instance("roofs", roofs, Mapping)
    validate.non_empty("roofs", roofs)
    validate.positive("memory_seconds", memory_seconds)
    rows = []
    for name, roof in roofs.items():
        validate.instance(f"roofs[{name!r}]", roof, VectorRoof)
        arith = roof.chain_seconds(elements, flops=flops, tanh=tanh)
        rows.append((name, f"{roof.flops_per_second / 1e9:.1f}", f"{roof.tanh_per_second / 1e9:.2f}",
                     "-" if roof.tanh_error is None else f"{roof.tanh_error:.1e}", display.format_time(arith),
                     display.format_time(memory_seconds), "arithmetic" if arith > memory_seconds else "memory"))
    return display.table(["framework", "multiply-adds (GFLOP/s)", "tanh (G/s)", "tanh max error",
                          "arithmetic (computed)", "bytes (computed)", "limit"], rows,
                         title="The vector units' roof of each framework (measured in cache)",
                         note=f"per element: {flops:g} FLOPs + {tanh:g} tanh; bytes at the measured memory roof; "
                              "tanh error: largest |tanh - float64 tanh| on [-5, 5]")


