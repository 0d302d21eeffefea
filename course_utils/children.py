"""Child processes that cannot outlive their parent: each starts in its own session, so Ctrl-C reaches only the
parent, which stops the child's group and descendants (TERM, then KILL) with a second Ctrl-C held back meanwhile."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated

import psutil

from course_utils import declare
from course_utils.declare import NonEmpty, Range, Text

GRACE_S = 3.0
MAX_TIMEOUT_S = 24 * 3600.0  # a day: a longer limit is a typo


class ChildFailed(RuntimeError):
    """A child process exited with an error; the message holds the end of its log."""


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Hold SIGINT (Ctrl-C) back in the main thread for the block; it is delivered when the block ends."""
    main = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if main:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def stop(proc: subprocess.Popen, known: dict[int, psutil.Process]) -> None:
    """Stop ``proc``, its process group and every descendant in ``known``: TERM, then KILL what remains."""
    with sigint_held():
        for p in _tree(proc.pid):
            known.setdefault(p.pid, p)
        victims = [p for p in known.values() if p.pid != os.getpid()]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.killpg(proc.pid, sig)
            for p in victims:
                with contextlib.suppress(psutil.Error):
                    p.send_signal(sig)
            _, victims = psutil.wait_procs(victims, timeout=GRACE_S)
            if not victims:
                break
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=GRACE_S)


@declare.checked
def run_child(command: Annotated[Sequence[Text], NonEmpty], *, log: Path | str,
              timeout: Annotated[float, Range(0, MAX_TIMEOUT_S, low_open=True)], env: Mapping[Text, str] | None = None,
              on_line: Callable[[str], None] | None = None, on_start: Callable[[int], None] | None = None) -> None:
    """Run ``command`` in its own process group, stdout lines to ``on_line``, stderr to ``log``; ``ChildFailed`` (the
    log's tail) on a non-zero exit, TimeoutError past ``timeout``; on any exit nothing it started is left running."""
    command, log = list(command), Path(log)
    known: dict[int, psutil.Process] = {}
    with open(log, "w") as err:
        try:
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, env=env, start_new_session=True)
        except OSError as exc:  # no such program, or not one that may run
            raise ValueError(f"command[0] {command[0]!r} cannot be started: {exc}") from None
    try:
        if on_start is not None:
            on_start(proc.pid)
        deadline = time.monotonic() + timeout
        assert proc.stdout is not None
        fd, pending = proc.stdout.fileno(), b""
        while True:
            for p in _tree(proc.pid):
                known.setdefault(p.pid, p)
            if time.monotonic() > deadline:
                raise TimeoutError(f"the measuring process ran past timeout={timeout:g} s and was stopped")
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break  # it exited and its pipe is drained; what still holds the pipe open, stop() ends
                continue
            chunk = os.read(fd, 1 << 16)  # never readline: a grandchild holding the pipe must not stall the deadline
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines if on_line is not None else ():
                on_line(line.decode(errors="replace"))
        if pending and on_line is not None:
            on_line(pending.decode(errors="replace"))
        try:
            code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"the measuring process ran past timeout={timeout:g} s and was stopped") from None
        if code != 0:
            raise ChildFailed(f"the measuring process failed ({_exit_text(code)}); the end of its log {log}:\n"
                              + tail(log))
    finally:
        stop(proc, known)
        if proc.stdout is not None:
            proc.stdout.close()


def _exit_text(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


@declare.checked
def tail(path: Path | str, lines: Annotated[int, Range(1, 10_000)] = 25) -> str:
    """The last ``lines`` lines of a text file ('' if it cannot be read)."""
    try:
        return "\n".join(Path(path).read_text(errors="replace").rstrip().splitlines()[-lines:])
    except OSError:
        return ""
