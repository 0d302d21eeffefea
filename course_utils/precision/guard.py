"""A deadline around learner code: a helper that calls the learner's step, model or function stops it after a
time the notebook can afford and says whose code it was, instead of hanging the kernel.

On Linux and macOS, in the main thread (where a notebook runs its cells), the deadline is a ``SIGALRM`` timer that
raises inside the learner's Python code; a call stuck inside one long C function is stopped when it returns to
Python. Elsewhere (a worker thread, Windows) there is no such timer and the call runs without a deadline.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from course_utils import validate

MAX_SECONDS = 3600.0


class LearnerTimeout(TimeoutError):
    """The learner's code ran past the deadline a helper gave it."""


def describe(fn: Any) -> str:
    """'train_step (defined in <cell>)': how an error names the learner's callable."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    code = getattr(fn, "__code__", None)
    where = f" (defined in {code.co_filename}, line {code.co_firstlineno})" if code is not None else ""
    return f"{name}{where}"


def deadline(seconds: float, fn: Callable[..., Any], what: str = "call") -> contextlib.AbstractContextManager[None]:
    """A context manager that raises ``LearnerTimeout`` naming ``fn`` if its block runs longer than ``seconds``
    (the arguments are checked here, at the call)."""
    seconds = validate.number("seconds", seconds, low=0, high=MAX_SECONDS, low_open=True)
    validate.function("fn", fn)
    validate.text("what", what)
    return _deadline(seconds, fn, what)


@contextlib.contextmanager
def _deadline(seconds: float, fn: Callable[..., Any], what: str) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    outer, _ = signal.getitimer(signal.ITIMER_REAL)
    if outer and outer <= seconds:  # an outer time limit ends first: it stays in charge, never extended
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise LearnerTimeout(f"{describe(fn)} did not finish its {what} within {seconds:g} s: check it for an "
                             "endless loop, or pass a larger timeout=")

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    remaining, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if remaining:  # an outer deadline was running: give it back what is left of it (at least a moment)
            signal.setitimer(signal.ITIMER_REAL, max(remaining - (time.monotonic() - started), 1e-3))
