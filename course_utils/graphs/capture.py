"""Graph capture: one Python function as an FX graph, a jaxpr and a tf.Graph, compute ops counted, side by side;
``fresh_function``; how often each framework traced a function, Dynamo's guards, TF's retracing, ``GraphBreaks``."""

from __future__ import annotations

import io
import itertools
import logging
import re
import types
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from html import escape
from typing import Annotated, Any, Literal

from course_utils import declare, display, env, validate
from course_utils.declare import NonEmpty

# tf.Graph bookkeeping that is not computation: inputs, constants, pass-throughs.
_TF_NON_COMPUTE = frozenset({"Placeholder", "Const", "Identity", "NoOp", "IdentityN"})


@declare.checked
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


@declare.checked
class GraphRecorder:
    """A torch.compile backend that records each FX graph Dynamo gives it and runs it unchanged: every (re)compile
    appends one graph, so ``count`` is the number of compilations."""

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


@declare.checked
def fresh_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of ``fn`` with its own, uniquely named code object: Dynamo caches graphs on the code object and
    remembers changed shapes per (file, line, name), so the copy starts from scratch."""
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"fn must be a Python function (def or lambda); got {type(fn).__name__}")
    code = fn.__code__.replace(co_name=f"{fn.__code__.co_name}_fresh{next(_FRESH)}")
    copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    return copy


@declare.checked
def fresh_if_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fresh_function(fn)`` for a Python function; any other callable (a module, a builtin) unchanged."""
    return fresh_function(fn) if isinstance(fn, types.FunctionType) else fn


@declare.checked
def capture_tf(fn: Callable[..., Any], *args: Any) -> Capture:
    """The tf.Graph of ``tf.function(fn)``'s concrete function for ``args`` (op types; bookkeeping ops not counted)."""
    tf = env.import_tensorflow()
    graph = tf.function(fn).get_concrete_function(*args).graph
    operations = graph.get_operations()
    lines = [f"{op.name} = {op.type}({', '.join(t.name for t in op.inputs)})" for op in operations]
    return Capture("tensorflow", tuple(op.type for op in operations if op.type not in _TF_NON_COMPUTE),
                   "\n".join(lines))


@declare.checked
def capture(framework: declare.Text, fn: Callable[..., Any], *args: Any) -> Capture:
    """The graph a framework's compiler sees in ``fn(*args)`` ('torch', 'jax', 'tensorflow'/'tf'): Dynamo's whole
    FX graph (nothing compiled; ``fn`` runs eagerly first: its own error reaches the caller), jaxpr or tf.Graph."""
    name = validate.framework(framework)  # by hand: it also takes "pytorch" and "tf", in any case
    if name == "tensorflow":
        return capture_tf(fn, *args)
    if name == "jax":
        import jax

        closed = jax.make_jaxpr(fn)(*args)
        return Capture("jax", tuple(eqn.primitive.name for eqn in closed.jaxpr.eqns), str(closed).strip())
    import torch

    fn(*args)
    recorder = GraphRecorder()
    torch.compile(fresh_if_function(fn), backend=recorder, fullgraph=True)(*args)
    if not recorder.graphs:  # nothing to compute (e.g. ``lambda x: x``): Dynamo hands no graph over
        return Capture("torch", (), "(no graph: the function computes nothing)")
    return Capture("torch", recorder.ops(0), recorder.graphs[0].code.strip())


@declare.checked
@dataclass(frozen=True)
class SideBySide:
    """Several captures shown as columns (HTML) or one after another (text)."""

    captures: tuple[Capture, ...]

    def table(self) -> display.Table:
        """Op counts per framework, most frequent op first."""
        rows = [(c.framework, str(c.count), ", ".join(f"{op} x{n}" for op, n in c.counts().most_common()))
                for c in self.captures]
        return display.table(["framework", "compute ops", "which"], rows, title="Compute ops in each graph")

    def __repr__(self) -> str:
        return "\n\n".join(repr(c) for c in self.captures)

    def _repr_html_(self) -> str:
        cols = "".join(
            f"<td style='vertical-align:top;text-align:left'><b>{escape(c.framework)}: {c.count} ops</b>"
            f"<pre style='font-size:70%'>{escape(c.text)}</pre></td>" for c in self.captures
        )
        return f"<table><tr>{cols}</tr></table>"


@declare.checked
def side_by_side(captures: Annotated[Sequence[Capture], NonEmpty]) -> SideBySide:
    """Display captures next to each other in a notebook."""
    return SideBySide(tuple(captures))


Inputs = Annotated[Sequence[tuple], NonEmpty, declare.MaxItems(10_000)]  # argument tuples, e.g. [(x1,), (x2,)]


@declare.checked
def count_compiles(framework: declare.Text, fn: Callable[..., Any], inputs: Inputs,
                   **compile_kwargs: Any) -> int:
    """How many times ``fn``, compiled afresh (``compile_kwargs`` pass on), was traced over the calls in ``inputs``:
    graphs a recording backend got (torch), runs of the Python function (jax), the tracing count (tensorflow)."""
    name = validate.framework(framework)  # by hand: it also takes "pytorch" and "tf", in any case
    if name == "torch":
        import torch

        recorder = GraphRecorder()
        compiled = torch.compile(fresh_if_function(fn), backend=recorder, **compile_kwargs)
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
    tf = env.import_tensorflow()
    traced = tf.function(fn, **compile_kwargs)
    with _tf_warnings(tf, keep=False):
        for args in inputs:
            traced(*args)
    return int(traced.experimental_get_tracing_count())


@declare.checked
def tf_retracing_warnings(fn: Callable[..., Any], inputs: Inputs, **compile_kwargs: Any) -> list[str]:
    """The retracing warnings TensorFlow logs (returned, not printed) while ``tf.function(fn)`` is called on each of
    ``inputs``: TF warns after 5 traces in its recent calls, at most twice per function, so ``fn`` is wrapped afresh."""
    tf = env.import_tensorflow()
    # TF counts traces per Python function and warns at most twice per function: a fresh wrapper starts clean
    traced = tf.function(fresh_function(lambda *args: fn(*args)), **compile_kwargs)
    with _tf_warnings(tf, keep=True) as seen:
        for args in inputs:
            traced(*args)
    return [m for m in seen if "retracing" in m]


@contextmanager
def _tf_warnings(tf: Any, *, keep: bool) -> Iterator[list[str]]:
    """Collect TF's Python warnings (``keep``) or drop them; either way nothing reaches stderr."""
    seen: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    logger = tf.get_logger()
    level, propagate, handlers = logger.level, logger.propagate, logger.handlers[:]
    logger.handlers = [_Collect()] if keep else []
    logger.setLevel(logging.WARNING if keep else logging.ERROR)
    logger.propagate = False
    try:
        yield seen
    finally:
        logger.handlers, logger.propagate = handlers, propagate
        logger.setLevel(level)


@declare.checked
@dataclass(frozen=True, repr=False)
class GraphBreaks(display.Tabled):
    """What ``torch._dynamo.explain`` found: graphs, breaks and the first line of each break's reason."""

    graph_count: Annotated[int, declare.Range(0)]
    break_count: Annotated[int, declare.Range(0)]
    reasons: tuple[str, ...]

    def table(self) -> display.Table:
        rows = [(str(i + 1), r) for i, r in enumerate(self.reasons)] or [("-", "none")]
        return display.table(["break", "reason (first line)"], rows,
                             title=f"{self.graph_count} graph(s), {self.break_count} graph break(s)")


@declare.checked
def torch_graph_breaks(fn: Callable[..., Any], *args: Any) -> GraphBreaks:
    """``torch._dynamo.explain`` of ``fn(*args)`` (run eagerly first: its own error passes unchanged)."""
    import torch
    fn(*args)
    explained = torch._dynamo.explain(fresh_if_function(fn))(*args)
    reasons = tuple(first_line(str(getattr(b, "reason", b))) for b in explained.break_reasons)
    return GraphBreaks(explained.graph_count, explained.graph_break_count, reasons)


@declare.checked
def first_line(text: str, limit: int = 160) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters."""
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------------
# TORCH_LOGS, captured


@declare.checked
@dataclass(frozen=True, repr=False)
class CompileLog(display.Tabled):
    """What ``TORCH_LOGS=guards,recompiles`` printed while a function compiled and recompiled."""

    lines: tuple[str, ...]

    def guards(self) -> list[str]:
        """The guards of the first compiled graph that check a tensor or a dimension (the ones a call can fail)."""
        keep = ("TENSOR_MATCH", "LAMBDA_GUARD: 2 <=", "TYPE_MATCH", "EQUALS_MATCH")
        out = []
        for line in self.lines:
            if line.startswith("GUARDS") and out:
                break
            if any(k in line for k in keep):
                out.append(_short_guard(line))
        return out

    def recompiles(self) -> list[str]:
        """The 'Recompiling function ...' messages with the guard that failed."""
        return [line.strip() for line in self.lines if "Recompiling function" in line or "guard failure" in line
                or re.match(r"^- \d+/\d+:", line.strip())]

    def table(self) -> display.Table:
        rows = [("guard", g) for g in self.guards()] + [("recompile", r) for r in self.recompiles()]
        return display.table(["kind", "log line (shortened)"], rows, title="TORCH_LOGS=guards,recompiles")


def _short_guard(line: str) -> str:
    line = line.split("  #", 1)[0].strip().lstrip("|+- ").strip()
    line = re.sub(r"DispatchKeySet\([^)]*\), ", "", line)
    return line if len(line) <= 150 else line[:147] + "..."


@declare.checked
def torch_compile_log(fn: Callable[..., Any], inputs: Inputs, **compile_kwargs: Any) -> CompileLog:
    """What ``TORCH_LOGS=guards,recompiles`` printed (kept) while ``fn``, compiled afresh, ran ``inputs``."""
    import torch
    import torch._dynamo  # noqa: F401  (creates the loggers that set_logs configures)
    import torch._logging

    buffer = io.StringIO()
    torch._logging.set_logs(guards=True, recompiles=True)
    handlers = list({id(h): h for name in ("torch", "torch._dynamo") for h in logging.getLogger(name).handlers
                     if type(h) is logging.StreamHandler}.values())
    streams = [h.stream for h in handlers]
    for h in handlers:
        h.stream = buffer
    try:
        compiled = torch.compile(fresh_if_function(fn), backend="eager", **compile_kwargs)
        for args in inputs:
            compiled(*args)
    finally:
        for h, stream in zip(handlers, streams):
            h.stream = stream
        torch._logging.set_logs()
    prefix = re.compile(r"^[A-Z]\d{4} [\d:.]+ \d+ \S+\] (\[[^\]]*\] )*")
    return CompileLog(tuple(prefix.sub("", line).rstrip() for line in buffer.getvalue().splitlines()))


# ---------------------------------------------------------------------------------------------------------
# Strategies against recompilation, per framework

BUCKET = 256  # JAX remedy: pad lengths up to a multiple of this


@declare.checked
def strategy_counts(framework: Literal["torch", "jax", "tensorflow"], fn: Callable[..., Any],
                    xs: Annotated[Sequence[Any], NonEmpty, declare.MaxItems(1000)]) -> dict[str, int]:
    """Compilations of ``fn`` for 1-D inputs ``xs`` of different lengths, per strategy of ``framework`` (torch:
    static, default, ``mark_dynamic``; jax: as is, padded to ``BUCKET``; tensorflow: as is, reduce_retracing, None)."""
    calls = [(x,) for x in xs]
    if framework == "torch":
        import torch

        marked = [torch.clone(x) for x in xs]
        for x in marked:
            torch._dynamo.mark_dynamic(x, 0)
        return {"dynamic=False": count_compiles(framework, fn, calls, dynamic=False),
                "default (automatic dynamic)": count_compiles(framework, fn, calls),
                "mark_dynamic(x, 0)": count_compiles(framework, fn, [(x,) for x in marked])}
    if framework == "jax":
        import jax.numpy as jnp

        padded = [(jnp.pad(x, (0, -len(x) % BUCKET)),) for x in xs]
        return {"jax.jit": count_compiles(framework, fn, calls),
                f"padded to multiples of {BUCKET}": count_compiles(framework, fn, padded)}
    tf = env.import_tensorflow()
    return {"tf.function": count_compiles(framework, fn, calls),
            "reduce_retracing=True": count_compiles(framework, fn, calls, reduce_retracing=True),
            "input_signature [None]": count_compiles(framework, fn, calls,
                                                     input_signature=[tf.TensorSpec([None], tf.float32)])}
