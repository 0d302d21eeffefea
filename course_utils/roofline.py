"""The machine's own limits, measured in this run (memory bandwidth, matmul FLOP/s), and the roofline they draw: no
kernel finishes faster than ``max(flops / peak_flops, bytes / bandwidth)``."""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from course_utils import declare, display, env, probes, timing, validate
from course_utils.declare import NonEmpty, NonNegativeFloat, PositiveFloat, PositiveInt, Text

_CACHE: dict[tuple[str, int, int], Machine] = {}


@declare.checked
@dataclass(frozen=True, repr=False)
class Machine(display.Tabled):
    """Measured ceilings as one framework sees them: bandwidth probes (bytes/s), matmul probes (FLOP/s), and
    fresh-output probes, whose page faults make them no bandwidth: they never set the roof."""

    framework: Text
    device: Text
    bandwidth_probes: Annotated[Mapping[Text, PositiveFloat], NonEmpty]
    flops_probes: Annotated[Mapping[Text, PositiveFloat], NonEmpty]
    fresh_output_probes: Mapping[Text, PositiveFloat] = field(default_factory=dict)
    array_bytes: PositiveInt | None = None

    @property
    def bandwidth(self) -> float:
        """The memory roof (bytes/s): the best of the probes (a single probe under-reports; see ENVIRONMENT.md)."""
        return max(self.bandwidth_probes.values())

    @property
    def peak_flops(self) -> float:
        """The compute roof (FLOP/s): the best matmul throughput measured."""
        return max(self.flops_probes.values())

    @property
    def ridge_intensity(self) -> float:
        """FLOP per byte where the two roofs meet: below it a kernel is memory-bound, above compute-bound."""
        return self.peak_flops / self.bandwidth

    def roofline_time(self, flops: float, bytes: float) -> float:
        """Shortest possible time (s) for a kernel doing ``flops`` and moving ``bytes``."""
        return roofline_time(flops, bytes, self)

    def table(self) -> display.Table:
        """Every probe with its unit; the fresh-output rows say that they are not a bandwidth."""
        rows = [("device", self.device)]
        if self.array_bytes is not None:
            rows.append(("probe array size", display.format_bytes(self.array_bytes)))
        rows += [(f"bandwidth: {k}", display.format_rate(v)) for k, v in self.bandwidth_probes.items()]
        rows += [(f"{k} (allocation + page faults: not a bandwidth)", display.format_rate(v))
                 for k, v in self.fresh_output_probes.items()]
        rows += [(f"compute: {k}", display.format_flops(v)) for k, v in self.flops_probes.items()]
        rows.append(("ridge point", f"{self.ridge_intensity:.1f} FLOP/byte"))
        return display.table(["probe", "measured"], rows, title=f"Machine as {self.framework} sees it",
                             note="GB/s are decimal (10^9 bytes/s); read + write bytes counted, as STREAM does.")


@declare.checked
@dataclass(frozen=True)
class Point:
    """One measured kernel for the roofline plot: its work, its traffic and its measured time."""

    label: Text
    flops: NonNegativeFloat
    bytes: PositiveFloat
    seconds: PositiveFloat

    @property
    def intensity(self) -> float:
        """FLOP per byte moved."""
        return self.flops / self.bytes

    @property
    def achieved_flops(self) -> float:
        return self.flops / self.seconds

    @property
    def achieved_bandwidth(self) -> float:
        return self.bytes / self.seconds


@declare.checked
def roofline_time(flops: NonNegativeFloat, bytes: NonNegativeFloat, machine: Machine) -> float:
    """max(flops / peak FLOP/s, bytes / bandwidth): the time below which no kernel can run."""
    return max(flops / machine.peak_flops, bytes / machine.bandwidth)


@declare.checked
def attainable(intensity: NonNegativeFloat, machine: Machine) -> float:
    """min(peak FLOP/s, intensity x bandwidth): the roofline itself, in FLOP/s."""
    return min(machine.peak_flops, intensity * machine.bandwidth)


@declare.checked
def share_of_roof(point: Point, machine: Machine) -> float:
    """The fraction of the roof a measured kernel reaches: achieved FLOP/s over attainable FLOP/s at its
    intensity; for a kernel without FLOPs, achieved bandwidth over the memory roof."""
    if point.flops == 0:
        return point.achieved_bandwidth / machine.bandwidth
    return point.achieved_flops / attainable(point.intensity, machine)


#: the machine figures' probe sizes, one table for every notebook (one machine, one figure): the matmul's n is large
#: enough to approach the compute roof
PROBE_SIZES = env.sizes(matmul_n=dict(ci=1024, cpu=2048, gpu=8192, tpu=8192))


def measure_machine(
    framework: str = "torch",
    *,
    array_bytes: int | None = None,
    matmul_n: int | None = None,
    min_time: float = 0.3,
) -> Machine:
    """Bandwidth (copy/scale/triad over ``array_bytes``, default ``probes.probe_size()``) and fp32 matmul FLOP/s
    (n = ``matmul_n``) with one framework on its default device; cached per process."""
    framework = validate.framework(framework, numpy=True)
    if array_bytes is None:
        array_bytes = probes.probe_size().array_bytes
    array_bytes = validate.count("array_bytes", array_bytes, low=1024, high=validate.MAX_ELEMENTS * probes.FP32)
    if matmul_n is None:
        matmul_n = PROBE_SIZES.matmul_n
    matmul_n = validate.count("matmul_n", matmul_n, low=16, high=math.isqrt(validate.MAX_ELEMENTS))
    min_time = validate.number("min_time", min_time, low=0, high=60, low_open=True)
    if probes.on_host(framework):  # refused here, by name, rather than by the probes' own n and m
        validate.memory_fits("array_bytes", probes.ARRAYS * array_bytes, share=0.75,
                             what=f"array_bytes={array_bytes:,} ({probes.ARRAYS} probe arrays)")
        validate.memory_fits("matmul_n", 3 * matmul_n**2 * probes.FP32, share=0.75,
                             what=f"matmul_n={matmul_n:,} (input, output and draw of the matmul probe)")
    key = (framework, int(array_bytes), int(matmul_n))
    if key not in _CACHE:
        built = probes.BUILDERS[framework](int(array_bytes) // probes.FP32, int(matmul_n))
        bandwidth = {name: nbytes / _time(fn, min_time) for name, (fn, nbytes) in built.bandwidth.items()}
        fresh = {name: nbytes / _time(fn, min_time) for name, (fn, nbytes) in built.fresh.items()}
        flops = {name: nflop / _time(fn, min_time) for name, (fn, nflop) in built.compute.items()}
        device = built.device
        del built
        gc.collect()  # the probe arrays (GiBs) go now, not at the next collection
        _CACHE[key] = Machine(framework, device, bandwidth, flops, fresh, int(array_bytes))
    return _CACHE[key]


def _time(fn: Callable[[], Any], min_time: float) -> float:
    seconds = timing.benchmark(fn, min_time=min_time, min_repeats=3).median
    if not math.isfinite(seconds) or seconds <= 0:
        raise RuntimeError(f"a probe measured {seconds!r} s; the timer cannot resolve it")
    return seconds
