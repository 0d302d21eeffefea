"""Graph capture: the same Python function as an FX graph (Dynamo), a jaxpr and a tf.Graph, with its compute
ops counted, shown side by side; and ``fresh_function``, which the whole lesson uses to start Dynamo afresh."""

from __future__ import annotations

import itertools
import types
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Annotated, Any

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
    """The graph a framework's compiler sees in ``fn(*args)`` ('torch', 'jax', 'tensorflow'/'tf'): Dynamo's FX graph
    (whole graph required; nothing compiled; ``fn`` runs eagerly first, so its own error reaches the caller), the
    jaxpr (one equation per primitive), or ``capture_tf``'s tf.Graph."""
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

