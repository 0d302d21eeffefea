"""Calling the learner's code: under a time limit, so that a function that never returns cannot hang the
notebook, with an error that names the function.

The limit is a real-time timer (``SIGALRM``) in the main thread, where a Jupyter kernel runs every cell: the
learner's code runs exactly as it would without the limit (same thread, same grad mode, autocast state and
streams), and the timer interrupts it as soon as Python regains control. Code stuck inside one long C call is
interrupted when that call returns. Outside the main thread (or where there is no SIGALRM) no limit is set.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from course_utils import validate

DEFAULT_TIMEOUT = 480.0  # seconds: longer than any call a notebook makes at its size, below nbval's 600 s per cell
MAX_TIMEOUT = 24 * 3600.0  # seconds: a longer limit is a typo (and no limit at all)


class LearnerTimeout(TimeoutError):
    """A learner's function did not return within its time limit."""


def describe(fn: Any) -> str:
    """How an error names a callable: its qualified name and where it was defined."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    code = getattr(fn, "__code__", None)
    where = f" (defined at {code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"{name}{where}"


class Limit:
    """A running time limit: ``doing`` names what runs now (a loop sets it before each call of learner code, so the
    error says which call hung); ``check()`` raises once the time is up (for code off the main thread)."""

    def __init__(self, seconds: float, doing: str) -> None:
        self.seconds = seconds
        self.doing = doing
        self.ends = time.monotonic() + seconds

    def expired(self) -> LearnerTimeout:
        return LearnerTimeout(f"{self.doing} did not return within {self.seconds:g} s (timeout={self.seconds:g}); "
                              "check it for an endless loop or a wait that never ends, or pass a larger timeout")

    def check(self) -> None:
        if time.monotonic() > self.ends:
            raise self.expired()


def time_limit(timeout: float, what: str) -> contextlib.AbstractContextManager[Limit]:
    """Raise ``LearnerTimeout`` naming ``what`` (or the ``doing`` the block sets on the yielded ``Limit``) if the
    block runs longer than ``timeout`` seconds. Nested limits keep the shorter one; the previous timer and handler
    are restored. The arguments are checked here, at the call (a helper passes its own ``timeout`` on)."""
    timeout = validate.seconds("timeout", timeout, high=MAX_TIMEOUT)
    return _time_limit(Limit(timeout, validate.text("what", what)))


@contextlib.contextmanager
def _time_limit(limit: Limit) -> Iterator[Limit]:
    seconds = limit.seconds
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield limit
        return
    outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
    if outer_left and outer_left <= seconds:  # an enclosing limit ends first: let it
        yield limit
        return

    def expire(signum: int, frame: Any) -> None:
        raise limit.expired()

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield limit
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:  # give the enclosing limit back what is left of it (not what the inner one allowed)
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - started), 1e-3))


def checked_timeout(timeout: float) -> float:
    """Return ``timeout`` if it is a duration in (0, 24 h] seconds: what a helper that runs the learner's code
    checks at its start, before any work."""
    return validate.seconds("timeout", timeout, high=MAX_TIMEOUT)


def limit(fn: Any, timeout: float, name: str = "fn") -> contextlib.AbstractContextManager[Limit]:
    """``time_limit`` for a block that runs the learner's ``fn``: the error names the argument and the function.
    ``timeout`` is checked as the caller's ``timeout`` argument."""
    return time_limit(checked_timeout(timeout), f"{name} = {describe(fn)}")


def call(fn: Callable[..., Any], *args: Any, timeout: float = DEFAULT_TIMEOUT, name: str = "fn",
         **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` under ``timeout`` seconds; ``name`` is the argument that passed ``fn`` (for the
    error message)."""
    validate.function(name, fn)
    with limit(fn, checked_timeout(timeout), name):
        return fn(*args, **kwargs)
