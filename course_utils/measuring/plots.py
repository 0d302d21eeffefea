"""Notebook 00's figures: the memory hierarchy, and the overhead-to-bandwidth sweep (eager beside compiled)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Literal

from course_utils import declare, display, plotting, timing
from course_utils.declare import NonEmpty, PositiveFloat, PositiveInt, SameLength
from course_utils.measuring.hierarchy import DRAM_MULTIPLE, HierarchySweep
from course_utils.measuring.speedups import variant_name
from course_utils.measuring.workloads import Bend

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@declare.checked
def hierarchy_plot(sweep: HierarchySweep, *, roof: PositiveFloat | None = None,
                   title: declare.Text | None = None) -> Figure:
    """Copy bandwidth (GB/s) against working set (log, ticks in bytes): the sweep's own cliffs shaded and the start
    of main memory it reads from them drawn solid; the cache sizes the OS reports dashed, as a second fact."""
    fig, (ax,) = plotting.figure(width=6.8, height=4.2)
    ax.plot(sweep.working_sets, [r / 1e9 for r in sweep.bandwidths], marker="o", color=plotting.color_for("torch"),
            label="torch copy_ (preallocated)")
    for k, cliff in enumerate(sweep.cliffs, 1):
        ax.axvspan(cliff.before, cliff.after, color="#0072B2", alpha=0.12, linewidth=0,
                   label="cliffs the sweep found (rate falls and stays down)" if k == 1 else None)
        ax.annotate(f"cliff {k}", (((cliff.before * cliff.after) ** 0.5), 0.98), xycoords=("data", "axes fraction"),
                    ha="center", va="top", fontsize=8, color="#0072B2")
    start = sweep.main_memory_start
    if start is not None:
        rule = "past the last cliff" if sweep.cliffs else f"{DRAM_MULTIPLE}x the OS's cache: no cliff found"
        ax.axvline(start, color="#0072B2", linewidth=1.5, label=f"main memory from here ({rule})")
    for i, (name, size) in enumerate(sorted(sweep.caches.items(), key=lambda item: item[1])):
        ax.axvline(size, color="#999999", linewidth=1, linestyle="--",
                   label="cache sizes the OS reports (a second fact)" if i == 0 else None)
        ax.annotate(f"{name} (OS)", (size, 0.02), xycoords=("data", "axes fraction"), xytext=(-3, 0),
                    textcoords="offset points", fontsize=8, color="#777777", ha="right")
    if roof is not None:
        ax.axhline(roof / 1e9, color="#222222", linewidth=1, linestyle=":",
                   label=f"memory roof (machine figure): {roof / 1e9:.1f} GB/s")
    _bytes_axis(ax, [*sweep.working_sets, start or 0, *sweep.caches.values()])
    ax.set(yscale="log", xlabel="working set: source + destination (both axes log scale)",
           ylabel="copy bandwidth (GB/s, read + write)",
           title=title or "Memory hierarchy: bandwidth against working-set size")
    plotting.plain_log_ticks(ax)  # 20, 60, 100: not 6x10^1
    fig.legend(fontsize=8, loc="outside lower center", ncols=2)
    return fig


def _bytes_axis(ax: Axes, sizes: Sequence[float]) -> None:
    """A log-2 x axis over ``sizes`` (bytes) ticked every 4x in plain byte sizes ('64 KiB', '1 MiB')."""
    import math

    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    shown = [s for s in sizes if s > 0]
    low, high = math.floor(math.log2(min(shown))), math.ceil(math.log2(max(shown)))
    ax.set_xscale("log", base=2)
    ax.set_xlim(2 ** low / 1.3, 2 ** high * 1.3)
    ax.xaxis.set_major_locator(FixedLocator([2.0**k for k in range(low, high + 1) if (k - low) % 2 == 0]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: display.format_bytes(value)))


@declare.checked
def overhead_sweep_plot(sizes: Annotated[Sequence[PositiveInt], NonEmpty],
                        series: Annotated[Mapping[str, Annotated[Sequence[timing.Measurement], SameLength("sizes")]],
                                          NonEmpty], found: Mapping[str, Bend], *,
                        call_cost: Mapping[Literal["torch", "jax", "tensorflow"], PositiveFloat] | None = None,
                        title: declare.Text | None = None) -> Figure:
    """Two panels, eager beside compiled: time per call (log-log) with its quartile band, a slope-1 line, each
    series' bend marked, and on the compiled panel one compiled call's fixed cost (``call_cost``, dashed)."""
    import numpy as np

    costs = dict(call_cost or {})
    compiled_names = {variant_name(fw, True): fw for fw in costs}
    groups = {"eager": [k for k in series if "eager" in k or "op-by-op" in k]}
    groups["compiled"] = [k for k in series if k not in groups["eager"]]
    scale, unit = display.time_unit(min(m.median for ms in series.values() for m in ms))
    fig, axes = plotting.figure(ncols=2, width=10.0, height=4.0)
    x = np.asarray(sizes, dtype=float)
    for ax, (group, labels) in zip(axes, groups.items()):
        for i, label in enumerate(labels):
            ms = series[label]
            color = plotting.color_for(label, i)
            ax.plot(x, [m.median / scale for m in ms], marker="o", markersize=3, color=color, label=label)
            ax.fill_between(x, [m.p25 / scale for m in ms], [m.p75 / scale for m in ms], color=color, alpha=0.2)
            b = found.get(label)
            if b is not None and b.size is not None:
                ax.scatter([b.size], [2 * b.floor / scale], marker="x", s=60, color=color, zorder=3)
            if label in compiled_names:
                ax.axhline(costs[compiled_names[label]] / scale, color=color, linestyle="--", linewidth=1)
        if labels:
            top = min(series[label][-1].median for label in labels) / scale
            bottom = min(m.median for label in labels for m in series[label]) / scale
            keep = top * x / x[-1] >= bottom / 2  # the reference line stays inside the data's range
            ax.plot(x[keep], top * x[keep] / x[-1], color="#444444", linestyle=":", linewidth=1,
                    label="slope 1 (time ∝ size)")
        ax.set(xscale="log", yscale="log", xlabel="elements (log scale)", ylabel=f"time per call ({unit}, median)",
               title=f"{group}: x marks the bend" + (" (dashed: fixed cost of a compiled call)"
                                                     if group == "compiled" and costs else ""))
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(title or "x + 1: the overhead floor, then the bandwidth slope")
    return fig
