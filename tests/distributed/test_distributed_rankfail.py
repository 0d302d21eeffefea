"""course_utils.distributed.failures.rank_failure: a launch whose rank fails, read once for 05 and 06."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest
from badinput import rejects

from course_utils import distributed as dist
from course_utils.distributed.failures import LaunchError


def _failing(processes: list) -> LaunchError:
    error = LaunchError("rank 1 failed", rank=1, exitcode=1, traceback="Traceback ...\nValueError: rank 1 fails")
    error.processes = processes
    return error


def test_the_error_its_exception_line_and_the_launchs_own_leftovers() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        error = _failing([psutil.Process(sleeper.pid)])

        def launch(script: str, *, nprocs: int) -> None:
            assert (script, nprocs) == ("fail_demo.py", 2)
            raise error

        failed = dist.rank_failure(launch, "fail_demo.py", nprocs=2)
        assert failed.error is error and [p.pid for p in failed.leftover] == [sleeper.pid]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert failed.exception_line == "ValueError: rank 1 fails"
    assert str(failed).splitlines() == ["LaunchError | failing rank: 1 | exit code: 1",
                                        "last line of its traceback: ValueError: rank 1 fails",
                                        "processes left behind: 1"]


def test_a_failure_without_traceback_or_leftovers() -> None:
    def launch() -> None:
        raise LaunchError("no output")

    failed = dist.rank_failure(launch)
    assert failed.exception_line == "" and failed.leftover == []


def test_a_launch_that_does_not_fail_and_a_bad_launch_are_refused_by_name() -> None:
    rejects(lambda: dist.rank_failure(lambda: None), "launch")
    rejects(lambda: dist.rank_failure(3), "launch")


def test_another_error_of_the_launch_passes_through() -> None:
    def launch() -> None:
        raise KeyError("the learner's own bug")

    with pytest.raises(KeyError, match="own bug"):
        dist.rank_failure(launch)
