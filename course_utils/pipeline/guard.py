"""A learner's loader or step cannot hang notebook 04: the helpers that call them do so under a deadline.

A loop calls two things it did not write: the loader's ``next()`` and the learner's ``step(batch)``. If either
never returns (a worker deadlocked after ``fork``, a transfer that waits forever), the notebook would hang with
no word. ``deadline`` raises ``LearnerTimeout`` instead, naming what was running. It uses ``SIGALRM``, which
Python delivers between bytecodes and during blocking waits (queue and lock waits are interrupted on POSIX), so
it reaches a hung loader; a single C call that never returns to Python (a kernel stuck inside a library) is out
of its reach. Off the main thread, or where there is no ``SIGALRM``, the deadline is checked after each call.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from course_utils import validate

MAX_TIMEOUT = 3600.0  # seconds: no loop of this notebook may take an hour


class LearnerTimeout(TimeoutError):
    """A loader or step of the learner's did not return within the helper's ``timeout``."""


class Deadline:
    """What is running now (``doing``), and the moment by which the whole block must end."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.doing = "the loop"

    def expired(self) -> LearnerTimeout:
        return LearnerTimeout(f"{self.doing} did not return within the timeout of {self.seconds:g} s "
                              "(pass a larger timeout= if it is only slow)")

    def check(self) -> None:
        """Raise when the deadline has passed (the fallback where no alarm can interrupt)."""
        if time.monotonic() > self.ends:
            raise self.expired()


def timeout_seconds(timeout: float) -> float:
    """``timeout`` checked: a number of seconds in (0, ``MAX_TIMEOUT``]."""
    return float(validate.number("timeout", timeout, low=0, high=MAX_TIMEOUT, low_open=True))


@contextmanager
def deadline(timeout: float) -> Iterator[Deadline]:
    """Run the block under a deadline of ``timeout`` seconds; set ``.doing`` to name what runs, for the error."""
    state = Deadline(timeout_seconds(timeout))
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield state
        return

    outer = signal.getitimer(signal.ITIMER_REAL)[0]  # an alarm someone else set (a test runner's timeout)
    outer_due = [0 < outer < state.seconds]  # the outer alarm rings first: it is its owner's to handle

    def on_alarm(signum: int, frame: Any) -> None:
        if outer_due[0] and callable(previous):
            outer_due[0] = False
            previous(signum, frame)  # may raise; if it returns, our own deadline is armed again
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, state.seconds - (time.monotonic() - began)))
            return
        raise state.expired()

    began = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, outer if outer_due[0] else state.seconds)
    try:
        yield state
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0 and time.monotonic() - began < outer:  # give the outer alarm back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, outer - (time.monotonic() - began)))
