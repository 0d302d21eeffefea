"""course_utils.pipeline.plots: figures, legends that name the colours drawn, start-ups kept off the scale."""

from __future__ import annotations

from matplotlib.figure import Figure

from course_utils import pipeline


def _timeline(label: str, startup: float = 0.01) -> pipeline.Timeline:
    waits = (startup, 0.002, 0.002, 0.002)
    computes = (0.004,) * 4
    starts, now = [], 0.0
    for w, c in zip(waits, computes):
        starts.append(now)
        now += w + c
    return pipeline.Timeline(label, tuple(starts), waits, computes, (0, 0, 0, 0))


def test_timeline_plot_legend_matches_bars_and_startup_does_not_stretch() -> None:
    slow = _timeline("torch, 1 worker (spawn)", startup=5.0)
    fig = pipeline.timeline_plot([_timeline("torch, 0 workers"), slow, _timeline("jax, Prefetch(size=2)")])
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xlim()[1] < 100  # ms: 5 s of start-up would stretch it to 5000
    bar_colors = {tuple(c.get_facecolor()[0]) for c in ax.collections}
    legend = fig.legends[0]
    legend_colors = {tuple(h.get_facecolor()) for h in legend.legend_handles}
    assert bar_colors <= legend_colors
    assert [t.get_text() for t in legend.get_texts()] == ["waiting for data", "computing (torch)", "computing (jax)"]


def test_utilisation_and_workers_plots() -> None:
    a, b = _timeline("torch before"), _timeline("torch after")
    assert isinstance(pipeline.utilisation_plot({"torch": (a, b)}), Figure)
    assert isinstance(pipeline.workers_plot({0: a, 1: b, 2: b}, free_cores=1), Figure)
