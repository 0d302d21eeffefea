"""course_utils.fusion.plots: figures are built, and their inputs checked."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from course_utils import fusion, roofline

pytest.importorskip("torch")


def machine() -> roofline.Machine:
    return roofline.Machine("torch", "cpu", {"copy": 5e9, "triad": 1e10}, {"mm": 1e11})


def test_plots_return_figures() -> None:
    traffic = fusion.trace_traffic(lambda x: x + 1, ((8,), "float32"))
    table = fusion.compare_to_prediction(traffic, machine(), unfused={"torch eager": 2e-9}, fused={"jax.jit": 1e-9})
    assert isinstance(fusion.prediction_plot(table), Figure)
    assert isinstance(fusion.roof_bars({"a": 0.5, "b": 1.2}), Figure)
    roof = fusion.vector_roof.VectorRoof(5e10, 1e9, 4096)
    points = [row.point() for row in table.rows]
    fig = fusion.roofline_with_vector_roof(machine(), roof, points)
    assert any("vector roof" in t.get_text() for legend in fig.legends for t in legend.get_texts())
    both = {"torch": roof, "jax": fusion.vector_roof.VectorRoof(5e10, 4e9, 4096, "jax")}
    fig = fusion.roofline_with_vector_roof(machine(), both, points, flops=10, tanh=1)
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts() if "vector roof" in t.get_text()]
    assert len(labels) == 2 and all("10 FLOPs + 1" in t and "tanh" in t for t in labels)


def test_size_plot_marks_caches_inside_and_beyond_the_sweep() -> None:
    fig = fusion.speedup_vs_size_plot([1024, 2**20], {"torch": [3.0, 5.0]}, predicted=13.0,
                                      caches={"L2": 2**19, "L3": 480 * 2**20})
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "L2 512 KiB" in texts and "L3 480 MiB →" in texts
