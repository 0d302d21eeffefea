"""A time limit around the learner's own code: a helper that calls a function the learner wrote (to trace it,
count its FLOPs, compile it at several sizes) stops after ``seconds`` with an error that names that function,
instead of hanging the notebook.

The limit is a ``SIGALRM`` timer, so it works in the main thread of a Unix process (a Jupyter kernel runs cells
there); elsewhere (Windows, a worker thread) the call runs without a limit. Python code is interrupted between
two bytecodes; a single C call that never returns cannot be.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

from course_utils import validate

MAX_SECONDS = 3600.0


class LearnerCodeTimeout(TimeoutError):
    """The learner's function did not return within the helper's time limit."""


@contextlib.contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Raise ``LearnerCodeTimeout`` naming ``what`` if the block runs longer than ``seconds`` (1 s to 1 h)."""
    seconds = validate.number("timeout", seconds, low=1, high=MAX_SECONDS)
    validate.text("what", what)
    usable = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise LearnerCodeTimeout(f"{what} did not finish within {seconds:g} s (the helper's timeout=); "
                                 "check it for a loop that never ends, or pass a larger timeout")

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:  # an enclosing limit keeps running, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-3))


def name_of(fn: object) -> str:
    """How an error names the learner's function: 'your function softmax' or the object's type."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return f"your function {name}" if name else f"your {type(fn).__name__}"
