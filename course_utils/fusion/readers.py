"""The code that counts fusions in a profiler trace, and a compiler's refusal shown without a traceback.

Reading what the compilers wrote (Inductor's code, XLA's HLO) is core: ``course_utils.compiled``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from course_utils import calls, env, validate


def compile_error(fn: Callable[..., Any], *args: Any, timeout: float = 300) -> str | None:
    """Call ``fn(*args)``; return the type name of the compiler's exception, or None when it runs.

    For showing an expected compiler refusal (``tf.function(jit_compile=True)`` around a Python callback)
    without a traceback; the C++ log lines the failure writes to file descriptor 2 are dropped. Only an error
    raised inside a framework is reported (the innermost frame of its traceback lives in torch, jax, jaxlib,
    tensorflow or keras); one raised in the learner's own code, or the time limit of ``timeout`` seconds, is
    raised as it is.
    """
    validate.function("fn", fn)
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


def trace_kernels(trace: Any, framework: str) -> dict[str, int]:
    """The generated kernels a profiler ``trace`` shows, with how many times each ran: {name: events}.

    torch: Inductor's kernels (``graph_0_cpp_fused_...`` when compiled under
    ``torch._inductor.config.cpp.enable_kernel_profile``; ``triton_...`` CUDA kernels on a GPU).
    jax / tensorflow: the XLA thunks, i.e. the events ``X`` that the CPU runtime closes with an ``end: X`` marker.
    XLA may split one fusion into several tasks on its thread pool, so compare names, not events per call.
    """
    found: dict[str, int] = {}
    for name, _ in _kernel_events(trace, framework):
        found[name] = found.get(name, 0) + 1
    return found


def _kernel_events(trace: Any, framework: str) -> list[tuple[str, Any]]:
    """(kernel name, event) for every generated-kernel event of ``trace`` (see ``trace_kernels``)."""
    framework = validate.framework(framework)
    events = getattr(trace, "events", None)
    if events is None:
        raise TypeError(f"trace must be a course_utils.profile.Trace; got {type(trace).__name__}")
    if not events:
        raise ValueError("trace holds no events at all: nothing was recorded, so no kernel can be counted")
    if framework == "torch":
        return [(m.group(1), e) for e in events if (m := _INDUCTOR_EVENT.match(e.name))]
    closed = {e.name[len("end: "):] for e in events if e.name.startswith("end: ")}
    return [(e.name, e) for e in events if e.name in closed]


def kernel_busy_share(trace: Any, framework: str) -> float:
    """Busy time, as ``nvidia-smi`` counts it for a GPU, read from a CPU trace: the share of the time from the
    first generated kernel's start to the last one's end in which at least one of them was running (on any
    thread; overlapping events counted once). The gaps are what runs between kernels: dispatch, guards,
    allocation, the Python between calls. It says nothing of how well a kernel uses the chip."""
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
