"""What torchrun printed, read for the learner (each rank's lines; a failing rank's number, exit code or signal and
traceback), and ending a launch's processes from the notebook's side whatever happens; ``rank_failure`` for 05, 06."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from course_utils import calls, children, declare, validate
from course_utils.distributed import worker

RANK_LINE = re.compile(r"^\[[A-Za-z_]*?(\d+)\]:(?:\[rank\d+\]: ?)?(.*)$")  # "[default0]:", torch adds "[rank0]: "
PROGRESS_LINE = re.compile(rf"^{worker.PROGRESS_PREFIX} (\d+) (\d+)\s*$")


class LaunchError(RuntimeError):
    """A rank failed: ``rank``, ``exitcode``, ``signal`` (the name of the signal that killed it, e.g. "SIGSEGV", or
    None when it exited), the rank's ``traceback`` and the whole raw ``output``."""

    def __init__(self, message: str, *, rank: int | None = None, exitcode: int | None = None,
                 traceback: str = "", output: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.rank, self.exitcode, self.traceback, self.output = rank, exitcode, traceback, list(output)
        self.signal = signal_name(exitcode)
        self.processes: list = []  # the launch's processes, attached by launch() (see launcher.leftover)


class LaunchTimeout(LaunchError, TimeoutError):
    """The job ran past ``timeout`` seconds; every process was killed."""


class LoopbackError(LaunchError):
    """127.0.0.1 accepts no connection on this machine (the loopback interface is down): nothing was started."""


def signal_name(exitcode: int | None) -> str | None:
    """The name of the signal behind a negative exit code (-11 -> "SIGSEGV"); None for an exit, or an unknown number."""
    if exitcode is None or isinstance(exitcode, bool) or not isinstance(exitcode, int) or exitcode >= 0:
        return None
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return None


def ending(exitcode: int) -> str:
    """How a process ended, in words: "was killed by SIGSEGV (exit code -11)" or "failed with exit code 1"."""
    name = signal_name(exitcode)
    return f"was killed by {name} (exit code {exitcode})" if name else f"failed with exit code {exitcode}"


def learner_lines(output: Sequence[str]) -> list[tuple[int, str]]:
    """(rank, text) of each line a rank printed: prefixes stripped, progress and empty lines dropped."""
    if isinstance(output, (str, bytes)) or not isinstance(output, Sequence):
        raise TypeError(f"output must be a sequence of lines (LaunchResult.output); got {type(output).__name__}")
    found = []
    for line in output:
        match = RANK_LINE.match(line.rstrip("\n"))
        if match and match.group(2).strip() and not PROGRESS_LINE.match(match.group(2)):
            found.append((int(match.group(1)), match.group(2)))
    return found


def launch_failure(name: str, nprocs: int, returncode: int, lines: list[str],
                   log_dir: str | os.PathLike | None = None) -> LaunchError:
    """The error for a failed launch: the failing rank named, with its lines and traceback, read from the rank's own
    ``stderr.log`` under ``log_dir`` when there is one (torchrun's console can splice stdout lines into a traceback)."""
    per_rank: dict[int, list[str]] = {}
    for r, text in learner_lines(lines):
        per_rank.setdefault(r, []).append(text)
    root = "\n".join(lines)
    cause = root.split("Root Cause", 1)[1] if "Root Cause" in root else ""
    found_rank = re.search(r"rank\s*:\s*(\d+)", cause)
    found_local = re.search(r"local_rank\s*:\s*(\d+)", cause)
    found_code = re.search(r"exitcode\s*:\s*(-?\d+)", cause)
    failing = int(found_rank.group(1)) if found_rank else None
    code = int(found_code.group(1)) if found_code else returncode
    own = rank_stderr(log_dir, int(found_local.group(1))) if log_dir is not None and found_local else []
    if not _starts(own):  # no log to read: the console's lines of the rank that printed a traceback
        killed = found_rank is not None and signal_name(code) is not None  # a signal leaves no traceback
        if failing is None or not (killed or any("Traceback" in t for t in per_rank.get(failing, []))):
            with_tb = [r for r, ts in sorted(per_rank.items()) if any("Traceback" in t for t in ts)]
            failing = with_tb[0] if with_tb else failing
        own = per_rank.get(failing, []) if failing is not None else []
    starts = _starts(own)
    tb = "\n".join(_one_traceback(own[starts[-1]:])) if starts else "\n".join(own[-15:])
    who = f"rank {failing}" if failing is not None else "a rank (which one torchrun did not say)"
    message = f"{name} x {nprocs}: {who} {ending(code)}; every process was stopped."
    if tb:
        message += f"\n--- {'traceback' if starts else 'last lines'} of rank {failing} ---\n{tb}"
    return LaunchError(message, rank=failing, exitcode=code, traceback=tb, output=lines)


def rank_stderr(log_dir: str | os.PathLike, local_rank: int) -> list[str]:
    """The lines a rank wrote to stderr in its latest attempt, from torchrun's ``--log-dir`` (none: [])."""
    logs = Path(log_dir).glob(f"*/attempt_*/{local_rank}/stderr.log")
    latest = max(logs, key=lambda f: int(f.parent.parent.name.split("_")[-1]), default=None)
    text = latest.read_text(errors="replace") if latest is not None else ""
    return [re.sub(r"^\[rank\d+\]: ?", "", line) for line in text.splitlines()]  # torch's own "[rank1]: "


def _starts(lines: list[str]) -> list[int]:
    return [i for i, t in enumerate(lines) if t.startswith("Traceback (most recent call last)")]


def _one_traceback(lines: list[str]) -> list[str]:
    """A traceback from its header to its exception line: the rank's stdout may interleave after it."""
    for i, line in enumerate(lines[1:], start=1):
        if line and not line[0].isspace():
            return lines[:i + 1]
    return lines


@dataclass(frozen=True)
class RankFailure:
    """What a failed launch left: its ``error`` (rank, exit code, traceback) and its ``leftover`` processes."""

    error: LaunchError
    leftover: list[Any]

    @property
    def exception_line(self) -> str:
        """The last line of the failing rank's traceback ("" when it printed none)."""
        return self.error.traceback.splitlines()[-1] if self.error.traceback else ""

    def __str__(self) -> str:
        return (f"{type(self.error).__name__} | failing rank: {self.error.rank} | exit code: {self.error.exitcode}\n"
                f"last line of its traceback: {self.exception_line}\nprocesses left behind: {len(self.leftover)}")


@declare.checked
def leftover(error: LaunchError) -> list[Any]:
    """The processes a failed launch started that are still alive ([] when the clean-up worked), from the launch's
    own record of them: another job running the same script cannot show up here."""
    return [p for p in getattr(error, "processes", []) if alive(p)]


def rank_failure(launch: Callable[..., Any], *args: Any, **kwargs: Any) -> RankFailure:
    """Call ``launch(*args, **kwargs)`` (``cu.distributed.launch`` or ``cu.beyond.launch_nodes``), catch its
    ``LaunchError`` and ask the launch which of its processes still live; ``ValueError`` if no rank failed."""
    validate.function("launch", launch)
    try:
        launch(*args, **kwargs)
    except LaunchError as error:
        return RankFailure(error, leftover(error))
    raise ValueError(f"launch: {calls.describe(launch)} finished without a failing rank")


# Ending a launch's processes: the reaper (``workers/launch_reaper.py``) does it; these are for when it is gone or stuck


class HeldInterrupts:
    """Within the block, Ctrl-C (SIGINT) is recorded in ``pressed`` instead of raising, so that a clean-up runs to
    its end; outside the main thread (where Python cannot set signal handlers) it changes nothing."""

    def __init__(self) -> None:
        self.pressed = 0
        self._installed, self._previous = False, None

    def __enter__(self) -> HeldInterrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._press)
            self._installed = True
        return self

    def _press(self, signum: int, frame: Any) -> None:
        self.pressed += 1

    def __exit__(self, *exc: object) -> None:
        if self._installed:  # a handler set outside Python reads as None: Python's own default takes its place
            signal.signal(signal.SIGINT, signal.default_int_handler if self._previous is None else self._previous)


def track_processes(pid: int, tracked: dict[int, Any]) -> None:
    """Remember every process under ``pid`` (the reaper, torchrun and its ranks), for ``LaunchResult.pids`` and
    the last-resort kill; the clean-up itself does not depend on this scan (the reaper's does not miss any)."""
    try:
        root = psutil.Process(pid)
        for p in [root, *root.children(recursive=True)]:
            tracked.setdefault(p.pid, p)
    except psutil.Error:
        pass


def ranks(tracked: dict[int, Any]) -> set[int]:
    """The RANK environment variable of the worker processes among ``tracked`` (psutil processes)."""
    found = set()
    for p in tracked.values():
        try:
            value = p.environ().get("RANK")
        except psutil.Error:  # gone or not ours
            continue
        if value is not None and value.isdigit():
            found.add(int(value))
    return found


def kill_tree(proc: subprocess.Popen, tracked: dict[int, Any], launch_id: str) -> None:
    """Last resort, when the reaper did not end the job: ``children.stop`` of its group, every process seen under it
    and anything (with its children) that carries this launch's id."""
    track_processes(proc.pid, tracked)
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get(worker.ID_ENV) == launch_id:
                tracked.update({c.pid: c for c in [p, *p.children(recursive=True)]})
        except psutil.Error:
            continue
    children.stop(proc, tracked)


def alive(p: Any) -> bool:
    """True while the psutil process ``p`` runs (not a zombie); its pid reused by another process does not count."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
