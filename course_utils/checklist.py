"""The seed's launch checklist, run as code on your own function: pass or fail, each with its evidence.

1. MVP comparison: compiled against eager, on time and on the numbers.
2. Operator compatibility: graph breaks and compile failures counted.
3. Rollback path: the eager path still works, and the fallback helper picks it when compiling fails.
4. Monitoring: compile time (and utilisation, when measured) recorded against a budget.
5. Dynamic control flow: Python branches on tensor values detected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from course_utils import graphs, timing

# Words in graph-break reasons and tracing errors that mean "Python branched on a tensor's value".
_DYNAMIC_HINTS = ("generic_jump", "data-dependent", "data dependent", "concretization", "tracerbool",
                  "operatornotallowedingraph", "symbolic tensor", "dynamic control flow")


@dataclass(frozen=True)
class Check:
    """One item: ``passed`` is True, False, or None when it does not apply (e.g. nothing compiled to time)."""

    name: str
    passed: bool | None
    evidence: str

    @property
    def mark(self) -> str:
        return {True: "PASS", False: "FAIL", None: "n/a"}[self.passed]


@dataclass(frozen=True)
class Checklist:
    """The five checks for one function in one framework, with what was measured along the way."""

    framework: str
    checks: tuple[Check, ...]
    comparison: timing.Comparison | None

    @property
    def passed(self) -> bool:
        """True when no check failed."""
        return all(c.passed is not False for c in self.checks)

    def __getitem__(self, name: str) -> Check:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check named {name!r}; checks are {[c.name for c in self.checks]}")

    def __repr__(self) -> str:
        width = max(len(c.name) for c in self.checks)
        lines = [f"Launch checklist ({self.framework}): {'ready' if self.passed else 'NOT ready'}"]
        lines += [f"  [{c.mark:>4}] {c.name:<{width}}  {c.evidence}" for c in self.checks]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colors = {True: "#009E73", False: "#D55E00", None: "#888888"}
        body = "".join(
            f"<tr><td style='color:{colors[c.passed]};font-weight:bold'>{c.mark}</td>"
            f"<td style='text-align:left'>{escape(c.name)}</td>"
            f"<td style='text-align:left'>{escape(c.evidence)}</td></tr>"
            for c in self.checks
        )
        verdict = "ready to launch" if self.passed else "NOT ready"
        return f"<table><caption style='text-align:left'><b>{self.framework}: {verdict}</b></caption>{body}</table>"


def run(
    fn: Callable[..., Any],
    sample_args: Sequence[Any],
    *,
    framework: str = "torch",
    min_speedup: float = 1.05,
    compile_budget_s: float = 120.0,
    utilisation: float | None = None,
    min_time: float = 0.2,
    **compile_kwargs: Any,
) -> Checklist:
    """Run the five checks on ``fn(*sample_args)``, compiled with ``framework``'s compiler.

    ``min_speedup`` is what the migration must buy to pass the MVP comparison; ``compile_budget_s`` the
    longest first call your team accepts; ``utilisation`` (0-1, e.g. from notebook 04's loop) is recorded.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__}")
    for name, value in (("min_speedup", min_speedup), ("compile_budget_s", compile_budget_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"{name} must be a positive number; got {value!r}")
    if utilisation is not None and not 0 <= utilisation <= 1:
        raise ValueError(f"utilisation must be between 0 and 1; got {utilisation!r}")

    decision = graphs.compile_or_fallback(fn, sample_args, framework=framework, **compile_kwargs)
    breaks = graphs.torch_graph_breaks(fn, *sample_args) if decision.framework == "torch" else None
    comparison = None
    if decision.compiled:
        comparison = timing.compare(
            {"eager": lambda: fn(*sample_args), "compiled": lambda: decision(*sample_args)}, min_time=min_time
        )
    checks = (
        _mvp(decision, comparison, min_speedup),
        _compatibility(decision, breaks),
        _rollback(fn, sample_args, decision),
        _monitoring(comparison, compile_budget_s, utilisation),
        _dynamic_control_flow(decision, breaks),
    )
    return Checklist(decision.framework, checks, comparison)


def _mvp(decision: graphs.CompileDecision, comparison: timing.Comparison | None, min_speedup: float) -> Check:
    name = "MVP comparison (speed and equality)"
    if comparison is None:
        return Check(name, False, f"nothing to compare: {decision.reason}")
    row = comparison["compiled"]
    evidence = (f"{row.speedup:.2f}x faster (quartile range {row.speedup_low:.2f} to {row.speedup_high:.2f}), "
                f"needs {min_speedup:.2f}x; {decision.reason}")
    return Check(name, row.speedup >= min_speedup, evidence)


def _compatibility(decision: graphs.CompileDecision, breaks: graphs.GraphBreaks | None) -> Check:
    name = "operator compatibility"
    if breaks is not None:
        evidence = f"{breaks.graph_count} graph(s), {breaks.break_count} graph break(s)"
        if breaks.reasons:
            evidence += f"; first: {breaks.reasons[0]}"
        return Check(name, breaks.break_count == 0 and decision.compiled, evidence)
    return Check(name, decision.compiled, decision.reason)


def _rollback(fn: Callable[..., Any], sample_args: Sequence[Any], decision: graphs.CompileDecision) -> Check:
    name = "rollback path (eager kept)"
    try:
        diff = graphs.max_abs_diff(fn(*sample_args), decision(*sample_args))
    except Exception as exc:  # the check's job is to report this, not to raise it
        return Check(name, False, f"the chosen path fails: {type(exc).__name__}: {exc}"[:200])
    path = "compiled, with the eager function kept as fallback" if decision.compiled else "fell back to eager"
    return Check(name, diff is not None and diff <= 1e-4, f"{path}; chosen path vs eager max abs diff {diff:.1e}")


def _monitoring(comparison: timing.Comparison | None, budget: float, utilisation: float | None) -> Check:
    name = "monitoring (compile time, utilisation)"
    if comparison is None:
        return Check(name, None, "nothing compiled, so no compile time to watch")
    compiled = comparison["compiled"].measurement
    evidence = (f"first call {timing.format_time(compiled.first_call)} (budget {timing.format_time(budget)}), "
                f"steady state {timing.format_time(compiled.median)}")
    if utilisation is not None:
        evidence += f", utilisation {utilisation:.0%}"
    return Check(name, compiled.first_call <= budget, evidence)


def _dynamic_control_flow(decision: graphs.CompileDecision, breaks: graphs.GraphBreaks | None) -> Check:
    name = "no data-dependent Python control flow"
    texts = [decision.reason, *(breaks.reasons if breaks is not None else ())]
    found = [t for t in texts if any(hint in t.lower() for hint in _DYNAMIC_HINTS)]
    if found:
        return Check(name, False, f"found: {found[0]} (rewrite with torch.cond / lax.cond / tf.cond or where)")
    return Check(name, True, "no branch on a tensor's value seen while tracing")
