"""course_utils.plotting: every function returns a Figure with the expected content."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from course_utils import plotting, roofline, timing

MACHINE = roofline.Machine("torch", "cpu", {"copy": 10e9, "triad": 20e9}, {"matmul fp32": 100e9})


def test_color_for_keeps_framework_colours() -> None:
    assert plotting.color_for("torch eager") == plotting.FRAMEWORK_COLORS["torch"]
    assert plotting.color_for("jax jit") == plotting.FRAMEWORK_COLORS["jax"]
    assert plotting.color_for("fused (tensorflow)") == plotting.FRAMEWORK_COLORS["tensorflow"]
    assert plotting.color_for("something else", 1) == plotting.PALETTE[1]


def test_figure_gives_a_flat_list_of_axes() -> None:
    fig, axes = plotting.figure(2)
    assert isinstance(fig, Figure) and len(axes) == 2


def test_time_bars_with_first_call() -> None:
    ms = [timing.Measurement("a", (1e-3,), first_call=1.0), timing.Measurement("b", (2e-3,), first_call=0.5)]
    fig = plotting.time_bars(ms, show_first_call=True, log=True)
    ax = fig.axes[0]
    assert "ms" in ax.get_xlabel() and ax.get_xscale() == "log" and len(ax.patches) == 2
    with pytest.raises(ValueError, match="measurements"):
        plotting.time_bars([])


def test_roofline_plot_places_points() -> None:
    points = [roofline.Point("torch eager", 1e9, 8e9, 1.0), roofline.Point("copy", 0.0, 8e9, 1.0)]
    fig = plotting.roofline_plot(MACHINE, points)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.texts]
    assert "torch eager" in labels and "copy" not in labels  # zero-FLOP kernels have no place on a log roofline


def test_sweep_plot_draws_one_line_per_series() -> None:
    ms = [timing.Measurement("a", (1e-6 * n,)) for n in (1, 10, 100)]
    fig = plotting.sweep_plot([1, 10, 100], {"torch eager": ms, "jax jit": ms})
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and ax.get_xscale() == "log" and "per call" in ax.get_ylabel()
    assert [line.get_linestyle() for line in ax.lines] == ["--", "-"]  # eager dashed
    with pytest.raises(ValueError, match="series"):
        plotting.sweep_plot([1, 2], {"a": ms})


def test_waterfall_draws_one_bar_per_rung() -> None:
    fig = plotting.waterfall([("eager", 0.010), ("compiled", 0.006), ("+ amp", 0.007)])
    ax = fig.axes[0]
    assert len(ax.patches) == 3 and "ms" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["eager", "compiled", "+ amp"]
    with pytest.raises(ValueError, match="baseline"):
        plotting.waterfall([("eager", 1.0)])
    with pytest.raises(ValueError, match="unit"):
        plotting.waterfall([("a", 1.0), ("b", 0.5)], unit="h")


def _inside_axes_width(fig: Figure) -> bool:
    """Whether every legend of ``fig`` is at most as wide as its first axes, once drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    width = fig.axes[0].get_window_extent(renderer).width
    return all(legend.get_window_extent(renderer).width <= width for legend in fig.legends)


def test_roofline_legend_is_no_wider_than_the_axes_with_many_probes() -> None:
    probes = {f"{fw} {kind}": 5e9 + i for i, (fw, kind) in enumerate(
        (fw, kind) for fw in ("torch", "jax", "tensorflow") for kind in ("copy", "scale", "triad"))}
    machine = roofline.Machine("best of torch, jax, tensorflow", "cpu", probes, {"matmul fp32": 30e9})
    fig = plotting.roofline_plot(machine, [roofline.Point("torch eager", 1e9, 8e9, 1.0)])
    assert fig.legends and _inside_axes_width(fig)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[0].startswith("roof: ") and "tensorflow triad" in texts[1]  # every probe named, the roof first


def test_trace_legend_names_each_colour_whole_and_the_grey_rest() -> None:
    from course_utils import profile

    long = "aten::_foreach_add_ (the optimizer step, all parameters at once)"
    names = ["aten::add", long, "aten::mul", "aten::sub", "aten::div", "aten::exp", "aten::tanh"]
    events = tuple(profile.Event(names[i % 7], "cpu_op", "main", float(i) * 1e-4, 5e-5) for i in range(20))
    fig = plotting.trace_timeline(profile.Trace("torch", None, events))
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[-1] == "every other event" and len(texts) == 7
    assert any(t.replace("\n", " ") == long for t in texts)  # wrapped, not cut
    assert all(t.get_fontsize() >= 8 for t in fig.legends[0].get_texts()) and _inside_axes_width(fig)


def test_plain_log_ticks_print_numbers_not_powers() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig, (ax,) = plotting.figure()
    ax.plot([1, 2], [0.2, 9])
    ax.set_yscale("log")
    plotting.plain_log_ticks(ax)
    FigureCanvasAgg(fig).draw()
    labels = [t.get_text() for t in ax.get_yticklabels(which="both") if t.get_text()]
    assert {"0.3", "1", "6"} <= set(labels) and not any("times" in t or "^" in t or "e-" in t for t in labels)
    with pytest.raises(TypeError, match="ax"):
        plotting.plain_log_ticks(None)


def test_wrap_label_keeps_every_word_within_the_width() -> None:
    text = "dotted: each bandwidth probe (GB/s): torch copy 7, torch triad 5, jax scale 6, jax triad 5"
    wrapped = plotting.wrap_label(text, 40)
    assert wrapped.replace("\n", " ") == text and max(len(line) for line in wrapped.splitlines()) <= 40
    with pytest.raises(ValueError, match="width"):
        plotting.wrap_label(text, 0)
