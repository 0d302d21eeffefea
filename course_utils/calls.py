"""Calling the learner's code under a time limit (a ``SIGALRM`` timer in the main thread, where Jupyter runs cells;
none elsewhere), so a function that never returns is named instead of hanging; ``timeout=None``: the size's default."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any

from course_utils import declare, env, validate

# Seconds one call of learner code may run by default at each size (env.SIZES): a few times the longest call a
# notebook makes there, a first compile included (torch.compile of a lesson's model on two CPU cores: ~30 s; at smoke
# size the learner editions compile first, on an empty cache, beside another test worker: a 60 s limit tripped there).
DEFAULT_TIMEOUTS = {"smoke": 120.0, "ci": 90.0, "cpu": 120.0, "gpu": 120.0, "tpu": 180.0}
DEFAULT_TIMEOUT = None  # what a helper passes on for "the default at the current size" (default_timeout())
MAX_TIMEOUT = 24 * 3600.0  # seconds: a longer limit is a typo (and no limit at all)
Timeout = Annotated[float, declare.Range(0, MAX_TIMEOUT, low_open=True)] | None  # None: the size's default


class LearnerTimeout(TimeoutError):
    """A learner's function did not return within its time limit."""


def describe(fn: Any) -> str:
    """How an error names a callable: its qualified name and where it was defined."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    code = getattr(fn, "__code__", None)
    where = f" (defined at {code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"{name}{where}"


def default_timeout() -> float:
    """Seconds learner code may run when no ``timeout`` is passed, at the current size (``env.size_name()``)."""
    return DEFAULT_TIMEOUTS[env.size_name()]


@declare.checked
class Limit:
    """A running time limit: ``doing`` names what runs now (so the error says which call hung); ``check()`` raises once
    the time is up (for code off the main thread); ``seconds=None`` is the size's default."""

    def __init__(self, seconds: Timeout, doing: Annotated[str, declare.NonEmpty]) -> None:
        self.default = seconds is None
        self.seconds = default_timeout() if seconds is None else seconds
        self.doing = doing
        self.ends = time.monotonic() + self.seconds

    def expired(self) -> LearnerTimeout:
        allowed = (f"the default at size {env.size_name()} is {self.seconds:g} s; pass timeout= to allow more"
                   if self.default else f"timeout={self.seconds:g}; pass a larger timeout to allow more")
        return LearnerTimeout(f"{self.doing} did not return within {self.seconds:g} s ({allowed}); check it for an "
                              "endless loop or a wait that never ends")

    def check(self) -> None:
        if time.monotonic() > self.ends:
            raise self.expired()


@declare.checked
@contextlib.contextmanager
def time_limit(timeout: Timeout, what: Annotated[str, declare.NonEmpty]) -> Iterator[Limit]:
    """Raise ``LearnerTimeout`` naming ``what`` (or the yielded ``Limit``'s ``doing``) if the block runs past
    ``timeout`` seconds (None: the size's default); nested limits keep the shorter one."""
    limit = Limit(timeout, what)
    seconds = limit.seconds
    timer = threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGALRM")
    outer_left = signal.getitimer(signal.ITIMER_REAL)[0] if timer else 0.0
    if not timer or (outer_left and outer_left <= seconds):  # no timer off the main thread; an enclosing limit first
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


@declare.checked
def limit(fn: Any, timeout: Timeout, name: Annotated[str, declare.NonEmpty] = "fn",
          ) -> contextlib.AbstractContextManager[Limit]:
    """``time_limit`` for a block that runs the learner's ``fn``: the error names the argument and the function.
    ``timeout`` is checked as the caller's ``timeout`` argument."""
    return time_limit(timeout, f"{name} = {describe(fn)}")


@declare.checked
def call(fn: Any, *args: Any, timeout: Timeout = DEFAULT_TIMEOUT, name: Annotated[str, declare.NonEmpty] = "fn",
         **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` under ``timeout`` seconds (None: the size's default); ``name`` is the argument that
    passed ``fn``, and the errors name it."""
    validate.function(name, fn)  # by hand: the error names the caller's argument, not this one
    with limit(fn, timeout, name):
        return fn(*args, **kwargs)
