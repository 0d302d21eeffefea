"""Notebook 00's measurements of the learner's own functions (clock pair, chains in rounds, ``x + 1`` over sizes and
its bends), each under a time limit; the C allocator's mmap threshold (glibc raises it to a freed block's size, up to
32 MiB, after which such blocks come back fault-free); and the eager-runtime gap's suspects measured apart."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import (
    calls,
    declare,
    devices,
    display,
    env,
    findings,
    interop,
    intervals,
    machine,
    memory,
    models,
    timing,
    validate,
)
from course_utils.declare import MinItems, NonEmpty, NonNegativeFloat, PositiveFloat, PositiveInt, Range, SameLength
from course_utils.measuring.speedups import EAGER, ChainRuns, variant_name
from course_utils.validate import MAX_ELEMENTS

MAX_SWEEP_POINTS = 40
Framework = Literal["torch", "jax", "tensorflow"]
Frameworks = Annotated[Sequence[Framework], NonEmpty, declare.Unique]
Rounds = Annotated[int, Range(2, 100)]
MinTime = Annotated[float, Range(0, 60, low_open=True)]
Size = Annotated[int, Range(1, MAX_ELEMENTS)]
Pair = tuple[timing.Measurement, timing.Measurement]
PAGE = 4096
WARM_BYTES = 31 * 2**20  # under the 32 MiB up to which glibc's threshold follows a freed block


@declare.checked
def warm_allocator(nbytes: Annotated[int, declare.Range(PAGE, 2**31)] = WARM_BYTES) -> None:
    """Allocate, touch and free one ``nbytes`` block (torch, CPU), as a long-running process has done: glibc then
    keeps blocks up to that size in its heap. Harmless elsewhere: it only allocates and frees."""
    import torch

    block = torch.empty(nbytes // 4, dtype=torch.float32)
    block.fill_(0.0)
    del block


def tensor_bytes(x: Any) -> int:
    """Bytes of one float32 array shaped like ``x`` (any framework's tensor)."""
    return 4 * max(1, int(math.prod(tuple(x.shape))))


@declare.checked
def outputs_worth(fn: Callable[..., Any], *args: Any, output_bytes: declare.PositiveInt) -> float:
    """Page faults per call of ``fn(*args)`` in outputs' worth (``output_bytes`` in 4 KiB pages; nan: not counted)."""
    return memory.page_faults(fn, *args) / max(1, math.ceil(output_bytes / PAGE))


def array_ops(framework: str) -> Any:
    """A framework's eager array ops (``.add``, ``.multiply``, ``.tanh``): torch, jax.numpy or tf.math."""
    if framework == "torch":
        import torch

        return torch
    if framework == "jax":
        import jax.numpy as jnp

        return jnp
    return env.import_tensorflow().math


def _clock_pair(name: str, fn: Callable[[], Any]) -> tuple[float, float]:
    got = fn()
    if (isinstance(got, (str, bytes)) or not isinstance(got, Sequence) or len(got) != 2
            or not all(isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool) for v in got)):
        raise TypeError(f"{name} ({calls.describe(fn)}) must return two numbers, (seconds until the call returned, "
                        f"seconds until its result was ready); got {got!r}")
    returned, ready = (float(v) for v in got)
    if not (math.isfinite(returned) and math.isfinite(ready)) or returned < 0 or ready < returned:
        raise ValueError(f"{name} ({calls.describe(fn)}) must return 0 <= returned <= ready (seconds, read from one "
                         f"clock); got ({returned!r}, {ready!r})")
    return returned, ready


@declare.checked
def clock_pairs(clocks: Annotated[Mapping[Framework, Callable[[], Any]], NonEmpty], *, rounds: Rounds = 6,
                min_time: MinTime = 0.6,
                timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[str, Pair]:
    """{framework: (returned, ready)} of the learner's ``clocks`` (f() -> seconds until it returned, until ready),
    called once, then in ``rounds`` alternating rounds; the per-round medians pair for ``cu.intervals.speedup``."""
    min_time = min_time * env.time_scale()
    names = list(clocks)
    first = {}
    pairs: dict[str, list[list[tuple[float, float]]]] = {name: [] for name in names}
    with calls.time_limit(timeout, "clocks[" + ", ".join(repr(n) for n in names) + "]"):
        for name in names:
            start = time.perf_counter()
            _clock_pair(f"clocks[{name!r}]", clocks[name])
            first[name] = time.perf_counter() - start
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                found, until = [], time.perf_counter() + min_time / rounds
                while len(found) < 3 or time.perf_counter() < until:
                    found.append(_clock_pair(f"clocks[{name!r}]", clocks[name]))
                    if len(found) >= 10_000:
                        break
                pairs[name].append(found)
    result = {}
    for name in names:
        out = []
        for which, label in ((0, "at return"), (1, "when ready")):
            per_round = [[p[which] for p in found] for found in pairs[name]]
            times = tuple(t for block in per_round for t in block)
            medians = tuple(max(statistics.median(block), 1e-9) for block in per_round)
            out.append(timing.Measurement(label=f"{name}: clock {label}", times=times, first_call=first[name],
                                          total=sum(times), synced=bool(which), rounds=medians))
        result[name] = (out[0], out[1])
    return result


@declare.checked
def chain_inputs(frameworks: Frameworks, size: Size,
                 seed: Annotated[int, Range(0, 2**32 - 1)] = 0) -> tuple[np.ndarray, Any, dict[str, tuple]]:
    """(x, bias, {framework: (x, bias) in that framework}) for ``models.gelu_chain`` over ``size`` floats."""
    rng = np.random.default_rng(seed)
    validate.memory_fits("size", 4 * int(size) * (2 + len(frameworks)))  # NumPy's copy, each framework's, an output
    x_np = rng.standard_normal(int(size), dtype=np.float32)
    bias = np.float32(0.1)
    inputs = {fw: interop.to_framework(fw, x_np, bias, device=devices.current().torch_device) for fw in frameworks}
    return x_np, bias, inputs


@declare.checked
def time_chains(inputs: Annotated[Mapping[Framework, tuple], NonEmpty],
                variants: Annotated[Mapping[declare.Text, Annotated[Mapping[Framework, Callable[..., Any]], NonEmpty]],
                                    NonEmpty], *,
                rounds: Rounds = 6, min_time: MinTime = 0.5,
                timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> ChainRuns:
    """Every function of ``variants`` (variant -> {framework: f(x, bias)}) timed on its ``inputs`` in one interleaved
    call, so any two pair into an interval; a compiled function's first call (its compile) reported apart."""
    if not {"eager", "compiled"} <= set(variants):
        raise ValueError(f"variants must hold 'eager' and 'compiled' (and may hold more); got {sorted(variants)}")
    timed: dict[str, Callable[[], Any]] = {}
    for variant, fns in variants.items():
        for name, fn in fns.items():
            if name not in inputs:
                raise ValueError(f"variants[{variant!r}] names {name!r}, which inputs lacks; inputs has "
                                 f"{sorted(inputs)}")
            timed[f"{name} {variant}"] = lambda f=fn, a=tuple(inputs[name]): f(*a)
    with calls.time_limit(timeout, "the chains of variants " + ", ".join(repr(v) for v in variants)):
        found = timing.interleaved(timed, rounds=rounds, min_time=min_time)
    return ChainRuns({variant: {fw: found[f"{fw} {variant}"] for fw in fns} for variant, fns in variants.items()})


def _add_one(framework: str, compiled: bool) -> Callable[[int], tuple[Callable[..., Any], tuple]]:
    ops, spec = array_ops(framework), {}
    if framework == "tensorflow":  # one trace for every size (XLA still compiles per shape)
        spec = {"input_signature": [env.import_tensorflow().TensorSpec([None], "float32")]}
    fn = interop.compile_default(framework, lambda a: a + 1, **spec) if compiled else (lambda a: ops.add(a, 1))
    device = devices.current().torch_device
    return lambda s: (fn, (interop.to_framework(framework, np.ones(s, np.float32), device=device),))


@declare.checked
def sweep_sizes(top_exponent: Annotated[int, Range(4, 31)], *, step: Annotated[int, Range(1, 8)] = 3) -> list[int]:
    """Sizes 4, 4 * 2^step, ... up to 2^top_exponent elements (every ``step`` powers of two)."""
    return [2**k for k in range(2, top_exponent + 1, step)]


@declare.checked
def overhead_sweep(frameworks: Frameworks,
                   sizes: Annotated[Sequence[Size], NonEmpty, declare.MaxItems(MAX_SWEEP_POINTS)], *,
                   min_time: Annotated[float, Range(0, 10, low_open=True)] = 0.03,
                   ) -> dict[str, list[timing.Measurement]]:
    """Time ``x + 1`` at each size, eager and compiled (each framework's default compile), in each framework:
    {variant name: measurements}, each point's page faults per call (outputs' worth) in ``metadata["faults"]``."""
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise ValueError("sizes must be strictly increasing")
    validate.memory_fits("sizes", 3 * 4 * int(sizes[-1]))  # the largest input, its output and the one before it
    series: dict[str, list[timing.Measurement]] = {}
    for compiled in (False, True):
        for framework in frameworks:
            make = _add_one(framework, compiled)
            name = variant_name(framework, compiled)
            series[name] = []
            for size in (int(s) for s in sizes):
                fn, args = make(size)
                series[name].append(timing.benchmark(fn, *args, min_time=min_time, label=f"{name} {size}"))
                series[name][-1].metadata["faults"] = outputs_worth(fn, *args, output_bytes=4 * size)
    return series


@declare.checked
def chain_medians(eager: Framework, compiled: Framework, size: Size, *, rounds: Annotated[int, Range(2, 20)] = 2,
                  min_time: Annotated[float, Range(0.01, 60)] = 0.2,
                  threads: Annotated[int, Range(1, 1024)] | None = None) -> dict[str, float]:
    """One fresh process's measurement for ``cu.fresh.replicate``: 00's chain on ``size`` floats, eager in ``eager``
    against compiled by default in ``compiled``, after ``warm_allocator``: {"eager", "compiled": median seconds}."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    _, _, inputs = chain_inputs(sorted({eager, compiled}), size)
    fns = {"eager": (models.chain_for(eager), inputs[eager]),
           "compiled": (interop.compile_default(compiled, models.chain_for(compiled)), inputs[compiled])}
    warm_allocator()
    found = timing.interleaved({k: (lambda f=f, a=a: f(*a)) for k, (f, a) in fns.items()}, rounds=rounds,
                               min_time=min_time)
    return {k: m.median for k, m in found.items()}


FAULTED = 0.5  # outputs' worth of page faults per call from which a point pays for fresh memory


@declare.checked
@dataclass(frozen=True)
class Bend:
    """One series' floor (s), its bend (elements; None past the sweep), its top log slope, and the smallest size
    whose calls page-faulted (None: none did, or faults were not counted)."""

    label: declare.Text
    floor: PositiveFloat
    size: PositiveFloat | None
    slope: float
    faulted_from: PositiveInt | None = None

    @property
    def within(self) -> bool:
        """True when the sweep reached twice the floor."""
        return self.size is not None

    def row(self) -> tuple[str, str, str, str, str]:
        return (self.label, display.format_time(self.floor),
                f"{self.size:,.0f} ({display.format_bytes(4 * self.size)})" if self.size else "past the sweep",
                f"{self.slope:.2f}", f"{self.faulted_from:,}" if self.faulted_from else "none")


@declare.checked
def bends(sizes: Annotated[Sequence[PositiveInt], MinItems(3)],
          series: Annotated[Mapping[str, Annotated[Sequence[timing.Measurement], SameLength("sizes")]], NonEmpty],
          ) -> dict[str, Bend]:
    """Per series of a sweep (sizes strictly ascending): the floor, the bend, the top slope, where faults begin."""
    xs = list(sizes)
    if any(b <= a for a, b in zip(xs, xs[1:])):
        raise ValueError("sizes must be strictly increasing")
    found = {}
    for label, measurements in series.items():
        times = [max(m.median, 1e-12) for m in measurements]
        floor, size = times[0], None
        for i in range(1, len(xs)):
            if times[i] >= 2 * floor:
                t0, t1 = math.log(max(times[i - 1], floor)), math.log(times[i])
                share = 1.0 if t1 <= t0 else (math.log(2 * floor) - t0) / (t1 - t0)
                size = math.exp(math.log(xs[i - 1]) + min(max(share, 0.0), 1.0) * math.log(xs[i] / xs[i - 1]))
                break
        slope = math.log(times[-1] / times[-2]) / math.log(xs[-1] / xs[-2])
        faults = [m.metadata.get("faults") for m in measurements]
        faulted = next((int(x) for x, f in zip(xs, faults) if f is not None and f >= FAULTED), None)
        found[label] = Bend(label, floor, size, slope, faulted)
    return found


@declare.checked
def bends_table(found: Annotated[Mapping[str, Bend], NonEmpty]) -> display.Table:
    """One row per series: floor, bend, top slope, where page faults begin."""
    return display.table(["variant", "floor (smallest size)", "bend: twice the floor, elements",
                          "log slope at the top", "page faults from (elements)"],
                         [b.row() for b in found.values()],
                         title="Read off the sweep: the overhead floor, where it ends, and the top",
                         note="bend interpolated on log-log axes between the two points around it; page faults: the "
                              f"smallest size whose calls faulted {FAULTED} outputs' worth or more (fresh memory)")


def _on_threads(count: int, fn: Callable[..., Any], args: tuple) -> Any:
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return fn(*args)


@declare.checked
@dataclass(frozen=True, repr=False)
class EagerGap(display.Tabled):
    """The slowest eager runtime's chain against the fastest's (one interleaved call), each one's ``tanh`` alone,
    page faults per call in outputs' worth, the machine's cost of one output's worth, torch's threads when slow."""

    slow: declare.Text
    fast: declare.Text
    chain: Mapping[str, timing.Measurement]
    tanh: Mapping[str, timing.Measurement]
    faults: Mapping[str, float]
    fault_seconds: NonNegativeFloat
    threads: Mapping[int, timing.Measurement] | None = None  # torch's eager chain per thread count, when torch is slow

    @property
    def spread(self) -> intervals.Speedup:
        """The slow chain's time over the fast one's (baseline: the slow runtime), with its interval."""
        return intervals.speedup(self.chain[self.slow], self.chain[self.fast])

    @property
    def tanh_spread(self) -> intervals.Speedup:
        """The slow runtime's tanh time over the fast one's, with its interval."""
        return intervals.speedup(self.tanh[self.slow], self.tanh[self.fast])

    @property
    def one_thread(self) -> intervals.Speedup | None:
        """torch's eager chain on its default threads over the same chain on one thread (above 1: one thread is
        faster), timed in the same rounds; None when torch is not the slow runtime or runs one thread."""
        if not self.threads or len(self.threads) < 2:
            return None
        return intervals.speedup(self.threads[max(self.threads)], self.threads[min(self.threads)])

    @property
    def gap(self) -> float:
        """Seconds per call between the two eager chains (medians)."""
        return self.chain[self.slow].median - self.chain[self.fast].median

    @property
    def parts(self) -> dict[str, float]:
        """Seconds of the gap each suspect accounts for (computed): the tanh difference, and the extra page faults
        at the machine's cost per output's worth (0 when the slow chain faulted no more)."""
        extra = self.faults[self.slow] - self.faults[self.fast]
        faults = extra * self.fault_seconds if math.isfinite(extra) and extra > 0 else 0.0
        return {"tanh": max(self.tanh[self.slow].median - self.tanh[self.fast].median, 0.0), "page faults": faults}

    @property
    def left(self) -> float:
        """Seconds of the gap the suspects leave (negative when they add up to more than the gap)."""
        return self.gap - sum(self.parts.values())

    def table(self) -> display.Table:
        """The two eager chains, the suspects measured apart, and the gap's budget (computed), one row each."""
        fmt, slow, fast = display.format_time, self.slow, self.fast
        share = (lambda t: f"{t / self.gap:.0%} of the gap") if self.gap > 0 else (lambda t: "no gap to share")
        rows = [("eager chain", fmt(self.chain[slow].median), fmt(self.chain[fast].median),
                 str(findings.faster(f"{fast} over {slow}", self.spread))),
                ("tanh alone", fmt(self.tanh[slow].median), fmt(self.tanh[fast].median),
                 str(findings.faster(f"{fast} over {slow}", self.tanh_spread))),
                ("page faults per call, outputs' worth", f"{self.faults[slow]:.1f}", f"{self.faults[fast]:.1f}",
                 f"{fmt(self.fault_seconds)} per output's worth (machine figure)")]
        rows += [(f"gap's part: {name} (computed)", fmt(t), "", share(t)) for name, t in self.parts.items()]
        rows.append(("gap left unexplained (computed)", ("-" if self.left < 0 else "") + fmt(abs(self.left)), "",
                     share(self.left)))
        if self.one_thread is not None and self.threads is not None:
            many = max(self.threads)
            rows.append((f"torch eager chain on 1 thread, then {many}", fmt(self.threads[1].median),
                         fmt(self.threads[many].median),
                         str(findings.faster(f"1 thread over {many} threads", self.one_thread))))
        return display.table(["measured", slow, fast, "compared"], rows,
                             title=f"{slow}'s eager chain (the longer median) against {fast}'s: the suspects "
                                   "measured apart",
                             note="the two chains, the two tanh and the threads each timed in alternating rounds; "
                                  "a negative remainder: the parts, timed apart from the chain, overlap")


@declare.checked
def eager_gap(inputs: Mapping[str, tuple], runs: ChainRuns, eager: Mapping[str, Callable[..., Any]],
              figures: machine.MachineFigures, *, rounds: Annotated[int, Range(2, 20)] = 6,
              min_time: Annotated[float, Range(0, 10, low_open=True)] = 0.4,
              timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> EagerGap | None:
    """``EagerGap`` between the slowest and the fastest eager chain of ``runs`` (``eager``: the learner's chains,
    framework -> f(x, bias)); None with one framework. A slow torch is also timed on one thread, same rounds."""
    if runs.eager_spread() is None:
        return None
    found = runs.runs[EAGER]
    slow, fast = max(found, key=lambda fw: found[fw].median), runs.best(EAGER)
    tanhs = {fw: array_ops(fw).tanh for fw in (slow, fast)}
    timed_calls = {f"{fw} tanh": (lambda f=tanhs[fw], x=inputs[fw][0]: f(x)) for fw in (slow, fast)}
    import torch

    default = torch.get_num_threads()
    counts = [1, default] if slow == "torch" and default > 1 else []
    for count in counts:
        timed_calls[f"torch chain, {count} threads"] = (lambda c=count, f=eager["torch"], a=inputs["torch"]:
                                                        _on_threads(c, f, a))
    try:
        with calls.time_limit(timeout, f"eager[{slow!r}] ({calls.describe(eager[slow])})"):
            timed = timing.interleaved(timed_calls, rounds=rounds, min_time=min_time)
            torch.set_num_threads(default)
            faults = {fw: outputs_worth(eager[fw], *inputs[fw], output_bytes=tensor_bytes(inputs[fw][0]))
                      for fw in (slow, fast)}
    finally:
        torch.set_num_threads(default)
    tanh = {fw: timed[f"{fw} tanh"] for fw in (slow, fast)}
    threads = {count: timed[f"torch chain, {count} threads"] for count in counts} or None
    per_output = figures.fault_seconds(PAGE * math.ceil(tensor_bytes(inputs[slow][0]) / PAGE))
    return EagerGap(slow, fast, {fw: found[fw] for fw in (slow, fast)}, tanh, faults, per_output, threads)
