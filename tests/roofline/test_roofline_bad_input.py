"""Bad input to course_utils.roofline (its probes included): each call raises TypeError/ValueError naming
the argument, never a wrong answer."""

from __future__ import annotations

import math

import pytest
from badinput import rejects

from course_utils import roofline

M = roofline.Machine("torch", "cpu", {"triad": 20e9}, {"matmul": 100e9})
P = roofline.Point("p", 1.0, 1.0, 1.0)
NAN, INF = math.nan, math.inf

BAD_CALLS = [
    (lambda: roofline.attainable(NAN, M), "intensity"),
    (lambda: roofline.attainable(INF, M), "intensity"),
    (lambda: roofline.attainable(-1.0, M), "intensity"),
    (lambda: roofline.attainable("high", M), "intensity"),
    (lambda: roofline.attainable(None, M), "intensity"),
    (lambda: roofline.attainable(1.0, None), "machine"),
    (lambda: M.roofline_time(NAN, 1.0), "flops"),
    (lambda: M.roofline_time(1.0, -1.0), "bytes"),
    (lambda: M.roofline_time(1.0, INF), "bytes"),
    (lambda: M.roofline_time(True, 1.0), "flops"),
    (lambda: roofline.Point("p", NAN, 1, 1), "flops"),
    (lambda: roofline.Point("p", -1.0, 1, 1), "flops"),
    (lambda: roofline.Point("p", 1, 0, 1), "bytes"),
    (lambda: roofline.Point("p", 1, 1, 0), "seconds"),
    (lambda: roofline.Point("p", 1, 1, INF), "seconds"),
    (lambda: roofline.Point("p", 1, "8", 1), "bytes"),
    (lambda: roofline.Point(None, 1, 1, 1), "label"),
    (lambda: roofline.Point("", 1, 1, 1), "label"),
    (lambda: roofline.Machine("torch", "cpu", {"triad": -20e9}, {"matmul": 1e11}), "bandwidth_probes"),
    (lambda: roofline.Machine("torch", "cpu", {"triad": NAN}, {"matmul": 1e11}), "bandwidth_probes"),
    (lambda: roofline.Machine("torch", "cpu", {}, {"matmul": 1e11}), "bandwidth_probes"),
    (lambda: roofline.Machine("torch", "cpu", {"triad": 1e10}, {"matmul": 0.0}), "flops_probes"),
    (lambda: roofline.Machine("torch", "cpu", {"triad": 1e10}, None), "flops_probes"),
    (lambda: roofline.Machine("torch", "cpu", {"triad": 1e10}, {"mm": 1e11}, {"fresh": INF}), "fresh_output_probes"),
    (lambda: roofline.Machine("torch", "cpu", {"triad": 1e10}, {"mm": 1e11}, array_bytes=-4), "array_bytes"),
    (lambda: roofline.Machine(None, "cpu", {"triad": 1e10}, {"mm": 1e11}), "framework"),
    (lambda: roofline.share_of_roof(None, M), "point"),
    (lambda: roofline.share_of_roof(P, None), "machine"),
    (lambda: roofline.measure_machine("mxnet"), "framework"),
    (lambda: roofline.measure_machine(None), "framework"),
    (lambda: roofline.measure_machine("numpy", array_bytes=0), "array_bytes"),
    (lambda: roofline.measure_machine("numpy", array_bytes=10), "array_bytes"),
    (lambda: roofline.measure_machine("numpy", array_bytes=NAN), "array_bytes"),
    (lambda: roofline.measure_machine("numpy", array_bytes=2.5e6), "array_bytes"),
    (lambda: roofline.measure_machine("numpy", matmul_n=0), "matmul_n"),
    (lambda: roofline.measure_machine("numpy", matmul_n=10**6), "matmul_n"),
    (lambda: roofline.measure_machine("numpy", min_time=0), "min_time"),
    (lambda: roofline.measure_machine("numpy", min_time=INF), "min_time"),
    (lambda: roofline.measure_machine("numpy", min_time=-1.0), "min_time"),
]


@pytest.mark.parametrize(("call", "argument"), BAD_CALLS, ids=[f"{i:02d}-{a}" for i, (_, a) in enumerate(BAD_CALLS)])
def test_bad_input_is_refused_naming_the_argument(call, argument: str) -> None:
    rejects(call, argument)
