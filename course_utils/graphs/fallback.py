"""The rollback plan: compile, check against eager, or fall back to eager with a one-line reason; the real
switches that turn compilation off (``eager_mode``), and comparisons of results across frameworks."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from course_utils import calls, declare, display, env, interop
from course_utils.declare import NonEmpty, Range
from course_utils.graphs.capture import first_line
from course_utils.measuring.workloads import Framework

Tolerance = Annotated[float, Range(0, 1e6)]

# The switch each framework offers to run compiled code eagerly, as the notebook shows it.
EAGER_SWITCHES = {
    "torch": 'torch.compiler.set_stance("force_eager")',
    "jax": "jax.disable_jit()",
    "tensorflow": "tf.config.run_functions_eagerly(True)",
}


@declare.checked
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


class _NotCallable(TypeError):
    """The learner's compiler returned something that cannot be called."""


@declare.checked
def compile_or_fallback(fn: Callable[..., Any], sample_args: Sequence[Any], *,
                        compiler: Callable[[Callable[..., Any]], Callable[..., Any]], framework: Framework,
                        rtol: Tolerance = 1e-5, atol: Tolerance = 1e-5,
                        timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> CompileDecision:
    """``fn`` compiled by the learner's ``compiler`` if it runs ``sample_args`` and agrees with eager, else eager with a
    one-line reason; an error ``fn`` raises eagerly, or ``calls.LearnerTimeout``, passes through unchanged."""
    name = framework
    with calls.time_limit(timeout, calls.describe(fn)):
        result = fn(*sample_args)  # the user's own error, if any, is theirs to see
        expected = _to_numpy(result)
        if any(a.dtype == object for a in expected):
            raise TypeError(f"fn must return arrays (or a tuple of them) to compare; fn = {calls.describe(fn)} "
                            f"returned {type(result).__name__}")
        try:
            compiled = compiler(fn)
            if not callable(compiled):  # a learner's bug (a missing return), not a failed compile
                raise _NotCallable(f"compiler must return the compiled function; compiler = "
                                   f"{calls.describe(compiler)} returned {type(compiled).__name__} {compiled!r:.40}")
            got = _to_numpy(compiled(*sample_args))
        except (calls.LearnerTimeout, _NotCallable):
            raise
        except Exception as exc:
            return CompileDecision(fn, name, False,
                                   f"compile failed: {type(exc).__name__}: {first_line(str(exc), 100)}")
    diff = _max_abs_diff(expected, got)
    if diff is None:
        return CompileDecision(fn, name, False, "disagrees with eager: outputs differ in structure or shape")
    if not all(np.allclose(e, g, rtol=rtol, atol=atol) for e, g in zip(expected, got)):
        return CompileDecision(fn, name, False, f"disagrees with eager: max abs diff {diff:.3g}", diff)
    return CompileDecision(compiled, name, True, f"agrees with eager on the sample (max abs diff {diff:.1e})", diff)


@contextmanager
def _eager_mode(name: str) -> Iterator[str]:
    """Inside the block, the framework's compiled functions run eagerly, through its own switch (yielded as text)."""
    if name == "torch":
        import torch

        with torch.compiler.set_stance("force_eager"):
            yield EAGER_SWITCHES[name]
    elif name == "jax":
        import jax

        with jax.disable_jit():
            yield EAGER_SWITCHES[name]
    else:
        tf = env.import_tensorflow()
        before = tf.config.functions_run_eagerly()
        tf.config.run_functions_eagerly(True)
        try:
            yield EAGER_SWITCHES[name]
        finally:
            tf.config.run_functions_eagerly(before)


@declare.checked
def eagerly(framework: Framework, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a compiled function or a step that calls one) run with the framework's eager switch on at every call:
    the same program, op by op (for JAX prefer no ``jax.jit``: ``disable_jit`` also un-jits jnp's internals)."""
    def eager(*args: Any, **kwargs: Any) -> Any:
        with _eager_mode(framework):
            return fn(*args, **kwargs)

    return eager


@declare.checked
def decisions_table(decisions: Annotated[Mapping[tuple[str, str], CompileDecision], NonEmpty]) -> display.Table:
    """One row per (framework, function): compiled or eager, and the reason."""
    rows = [(fw, name, "compiled" if d.compiled else "EAGER", d.reason) for (fw, name), d in decisions.items()]
    return display.table(["framework", "function", "kept", "reason"], rows, title="compile_or_fallback")


@declare.checked
def max_abs_diff(expected: Any, got: Any) -> float:
    """Largest absolute difference between two results of any framework (nested containers of arrays)."""
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
    try:
        diffs = [float(np.max(np.abs(e.astype(np.float64) - g.astype(np.float64)))) if e.size else 0.0
                 for e, g in zip(expected, got)]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"expected and got must hold numbers: {exc}") from None
    return max(diffs, default=0.0)


@declare.checked
def ran_compiled(framework: Framework) -> bool:
    """Whether a compiled probe ran compiled: False inside the framework's eager switch, True outside."""
    if framework == "torch":
        import torch

        traced = lambda x: torch.compiler.is_compiling()  # noqa: E731
    elif framework == "jax":
        import jax

        traced = lambda x: isinstance(x, jax.core.Tracer)  # noqa: E731
    else:
        tf = env.import_tensorflow()
        traced = lambda x: not tf.executing_eagerly()  # noqa: E731

    def probe(x: Any) -> Any:
        return x + (1.0 if traced(x) else 0.0)

    options = {"backend": "eager"} if framework == "torch" else {}
    fn = interop.compile_default(framework, probe, **options)
    return bool(_to_numpy(fn(interop.to_framework(framework, np.zeros(1, np.float32))))[0][0] == 1.0)
