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
    fixed cost of one compiled call (``call_seconds``), which the rates leave out."""

    flops_per_second: float
    tanh_per_second: float
    elements: int
    framework: str = "torch"
    tanh_error: float | None = None
    threads: int | None = None
    call_seconds: float | None = None

    def __post_init__(self) -> None:
        validate.positive("flops_per_second", self.flops_per_second)
        validate.positive("tanh_per_second", self.tanh_per_second)
        validate.positive("elements", self.elements, integer=True)
        validate.framework(self.framework, "framework")
        if self.tanh_error is not None:
            validate.non_negative("tanh_error", self.tanh_error)
        if self.threads is not None:
            validate.positive("threads", self.threads, integer=True)
        if self.call_seconds is not None:
            validate.non_negative("call_seconds", self.call_seconds)

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


def _per_element(framework: str, fn: Callable[[Any], Any], xs: tuple[Any, Any], min_time: float,
                 ) -> tuple[float, float]:
    """Seconds per element of ``fn`` and the fixed seconds of one call, from its best time at two sizes: the
    slope of time against elements is the kernel's rate with the call's own cost (dispatch, guards, waking
    threads) taken out; the intercept is that cost."""
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
    between the two: a compiled call has a fixed cost of its own (``call_seconds``, the intercept), which on a
    small tensor can be as long as the work and would otherwise be charged to the vector units. By default
    ``elements`` is an eighth of the last-level cache per tensor (input and output stay in cache; 2^16 to 2^20
    elements), so these are the vector units' rates, not memory's. ``tanh_error``: the largest absolute
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
        fma_slope, call_seconds = _per_element(framework, horner, xs, min_time)
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
    return VectorRoof(fma_rate, tanh_rate, elements, framework, error, threads, call_seconds)


@dataclass(frozen=True)
class ChainRoof:
    """What can limit one framework's fused chain, in seconds: its arithmetic at the in-cache rates and its bytes
    at the memory roof (both computed), and, where the framework cannot write into a reused buffer, the measured
    time of the same chain without tanh into a fresh output (its 'fresh output' floor; ``fresh_low``: the lower
    quartile of that measurement, where it was given as one)."""

    parts: dict[str, float]
    fresh_low: float | None = None

    @property
    def limit(self) -> str:
        """The name of the largest part; 'fresh output' only when it exceeds the bytes' time by more than its noise
        (its lower quartile above the bytes' time), since a fresh output that costs its bytes adds nothing to them."""
        largest = max(self.parts, key=self.parts.__getitem__)
        low = self.parts[largest] if self.fresh_low is None else self.fresh_low
        if largest == "fresh output" and low <= self.parts["bytes"]:
            return max((k for k in self.parts if k != "fresh output"), key=self.parts.__getitem__)
        return largest

    @property
    def seconds(self) -> float:
        """The roof time: the limiting part (everything else overlapping with it)."""
        return self.parts[self.limit]

    @property
    def serial(self) -> float:
        """Nothing overlapping: the arithmetic plus the larger of the bytes and the fresh output (which holds them)."""
        return self.parts["arithmetic"] + max(v for k, v in self.parts.items() if k != "arithmetic")


def chain_roofs(roofs: Mapping[str, VectorRoof], *, elements: int, flops: float, tanh: float, memory_seconds: float,
                fresh_output: Mapping[str, Any] | None = None) -> dict[str, ChainRoof]:
    """Per framework of ``roofs``: the ``ChainRoof`` of a chain of ``elements`` x (``flops`` + ``tanh``) moving
    ``memory_seconds`` of bytes; ``fresh_output`` ({framework: a Measurement, or seconds}) adds that floor where
    given (a Measurement's median, its lower quartile kept to tell it from the bytes beyond the noise)."""
    validate.instance("roofs", roofs, Mapping)
    validate.non_empty("roofs", roofs)
    validate.positive("memory_seconds", memory_seconds)
    fresh_output = {} if fresh_output is None else validate.instance("fresh_output", fresh_output, Mapping)
    found = {}
    for name, roof in roofs.items():
        validate.instance(f"roofs[{name!r}]", roof, VectorRoof)
        parts = {"arithmetic": roof.chain_seconds(elements, flops=flops, tanh=tanh), "bytes": memory_seconds}
        low = None
        if name in fresh_output:
            value = fresh_output[name]
            if isinstance(value, timing.Measurement):
                parts["fresh output"], low = value.median, value.p25
            else:
                parts["fresh output"] = validate.positive(f"fresh_output[{name!r}]", value)
        found[name] = ChainRoof(parts, low)
    return found


def overlap_text(name: str, measured: timing.Measurement, roof: ChainRoof) -> str:
    """One sentence: how much of a chain's parts overlapped, from its measured quartiles against its largest part
    (everything hidden under it) and the parts added up (nothing hidden); both computed or measured as labelled."""
    validate.text("name", name)
    validate.instance("measured", measured, timing.Measurement)
    validate.instance("roof", roof, ChainRoof)
    top, serial, t = roof.seconds, roof.serial, measured.median
    head = (f"{name} took {display.format_time(t)} against its {roof.limit} ({display.format_time(top)}) and its "
            f"parts added up ({display.format_time(serial)})")
    low, high = measured.p25, measured.p75
    if low <= top and serial <= high:
        return f"{head}: its quartiles span both, so this run cannot tell how much of its parts overlapped. "
    if low > serial:
        return f"{head}: more than the sum, so its parts did not overlap. "
    if high < top:
        return (f"{head}: faster than its largest part beyond the noise, so that part, computed from rates measured "
                "at another moment, over-states what limited it in this run. ")
    if serial <= high:
        return f"{head}: at the sum within the noise, so no overlap is measurable. "
    if low <= top:
        return f"{head}: at its largest part within the noise, so the other parts hid under it. "
    return (f"{head}: between the two beyond the noise, so they overlapped in part: about "
            f"{display.format_time(serial - t)} of the {display.format_time(serial - top)} the smaller parts would add "
            "was hidden. ")


def vector_roof_table(roofs: Mapping[str, VectorRoof], *, elements: int, flops: float, tanh: float,
                      memory_seconds: float, fresh_output: Mapping[str, Any] | None = None) -> display.Table:
    """Per framework: its in-cache rates and fixed call cost, the arithmetic time of ``elements`` x (``flops`` +
    ``tanh``) at those rates (computed), the bytes' time at the memory roof (``memory_seconds``, computed), the
    measured fresh-output floor where ``fresh_output`` gives one (see ``chain_roofs``) and which one is largest."""
    limits = chain_roofs(roofs, elements=elements, flops=flops, tanh=tanh, memory_seconds=memory_seconds,
                         fresh_output=fresh_output)
    rows = []
    for name, roof in roofs.items():
        parts = limits[name].parts
        rows.append((name, f"{roof.flops_per_second / 1e9:.1f}", f"{roof.tanh_per_second / 1e9:.2f}",
                     "-" if roof.tanh_error is None else f"{roof.tanh_error:.1e}",
                     "-" if roof.call_seconds is None else display.format_time(roof.call_seconds),
                     display.format_time(parts["arithmetic"]), display.format_time(parts["bytes"]),
                     display.format_time(parts["fresh output"]) if "fresh output" in parts else "-",
                     limits[name].limit))
    return display.table(["framework", "multiply-adds (GFLOP/s)", "tanh (G/s)", "tanh max error", "fixed cost per call",
                          "arithmetic (computed)", "bytes (computed)", "fresh output (measured)", "limit"], rows,
                         title="The vector units' roof of each framework (measured in cache), and the chain's limits",
                         note=f"per element: {flops:g} FLOPs + {tanh:g} tanh; rates and fixed cost from two in-cache "
                              "sizes (slope and intercept); bytes at the measured memory roof; fresh output: the same "
                              "chain without tanh into a fresh output, where no reused buffer exists (the limit only "
                              "when its lower quartile is above the bytes' time); tanh error: largest |tanh - float64 "
                              "tanh| on [-5, 5]")
