"""course_utils.precision.speed and plots: measurements come back named; every figure renders."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from course_utils import precision as P


def test_matmul_and_copy_times_are_named_per_format() -> None:
    pytest.importorskip("torch")
    times = P.matmul_times(16, ["torch"], min_time=0.001)
    assert set(times) == {"torch fp32", "torch bf16"}
    copies = P.copy_times(64 * 1024, min_time=0.001, rounds=1)
    assert set(copies) == {"fp32", "bf16"} and all(m.median > 0 for m in copies.values())


def test_stream_times_give_roofline_points_of_half_the_bytes() -> None:
    pytest.importorskip("torch")
    times = P.stream_times(64 * 1024, min_time=0.001, rounds=1)
    assert set(times) == {"copy fp32", "copy bf16", "triad fp32", "triad bf16"}
    fp32, bf16 = (P.stream_point(f"triad {f}", times[f"triad {f}"], 64 * 1024) for f in ("fp32", "bf16"))
    assert fp32.flops == bf16.flops == 2 * 16 * 1024 and fp32.bytes == 2 * bf16.bytes == 3 * 64 * 1024
    assert bf16.intensity == pytest.approx(2 * fp32.intensity)
    ratio, low, high = P.bandwidth_ratio(times["copy fp32"], times["copy bf16"])
    assert low <= ratio <= high


def test_jax_dot_dtypes_reads_the_dot_operands() -> None:
    pytest.importorskip("jax")
    f32 = P.jax_dot_dtypes(16, "float32")
    assert f32["dot operands"] == ("f32",) and f32["dots"] >= 1 and f32["converts"] == 0
    bf16 = P.jax_dot_dtypes(16, "bfloat16")
    assert set(bf16["dot operands"]) <= {"bf16", "f32"}
    assert bf16["dot operands"] == ("bf16",) or bf16["converts"] >= 2  # widened: inputs converted to f32


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
        P.before_after_plot({"torch": (10.0, 2.0)}, ylabel="MiB", title="t"),
        P.loss_curves_plot({"fp32": [Run(1.0), Run(1.1)]}, window=5),
    ]
    assert all(isinstance(f, Figure) for f in figs)
    assert len(figs[0].axes[0].patches) == 3 * len(P.FORMATS)
    assert len(figs[5].axes) == 2 and len(P.throughput_plot({"a": 1e9}).axes) == 1
    assert "0.20x" in [t.get_text() for t in figs[8].axes[0].texts]
