"""What compiling costs and saves: the break-even call count, cold vs warm Inductor cache (fresh processes),
and the per-call overhead model of small tensors (n_ops x eager per-op cost / compiled per-call cost).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from course_utils import compiled, display, env, interop, timing, validate
from course_utils.graphs.capture import fresh_function
from course_utils.graphs.fallback import max_abs_diff

_PROBE = Path(__file__).resolve().parent.parent / "workers" / "compile_cache_probe.py"


def _time(name: str, value: Any) -> float:
    return float(validate.non_negative(name, value))


def break_even_calls(*, first_call: float, per_call: float, eager_per_call: float,
                     eager_first_call: float | None = None) -> float:
    """Smallest number of calls after which the compiled function's total time is below eager's; inf if never.

    Compiled: ``first_call + (n - 1) * per_call``; eager: ``eager_first_call + (n - 1) * eager_per_call``
    (``eager_first_call`` defaults to ``eager_per_call``).
    """
    c0, c = _time("first_call", first_call), _time("per_call", per_call)
    e = _time("eager_per_call", eager_per_call)
    e0 = e if eager_first_call is None else _time("eager_first_call", eager_first_call)
    if c0 <= e0:
        return 1
    if c >= e:
        return math.inf
    return 1 + math.ceil((c0 - e0) / (e - c))


def break_even(eager: timing.Measurement, compiled: timing.Measurement) -> float:
    """``break_even_calls`` from two Measurements (medians and first calls)."""
    validate.instance("eager", eager, timing.Measurement)
    validate.instance("compiled", compiled, timing.Measurement)
    if compiled.first_call is None:
        raise ValueError("compiled must carry first_call (benchmark() records it)")
    return break_even_calls(first_call=compiled.first_call, per_call=compiled.median, eager_per_call=eager.median,
                            eager_first_call=eager.first_call)


def cumulative_time(first_call: float, per_call: float, calls: Any) -> np.ndarray:
    """Total seconds after each number of calls in ``calls``: first call plus the steady-state ones."""
    if calls is None or isinstance(calls, (str, bytes)):
        raise TypeError(f"calls must be a number or an array of numbers of calls; got {type(calls).__name__}")
    values = np.asarray(calls, dtype=float)
    if values.size == 0:
        raise ValueError("calls must not be empty")
    if not np.all(np.isfinite(values)) or np.any(values < 1):
        raise ValueError("calls must all be finite and >= 1")
    return _time("first_call", first_call) + (values - 1) * _time("per_call", per_call)


def compile_cache_times(elements: int = 2**16, *, timeout: float = 300.0) -> dict[str, float]:
    """torch.compile's first call in a fresh process, against an empty Inductor cache and then a warm one.

    Runs ``workers/compile_cache_probe.py`` twice with one new ``TORCHINDUCTOR_CACHE_DIR``; returns
    ``{"cold": seconds, "warm": seconds}`` (process start and imports excluded).
    """
    validate.number("elements", elements, low=1, high=2**28, integer=True)
    validate.number("timeout", timeout, low=0, high=3600, low_open=True)
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="inductor-cache-") as cache:
        for kind in ("cold", "warm"):
            environ = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
            done = subprocess.run([sys.executable, str(_PROBE), str(elements)], env=environ, capture_output=True,
                                  text=True, timeout=timeout, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"the {kind} compile probe failed:\n{done.stderr[-2000:]}")
            times[kind] = json.loads(done.stdout.strip().splitlines()[-1])["first_call_s"]
    return times


def timed_pair(eager: Callable[..., Any], compiled: Callable[..., Any], args: Sequence[Any], *, label: str,
               min_time: float = 0.2, rounds: int = 4) -> tuple[timing.Measurement, timing.Measurement]:
    """(eager, compiled) Measurements of ``fn(*args)``, labelled ``"<label> eager"`` and ``"<label> compiled"``,
    timed in ``rounds`` alternating rounds (``timing.interleaved``); each one's first call is its first round's,
    so the compiled one's is the compile when it had not been called before."""
    validate.function("eager", eager)
    validate.function("compiled", compiled)
    validate.instance("args", args, (tuple, list))
    validate.text("label", label)
    names = (f"{label} eager", f"{label} compiled")
    found = timing.interleaved({names[0]: lambda: eager(*args), names[1]: lambda: compiled(*args)}, rounds=rounds,
                               min_time=min_time)
    return found[names[0]], found[names[1]]


def beat_text(eager: Mapping[str, timing.Measurement], compiled: Mapping[str, timing.Measurement]) -> str:
    """Which frameworks' compiled calls beat eager beyond the noise, which are within it, which are slower: the
    sentence for Measurements timed in alternating rounds (``timed_pair``), per framework."""
    validate.non_empty("eager", eager)
    validate.instance("compiled", compiled, Mapping)
    same = [fw for fw in eager if not timing.apart(eager[fw], compiled[fw])]
    fast = [fw for fw in eager if fw not in same and compiled[fw].median < eager[fw].median]
    slow = [fw for fw in eager if fw not in same and fw not in fast]
    text = ""
    if fast:
        text += (f"{'Every' if len(fast) == len(eager) else 'The'} compiled call beat its eager counterpart beyond the "
                 f"noise (quartile ranges apart, timed in alternating rounds) in {', '.join(fast)}. ")
    if same:
        text += (f"Within the noise of eager: {', '.join(same)} (the quartile ranges overlap): this run cannot tell "
                 "the two apart at this size. ")
    if slow:
        text += (f"Slower than eager beyond the noise: {', '.join(slow)}; why is not established here (section 3 "
                 "measures what one compiled call costs). ")
    return text


def compile_again(chain: Callable[..., Any], args: Sequence[Any]) -> tuple[float, dict[str, int]]:
    """(seconds of the first call, Inductor cache counts of that call) of ``chain`` compiled afresh in this
    process: set against the process's first compile, it shows what part of that one was paid once per process."""
    import time

    import torch

    validate.function("chain", chain)
    validate.instance("args", args, (tuple, list))
    fn, before = torch.compile(fresh_function(chain)), compiled.inductor_cache_counts()
    start = time.perf_counter()
    timing.sync(fn(*args))
    return time.perf_counter() - start, compiled.inductor_cache_counts(since=before)


def _cache_clause(counts: Mapping[str, int]) -> str:
    hit, miss = counts.get("hits", 0), counts.get("misses", 0)
    if miss:
        return (f"; Inductor's FX-graph cache counted {miss} miss(es) and {hit} hit(s) for it: code was generated "
                "and compiled in that call")
    if hit:
        return f"; Inductor's FX-graph cache counted {hit} hit(s) and no miss for it: its code came from the cache"
    return "; Inductor's FX-graph cache counted neither a hit nor a miss for it (bypassed or switched off)"


def first_compile_text(first: float, first_cache: Mapping[str, int], again: float, again_cache: Mapping[str, int],
                       ) -> str:
    """The process's first compile against a second, fresh compile of the same chain in the same process, with
    the Inductor cache counts of each: how much of the first call was paid once per process."""
    first, again = _time("first", first), _time("again", again)
    validate.instance("first_cache", first_cache, Mapping)
    validate.instance("again_cache", again_cache, Mapping)
    fmt = display.format_time
    text = (f"This chain's own first `torch.compile` call (section 2) took **{fmt(first)}**"
            f"{_cache_clause(first_cache)}. "
            f"Compiled afresh a second time in this process, the same chain's first call took **{fmt(again)}**"
            f"{_cache_clause(again_cache)}. ")
    if again < first / 2:
        return text + (f"So {fmt(first - again)} ({(first - again) / first:.0%}) of the first call was not paid again "
                       "by a second compile of the same graph in the same process: work done once per process (loading "
                       "and initialising the compiler's own modules is a candidate) or once per graph and then kept in "
                       "memory; this run does not separate the two. ")
    return text + ("The second compile cost at least half as much as the first: here the first call's time is "
                   "mostly per graph, not a one-time start-up of the process. ")


def xla_gap_text(jax_call: timing.Measurement, tf_call: timing.Measurement, size: int,
                 probes: tuple[timing.Measurement, timing.Measurement] | None = None) -> str:
    """JAX's and TensorFlow's XLA-compiled chain at ``size`` elements, when they differ by more than 2x beyond
    the noise; with ``probes`` (JAX's and TensorFlow's compiled ``x + 1`` call), how much of the gap their
    per-call fixed costs account for (computed). '' when they are within 2x or within the noise."""
    validate.instance("jax_call", jax_call, timing.Measurement)
    validate.instance("tf_call", tf_call, timing.Measurement)
    validate.positive("size", size, integer=True)
    fmt, ratio = display.format_time, tf_call.median / jax_call.median
    if 0.5 <= ratio <= 2 or not timing.apart(tf_call, jax_call):
        return ""
    text = (f"TensorFlow's XLA-compiled chain took {fmt(tf_call.median)} per call at {size:,} elements, "
            f"{ratio:.1f}x JAX's {fmt(jax_call.median)} (beyond the noise), though both compile it with XLA")
    gap = tf_call.median - jax_call.median
    if probes is None or gap <= 0:
        return text + ("; the cause is not established by this run" + (
            " (TensorFlow's per-call overhead is a candidate: section 3 measures each framework's fixed cost of a "
            "compiled call). " if gap > 0 else ". "))
    validate.instance("probes", probes, tuple)
    jax_probe, tf_probe = probes
    fixed = tf_probe.median - jax_probe.median
    return text + (f". Their compiled `{PROBE}` calls cost {fmt(tf_probe.median)} (TensorFlow) and "
                   f"{fmt(jax_probe.median)} (JAX): a per-call difference of {fmt(fixed)}, {fixed / gap:.0%} of the "
                   f"{fmt(gap)} gap (computed); " + ("the rest is not established by this run. " if fixed < 0.8 * gap
                                                    else "per-call overhead accounts for most of it. "))


# ---------------------------------------------------------------------------------------------------------
# The per-call overhead model


@dataclass(frozen=True, repr=False)
class OverheadModel:
    """Small-size speed-up computed as ``n_ops x eager_per_op / compiled_per_call``, against the measured one.

    ``eager_per_op``: an eager op on a tiny tensor (the chain's mix); ``compiled_per_call``: a compiled one-op
    function (``x + 1``), i.e. the fixed cost of one call of compiled code with one tiny kernel and a fresh
    output, as the compiled chain has; ``measured``: eager chain time over compiled chain time at the same size.
    """

    framework: str
    n_ops: int
    eager_per_op: float
    compiled_per_call: float
    measured: float

    @property
    def predicted(self) -> float:
        """The computed speed-up (formula, not a measurement)."""
        return self.n_ops * self.eager_per_op / self.compiled_per_call

    @property
    def ratio(self) -> float:
        """measured / predicted: 1 when the model explains the data."""
        return self.measured / self.predicted

    def within(self, factor: float) -> bool:
        """True when measured and predicted agree within ``factor`` (e.g. 2: between half and double)."""
        validate.number("factor", factor, low=1)
        return 1 / factor <= self.ratio <= factor


def overhead_model(framework: str, *, n_ops: int, eager_per_op: float, compiled_per_call: float,
                   measured: float) -> OverheadModel:
    """An ``OverheadModel`` from this run's numbers (times in seconds), validated."""
    return OverheadModel(validate.framework(framework), validate.positive("n_ops", n_ops, integer=True),
                         float(validate.positive("eager_per_op", eager_per_op)),
                         float(validate.positive("compiled_per_call", compiled_per_call)),
                         float(validate.positive("measured", measured)))


def overhead_table(models: list[OverheadModel]) -> display.Table:
    """The overhead model per framework: inputs (measured), predicted (computed) and measured speed-up."""
    validate.non_empty("models", models)
    for m in models:
        validate.instance("models", m, OverheadModel)
    rows = [(m.framework, str(m.n_ops), display.format_time(m.eager_per_op), display.format_time(m.compiled_per_call),
             f"{m.predicted:.1f}x", f"{m.measured:.1f}x", f"{m.ratio:.2f}") for m in models]
    return display.table(
        ["framework", "ops", "eager op, chain's mix (measured)", f"compiled {PROBE} call (measured)",
         "predicted speed-up (computed)", "chain speed-up (measured)", "measured / predicted"], rows,
        title="Small tensors: speed-up = ops x eager per-op cost / compiled per-call cost",
        note="predicted is computed (ops x eager per op / compiled call) from two costs measured in this run at "
             "the smallest size; measured is eager chain time / compiled chain time at that size.")


# The chain's op mix, read off its graph (section 1 of notebook 01): 6 array-array ops, 4 with a Python number, 1 tanh.
CHAIN_MIX = {"eager add": 6, "eager scalar mul": 4, "eager tanh": 1}
PROBE = "x + 1"  # the compiled per-call probe: one op, so a real graph, one kernel and one fresh output
COMPILED_PROBE = f"compiled {PROBE}"


def call_costs(framework: str, *, size: int = 16, min_time: float = 0.05) -> dict[str, timing.Measurement]:
    """The fixed costs of the overhead model, measured on ``size``-element float32 inputs: one eager op of
    each kind in the chain (``"eager add"`` of two arrays, ``"eager scalar mul"`` by a Python number,
    ``"eager tanh"``) and ``"compiled x + 1"`` (a compiled one-op function: what one call of compiled code
    costs with a real graph, one tiny kernel and a fresh output, as the chain's compiled call has; an identity
    would not do: torch.compile makes no graph of it and skips the runtime wrappers every real graph pays;
    torch.compile, jax.jit, tf.function(jit_compile=True))."""
    name = validate.framework(framework)
    validate.number("size", size, low=1, high=2**20, integer=True)
    validate.positive("min_time", min_time)
    a, b = (interop.to_framework(name, np.full(size, v, np.float32)) for v in (1.0, 2.0))
    add, mul, tanh = _eager_ops(name)
    one_op = interop.compile_default(name, fresh_function(lambda x: x + 1))
    return {"eager add": timing.benchmark(add, a, b, min_time=min_time, label=f"{name} eager add"),
            "eager scalar mul": timing.benchmark(mul, a, 0.5, min_time=min_time, label=f"{name} eager scalar mul"),
            "eager tanh": timing.benchmark(tanh, a, min_time=min_time, label=f"{name} eager tanh"),
            COMPILED_PROBE: timing.benchmark(one_op, a, min_time=min_time, label=f"{name} {COMPILED_PROBE}")}


def probe_beside_chain(framework: str, chain: Callable[..., Any], args: Sequence[Any], *, min_time: float = 0.2,
                       ) -> tuple[timing.Measurement, timing.Measurement]:
    """(the compiled ``x + 1`` probe, the compiled ``chain``), both compiled afresh (static), on ``args`` of one
    size (the probe on the first), timed in alternating rounds: the two fixed costs like for like."""
    name = validate.framework(framework)
    validate.function("chain", chain)
    validate.instance("args", args, (tuple, list))
    validate.positive("min_time", min_time)
    probe = interop.compile_default(name, fresh_function(lambda x: x + 1))
    compiled = interop.compile_default(name, fresh_function(chain))
    timing.sync(probe(args[0]))
    timing.sync(compiled(*args))
    found = timing.interleaved({PROBE: lambda: probe(args[0]), "chain": lambda: compiled(*args)}, min_time=min_time)
    return found[PROBE], found["chain"]


def eager_op_cost(costs: Mapping[str, timing.Measurement], mix: Mapping[str, int] = CHAIN_MIX) -> float:
    """The average eager op of the chain (seconds): ``call_costs`` medians weighted by the chain's op mix."""
    validate.instance("costs", costs, Mapping)
    validate.non_empty("mix", mix)
    missing = sorted(set(mix) - set(costs))
    if missing:
        raise ValueError(f"costs must hold {', '.join(mix)}; missing {', '.join(missing)}")
    return sum(costs[k].median * n for k, n in mix.items()) / sum(mix.values())


def size_sweep(eager: Mapping[str, Callable[..., Any]], compile_fresh: Callable[[str], Callable[..., Any]],
               sizes: Sequence[int], make_inputs: Callable[[str, int], tuple], *, min_time: float = 0.05,
               ) -> tuple[dict[str, list[timing.Measurement]], float, int]:
    """Time ``eager[fw]`` and a compiled version at every size; returns ``({"fw eager": [...], "fw compiled":
    [...]}, largest abs difference between their results, graphs torch compiled during the sweep)``.

    ``compile_fresh(fw)`` returns a newly compiled function and is called once per size, so every size gets a
    static graph of its own: one compiled function reused across sizes would, in PyTorch, recompile a
    shape-generic graph at the second size (automatic dynamic) and time that instead. The compiled result is
    checked against eager at each size."""
    validate.instance("eager", eager, Mapping)
    validate.non_empty("eager", eager)
    validate.function("compile_fresh", compile_fresh)
    validate.non_empty("sizes", sizes)
    for n in sizes:
        validate.positive("sizes", n, integer=True)
    validate.function("make_inputs", make_inputs)
    validate.positive("min_time", min_time)
    count = _graph_counter("torch" in eager)
    before = count()
    out: dict[str, list[timing.Measurement]] = {f"{fw} {k}": [] for fw in eager for k in ("eager", "compiled")}
    worst = 0.0
    for n in sizes:
        for fw in eager:
            args, compiled = make_inputs(fw, n), compile_fresh(fw)
            worst = max(worst, max_abs_diff(eager[fw](*args), compiled(*args)))
            out[f"{fw} eager"].append(timing.benchmark(eager[fw], *args, min_time=min_time, label=f"{fw} eager"))
            out[f"{fw} compiled"].append(timing.benchmark(compiled, *args, min_time=min_time, label=f"{fw} compiled"))
    return out, worst, count() - before


def _graph_counter(torch_present: bool) -> Callable[[], int]:
    if not torch_present:
        return lambda: 0
    import torch._dynamo.utils

    return lambda: int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def _eager_ops(name: str) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    if name == "torch":
        import torch

        return torch.add, torch.mul, torch.tanh
    if name == "jax":
        import jax.numpy as jnp

        return jnp.add, jnp.multiply, jnp.tanh
    tf = env.import_tensorflow()
    return tf.add, tf.multiply, tf.tanh


def busy_note() -> str:
    """A clause for a failed timing prediction when the machine was busy: the load average against the cores
    (a measurement, so the text can say why without guessing); empty on a quiet machine."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    cores = os.cpu_count() or 1
    if load <= cores:
        return ""
    return (f" (load average {load:.1f} on {cores} cores while this ran: other processes held the cores, which "
            "stretches the many short waits of multi-threaded kernels; see the quartile ranges)")
