"""course_utils.distributed.plots: each figure is returned, built from the numbers given."""

from __future__ import annotations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from course_utils import distributed as dist
from course_utils.distributed.comms import AllReduceCost, AllReduceModel


def _cost(n: int = 2, scale: float = 1.0) -> dist.comms.AllReduceCost:
    fits = tuple(AllReduceModel(bw * scale, lat, 2) for bw, lat in ((1e9, 5e-5), (1.1e9, 6e-5), (0.9e9, 4e-5)))
    sizes = (2**12, 2**16, 2**20)
    return AllReduceCost(dist.comms.combine(fits), fits, (sizes, tuple(fits[0].time(b, n) for b in sizes)), n,
                              "now", "measured", "k")


def test_figures_are_returned() -> None:
    assert isinstance(dist.diagram(), Figure)
    fig = dist.scaling_plot(4e6, 0.03, {"link": (1e10, 5e-6)}, compute_label="assumed GPU step")
    assert isinstance(fig, Figure) and "assumed GPU step" in fig.axes[0].get_legend_handles_labels()[1][-1]
    fig = dist.allreduce_fit_plot(_cost(), {4: _cost(4)})
    assert fig.axes[0].get_legend_handles_labels()[1] == ["measured, N=2 (fitted)", "measured, N=4 (out of sample)"]
    fig = dist.breakdown_plot({"m": {"one": (1e-3, 0.0, 1e-3), "two": (5e-4, 1e-3, 1.2e-3)}})
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert isinstance(fig, Figure) and any("timed alone" in label for label in labels)
    assert isinstance(dist.proof_plot({"step5": 0.0, "step10": 0.0}, {"step5": 1e-8, "step10": 2e-8}), Figure)


def test_the_fit_plot_prints_plain_times_on_a_narrow_range() -> None:
    fits = tuple(AllReduceModel(bw, lat, 2) for bw, lat in ((1.2e9, 1.3e-4), (1.3e9, 1.2e-4), (1e9, 1.5e-4)))
    sizes = (2**12, 2**16, 2**20)  # 0.3 to 2 ms: matplotlib would label the minor ticks 3x10^-1
    cost = AllReduceCost(dist.comms.combine(fits), fits, (sizes, tuple(fits[0].time(b, 2) for b in sizes)), 2,
                              "now", "measured", "k")
    fig = dist.allreduce_fit_plot(cost)
    FigureCanvasAgg(fig).draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels(which="both") if t.get_text()]
    assert len(labels) >= 3 and not any("times" in t or "^" in t or "e-" in t for t in labels)


def test_figures_refuse_what_they_cannot_draw() -> None:
    with pytest.raises(ValueError, match=r"groups\[.m.\]\[.a.\] must hold 3 items"):
        dist.breakdown_plot({"m": {"a": (1e-3, 0.0)}})
    with pytest.raises(ValueError, match="checkpoints"):
        dist.proof_plot({"step5": 0.0}, {"step10": 0.0})
