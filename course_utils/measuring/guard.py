"""A deadline around learner code that a helper calls: a function that never returns must not hang the notebook.

Where it can (the main thread of a POSIX process, which is where a Jupyter kernel runs a cell), ``deadline`` arms a
real-time timer whose signal raises ``LearnerCodeTimeout`` in the code it guards; the exception names the
learner's function. A call blocked inside C code is interrupted when it returns to Python; elsewhere (another
thread, Windows) the deadline is checked when the block ends, so a slow call is still named, if late.
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
    """Learner code that a helper called ran past its deadline."""


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Run the block within ``seconds`` (0 < seconds <= 3600) or raise ``LearnerCodeTimeout`` naming ``what``
    (the learner's function, e.g. "clocks['jax'] (jax_matmul)")."""
    seconds = float(validate.number("seconds", seconds, low=0, high=MAX_SECONDS, low_open=True))
    what = validate.text("what", what)
    message = (f"{what} did not finish within {seconds:g} s; if it should take longer, pass a larger timeout=; "
               "if it never returns, fix the function (an endless loop, a wait for something that never comes)")
    armed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    start = time.monotonic()
    if not armed:
        yield
        if time.monotonic() - start > seconds:
            raise LearnerCodeTimeout(message)
        return

    def _raise(signum: int, frame: object) -> None:
        raise LearnerCodeTimeout(message)

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def name_of(fn: object) -> str:
    """A learner function's name for an error message: its ``__qualname__``, else its type."""
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__)
