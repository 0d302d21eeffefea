"""course_utils.distributed.plots: each figure is returned, built from the numbers given."""

from __future__ import annotations

from matplotlib.figure import Figure

from course_utils import distributed as dist


def test_figures_are_returned() -> None:
    model = dist.AllReduceModel(1e9, 1e-5)
    assert isinstance(dist.diagram(), Figure)
    fig = dist.scaling_plot(4e6, 0.03, {"link": (1e10, 5e-6)}, compute_label="assumed GPU step")
    assert isinstance(fig, Figure) and "assumed GPU step" in fig.axes[0].get_legend_handles_labels()[1][-1]
    sweeps = {2: ([1e3, 1e6], [1e-4, 1e-3]), 4: ([1e3, 1e6], [2e-4, 2e-3])}
    fig = dist.allreduce_fit_plot(sweeps, model)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels == ["measured, N=2 (fitted)", "measured, N=4 (out of sample)"]
    assert isinstance(dist.breakdown_plot({"m": {"a": (1e-3, 0.0), "b": (5e-4, 1e-3)}}), Figure)
