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

from course_utils import display, env, interop, timing, validate
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
