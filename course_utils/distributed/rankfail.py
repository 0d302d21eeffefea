"""A launch whose rank fails, read once for notebooks 05 and 06: the ``LaunchError`` naming the rank, its
traceback's last line, and the processes the launch itself started that are still alive."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from course_utils import calls, validate
from course_utils.distributed import launcher
from course_utils.distributed.failures import LaunchError


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


def rank_failure(launch: Callable[..., Any], *args: Any, **kwargs: Any) -> RankFailure:
    """Call ``launch(*args, **kwargs)`` (``cu.distributed.launch`` or ``cu.beyond.launch_nodes`` of a worker whose
    rank fails), catch its ``LaunchError`` and ask the launch which of the processes it started are still alive;
    a launch that finishes without a failure raises ``ValueError`` naming ``launch``."""
    validate.function("launch", launch)
    try:
        launch(*args, **kwargs)
    except LaunchError as error:
        return RankFailure(error, launcher.leftover(error))
    raise ValueError(f"launch: {calls.describe(launch)} finished without a failing rank")
