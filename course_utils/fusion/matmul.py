"""The matmul roof as the best matmul rate this run measured: a kernel measured above its roof means the roof's
probe ran at a bad moment (a busy machine), not that the kernel beat the hardware."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from course_utils import roofline, validate


def best_matmul_roof(machine: roofline.Machine, points: Iterable[roofline.Point]) -> roofline.Machine:
    """``machine`` with the fastest of ``points`` (matmuls measured in this run) added as a compute probe, so that
    ``peak_flops`` is the best matmul rate measured so far and no point lies above the compute roof."""
    validate.instance("machine", machine, roofline.Machine)
    points = [validate.instance(f"points[{i}]", p, roofline.Point) for i, p in enumerate(points)]
    validate.non_empty("points", points)
    best = max(points, key=lambda p: p.achieved_flops)
    probes = {**machine.flops_probes, f"best matmul of the sweep ({best.label})": best.achieved_flops}
    return dataclasses.replace(machine, flops_probes=probes)
