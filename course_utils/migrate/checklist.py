"""The seed's launch checklist, run as code on a whole training step: pass or fail, each with its evidence.

1. MVP comparison: what the migration buys (a measured ``MigrationGain``) against the team's bar (the break-even
   speed-up: the whole interval must lie above it), and ``steps`` whole training steps compiled vs eager from the
   same weights, losses compared.
2. Operator compatibility: graph breaks of the model (PyTorch) or a compile that fails (JAX).
3. Rollback path: a compile failure is *forced* (a compiler that really fails); PyTorch then rolls back with one
   line, ``torch.compiler.set_stance("force_eager")``, and the same model object trains on. Its losses must equal
   eager's and stay within the tolerance of the compiled path's: a rollback that left state behind, or a compiled
   path that drifted, fails the check.
4. Monitoring: compile time per job against a threshold (a busy share of the step is not checked: it measures the
   data stall, not how busy the accelerator's kernels are).
5. Dynamic control flow: Python branches on tensor values found while tracing.

``make_step(compiler)`` builds a fresh training step (same initial weights each time) whose model (PyTorch)
or update function (JAX) is wrapped by ``compiler``; ``step(batch)`` returns the loss.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from course_utils import display, graphs, validate
from course_utils.migrate.ladder import MigrationGain

_DYNAMIC_HINTS = ("generic_jump", "data-dependent", "data dependent", "concretization", "tracerbool",
                  "operatornotallowedingraph", "dynamic control flow")
FRAMEWORKS = ("torch", "jax")


@dataclass(frozen=True)
class Check:
    """One item: ``passed`` is True, False, or None when it was not measured (e.g. no compile time given)."""

    name: str
    passed: bool | None
    evidence: str

    @property
    def mark(self) -> str:
        return {True: "PASS", False: "FAIL", None: "n/a"}[self.passed]


@dataclass(frozen=True)
class Checklist:
    """The five checks for one training step in one framework."""

    framework: str
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        """True when no check failed."""
        return all(c.passed is not False for c in self.checks)

    @property
    def failed(self) -> list[str]:
        """Names of the checks that failed."""
        return [c.name for c in self.checks if c.passed is False]

    def why(self) -> str:
        """The failed checks with their evidence, one clause each ('' when none failed)."""
        return "; ".join(f"*{c.name}* ({c.evidence})" for c in self.checks if c.passed is False)

    def __getitem__(self, name: str) -> Check:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"name must be one of {[c.name for c in self.checks]}; got {name!r}")

    def table(self) -> display.Table:
        title = f"Launch checklist ({self.framework}): {'ready' if self.passed else 'NOT ready'}"
        return display.table(["", "check", "evidence"], [(c.mark, c.name, c.evidence) for c in self.checks],
                             title=title)

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _failing_torch_backend(gm: Any, example_inputs: Any) -> Any:
    raise RuntimeError("simulated compiler failure (forced by the rollback check)")


def compilers(framework: str, compiler: Callable[[Any], Any] | None = None) -> dict[str, Callable[[Any], Any]]:
    """The wrappers the checks use: 'eager' (identity), 'compiled' (``compiler``, the learner's migration; required
    for PyTorch; ``jax.jit`` for JAX), and 'broken' (a compile that really fails: a torch.compile backend that
    raises; an XLA compile option that does not exist)."""
    name = validate.choice("framework", validate.framework(framework), FRAMEWORKS)
    if name == "torch":
        import torch

        if compiler is None:
            raise TypeError("compiler must be the learner's migration for PyTorch, e.g. "
                            "lambda m: torch.compile(m, dynamic=False); got None")
        return {"eager": lambda m: m, "compiled": validate.function("compiler", compiler),
                "broken": lambda m: torch.compile(m, backend=_failing_torch_backend)}
    import jax

    def broken(fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args: jax.jit(fn).lower(*args).compile(
            compiler_options={"xla_option_that_does_not_exist": True})(*args)

    return {"eager": lambda f: f, "compiled": jax.jit, "broken": broken}


def fall_back(make_step: Callable[[Callable[[Any], Any]], Callable[[Any], Any]], broken: Callable[[Any], Any],
              batch: Any, steps: int, framework: str = "torch") -> tuple[list[float], BaseException | None]:
    """The rollback path as code: build the step with a compile that fails, and when its first call raises, go on
    without the compiler: PyTorch keeps the same step and model under ``torch.compiler.set_stance("force_eager")``
    (the one-line rollback); JAX builds its eager step. Returns (losses of ``steps`` steps, the exception or None:
    the compile did not fail, and the losses are then those of the step that ran)."""
    validate.function("make_step", make_step)
    validate.function("broken", broken)
    name = validate.choice("framework", validate.framework(framework), FRAMEWORKS)
    validate.number("steps", steps, low=1, high=100, integer=True)
    step = make_step(broken)
    try:
        first = float(step(batch))
    except Exception as exc:  # the fallback's whole job is to survive this
        if name == "jax":
            return _losses(make_step(lambda f: f), batch, steps), exc
        import torch

        with torch.compiler.set_stance("force_eager"):
            return _losses(step, batch, steps), exc
    return [first, *_losses(step, batch, steps - 1)], None


def _losses(step: Callable[[Any], Any], batch: Any, steps: int) -> list[float]:
    return [float(step(batch)) for _ in range(steps)]


def _relative(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b))


def run_checklist(make_step: Callable[[Callable[[Any], Any]], Callable[[Any], Any]], batch: Any, *,
                  compiler: Callable[[Any], Any] | None = None, framework: str = "torch",
                  gain: MigrationGain | None = None, min_speedup: float = 1.05,
                  forward: tuple[Callable[..., Any], tuple] | None = None, compile_s: float | None = None,
                  compile_budget_s: float = 120.0, steps: int = 3, rtol: float = 1e-3) -> Checklist:
    """Run the five checks on the training step built by ``make_step`` (``compiler``: the learner's migration).

    ``gain``: what the migration buys, judged against ``min_speedup`` (e.g. the break-even speed-up): its whole
    interval must lie above it. ``forward``: (fn, args) of the model's forward, for PyTorch's graph breaks.
    ``compile_s``: compile time one job pays, judged against ``compile_budget_s``. ``rtol``: the relative tolerance
    of compiled against eager.
    """
    validate.function("make_step", make_step)
    name = validate.choice("framework", validate.framework(framework), FRAMEWORKS)
    if gain is not None:
        validate.instance("gain", gain, MigrationGain)
    validate.number("min_speedup", min_speedup, low=0, low_open=True)
    if forward is not None:
        if not isinstance(forward, tuple) or len(forward) != 2 or not isinstance(forward[1], tuple):
            raise TypeError(f"forward must be a (fn, args) pair with args a tuple; got {forward!r}")
        validate.function("forward", forward[0])
    if compile_s is not None:
        validate.non_negative("compile_s", compile_s)
    validate.positive("compile_budget_s", compile_budget_s)
    validate.number("steps", steps, low=1, high=100, integer=True)
    validate.positive("rtol", rtol)

    wrappers = compilers(name, compiler)
    eager = _losses(make_step(wrappers["eager"]), batch, steps)
    try:
        compiled, error = _losses(make_step(wrappers["compiled"]), batch, steps), None
    except Exception as exc:  # reported by the checks, not raised
        compiled, error = None, exc
    breaks = graphs.torch_graph_breaks(forward[0], *forward[1]) if name == "torch" and forward else None
    fallback = fall_back(make_step, wrappers["broken"], batch, steps, name)
    return Checklist(name, (
        _mvp(gain, min_speedup, eager, compiled, error, rtol),
        _compatibility(breaks, error),
        _rollback(fallback, eager, compiled, rtol),
        _monitoring(compile_s, compile_budget_s),
        _dynamic_control_flow(breaks, error),
    ))


def _mvp(gain: MigrationGain | None, bar: float, eager: list[float], compiled: list[float] | None,
         error: BaseException | None, rtol: float) -> Check:
    """Speed and equality, each marked, so a failure says which of the two failed."""
    name = "MVP: whole training step, speed and equality"
    if compiled is None:
        return Check(name, False, f"the compiled step fails: {type(error).__name__}: {error}"[:200])
    diff = _relative(eager, compiled)
    same = diff <= rtol
    text = (f"equality {'ok' if same else 'FAILED'}: {len(eager)} steps from the same weights, losses differ by "
            f"{diff:.1e} relative (tolerance {rtol:.0e})")
    if gain is None:
        return Check(name, False if not same else None, text + "; speed not measured")
    fast = gain.low > bar
    speed = (f"speed {'ok' if fast else 'FAILED'}: the migration buys {gain}; its interval's low end "
             f"{gain.low:.3g}x {'>' if fast else '<='} the {bar:.3g}x bar")
    return Check(name, same and fast, f"{speed}; {text}")


def _compatibility(breaks: graphs.GraphBreaks | None, error: BaseException | None) -> Check:
    name = "operator compatibility"
    if error is not None:
        return Check(name, False, f"compiling the step failed: {type(error).__name__}: {error}"[:200])
    if breaks is None:
        return Check(name, True, "the whole step compiled and ran")
    evidence = f"{breaks.graph_count} graph(s), {breaks.break_count} graph break(s)"
    if breaks.reasons:
        evidence += f"; first: {breaks.reasons[0]}"
    return Check(name, breaks.break_count == 0, evidence)


def _rollback(fallback: tuple[list[float], BaseException | None], eager: list[float], compiled: list[float] | None,
              rtol: float) -> Check:
    name = "rollback: forced compile failure falls back to eager"
    losses, error = fallback
    if error is None:
        return Check(name, False, "the forced compile failure did not fail, so the fallback was never exercised")
    vs_eager = _relative(eager, losses)
    text = f"forced {type(error).__name__}; over {len(losses)} steps the fallback's losses differ from eager's by " \
           f"{vs_eager:.1e} (must be <= 1e-6)"
    if compiled is None:
        return Check(name, False, text + "; the compiled path itself failed, so nothing to roll back from")
    vs_compiled = _relative(compiled, losses)
    return Check(name, vs_eager <= 1e-6 and vs_compiled <= rtol,
                 text + f" and from the compiled path's by {vs_compiled:.1e} (tolerance {rtol:.0e})")


def _monitoring(compile_s: float | None, budget: float) -> Check:
    name = "monitoring: compile time"
    if compile_s is None:
        return Check(name, None, "nothing measured to monitor (pass compile_s)")
    return Check(name, compile_s <= budget,
                 f"compile {display.format_time(compile_s)} per job (threshold {display.format_time(budget)})")


def _dynamic_control_flow(breaks: graphs.GraphBreaks | None, error: BaseException | None) -> Check:
    name = "no data-dependent Python control flow"
    texts = [f"{type(error).__name__}: {error}"] if error is not None else []
    texts += list(breaks.reasons) if breaks is not None else []
    found = [t for t in texts if any(hint in t.lower() for hint in _DYNAMIC_HINTS)]
    if found:
        return Check(name, False, f"found: {found[0][:150]} (rewrite with torch.cond / lax.cond / where)")
    return Check(name, True, "no branch on a tensor's value seen while tracing")

