"""What the compiled variant did, for ``assess``: the graphs it compiled (none: nothing to migrate), each graph
break's reason, its losses against eager's (``MATCHED``) and the forced failure's fallback."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PARITY_RTOL = {"fp32": 1e-3, "amp": 3e-2}  # the course's launch-checklist tolerances on losses (relative)
FALLBACK_RTOL = 1e-6  # the fallback runs eager: it must give eager's losses
MATCHED = ("random state matched: the RNG seeded before each step from the same seed, Inductor's random operations "
           "drawn from it (torch._inductor.config.fallback_random), over the first {steps} steps of a fresh model, "
           "because the model draws random numbers in training ({random})")
TIMED = "on the timed steps of every process, from the same seed (the model holds no dropout)"


def relative(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """(largest, final) relative difference of two loss sequences over their common steps."""
    pairs = list(zip(a, b))
    if not pairs:
        raise ValueError("the loss sequences hold no common step")
    diffs = [abs(x - y) / max(abs(x), 1e-12) if math.isfinite(x) and math.isfinite(y) else math.inf for x, y in pairs]
    return max(diffs), diffs[-1]


def tolerance(amp: str | None) -> float:
    return PARITY_RTOL["fp32" if amp is None else "amp"]


@dataclass(frozen=True)
class Parity:
    """Compiled losses against eager's, step by step, same seed and batches; ``method``: how randomness was handled."""

    steps: int
    largest: float
    final: float
    tolerance: float
    method: str

    @property
    def passed(self) -> bool:
        return self.largest <= self.tolerance

    def to_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "largest_relative": self.largest, "final_relative": self.final,
                "tolerance": self.tolerance, "passed": self.passed, "method": self.method}


def _pairs(results: Sequence[Mapping[str, Any]], mode: str) -> tuple[list[tuple[list[float], list[float]]], str]:
    """The (eager, compiled) loss sequences parity is judged on, and how they were obtained."""
    first = results[0]
    if first["matched"] is not None:
        method = MATCHED.format(steps=len(first["matched"]["eager"]), random="; ".join(first["random"]))
        return [(first["matched"]["eager"], first["matched"][mode])], method
    return [(r["variants"]["eager"]["losses"], r["variants"][mode]["losses"]) for r in results], TIMED


def of(results: Sequence[Mapping[str, Any]], mode: str, amp: str | None) -> Parity:
    """The parity of ``mode`` over the processes' results: the worst process where several are judged."""
    pairs, method = _pairs(results, mode)
    worst = max(((relative(e, c), min(len(e), len(c))) for e, c in pairs), key=lambda x: x[0][0])
    (largest, final), steps = worst
    return Parity(steps, largest, final, tolerance(amp), method)


def _failing_backend(gm: Any, example_inputs: Any) -> Any:
    """The backend of the forced compile failure (checklist and assess); reports name it, so the name stays."""
    raise RuntimeError("simulated compiler failure (forced by the rollback check)")


@dataclass(frozen=True)
class Fallback:
    """The forced compile failure's error (None: none) and the fallback's losses against eager's and compiled's."""

    error: str | None
    steps: int
    vs_eager: float
    vs_compiled: float
    tolerance: float

    @property
    def reproduced(self) -> bool:
        """The fallback's losses equal eager's and stay within the tolerance of the compiled path's."""
        return self.vs_eager <= FALLBACK_RTOL and self.vs_compiled <= self.tolerance

    @property
    def passed(self) -> bool:
        return self.error is not None and self.reproduced

    def to_dict(self) -> dict[str, Any]:
        return {"forced_error": self.error, "steps": self.steps, "vs_eager_relative": self.vs_eager,
                "vs_compiled_relative": self.vs_compiled, "eager_tolerance": FALLBACK_RTOL,
                "compiled_tolerance": self.tolerance, "passed": self.passed}


def fallback_result(results: Sequence[Mapping[str, Any]], mode: str, amp: str | None) -> Fallback:
    """The first process's fallback check against the eager and compiled losses parity is judged on there (its
    steps seeded as theirs are where the random state is matched)."""
    eager, compiled = _pairs(results[:1], mode)[0][0]
    losses = results[0]["fallback"]["losses"]
    return Fallback(results[0]["fallback"]["error"], len(losses), relative(eager, losses)[0],
                    relative(compiled, losses)[0], tolerance(amp))


_REASON = re.compile(r"Graph Break Reason: (.*?)(?:\n\s*User code traceback:|\Z)", re.S)
_WHERE = re.compile(r"in user code at (\S+)")
_DROPPED = ("For more details about this graph break",)  # a link: the report is an offline page


def break_text(message: str) -> str:
    """One graph break from Dynamo's log message: 'where: reason', the reason whole (explanation, hints, the
    debug context), without the user-code traceback, blank lines or links."""
    found, where = _REASON.search(message), _WHERE.search(message)
    reason = found.group(1) if found else message
    lines = [line.strip() for line in reason.splitlines()]
    kept = [line for line in lines if line and not line.startswith(_DROPPED)]
    text = "\n".join(kept).strip()
    return f"{where.group(1)}: {text}" if where else text


def short_reason(text: str) -> str:
    """A break reason's first line saying what happened (past Dynamo's preamble), with its explanation where given."""
    lines = [line.strip() for line in text.split(": ", 1)[-1].splitlines() if line.strip()]
    said = [line for line in lines if not line.endswith("Graph break encountered:")]
    head = said[0] if said else (lines[0] if lines else "no reason logged")
    explained = next((line.removeprefix("Explanation: ") for line in said if line.startswith("Explanation: ")), "")
    return f"{head.rstrip('.')} ({explained.rstrip('.')})" if explained and explained not in head else head


def nothing_compiled(graphs: int, breaks: tuple[str, ...] | list[str]) -> str | None:
    """Why there is nothing to migrate (no graph was compiled: the first break's reason), or None."""
    if graphs > 0:
        return None
    if breaks:
        return f"Dynamo compiled no graph and ran the whole forward eager: {short_reason(breaks[0])}"
    return "Dynamo compiled no graph and ran the whole forward eager (no graph break was logged)"
