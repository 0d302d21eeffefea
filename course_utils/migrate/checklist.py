"""The seed's launch checklist run as code on a whole training step, each check pass or fail with its evidence: speed
and equality, graph breaks, a *forced* compile failure rolled back, compile time, control flow."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from course_utils import declare, display, graphs
from course_utils.declare import Positive, Range
from course_utils.migrate.ladder import MigrationGain
from course_utils.migrate.parity import FALLBACK_RTOL, _failing_backend, relative

_DYNAMIC_HINTS = ("generic_jump", "data-dependent", "data dependent", "concretization", "dynamic control flow")


@declare.checked
@dataclass(frozen=True)
class Check:
    """One item: ``passed`` is True, False, or None when it was not measured (e.g. no compile time given)."""

    name: str
    passed: bool | None
    evidence: str

    @property
    def mark(self) -> str:
        return {True: "PASS", False: "FAIL", None: "n/a"}[self.passed]


@declare.checked
@dataclass(frozen=True, repr=False)
class Checklist(display.Tabled):
    """The five checks for one training step."""

    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        """True when no check failed."""
        return all(c.passed is not False for c in self.checks)

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if c.passed is False]

    def __getitem__(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def table(self) -> display.Table:
        return display.table(["", "check", "evidence"], [(c.mark, c.name, c.evidence) for c in self.checks],
                             title=f"Launch checklist: {'ready' if self.passed else 'NOT ready'}")


def _losses(step: Callable[[Any], Any], batch: Any, steps: int) -> list[float]:
    return [float(step(batch)) for _ in range(steps)]


def _fall_back(make_step: Callable[..., Any], batch: Any, steps: int) -> tuple[list[float], BaseException | None]:
    """Build the step with a compile that fails; when its first call raises, roll back with one line and train on
    the same model. Returns (losses, the exception, or None where the compile did not fail)."""
    import torch

    step = make_step(lambda m: torch.compile(m, backend=_failing_backend))
    try:
        first = float(step(batch))
    except Exception as exc:  # the fallback's whole job is to survive this
        with torch.compiler.set_stance("force_eager"):
            return _losses(step, batch, steps), exc
    return [first, *_losses(step, batch, steps - 1)], None


@declare.checked
def run_checklist(make_step: Callable[..., Any], batch: Any, *, compiler: Callable[..., Any],
                  gain: MigrationGain | None = None, min_speedup: Annotated[float, Positive] = 1.05,
                  forward: tuple[Callable[..., Any], tuple] | None = None,
                  compile_s: Annotated[float, Range(0, 1e6)] | None = None,
                  compile_budget_s: Annotated[float, Range(0, 1e6, low_open=True)] = 120.0,
                  steps: Annotated[int, Range(1, 100)] = 3, rtol: Annotated[float, Positive] = 1e-3) -> Checklist:
    """Run the five checks on the step ``make_step`` builds (``compiler``: the learner's migration). ``gain`` is
    judged against ``min_speedup`` (its whole interval above it); ``forward`` = (fn, args) for the graph breaks;
    ``compile_s`` against ``compile_budget_s``; ``rtol``: compiled against eager."""
    eager = _losses(make_step(lambda m: m), batch, steps)
    try:
        compiled, error = _losses(make_step(compiler), batch, steps), None
    except Exception as exc:  # reported by the checks, not raised
        compiled, error = None, exc
    breaks = graphs.torch_graph_breaks(forward[0], *forward[1]) if forward else None
    return Checklist((_mvp(gain, min_speedup, eager, compiled, error, rtol), _compatibility(breaks, error),
                      _rollback(_fall_back(make_step, batch, steps), eager, compiled, rtol),
                      _monitoring(compile_s, compile_budget_s), _dynamic_control_flow(breaks, error)))


def _mvp(gain: MigrationGain | None, bar: float, eager: list[float], compiled: list[float] | None,
         error: BaseException | None, rtol: float) -> Check:
    """Speed and equality, each marked, so a failure says which of the two failed."""
    name = "MVP: whole training step, speed and equality"
    if compiled is None:
        return Check(name, False, f"the compiled step fails: {type(error).__name__}: {error}"[:200])
    diff = relative(eager, compiled)[0]
    same = diff <= rtol
    text = (f"equality {'ok' if same else 'FAILED'}: {len(eager)} steps from the same weights, losses differ by "
            f"{diff:.1e} relative (tolerance {rtol:.0e})")
    if gain is None:
        return Check(name, False if not same else None, text + "; speed not measured")
    fast = gain.low > bar
    speed = (f"speed {'ok' if fast else 'FAILED'}: the migration buys {gain}; its interval's low end "
             f"{gain.low_text()} {'>' if fast else '<='} the {bar:.3g}x bar")
    return Check(name, same and fast, f"{speed}; {text}")


def _compatibility(breaks: graphs.GraphBreaks | None, error: BaseException | None) -> Check:
    name = "operator compatibility"
    if error is not None:
        return Check(name, False, f"compiling the step failed: {type(error).__name__}: {error}"[:200])
    if breaks is None:
        return Check(name, True, "the whole step compiled and ran")
    evidence = f"{breaks.graph_count} graph(s), {breaks.break_count} graph break(s)"
    return Check(name, breaks.break_count == 0, evidence + (f"; first: {breaks.reasons[0]}" if breaks.reasons else ""))


def _rollback(fallback: tuple[list[float], BaseException | None], eager: list[float], compiled: list[float] | None,
              rtol: float) -> Check:
    name = "rollback: forced compile failure falls back to eager"
    losses, error = fallback
    if error is None:
        return Check(name, False, "the forced compile failure did not fail, so the fallback was never exercised")
    vs_eager = relative(eager, losses)[0]
    text = (f"forced {type(error).__name__}; over {len(losses)} steps the fallback's losses differ from eager's by "
            f"{vs_eager:.1e} (must be <= {FALLBACK_RTOL:.0e})")
    if compiled is None:
        return Check(name, False, text + "; the compiled path itself failed, so nothing to roll back from")
    vs_compiled = relative(compiled, losses)[0]
    return Check(name, vs_eager <= FALLBACK_RTOL and vs_compiled <= rtol,
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
    found = [t for t in texts + list(breaks.reasons if breaks else []) if any(h in t.lower() for h in _DYNAMIC_HINTS)]
    if found:
        return Check(name, False, f"found: {found[0][:150]} (rewrite with torch.cond or torch.where)")
    return Check(name, True, "no branch on a tensor's value seen while tracing")
