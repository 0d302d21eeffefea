"""Fusions counted in a profiler trace, and a compiler's refusal shown without a traceback (what the compilers
wrote is read by the core's ``course_utils.compiled``)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from course_utils import calls, declare, env, profile, validate


@declare.checked
def compile_error(fn: Callable[..., Any], *args: Any, timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> str | None:
    """The type name of the exception a compiler raised in ``fn(*args)`` (its C++ log dropped), or None when it ran.
    An error raised in the learner's own code, or past ``timeout`` seconds (None: the size's default), propagates."""
    with env.silenced_stderr(), calls.time_limit(timeout, calls.describe(fn)):
        try:
            fn(*args)
        except Exception as error:  # the point is to report it, not to raise it
            if not _from_compiler(error):
                raise
            return type(error).__name__
    return None


_COMPILER_MODULES = ("tensorflow", "jax", "jaxlib", "torch", "keras")


def _from_compiler(error: BaseException) -> bool:
    """True when ``error`` was raised inside a framework (the compiler refused), not in the learner's own code."""
    if isinstance(error, TimeoutError):
        return False
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    last = frames[-1] if frames else ""
    return last.split(".")[0] in _COMPILER_MODULES


# ---------------------------------------------------------------------------------------------------------
# Kernels seen in a profiler trace (course_utils.profile), to compare with the compiler's own output

_INDUCTOR_EVENT = re.compile(r"^(?:graph_\d+_)?((?:cpp|triton)_\w+)$")


@declare.checked
def trace_kernels(trace: profile.Trace, framework: str) -> dict[str, int]:
    """{name: events} of a trace's generated kernels: Inductor's (``cpp_fused_...``, ``triton_...``) or XLA's thunks
    (closed by ``end: X``; XLA may split one fusion into several tasks: compare names, not events per call)."""
    return dict(Counter(name for name, _ in _kernel_events(trace, framework)))


def _kernel_events(trace: profile.Trace, framework: str) -> list[tuple[str, Any]]:
    """(kernel name, event) for every generated-kernel event of ``trace`` (see ``trace_kernels``)."""
    framework = validate.framework(framework)
    events = trace.events
    if not events:
        raise ValueError("trace holds no events at all: nothing was recorded, so no kernel can be counted")
    if framework == "torch":
        return [(m.group(1), e) for e in events if (m := _INDUCTOR_EVENT.match(e.name))]
    closed = {e.name[len("end: "):] for e in events if e.name.startswith("end: ")}
    return [(e.name, e) for e in events if e.name in closed]


@declare.checked
def kernel_busy_share(trace: profile.Trace, framework: str) -> float:
    """Busy time as ``nvidia-smi`` counts it, from a CPU trace: the share of the span from the first generated
    kernel's start to the last one's end in which one of them ran (overlaps counted once)."""
    spans = sorted((e.start, e.end) for _, e in _kernel_events(trace, framework))
    if not spans:
        raise ValueError(f"the trace holds no generated kernel of {framework}: nothing to measure busy time on")
    busy, (low, high) = 0.0, spans[0]
    for start, end in spans[1:]:
        if start > high:
            busy, low = busy + high - low, start
        high = max(high, end)
    busy += high - low
    window = max(end for _, end in spans) - spans[0][0]
    return busy / window if window > 0 else 1.0
