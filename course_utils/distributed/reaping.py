"""Ending a launch's processes from the notebook's side: the processes seen under it, Ctrl-C held during a clean-up,
and the last-resort kill for when the reaper (``workers/launch_reaper.py``) is gone or stuck."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import Any

import psutil

from course_utils.distributed import worker


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
    """Last resort, when the reaper did not end the job: terminate every process seen under it and anything that
    carries this launch's id; KILL what remains."""
    track_processes(proc.pid, tracked)
    victims = {p for p in tracked.values() if alive(p)}
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get(worker.ID_ENV) == launch_id:
                victims.add(p)
        except psutil.Error:
            continue
    for p in list(victims):
        try:
            victims.update(p.children(recursive=True))
        except psutil.Error:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in victims:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass
        _, victims = psutil.wait_procs(victims, timeout=3)
        if not victims:
            break
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def alive(p: Any) -> bool:
    """True while the psutil process ``p`` runs (not a zombie); its pid reused by another process does not count."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
