"""course_utils.graphs.plots: the lesson's figures."""

from __future__ import annotations

from matplotlib.figure import Figure

from course_utils import graphs, intervals, timing
from course_utils.graphs.training import LossRun


def _s(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("eager", "compiled", ratio, low, high, 6, intervals.ROUNDS)


def test_crossover_plot_labels_the_break_even_the_interval_gives_and_none_where_it_gives_none() -> None:
    eager = timing.Measurement("e", (2e-3,), first_call=2e-3)
    pairs = {
        "torch": (eager, timing.Measurement("c", (1e-3,), first_call=1.0)),  # ~1,000 calls at the median
        "jax": (eager, timing.Measurement("c", (1e-3,), first_call=1.0)),  # the same medians, a noisy interval
    }
    fig = graphs.crossover_plot(pairs, {"torch": _s(2.0, 1.6, 2.5), "jax": _s(2.0, 0.9, 4.0)}, title="t")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "break-even: 833 to 1,332 calls (interval)" in texts
    assert "no break-even: compiled within the noise (interval)" in texts  # no count where the interval gives none
    assert not any("999" in t for t in texts)
    cheap = graphs.crossover_plot({"jax": (timing.Measurement("e", (2e-3,), first_call=1.0), pairs["jax"][1])},
                                  {"jax": _s(2.0, 1.6, 2.5)})  # eager's first call costs more: even at once
    assert [t.get_text() for t in cheap.axes[0].texts] == ["break-even: 1 call (interval)"]


def test_compile_count_bars() -> None:
    fig = graphs.compile_count_bars({"torch": {"static": 4, "dynamic": 1}, "jax": {"jit": 4}}, calls=4)
    ax = fig.axes[0]
    assert len(ax.patches) == 3 and [t.get_text() for t in ax.get_yticklabels()][0] == "torch: static"


def test_loss_difference_plot_uses_a_log_axis_and_draws_zeros() -> None:
    runs = [LossRun("torch", (1.0, 0.5), (1.0, 0.5 + 1e-7), 1.0), LossRun("jax", (1.0,), (1.0,), 1.0)]
    ax = graphs.loss_difference_plot(runs).axes[0]
    assert ax.get_yscale() == "log" and len(ax.get_lines()) >= 2


def test_overhead_plot_bars_and_op_count_line() -> None:
    m = graphs.breakeven.OverheadModel("torch", 11, 5e-6, 1e-5, 4.0, 2e-5)
    ax = graphs.overhead_plot([m]).axes[0]
    assert len(ax.patches) == 2 and ax.get_yscale() == "log"
