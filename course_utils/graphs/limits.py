"""A learner's function cannot hang the notebook: helpers of this lesson that call learner code run it under a
time limit and raise ``LearnerCodeTimeout``, which names the function, when it is reached.

The limit is an interval timer (``SIGALRM``), so it works where a notebook runs its cells: in the main thread
of a process on Linux or macOS. Elsewhere (a worker thread, Windows) the code runs without a limit. A call
stuck inside one C function (a deadlocked kernel) is interrupted only when it returns to Python.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from course_utils import validate

MAX_SECONDS = 3600.0
DEFAULT_TIMEOUT = 600.0  # seconds a helper allows a learner's function by default: well past any ci-size call


class LearnerCodeTimeout(TimeoutError):
    """A learner's function ran past the time a helper allows it."""


def describe(fn: Any) -> str:
    """The learner's function as a message names it: its qualified name and, where known, file and line."""
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__wrapped__", None), "__code__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code is not None else str(name)


@contextmanager
def time_limit(seconds: float, fn: Any) -> Iterator[None]:
    """Inside the block, raise ``LearnerCodeTimeout`` naming ``fn`` once ``seconds`` have passed."""
    seconds = float(validate.number("seconds", seconds, low=0, high=MAX_SECONDS, low_open=True))
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise LearnerCodeTimeout(f"{describe(fn)} did not finish within {seconds:g} s: check it for an endless loop "
                                 "or a wait that never ends, or pass a larger timeout")

    previous = signal.signal(signal.SIGALRM, expire)
    remaining, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if remaining:  # an outer limit was running: give it back what it has left
            signal.setitimer(signal.ITIMER_REAL, max(remaining - (time.monotonic() - started), 1e-3))
