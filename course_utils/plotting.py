"""One house style for every figure (a white card, the colour-blind-safe Okabe-Ito palette, a framework's colour
kept in every notebook); each function returns its matplotlib Figure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Literal

from course_utils import declare, display, profile, timing, validate
from course_utils.declare import NonEmpty, NonNegative, PositiveFloat, Range
from course_utils.roofline import Machine, Point

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


PALETTE = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
FRAMEWORK_COLORS = {"torch": "#D55E00", "jax": "#0072B2", "tensorflow": "#E69F00", "tf": "#E69F00", "numpy": "#009E73"}
_STYLE = {
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "axes.edgecolor": "#333333",
    "axes.labelcolor": "#222222",
    "text.color": "#222222",
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "legend.frameon": False,
    "figure.dpi": 100,
    "figure.constrained_layout.use": True,
}


def use_style() -> None:
    """Apply the house style to matplotlib (rcParams) and use the palette as the colour cycle."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(_STYLE)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=PALETTE)
    try:  # IPython renders a returned Figure as PNG (ours are not pyplot's, so it would not by default)
        from IPython import get_ipython
        from IPython.core.pylabtools import select_figure_formats
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        select_figure_formats(shell, {"png"}, bbox_inches="tight")


@declare.checked
def color_for(label: str, index: Annotated[int, NonNegative] = 0) -> str:
    """The framework's colour when ``label`` names one (e.g. 'jax jit'), else the palette's ``index``-th."""
    lowered = label.lower()
    for name, color in FRAMEWORK_COLORS.items():
        if lowered.startswith(name) or f" {name}" in lowered or f"({name}" in lowered:
            return color
    return PALETTE[index % len(PALETTE)]


@declare.checked
def figure(ncols: Annotated[int, Range(1, 12)] = 1, *, width: Annotated[float, Range(0.5, 40)] = 6.4,
           height: Annotated[float, Range(0.5, 40)] = 3.6) -> tuple[Figure, list[Axes]]:
    """A new Figure (not registered with pyplot, so a notebook shows it once) and its ``ncols`` axes in one row."""
    from matplotlib.figure import Figure

    use_style()
    fig = Figure(figsize=(width, height))
    return fig, list(fig.subplots(1, ncols, squeeze=False)[0])


@declare.checked
def time_bars(
    measurements: Annotated[Mapping[str, timing.Measurement] | Sequence[timing.Measurement], NonEmpty],
    *,
    title: str | None = None,
    log: bool = False,
    show_first_call: bool = False,
) -> Figure:
    """Median time per call with quartile whiskers; optionally the first call (compile/trace) beside it."""
    items = list(measurements.items()) if isinstance(measurements, Mapping) else [(m.label, m) for m in measurements]
    scale, unit = display.time_unit(min(m.median for _, m in items))
    fig, (ax,) = figure(height=0.6 + 0.5 * len(items))
    names = [name for name, _ in items]
    medians = [m.median / scale for _, m in items]
    errors = [[(m.median - m.p25) / scale for _, m in items], [(m.p75 - m.median) / scale for _, m in items]]
    ax.barh(names, medians, xerr=errors, color=[color_for(n, i) for i, n in enumerate(names)], capsize=3,
            label="steady state (median)")
    if show_first_call:
        firsts = [(m.first_call or 0.0) / scale for _, m in items]
        ax.scatter(firsts, names, marker="D", color="#333333", zorder=3, label="first call")
        fig.legend(loc="outside lower center", ncols=2)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set(xlabel=f"time per call ({unit})", title=title or "Time per call")
    return fig


@declare.checked
def sweep_plot(
    sizes: Annotated[Sequence[PositiveFloat], NonEmpty],
    series: Annotated[Mapping[str, Sequence[timing.Measurement]], NonEmpty],
    *,
    title: str | None = None,
) -> Figure:
    """Log-log time against size (elements), one line per label with its quartile band; '... eager' and '...
    op-by-op' series are dashed, so each eager/compiled pair reads apart."""
    import numpy as np

    for label, ms in series.items():  # by hand: a length per mapping value
        if len(ms) != len(sizes):
            raise ValueError(f"series[{label!r}] has {len(ms)} measurements for {len(sizes)} sizes")
    fig, (ax,) = figure(width=6.4, height=4.0)
    x = np.asarray(sizes, dtype=float)
    for i, (label, ms) in enumerate(series.items()):
        color = color_for(label, i)
        dashed = "eager" in label or "op-by-op" in label
        ax.plot(x, [m.median for m in ms], marker="o", markersize=3, color=color, label=label,
                linestyle="--" if dashed else "-")
        ax.fill_between(x, [m.p25 for m in ms], [m.p75 for m in ms], color=color, alpha=0.2)
    ax.set(xscale="log", yscale="log", xlabel="elements", ylabel="seconds per call", title=title or "Time against size")
    ax.legend(fontsize=8, ncols=min(3, len(series)), loc="upper left")
    return fig


@declare.checked
def waterfall(steps: Sequence[tuple[str, PositiveFloat]], *, unit: Literal["s", "ms", "µs", "ns"] = "ms",
              title: str | None = None) -> Figure:
    """Step time rung by rung (``steps``: (label, seconds) in ladder order): the baseline, then what each change saved
    (green) or cost (red)."""
    scales = {name: scale for scale, name in display.TIME_UNITS}
    if len(steps) < 2:
        raise ValueError("steps needs a baseline and at least one more rung")
    values = [seconds / scales[unit] for _, seconds in steps]
    fig, (ax,) = figure(width=max(6.4, 1.3 * len(steps)), height=3.8)
    ax.bar(0, values[0], color="#555555")
    ax.text(0, values[0], f"{values[0]:.3g}", ha="center", va="bottom")
    for i in range(1, len(values)):
        low, high = sorted((values[i - 1], values[i]))
        saved = values[i] < values[i - 1]
        ax.bar(i, high - low, bottom=low, color="#009E73" if saved else "#D55E00")
        ax.text(i, high, f"{values[i]:.3g}\n({values[i] / values[i - 1] - 1:+.0%})", ha="center", va="bottom",
                fontsize=8)
    ax.set_xticks(range(len(steps)), [label for label, _ in steps], rotation=20, ha="right")
    ax.set(ylabel=f"step time ({unit})", ylim=(0, max(values) * 1.25), title=title or "Step time, one change at a time")
    return fig


@declare.checked
def roofline_plot(machine: Machine, points: Iterable[Point] = (), *, title: str | None = None) -> Figure:
    """Log-log roofline of ``machine`` (each bandwidth probe dashed, the best solid) with labelled points."""
    import numpy as np

    points = [validate.instance(f"points[{i}]", p, Point) for i, p in enumerate(points)]  # an iterator too
    fig, (ax,) = figure(width=7.0, height=4.4)
    intensities = [p.intensity for p in points if p.flops > 0]
    low = min([machine.ridge_intensity / 1000, *(i / 3 for i in intensities)])
    high = max([machine.ridge_intensity * 30, *(i * 20 for i in intensities)])
    x = np.logspace(np.log10(low), np.log10(high), 200)
    ax.plot(x, np.minimum(machine.peak_flops, x * machine.bandwidth) / 1e9, color="#222222", linewidth=2, zorder=2.5,
            label=wrap_label(f"roof: {machine.bandwidth / 1e9:.0f} GB/s below the ridge "
                           f"({machine.ridge_intensity:.3g} FLOP/byte, grey line), {machine.peak_flops / 1e9:.0f} "
                           "GFLOP/s above it"))
    for i, bw in enumerate(machine.bandwidth_probes.values()):  # the weaker probes, for scale; the roof is the best
        ax.plot(x, np.minimum(machine.peak_flops, x * bw) / 1e9, linestyle=":", linewidth=1, color="#999999",
                label=None if i else wrap_label("dotted: each bandwidth probe (GB/s): " + ", ".join(
                    f"{k} {v / 1e9:.0f}" for k, v in machine.bandwidth_probes.items())))
    ax.axvline(machine.ridge_intensity, color="#bbbbbb", linewidth=1)
    for i, p in enumerate(points):
        if p.flops <= 0:
            continue
        color = color_for(p.label, i)
        ax.scatter([p.intensity], [p.achieved_flops / 1e9], color=color, s=40, zorder=3)
        ax.annotate(p.label, (p.intensity, p.achieved_flops / 1e9), textcoords="offset points", xytext=(5, 4),
                    fontsize=8, color=color)
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP / byte)", ylabel="GFLOP/s",
           title=title or f"Roofline of this machine ({machine.framework}, {machine.device})")
    fig.legend(loc="outside lower center", fontsize=8)  # one column of wrapped entries: never wider than the axes
    _stack_labels_apart(fig, ax)
    return fig


@declare.checked
def wrap_label(text: str, width: Annotated[int, Range(8, 400)] = 90) -> str:
    """``text`` broken into lines of at most ``width`` characters, so a legend entry stays inside the figure."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def plain_log_ticks(ax: Axes) -> None:
    """Label the log y axis of ``ax`` with plain numbers ('0.3', '60', '100'), not matplotlib's '6x10^1' or
    '3e-01'; matplotlib still picks which minor ticks to label (those of an axis spanning under two decades)."""
    from matplotlib.axes import Axes as _Axes
    from matplotlib.ticker import LogFormatter

    class Plain(LogFormatter):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return f"{x:.4g}" if super().__call__(x, pos) else ""

    validate.instance("ax", ax, _Axes)
    ax.yaxis.set_major_formatter(Plain(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(2, 0.6)))


def _stack_labels_apart(fig: Figure, ax: Axes) -> None:
    """Move point labels up where they would print on each other (variants of one kernel share an intensity)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Annotation

    FigureCanvasAgg(fig).draw()  # fixes the layout, so data -> display transforms are final
    labels = sorted((t for t in ax.texts if isinstance(t, Annotation)), key=lambda t: (t.xy[0], t.xy[1]))
    to_points = 72.0 / fig.dpi
    placed: list[tuple[float, float]] = []  # (x, y) in display points of labels already placed
    for label in labels:
        x, y = (v * to_points for v in ax.transData.transform(label.xy))
        target = y + 4
        for px, py in placed:
            if abs(px - x) < 60 and abs(py - target) < 10:
                target = py + 10
        placed.append((x, target))
        label.xyann = (5, target - y)


@declare.checked
def trace_timeline(trace: profile.Trace, *, title: str | None = None) -> Figure:
    """A profiler trace drawn as a timeline: one row per thread (the six busiest), one bar per event, the six most
    frequent event names coloured (the rest grey), so gaps (idle time) and many small ops read at a glance."""
    rows = trace.threads()[:6]
    colours = {name: PALETTE[i % len(PALETTE)] for i, (name, _) in enumerate(trace.names(6))}
    fig, (ax,) = figure(width=8.0, height=1.0 + 0.55 * len(rows))
    origin = trace.start
    for y, thread in enumerate(rows):
        events = [e for e in trace.events if e.thread == thread]
        ax.broken_barh([((e.start - origin) * 1e3, e.duration * 1e3) for e in events], (y - 0.4, 0.8),
                       facecolors=[colours.get(e.name, "#bbbbbb") for e in events], linewidth=0)
    ax.set_yticks(range(len(rows)), [r if len(r) <= 28 else r[:25] + "..." for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time since the first event (ms)")
    ax.set_title(title or f"{trace.framework} trace: {len(trace.events)} events")
    from matplotlib.patches import Rectangle

    handles = [Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    labels = [wrap_label(n, 34) for n in colours]  # wrapped whole, at the axes' font size: not cut at a tiny one
    if any(e.name not in colours for e in trace.events):
        handles.append(Rectangle((0, 0), 1, 1, color="#bbbbbb"))
        labels.append("every other event")
    fig.legend(handles, labels, loc="outside lower center", ncols=min(3, len(labels)), fontsize=8)
    return fig
