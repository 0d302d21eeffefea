"""The launcher's reaper: runs torchrun as its child and, as a Linux child subreaper ignoring SIGINT, ends everything
the job started when it exits or the notebook writes ``stop`` (or goes away); exits with the command's status."""

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

import psutil

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def become_subreaper() -> bool:
    """Ask Linux to make orphaned descendants this process's children; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def watch_stdin(stop: threading.Event) -> None:
    """Set ``stop`` when the notebook writes 'stop' or its end of the pipe closes (it exited or was killed)."""
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    stop.set()


def collect(pid: int, statuses: dict) -> bool:
    """Collect every child that has ended (remembering ``pid``'s status); False once no child is left at all."""
    while True:
        try:
            done, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if done == 0:
            return True
        if done == pid:
            statuses[pid] = status


def end_everything(pid: int, statuses: dict, grace: float) -> None:
    """SIGTERM every process under this one, SIGKILL what is left after ``grace`` s; return when none is left."""
    me = psutil.Process()
    termed: set[int] = set()
    deadline = time.monotonic() + grace
    while collect(pid, statuses):
        sig = signal.SIGTERM if time.monotonic() < deadline else signal.SIGKILL
        for p in me.children(recursive=True):
            if sig == signal.SIGTERM and p.pid in termed:
                continue
            try:
                p.send_signal(sig)
                termed.add(p.pid)
            except psutil.Error:
                continue
        time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grace", type=float, default=3.0, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    become_subreaper()
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL)  # stdout, stderr: the notebook's pipe
    threading.Thread(target=watch_stdin, args=(stop,), daemon=True).start()
    statuses: dict[int, int] = {}
    while child.pid not in statuses and not stop.is_set():
        if not collect(child.pid, statuses):
            break
        time.sleep(0.02)
    end_everything(child.pid, statuses, args.grace)
    status = statuses.get(child.pid, 0)
    sys.stdout.flush()
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
