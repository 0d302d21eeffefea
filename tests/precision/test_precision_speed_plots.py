"""course_utils.precision.speed and plots: the bf16 units' bound, the checks built from it and from the step's
interval, roofline points, and every figure renders."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from course_utils import intervals
from course_utils import precision as P


def sp(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("base", "cand", ratio, low, high, 6, "rounds")


def test_bf16_bound_follows_the_flags() -> None:
    amx = P.bf16_bound(("avx512f", "avx512_bf16", "amx_bf16", "amx_tile"))
    assert amx.unit == "AMX" and amx.ratio == 16.0 and "published" in amx.source
    avx = P.bf16_bound(("avx512f", "avx512_bf16"))
    assert avx.unit == "AVX512-BF16" and avx.ratio == 2.0 and "computed" in avx.source
    none = P.bf16_bound(("avx2", "fma"))
    assert none.ratio is None and none.unit == "none"
    gpu = P.bf16_bound((), "cuda")
    assert gpu.unit == "tensor cores" and math.isinf(gpu.ratio)
    assert str(amx).startswith("AMX: at most 16x") and str(none).startswith("none: no avx512_bf16")
    assert "no bound computed" in str(gpu)


def test_matmul_check_follows_the_units() -> None:
    avx, none, gpu = P.bf16_bound(("avx512_bf16",)), P.bf16_bound(("avx2",)), P.bf16_bound((), "cuda")
    inside = P.matmul_check(sp(1.8, 1.5, 1.9), avx)
    assert (inside.kind, inside.outcome) == ("within", "held")
    assert P.matmul_check(sp(4.0, 3.5, 4.5), avx).outcome == "failed above"  # beyond the units' bound
    assert P.matmul_check(sp(1.05, 0.9, 1.2), avx).outcome == "not decided"
    assert P.matmul_check(sp(0.1, 0.05, 0.2), none).outcome == "held"  # no units: slower, as predicted
    assert P.matmul_check(sp(1.0, 0.8, 1.2), none).outcome == "not decided"
    tensor_cores = P.matmul_check(sp(50, 40, 60), gpu)  # no bound computed: only "faster"
    assert (tensor_cores.kind, tensor_cores.outcome) == ("above", "held")


def test_step_checks_place_the_step_between_1_and_the_matmul() -> None:
    mm, avx, none = sp(4.0, 3.8, 4.2), P.bf16_bound(("avx512_bf16",)), P.bf16_bound(("avx2",))
    outcomes = lambda step, matmul, bound: [c.outcome for c in P.step_checks(step, matmul, bound)]  # noqa: E731
    assert outcomes(sp(3.0, 2.8, 3.2), mm, avx) == ["held", "held"]  # diluted
    assert outcomes(sp(3.9, 3.5, 4.0), mm, avx) == ["held", "not decided"]  # within the matmul's noise
    assert outcomes(sp(5.0, 4.6, 5.4), mm, avx) == ["held", "failed above"]  # further than the matmul
    assert outcomes(sp(0.5, 0.4, 0.6), mm, avx) == ["failed below", "held"]  # the other side of 1
    assert outcomes(sp(0.5, 0.4, 0.6), sp(0.2, 0.18, 0.22), none) == ["held", "held"]  # no units: diluted too


def test_stream_point_has_half_the_bytes_in_bf16() -> None:
    fp32, bf16 = (P.stream_point(f"triad {f}", 1e-3, 64 * 1024) for f in ("fp32", "bf16"))
    assert fp32.flops == bf16.flops == 2 * 16 * 1024 and fp32.bytes == 2 * bf16.bytes == 3 * 64 * 1024
    assert bf16.intensity == pytest.approx(2 * fp32.intensity)
    copy = P.stream_point("copy fp32", 1e-3, 64 * 1024)
    assert copy.flops == 0 and copy.bytes == 2 * 64 * 1024


def test_step_flops_and_matmul_shares_are_computed() -> None:
    assert P.mlp_step_flops((8, 4, 2), 10) == 2 * 10 * (3 * (32 + 8) - 32)
    shares = P.matmul_shares(1e9, {"fp32": 1e10, "bf16": 2e10}, {"fp32": 0.2, "bf16": 0.1})
    assert shares == pytest.approx({"fp32": 0.5, "bf16": 0.5})


def test_plots_return_figures() -> None:
    class Run:
        def __init__(self, k: float) -> None:
            self.loss = list(np.linspace(2, 1, 40) * k)

    figs = [
        P.bit_layout_plot(),
        P.rounding_error_plot(("float16", "bfloat16")),
        P.gradient_histogram_plot(np.logspace(-12, -1, 200), scale=2.0**10),
        P.scale_trace_plot([2.0**16, 2.0**15, 2.0**15, 2.0**16], [True, False, False, False], ceiling=[17, 17, 17, 17]),
        P.accumulation_plot([10, 100], {"a": [1e-3, 1e-2]}),
        P.throughput_plot({"torch fp32": 1e11, "torch bf16": 4e11}, {"A100 bf16": 3e14}, "published"),
        P.memory_stack_plot({k: P.TRAINING_SCHEMES[k] for k in P.TRAINING_SCHEMES}),
        P.lines_plot([1, 2, 3], {"a": [1, 2, 3]}, xlabel="x", ylabel="y", title="t", logy=True),
        P.loss_curves_plot({"fp32": [Run(1.0), Run(1.1)]}, window=5),
    ]
    assert all(isinstance(f, Figure) for f in figs)
    assert len(figs[0].axes[0].patches) == 3 * len(P.formats.FORMATS)
    assert len(figs[5].axes) == 2 and len(P.throughput_plot({"a": 1e9}).axes) == 1
    assert "range over seeds" in figs[8].axes[0].get_title()
    one = P.loss_curves_plot({"fp32": [Run(1.0)]}, window=5)
    assert "range over seeds" not in one.axes[0].get_title()  # one seed: no band, and the title says none
