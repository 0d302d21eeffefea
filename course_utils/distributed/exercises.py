"""The checkers of notebook 05's exercises: the expected answer from this run's measurements (passed in as context)
or the course's formulas, and what is still wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from course_utils import exercises, validate
from course_utils.distributed import comms


@exercises.register("05.1", hint="count one all-reduce per gradient bucket each time DDP syncs: every "
                                 "micro-batch, or only the last one under no_sync()")
def _allreduce_calls(answer: Any, *, every_micro_batch: int, no_sync: int) -> str | None:
    """Predicted (calls when syncing every micro-batch, calls with no_sync) against the counts measured."""
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise TypeError(f"the answer should be a pair (every_micro_batch, no_sync), like (4, 1); got {answer!r}")
    expected = (validate.positive("every_micro_batch", every_micro_batch, integer=True),
                validate.positive("no_sync", no_sync, integer=True))
    for label, got, want in zip(("syncing every micro-batch", "no_sync"), answer, expected):
        problem = exercises.exact(got, want)
        if problem is not None:
            return f"{label}: you predicted {got!r}, the run counted {want} all-reduce call(s) per optimizer step"
    return None


@exercises.register("05.2", hint="memory_per_device is linear in the parameter count: divide the device's "
                                 "bytes by memory_per_device(1, n, stage)")
def _largest_model(answer: Any, *, device_bytes: float, n: int) -> str | None:
    """The largest parameter count per ZeRO stage 0, 2 and 3 on ``n`` devices of ``device_bytes``."""
    if not isinstance(answer, Mapping) or set(answer) != {0, 2, 3}:
        raise TypeError(f"the answer should be a dict {{0: params, 2: params, 3: params}}; got {answer!r}")
    for stage in (0, 2, 3):
        problem = exercises.close(answer[stage], comms.largest_model(device_bytes, n, stage), rel=0.02)
        if problem is not None:
            return f"ZeRO-{stage}: {problem}"
    return None


@exercises.register("05.3", hint="loop n over 2..1024 and compare ring_allreduce_time(nbytes, n, bandwidth, "
                                 "latency) with the assumed compute time; None if it never exceeds it")
def _first_n(answer: Any, *, nbytes: float, compute_seconds: float, bandwidth: float, latency: float) -> str | None:
    """The smallest N in 2..1024 whose computed all-reduce exceeds the assumed compute per step (None: none)."""
    validate.positive("compute_seconds", compute_seconds)
    expected = next((n for n in range(2, 1025)
                     if comms.ring_allreduce_time(nbytes, n, bandwidth, latency) > compute_seconds), None)
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, int)):
        raise TypeError(f"the answer should be a device count (int) or None; got {answer!r}")
    if answer == expected:
        return None
    if expected is None:
        return f"N = {answer} is not it: the all-reduce stays below the compute time up to N = 1024"
    return f"N = {answer} is not the first N where the all-reduce exceeds the compute time"
