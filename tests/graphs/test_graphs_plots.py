"""course_utils.graphs.plots: the lesson's figures."""

from __future__ import annotations

from matplotlib.figure import Figure

from course_utils import graphs, timing


def test_crossover_plot_one_panel_per_framework_with_break_even() -> None:
    eager = timing.Measurement("e", (2e-3,), first_call=2e-3)
    pairs = {
        "torch": (eager, timing.Measurement("c", (1e-3,), first_call=1.0)),  # breaks even after ~1,000 calls
        "jax": (eager, timing.Measurement("c", (3e-3,), first_call=0.1)),  # never
    }
    fig = graphs.crossover_plot(pairs, title="t")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("break-even: 999 calls" in t for t in texts) and "never breaks even" in texts


def test_compile_count_bars() -> None:
    fig = graphs.compile_count_bars({"torch": {"static": 4, "dynamic": 1}, "jax": {"jit": 4}}, calls=4)
    ax = fig.axes[0]
    assert len(ax.patches) == 3 and [t.get_text() for t in ax.get_yticklabels()][0] == "torch: static"


def test_loss_difference_plot_uses_a_log_axis_and_draws_zeros() -> None:
    runs = [graphs.LossRun("torch", (1.0, 0.5), (1.0, 0.5 + 1e-7), 1.0), graphs.LossRun("jax", (1.0,), (1.0,), 1.0)]
    ax = graphs.loss_difference_plot(runs).axes[0]
    assert ax.get_yscale() == "log" and len(ax.get_lines()) >= 2


def test_overhead_plot_bars_and_op_count_line() -> None:
    m = graphs.OverheadModel("torch", 11, 5e-6, 1e-5, 4.0, 2e-5)
    ax = graphs.overhead_plot([m]).axes[0]
    assert len(ax.patches) == 2 and ax.get_yscale() == "log"
