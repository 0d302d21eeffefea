"""Notebook 00's measurements of the learner's own functions: the two clock readings of one call (the async-dispatch
trap), the chains eager and compiled in alternating rounds, and ``x + 1`` over sizes (overhead, then bandwidth).

The learner writes the functions (``torch.compile(...)``, ``jax.jit(...)``, the clock around a call); these
helpers only call and time them, under a time limit (``calls``) so that a function that never returns cannot hang
the notebook.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

import numpy as np

from course_utils import calls, declare, devices, env, models, timing, validate
from course_utils.declare import NonEmpty
from course_utils.measuring.allocator import outputs_worth, warm_allocator
from course_utils.measuring.speedups import ChainRuns, variant_name
from course_utils.validate import MAX_ELEMENTS

MAX_SWEEP_POINTS = 40


def _frameworks(frameworks: Sequence[str]) -> list[str]:
    validate.non_empty("frameworks", frameworks)
    return [validate.framework(f, "frameworks") for f in frameworks]


def _mapping(name: str, value: Any) -> Mapping[str, Any]:
    validate.instance(name, value, Mapping)
    return validate.non_empty(name, value)


def torch_setup() -> tuple[str, int]:
    """(device, threads) torch runs with, from the device plan (``cu.devices``): on a TPU runtime torch runs on the
    host CPU with the host's cores, on a CUDA GPU on "cuda"."""
    plan = devices.plan(devices.describe())
    return plan.torch_device, plan.torch_threads


def torch_device() -> str:
    """The device torch runs on, from the device plan."""
    return torch_setup()[0]


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


def clock_pairs(clocks: Mapping[str, Callable[[], Any]], *, rounds: int = 6, min_time: float = 0.6,
                timeout: float = 120.0) -> dict[str, tuple[timing.Measurement, timing.Measurement]]:
    """Call each of the learner's ``clocks`` (framework -> a function timing one call and returning (seconds until
    it returned, seconds until its result was ready)) over ``rounds`` alternating rounds, ``min_time`` seconds per
    function in all (a tenth at smoke size), after one untimed call (the first call, reported apart):
    {framework: (returned, ready)}, two Measurements whose per-round medians pair for ``cu.intervals.speedup``.
    Past ``timeout`` seconds in all it raises ``calls.LearnerTimeout`` naming the function."""
    clocks = _mapping("clocks", clocks)
    for name, fn in clocks.items():
        validate.framework(name, "clocks")
        validate.function(f"clocks[{name!r}]", fn)
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    min_time = validate.number("min_time", min_time, low=0, high=60, low_open=True) * env.time_scale()
    timeout = validate.number("timeout", timeout, low=0, high=3600, low_open=True)
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


def chain_inputs(frameworks: Sequence[str], size: int, seed: int = 0) -> tuple[np.ndarray, Any, dict[str, tuple]]:
    """(x, bias, {framework: (x, bias) in that framework}) for ``models.gelu_chain`` over ``size`` floats."""
    size = validate.number("size", size, low=1, high=MAX_ELEMENTS, integer=True)
    rng = np.random.default_rng(validate.number("seed", seed, low=0, high=2**32 - 1, integer=True))
    frameworks = _frameworks(frameworks)
    validate.memory_fits("size", 4 * int(size) * (2 + len(frameworks)))  # NumPy's copy, each framework's, an output
    x_np = rng.standard_normal(int(size), dtype=np.float32)
    bias = np.float32(0.1)
    inputs: dict[str, tuple] = {}
    for framework in frameworks:
        if framework == "torch":
            import torch

            device = torch_device()
            inputs[framework] = (torch.from_numpy(x_np).to(device), torch.tensor(bias, device=device))
        elif framework == "jax":
            import jax.numpy as jnp

            inputs[framework] = (jnp.asarray(x_np), jnp.asarray(bias))
        else:
            tf = env.import_tensorflow()
            inputs[framework] = (tf.constant(x_np), tf.constant(bias))
    return x_np, bias, inputs


def time_chains(inputs: Mapping[str, tuple], variants: Mapping[str, Mapping[str, Callable[..., Any]]], *,
                rounds: int = 6, min_time: float = 0.5, timeout: float = 600.0) -> ChainRuns:
    """Time every function of ``variants`` (variant name -> {framework: f(x, bias)}, e.g. "eager", "compiled")
    on that framework's ``inputs`` in ``rounds`` alternating rounds (``timing.interleaved``), ``min_time`` seconds
    per function in all: one call, so that any two of them pair into an interval. A compiled function's first
    call (its compile) is the first round's and is reported apart. Past ``timeout`` seconds in all it raises
    ``calls.LearnerTimeout``."""
    inputs = _mapping("inputs", inputs)
    variants = _mapping("variants", variants)
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    min_time = validate.number("min_time", min_time, low=0, high=60, low_open=True)
    timeout = validate.number("timeout", timeout, low=0, high=3600, low_open=True)
    timed: dict[str, Callable[[], Any]] = {}
    for variant, fns in variants.items():
        validate.text("variants key", variant)
        for framework, fn in _mapping(f"variants[{variant!r}]", fns).items():
            name = validate.framework(framework, f"variants[{variant!r}]")
            if name not in inputs:
                raise ValueError(f"variants[{variant!r}] names {name!r}, which inputs lacks; inputs has "
                                 f"{sorted(inputs)}")
            args = tuple(inputs[name])
            validate.function(f"variants[{variant!r}][{name!r}]", fn)
            timed[f"{name} {variant}"] = lambda f=fn, a=args: f(*a)
    with calls.time_limit(timeout, "the chains of variants " + ", ".join(repr(v) for v in variants)):
        found = timing.interleaved(timed, rounds=rounds, min_time=min_time)
    runs = {variant: {validate.framework(fw): found[f"{validate.framework(fw)} {variant}"] for fw in fns}
            for variant, fns in variants.items()}
    return ChainRuns(runs)


def chain_faults(inputs: Mapping[str, tuple], fns: Mapping[str, Callable[..., Any]], *,
                 timeout: float = 120.0) -> dict[str, float]:
    """Page faults per call of ``fns[framework](*inputs[framework])``, in outputs' worth (one output's worth: the
    input's bytes in 4 KiB pages): how much fresh memory each call's outputs got."""
    inputs = _mapping("inputs", inputs)
    fns = _mapping("fns", fns)
    timeout = validate.number("timeout", timeout, low=0, high=3600, low_open=True)
    found = {}
    for framework, fn in fns.items():
        name = validate.framework(framework, "fns")
        validate.function(f"fns[{name!r}]", fn)
        args = inputs[name]
        with calls.time_limit(timeout, f"fns[{name!r}] ({calls.describe(fn)})"):
            found[name] = outputs_worth(fn, *args, output_bytes=4 * max(1, int(math.prod(tuple(args[0].shape)))))
    return found


def _add_one(framework: str, compiled: bool) -> Callable[[int], tuple[Callable[..., Any], tuple]]:
    if framework == "torch":
        import torch

        fn = torch.compile(lambda a: a + 1) if compiled else (lambda a: torch.add(a, 1))
        return lambda s: (fn, (torch.ones(s, device=torch_device()),))
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        fn = jax.jit(lambda a: a + 1) if compiled else (lambda a: jnp.add(a, 1))
        return lambda s: (fn, (jnp.ones(s),))
    tf = env.import_tensorflow()
    spec = [tf.TensorSpec([None], tf.float32)]  # one trace for every size (XLA still compiles per shape)
    if compiled:
        fn = tf.function(lambda a: a + 1, jit_compile=True, input_signature=spec)
    else:
        fn = lambda a: tf.add(a, 1.0)  # noqa: E731
    return lambda s: (fn, (tf.ones([s]),))


def sweep_sizes(top_exponent: int, *, step: int = 3) -> list[int]:
    """Sizes 4, 4 * 2^step, ... up to 2^top_exponent elements (every ``step`` powers of two)."""
    top = validate.number("top_exponent", top_exponent, low=4, high=31, integer=True)
    step = validate.number("step", step, low=1, high=8, integer=True)
    return [2**k for k in range(2, int(top) + 1, int(step))]


def overhead_sweep(frameworks: Sequence[str], sizes: Sequence[int], *,
                   min_time: float = 0.03) -> dict[str, list[timing.Measurement]]:
    """Time ``x + 1`` at each size, eager and compiled (each framework's default compile), in each framework:
    {variant name: measurements}; each point's page faults per call, in outputs' worth, ride along in
    ``metadata["faults"]`` (fresh memory a call's output got)."""
    validate.non_empty("sizes", sizes)
    if len(sizes) > MAX_SWEEP_POINTS:
        raise ValueError(f"sizes must hold at most {MAX_SWEEP_POINTS} sizes; got {len(sizes)}")
    sizes = [validate.number(f"sizes[{i}]", s, low=1, high=MAX_ELEMENTS, integer=True) for i, s in enumerate(sizes)]
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise ValueError("sizes must be strictly increasing")
    validate.memory_fits("sizes", 3 * 4 * int(sizes[-1]))  # the largest input, its output and the one before it
    min_time = validate.number("min_time", min_time, low=0, high=10, low_open=True)
    series: dict[str, list[timing.Measurement]] = {}
    for compiled in (False, True):
        for framework in _frameworks(frameworks):
            make = _add_one(framework, compiled)
            name = variant_name(framework, compiled)
            series[name] = [_timed(make, int(s), name, min_time) for s in sizes]
    return series


def _timed(make: Callable[[int], tuple[Callable[..., Any], tuple]], size: int, name: str,
           min_time: float) -> timing.Measurement:
    fn, args = make(size)
    found = timing.benchmark(fn, *args, min_time=min_time, label=f"{name} {size}")
    found.metadata["faults"] = outputs_worth(fn, *args, output_bytes=4 * size)
    return found


@declare.checked
def chain_medians(frameworks: Annotated[Sequence[Literal["torch", "jax", "tensorflow"]], NonEmpty, declare.Unique],
                  size: Annotated[int, declare.Range(1, MAX_ELEMENTS)], *,
                  rounds: Annotated[int, declare.Range(2, 20)] = 2,
                  min_time: Annotated[float, declare.Range(0, 60, low_open=True)] = 0.2,
                  threads: Annotated[int, declare.Range(1, 1024)] | None = None) -> dict[str, float]:
    """What one fresh process measures for ``cu.fresh.replicate``: notebook 00's chain on ``size`` floats, each
    framework's eager and compiled (torch.compile, jax.jit, tf.function(jit_compile=True)) in alternating rounds
    after ``warm_allocator``, with ``threads`` torch threads: {"<framework> eager"/"... compiled": median s}."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    _, _, inputs = chain_inputs(frameworks, size)
    chains = {fw: models.chain_for(fw) for fw in frameworks}
    compiled = {fw: _compile(fw, chains[fw]) for fw in frameworks}
    warm_allocator()
    runs = time_chains(inputs, {"eager": chains, "compiled": compiled}, rounds=rounds, min_time=min_time)
    return {f"{fw} {variant}": runs.time(variant, fw).median for variant in ("eager", "compiled") for fw in frameworks}


def _compile(framework: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    if framework == "torch":
        import torch

        return torch.compile(fn)
    if framework == "jax":
        import jax

        return jax.jit(fn)
    return env.import_tensorflow().function(fn, jit_compile=True)
