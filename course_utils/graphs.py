"""What a compiler sees: graph capture, op counts and recompilation counts in PyTorch, JAX and TensorFlow.

- ``capture(framework, fn, *args)``: the graph each framework builds from one Python function (FX graph
  from a Dynamo backend, jaxpr, tf.Graph of a concrete function), with its compute ops counted.
- ``GraphRecorder``: a torch.compile backend that keeps each graph Dynamo hands it (and so counts compiles).
- ``count_compiles(framework, fn, inputs)``: how many times a compiled function traced for these inputs.
- ``compile_or_fallback(fn, sample_args, framework=...)``: the rollback plan, compiled if it works and agrees
  with eager on the sample, else eager with a one-line reason.
- ``break_even_calls`` and ``crossover_plot``: after how many calls compiling has paid for itself.
"""

from __future__ import annotations

import itertools
import logging
import math
import types
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from course_utils.timing import Measurement

FRAMEWORKS = ("torch", "jax", "tensorflow")
# tf.Graph bookkeeping that is not computation: inputs, constants, pass-throughs.
_TF_NON_COMPUTE = frozenset({"Placeholder", "Const", "Identity", "NoOp", "IdentityN"})


def _check_framework(framework: str) -> str:
    name = "tensorflow" if framework == "tf" else framework
    if name not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {FRAMEWORKS}; got {framework!r}")
    return name


def _check_callable(name: str, fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"{name} must be callable; got {type(fn).__name__}")


# ---------------------------------------------------------------------------------------------------------
# Graph capture


@dataclass(frozen=True)
class Capture:
    """One function as a framework's compiler sees it: the printed graph and its compute ops in order."""

    framework: str
    ops: tuple[str, ...]
    text: str

    @property
    def count(self) -> int:
        """Number of compute ops (inputs, constants and outputs not counted)."""
        return len(self.ops)

    def counts(self) -> Counter:
        """How often each op appears."""
        return Counter(self.ops)

    def __repr__(self) -> str:
        return f"<Capture {self.framework}: {self.count} ops>\n{self.text}"

    def _repr_html_(self) -> str:
        return f"<b>{escape(self.framework)}: {self.count} ops</b><pre>{escape(self.text)}</pre>"


class GraphRecorder:
    """A torch.compile backend that records each FX graph Dynamo gives it and runs it unchanged (eagerly).

    ``torch.compile(fn, backend=recorder)``: every (re)compilation appends one graph, so ``count`` is the
    number of compilations and ``graphs[i].graph`` shows what Dynamo captured.
    """

    def __init__(self) -> None:
        self.graphs: list[Any] = []

    def __call__(self, gm: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        self.graphs.append(gm)
        return gm.forward

    @property
    def count(self) -> int:
        return len(self.graphs)

    def ops(self, index: int = -1) -> tuple[str, ...]:
        """Compute ops of the ``index``-th recorded graph, as readable names ('add', 'mul', 'tanh')."""
        if not self.graphs:
            raise ValueError("no graph recorded yet: call the compiled function first")
        return tuple(_fx_op_name(n) for n in self.graphs[index].graph.nodes
                     if n.op in ("call_function", "call_method", "call_module"))

    def __repr__(self) -> str:
        return f"<GraphRecorder: {self.count} graphs>"


def _fx_op_name(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", str(target))


_FRESH = itertools.count(1)


def fresh_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of ``fn`` with its own, uniquely named code object, so Dynamo starts from scratch for it.

    Dynamo caches compiled graphs on the code object and remembers which shapes changed per (file, line,
    name): a copy under a new name has neither, so counting compilations does not depend on earlier cells.
    """
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"fn must be a Python function; got {type(fn).__name__}")
    code = fn.__code__.replace(co_name=f"{fn.__code__.co_name}_fresh{next(_FRESH)}")
    copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    return copy


def capture_torch(fn: Callable[..., Any], *args: Any) -> Capture:
    """The FX graph Dynamo captures from ``fn(*args)`` (whole graph required; nothing is compiled)."""
    import torch

    recorder = GraphRecorder()
    compiled = torch.compile(fresh_function(fn) if isinstance(fn, types.FunctionType) else fn,
                             backend=recorder, fullgraph=True)
    compiled(*args)
    return Capture("torch", recorder.ops(0), recorder.graphs[0].code.strip())


def capture_jax(fn: Callable[..., Any], *args: Any) -> Capture:
    """The jaxpr of ``fn(*args)``: one equation per primitive."""
    import jax

    closed = jax.make_jaxpr(fn)(*args)
    return Capture("jax", tuple(eqn.primitive.name for eqn in closed.jaxpr.eqns), str(closed).strip())


def capture_tf(fn: Callable[..., Any], *args: Any) -> Capture:
    """The tf.Graph of ``tf.function(fn)``'s concrete function for ``args`` (op types; bookkeeping ops not counted)."""
    from course_utils import env

    tf = env.import_tensorflow()
    graph = tf.function(fn).get_concrete_function(*args).graph
    operations = graph.get_operations()
    lines = [f"{op.name} = {op.type}({', '.join(t.name for t in op.inputs)})" for op in operations]
    return Capture("tensorflow", tuple(op.type for op in operations if op.type not in _TF_NON_COMPUTE),
                   "\n".join(lines))


def capture(framework: str, fn: Callable[..., Any], *args: Any) -> Capture:
    """``capture_torch``, ``capture_jax`` or ``capture_tf`` by name."""
    _check_callable("fn", fn)
    name = _check_framework(framework)
    return {"torch": capture_torch, "jax": capture_jax, "tensorflow": capture_tf}[name](fn, *args)


@dataclass(frozen=True)
class SideBySide:
    """Several captures shown as columns (HTML) or one after another (text)."""

    captures: tuple[Capture, ...]

    def __repr__(self) -> str:
        return "\n\n".join(repr(c) for c in self.captures)

    def _repr_html_(self) -> str:
        cols = "".join(
            f"<td style='vertical-align:top;text-align:left'><b>{escape(c.framework)}: {c.count} ops</b>"
            f"<pre style='font-size:70%'>{escape(c.text)}</pre></td>" for c in self.captures
        )
        return f"<table><tr>{cols}</tr></table>"


def side_by_side(captures: Sequence[Capture]) -> SideBySide:
    """Display captures next to each other in a notebook."""
    if not captures or not all(isinstance(c, Capture) for c in captures):
        raise TypeError("captures must be a non-empty sequence of Capture")
    return SideBySide(tuple(captures))


# ---------------------------------------------------------------------------------------------------------
# Recompilation


def count_compiles(framework: str, fn: Callable[..., Any], inputs: Sequence[tuple], **compile_kwargs: Any) -> int:
    """Compile ``fn`` afresh, call it on each argument tuple in ``inputs``, return how many times it was traced.

    torch: graphs handed to a ``GraphRecorder`` backend (``compile_kwargs`` such as ``dynamic=`` pass on);
    jax: how often ``jax.jit`` ran the Python function (it runs only to trace); tensorflow: ``tf.function``'s
    ``experimental_get_tracing_count()`` (``compile_kwargs`` such as ``input_signature=`` pass on).
    """
    _check_callable("fn", fn)
    name = _check_framework(framework)
    if not isinstance(inputs, Sequence) or not all(isinstance(a, tuple) for a in inputs):
        raise TypeError("inputs must be a sequence of argument tuples, e.g. [(x1,), (x2,)]")
    if name == "torch":
        import torch

        recorder = GraphRecorder()
        compiled = torch.compile(fresh_function(fn), backend=recorder, **compile_kwargs)
        for args in inputs:
            compiled(*args)
        return recorder.count
    if name == "jax":
        import jax

        traces = 0

        def counted(*args: Any) -> Any:
            nonlocal traces
            traces += 1  # runs only while tracing
            return fn(*args)

        jitted = jax.jit(counted, **compile_kwargs)
        for args in inputs:
            jitted(*args)
        return traces
    from course_utils import env

    tf = env.import_tensorflow()
    traced = tf.function(fn, **compile_kwargs)
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)  # the counted retraces are the point here, not a warning
    try:
        for args in inputs:
            traced(*args)
    finally:
        logger.setLevel(level)
    return int(traced.experimental_get_tracing_count())


@dataclass(frozen=True)
class GraphBreaks:
    """What ``torch._dynamo.explain`` found: graphs, breaks and the first line of each break's reason."""

    graph_count: int
    break_count: int
    reasons: tuple[str, ...]

    def __repr__(self) -> str:
        lines = [f"{self.graph_count} graph(s), {self.break_count} graph break(s)"]
        return "\n".join(lines + [f"  break: {r}" for r in self.reasons])


def torch_graph_breaks(fn: Callable[..., Any], *args: Any) -> GraphBreaks:
    """Run ``torch._dynamo.explain`` on ``fn(*args)`` and keep the counts and one-line reasons."""
    import torch

    _check_callable("fn", fn)
    explained = torch._dynamo.explain(fresh_function(fn) if isinstance(fn, types.FunctionType) else fn)(*args)
    reasons = tuple(_first_line(str(getattr(b, "reason", b))) for b in explained.break_reasons)
    return GraphBreaks(explained.graph_count, explained.graph_break_count, reasons)


def _first_line(text: str, limit: int = 160) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------------
# The rollback plan


@dataclass(frozen=True)
class CompileDecision:
    """The function to call (compiled or eager), whether compilation was kept, and why, in one line."""

    fn: Callable[..., Any] = field(repr=False)
    framework: str
    compiled: bool
    reason: str
    max_abs_diff: float | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{self.framework}: {'compiled' if self.compiled else 'EAGER fallback'} ({self.reason})>"


def compile_or_fallback(
    fn: Callable[..., Any],
    sample_args: Sequence[Any],
    *,
    framework: str,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    **compile_kwargs: Any,
) -> CompileDecision:
    """Compile ``fn``, run it on ``sample_args`` and compare with eager; fall back to eager if either fails.

    torch: ``torch.compile(fn, fullgraph=True)`` (a graph break counts as a failure: it would silently run
    part of the function eagerly); jax: ``jax.jit``; tensorflow: ``tf.function``. ``compile_kwargs`` pass on
    (e.g. ``jit_compile=True``, ``backend=``). The returned object is callable.
    """
    _check_callable("fn", fn)
    name = _check_framework(framework)
    if not isinstance(sample_args, (tuple, list)):
        raise TypeError(f"sample_args must be a tuple or list of arguments; got {type(sample_args).__name__}")
    try:
        expected = _to_numpy(fn(*sample_args))
    except Exception as exc:
        raise ValueError(f"fn fails eagerly on sample_args, nothing to compare with: {type(exc).__name__}") from exc
    try:
        compiled = _compile(name, fn, compile_kwargs)
        got = _to_numpy(compiled(*sample_args))
    except Exception as exc:
        return CompileDecision(fn, name, False, f"compile failed: {type(exc).__name__}: {_first_line(str(exc), 100)}")
    diff = _max_abs_diff(expected, got)
    if diff is None:
        return CompileDecision(fn, name, False, "disagrees with eager: outputs differ in structure or shape")
    if not all(np.allclose(e, g, rtol=rtol, atol=atol) for e, g in zip(expected, got)):
        return CompileDecision(fn, name, False, f"disagrees with eager: max abs diff {diff:.3g}", diff)
    return CompileDecision(compiled, name, True, f"agrees with eager on the sample (max abs diff {diff:.1e})", diff)


def _compile(name: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Callable[..., Any]:
    if name == "torch":
        import torch

        return torch.compile(fn, **{"fullgraph": True, **kwargs})
    if name == "jax":
        import jax

        return jax.jit(fn, **kwargs)
    from course_utils import env

    return env.import_tensorflow().function(fn, **kwargs)


def to_framework(framework: str, array: Any) -> Any:
    """``array`` (NumPy) as a torch tensor (on CUDA when available), a JAX array or a TensorFlow tensor."""
    name = _check_framework(framework)
    array = np.asarray(array)
    if name == "torch":
        import torch

        return torch.from_numpy(array.copy()).to("cuda" if torch.cuda.is_available() else "cpu")
    if name == "jax":
        import jax.numpy as jnp

        return jnp.asarray(array)
    from course_utils import env

    return env.import_tensorflow().constant(array)


def max_abs_diff(expected: Any, got: Any) -> float:
    """Largest absolute difference between two results of any framework (nested lists/tuples/dicts of arrays).

    Raises ``ValueError`` when their structure or shapes differ.
    """
    diff = _max_abs_diff(_to_numpy(expected), _to_numpy(got))
    if diff is None:
        raise ValueError("expected and got differ in structure or shape")
    return diff


def _to_numpy(value: Any) -> list[np.ndarray]:
    """Leaves of a (nested) result as NumPy arrays, in order."""
    if isinstance(value, Mapping):
        return [a for k in sorted(value) for a in _to_numpy(value[k])]
    if isinstance(value, (list, tuple)):
        return [a for item in value for a in _to_numpy(item)]
    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu()
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    return [np.asarray(value)]


def _max_abs_diff(expected: list[np.ndarray], got: list[np.ndarray]) -> float | None:
    if len(expected) != len(got) or any(e.shape != g.shape for e, g in zip(expected, got)):
        return None
    diffs = [float(np.max(np.abs(e.astype(np.float64) - g.astype(np.float64)))) if e.size else 0.0
             for e, g in zip(expected, got)]
    return max(diffs, default=0.0)


# ---------------------------------------------------------------------------------------------------------
# Break-even


def _check_time(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number of seconds; got {value!r}")
    return float(value)


def break_even_calls(*, first_call: float, per_call: float, eager_per_call: float,
                     eager_first_call: float | None = None) -> float:
    """Smallest number of calls after which the compiled function's total time is below eager's; inf if never.

    Compiled: ``first_call + (n - 1) * per_call``; eager: ``eager_first_call + (n - 1) * eager_per_call``
    (``eager_first_call`` defaults to ``eager_per_call``).
    """
    c0, c = _check_time("first_call", first_call), _check_time("per_call", per_call)
    e = _check_time("eager_per_call", eager_per_call)
    e0 = e if eager_first_call is None else _check_time("eager_first_call", eager_first_call)
    if c0 <= e0:
        return 1
    if c >= e:
        return math.inf
    return 1 + math.ceil((c0 - e0) / (e - c))


def break_even(eager: Measurement, compiled: Measurement) -> float:
    """``break_even_calls`` from two Measurements (medians and first calls)."""
    if compiled.first_call is None:
        raise ValueError("compiled must carry first_call (benchmark() records it)")
    return break_even_calls(first_call=compiled.first_call, per_call=compiled.median, eager_per_call=eager.median,
                            eager_first_call=eager.first_call)


def compile_cache_times(elements: int = 2**16, *, timeout: float = 300.0) -> dict[str, float]:
    """torch.compile's first call in a fresh process, against an empty Inductor cache and then a warm one.

    Runs ``workers/compile_cache_probe.py`` twice with one new ``TORCHINDUCTOR_CACHE_DIR``; returns
    ``{"cold": seconds, "warm": seconds}`` (process start and imports excluded).
    """
    import json
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    if isinstance(elements, bool) or not isinstance(elements, int) or elements < 1:
        raise ValueError(f"elements must be a positive int; got {elements!r}")
    probe = Path(__file__).parent / "workers" / "compile_cache_probe.py"
    times = {}
    with tempfile.TemporaryDirectory(prefix="inductor-cache-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        for kind in ("cold", "warm"):
            done = subprocess.run([sys.executable, str(probe), str(elements)], env=env, capture_output=True,
                                  text=True, timeout=timeout, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"the {kind} compile probe failed:\n{done.stderr[-2000:]}")
            times[kind] = json.loads(done.stdout.strip().splitlines()[-1])["first_call_s"]
    return times


def cumulative_time(first_call: float, per_call: float, calls: np.ndarray) -> np.ndarray:
    """Total seconds after each number of calls in ``calls``: first call plus the steady-state ones."""
    calls = np.asarray(calls, dtype=float)
    if np.any(calls < 1):
        raise ValueError("calls must all be >= 1")
    return _check_time("first_call", first_call) + (calls - 1) * _check_time("per_call", per_call)


def crossover_plot(pairs: Mapping[str, tuple[Measurement, Measurement]], *, title: str | None = None) -> Figure:
    """Cumulative time vs number of calls, eager and compiled, one panel per entry; the break-even marked.

    ``pairs`` maps a name (e.g. 'torch') to ``(eager, compiled)`` Measurements.
    """
    from course_utils.plotting import color_for, figure

    if not isinstance(pairs, Mapping) or not pairs:
        raise TypeError("pairs must be a non-empty mapping of name -> (eager, compiled) Measurements")
    fig, axes = figure(len(pairs), width=3.6 * len(pairs), height=3.4)
    for ax, (name, (eager, compiled)) in zip(axes, pairs.items()):
        n_star = break_even(eager, compiled)
        top = 10 ** math.ceil(math.log10(max(1e4, 10 * n_star if math.isfinite(n_star) else 1e5)))
        calls = np.unique(np.logspace(0, math.log10(top), 200).round())
        ax.plot(calls, cumulative_time(eager.first_call or eager.median, eager.median, calls), color="#555555",
                linestyle="--", label="eager")
        ax.plot(calls, cumulative_time(compiled.first_call, compiled.median, calls), color=color_for(name),
                label="compiled")
        if math.isfinite(n_star):
            ax.axvline(n_star, color=color_for(name), linewidth=0.8, linestyle=":")
            note = f"break-even: {n_star:,.0f} call{'s' if n_star != 1 else ''}"
        else:
            note = "never breaks even"
        ax.text(0.97, 0.04, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of calls")
        ax.set_title(name)
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel("cumulative time (s)")
    if title:
        fig.suptitle(title)
    return fig


def compile_count_bars(counts: Mapping[str, Mapping[str, int]], *, calls: int | None = None,
                       title: str | None = None) -> Figure:
    """Horizontal bars: compilations (traces) per framework and strategy; ``calls`` drawn as a dashed line."""
    from course_utils.plotting import color_for, figure

    if not isinstance(counts, Mapping) or not counts or not all(isinstance(v, Mapping) and v for v in counts.values()):
        raise TypeError("counts must map framework -> non-empty {strategy: count}")
    rows = [(f"{fw}: {strategy}", n, color_for(fw, i))
            for i, (fw, strategies) in enumerate(counts.items()) for strategy, n in strategies.items()]
    fig, (ax,) = figure(width=6.4, height=0.6 + 0.32 * len(rows))
    ax.barh([r[0] for r in rows], [r[1] for r in rows], color=[r[2] for r in rows])
    for y, (_, n, _) in enumerate(rows):
        ax.text(n, y, f" {n}", va="center", fontsize=8)
    if calls is not None:
        ax.axvline(calls, color="#333333", linestyle="--", linewidth=1, label=f"{calls} calls with {calls} shapes")
        ax.legend(loc="lower right", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("compilations (traces)")
    ax.set_title(title or "How often each function was compiled")
    return fig
