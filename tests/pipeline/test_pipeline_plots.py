"""course_utils.pipeline.plots: figures, legends that name the colours drawn, start-ups kept off the scale."""

from __future__ import annotations

from matplotlib.figure import Figure

from course_utils import pipeline
from course_utils.pipeline import stall


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


def test_trace_plot_names_steps_and_loader_in_a_readable_legend() -> None:
    from course_utils import profile

    events = []
    for i in range(5):  # steps of 10 ms, the loader's 6 ms call in each 8 ms gap
        start = i * 0.018
        events.append(profile.Event(stall.STEP_MARK, "user_annotation", "main", start, 0.010))
        events.append(profile.Event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation",
                                    "main", start + 0.011, 0.006))
    trace = profile.Trace("torch", None, tuple(events))
    stalls = pipeline.data_stalls(trace, label="num_workers=0")
    fig = pipeline.trace_plot(trace, stalls, steps=2)
    legend = fig.legends[0]
    assert all(t.get_fontsize() >= 9 for t in legend.get_texts())
    assert [t.get_text().split(":")[0] for t in legend.get_texts()] == ["'train step'", "DataLoader __next__"]
    assert sum("idle" in t.get_text() for t in fig.axes[0].texts) == 2  # the gaps between the three steps drawn


def test_samples_plot_and_one_epoch_of_a_timeline() -> None:
    assert len(pipeline.samples_plot(pipeline.SyntheticImages(4, size=16, work=0), count=3).axes) == 3
    two = pipeline.Timeline("t", (0.0, 0.1, 0.2, 0.3), (0.5, 0.01, 0.4, 0.01), (0.1,) * 4, (0, 0, 1, 1))
    assert isinstance(pipeline.timeline_plot({"t": two}, epoch=1), Figure)
