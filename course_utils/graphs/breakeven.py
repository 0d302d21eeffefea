"""What compiling costs and saves: the break-even call count, eager against compiled timed in turns, and the
per-call overhead model of small tensors (n_ops x eager per-op cost / the machine's compiled call cost).

The compiled functions are the learner's own (``torch.compile(f)``, ``jax.jit(f)``,
``tf.function(f, jit_compile=True)`` written in the notebook); the fixed cost of one compiled call is the run's
figure from ``course_utils.machine.figures().call_cost``, measured once for every notebook.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from course_utils import calls, declare, display, env, interop, intervals, timing, validate


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


def break_even_range(eager: timing.Measurement, compiled: timing.Measurement,
                     speedup: intervals.Speedup) -> tuple[float, float] | None:
    """The break-even call counts at the two ends of the speed-up's interval (high end first), or None where the
    interval does not lie above 1x: a range the run supports, never one count the noise could move."""
    validate.instance("speedup", speedup, intervals.Speedup)
    validate.instance("eager", eager, timing.Measurement)
    validate.instance("compiled", compiled, timing.Measurement)
    if compiled.first_call is None:
        raise ValueError("compiled must carry first_call (benchmark() records it)")
    if not speedup.faster:
        return None
    ends = [break_even_calls(first_call=compiled.first_call, per_call=eager.median / s, eager_per_call=eager.median,
                             eager_first_call=eager.first_call) for s in (speedup.high, speedup.low)]
    return ends[0], ends[1]


MAX_CURVE_POINTS = 10**6  # points of a cost curve: range(10**12) ended in a bare MemoryError


@declare.checked
def cumulative_time(first_call: float, per_call: float,
                    calls: Annotated[Any, declare.MaxItems(MAX_CURVE_POINTS)]) -> np.ndarray:
    """Total seconds after each number of calls in ``calls`` (at most ``MAX_CURVE_POINTS``): first call plus the
    steady-state ones."""
    if calls is None or isinstance(calls, (str, bytes)):
        raise TypeError(f"calls must be a number or an array of numbers of calls; got {type(calls).__name__}")
    values = np.asarray(calls, dtype=float)
    if values.size == 0:
        raise ValueError("calls must not be empty")
    if not np.all(np.isfinite(values)) or np.any(values < 1):
        raise ValueError("calls must all be finite and >= 1")
    return _time("first_call", first_call) + (values - 1) * _time("per_call", per_call)


def timed_pair(eager: Callable[..., Any], compiled: Callable[..., Any], args: Sequence[Any], *, label: str,
               min_time: float = 0.2, rounds: int = 6, timeout: float = 600.0,
               ) -> tuple[timing.Measurement, timing.Measurement]:
    """(eager, compiled) Measurements of ``fn(*args)``, labelled ``"<label> eager"`` and ``"<label> compiled"``,
    timed in ``rounds`` alternating rounds (``timing.interleaved``: ``cu.intervals.speedup`` pairs them); each
    one's first call is its first round's, so the compiled one's is the compile when it had not been called
    before. ``compiled`` is the learner's own compiled function; both run under a ``timeout`` (seconds)."""
    validate.function("eager", eager)
    validate.function("compiled", compiled)
    validate.instance("args", args, (tuple, list))
    validate.text("label", label)
    rounds = validate.number("rounds", rounds, low=2, high=100, integer=True)
    timeout = validate.seconds("timeout", timeout)
    names = (f"{label} eager", f"{label} compiled")
    with calls.time_limit(timeout, calls.describe(compiled)):
        found = timing.interleaved({names[0]: lambda: eager(*args), names[1]: lambda: compiled(*args)},
                                   rounds=rounds, min_time=min_time)
    return found[names[0]], found[names[1]]


# ---------------------------------------------------------------------------------------------------------
# The per-call overhead model


@dataclass(frozen=True, repr=False)
class OverheadModel:
    """Small-size speed-up computed as ``n_ops x eager_per_op / compiled_per_call``, against the measured one.

    ``eager_per_op``: an eager op on a tiny tensor (the chain's mix, ``eager_op_costs``); ``compiled_per_call``:
    the run's fixed cost of one compiled call (``machine.figures().call_cost``: a compiled ``x + 1`` on 16
    elements, a real graph with one tiny kernel and a fresh output, as the compiled chain has); ``measured``: eager
    chain time over compiled chain time at the same size; ``chain_call``: the compiled chain's own time per call
    there, set beside the figure by the story.
    """

    framework: str
    n_ops: int
    eager_per_op: float
    compiled_per_call: float
    measured: float
    chain_call: float

    @property
    def predicted(self) -> float:
        """The computed speed-up (formula, not a measurement)."""
        return self.n_ops * self.eager_per_op / self.compiled_per_call

    @property
    def ratio(self) -> float:
        """measured / predicted: 1 when the model explains the data."""
        return self.measured / self.predicted


def overhead_model(framework: str, *, n_ops: int, eager_per_op: float, compiled_per_call: float,
                   eager_chain: timing.Measurement, compiled_chain: timing.Measurement) -> OverheadModel:
    """An ``OverheadModel`` from this run's numbers (times in seconds; the two chain Measurements at the model's
    size), validated."""
    validate.instance("eager_chain", eager_chain, timing.Measurement)
    validate.instance("compiled_chain", compiled_chain, timing.Measurement)
    n_ops = validate.number("n_ops", n_ops, low=1, high=10**6, integer=True)
    return OverheadModel(validate.framework(framework), int(n_ops),
                         float(validate.positive("eager_per_op", eager_per_op)),
                         float(validate.positive("compiled_per_call", compiled_per_call)),
                         eager_chain.median / compiled_chain.median, compiled_chain.median)


def overhead_table(models: Sequence[OverheadModel]) -> display.Table:
    """The overhead model per framework: inputs (measured), predicted (computed) and measured speed-up."""
    validate.non_empty("models", models)
    for m in models:
        validate.instance("models", m, OverheadModel)
    rows = [(m.framework, str(m.n_ops), display.format_time(m.eager_per_op), display.format_time(m.compiled_per_call),
             f"{m.predicted:.2g}x", f"{m.measured:.2g}x", f"{m.ratio:.2g}",
             f"{m.measured * m.chain_call / m.n_ops / m.eager_per_op:.2g}x",
             f"{m.chain_call / m.compiled_per_call:.2g}x")
            for m in models]
    return display.table(
        ["framework", "ops", "eager op, chain's mix (measured)", "compiled call, the run's figure (measured)",
         "predicted speed-up (computed)", "chain speed-up (measured)", "measured / predicted",
         "eager chain's average op / op mix (computed)", "compiled chain's call / figure (computed)"], rows,
        title="Small tensors: speed-up = ops x eager per-op cost / compiled per-call cost",
        note="predicted is computed (ops x eager per op / compiled call) from two measured costs: the eager ops "
             "here, the compiled call from cu.machine.figures(); measured is eager chain time / compiled chain "
             "time at the smallest size of the sweep. The last two columns set each input beside what the chain "
             "itself took (its eager time over n_ops; its compiled time per call): where the model missed, the "
             "input further from 1x is further off.")


# The chain's op mix, read off its graph (section 1 of notebook 01): 6 array-array ops, 4 with a Python number, 1 tanh.
CHAIN_MIX = {"eager add": 6, "eager scalar mul": 4, "eager tanh": 1}


def eager_op_costs(framework: str, *, size: int = 16, min_time: float = 0.05) -> dict[str, timing.Measurement]:
    """One eager op of each kind in the chain, on ``size``-element float32 inputs: ``"eager add"`` of two arrays,
    ``"eager scalar mul"`` by a Python number, ``"eager tanh"``: the eager side of the overhead model."""
    name = validate.framework(framework)
    validate.number("size", size, low=1, high=2**20, integer=True)
    validate.number("min_time", min_time, low=0, high=60, low_open=True)
    a, b = (interop.to_framework(name, np.full(size, v, np.float32)) for v in (1.0, 2.0))
    add, mul, tanh = _eager_ops(name)
    return {"eager add": timing.benchmark(add, a, b, min_time=min_time, label=f"{name} eager add"),
            "eager scalar mul": timing.benchmark(mul, a, 0.5, min_time=min_time, label=f"{name} eager scalar mul"),
            "eager tanh": timing.benchmark(tanh, a, min_time=min_time, label=f"{name} eager tanh")}


def eager_op_cost(costs: Mapping[str, timing.Measurement], mix: Mapping[str, int] = CHAIN_MIX) -> float:
    """The average eager op of the chain (seconds): ``eager_op_costs`` medians weighted by the chain's op mix."""
    validate.instance("costs", costs, Mapping)
    validate.instance("mix", mix, Mapping)
    validate.non_empty("mix", mix)
    missing = sorted(set(mix) - set(costs))
    if missing:
        raise ValueError(f"costs must hold {', '.join(mix)}; missing {', '.join(missing)}")
    for k, n in mix.items():
        validate.instance(f"costs[{k!r}]", costs[k], timing.Measurement)
        validate.number(f"mix[{k!r}]", n, low=0, high=10**6, integer=True)
    total = sum(mix.values())
    if total == 0:
        raise ValueError("mix must count at least one op")
    return sum(costs[k].median * n for k, n in mix.items()) / total


def _eager_ops(name: str) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    if name == "torch":
        import torch

        return torch.add, torch.mul, torch.tanh
    if name == "jax":
        import jax.numpy as jnp

        return jnp.add, jnp.multiply, jnp.tanh
    tf = env.import_tensorflow()
    return tf.add, tf.multiply, tf.tanh
