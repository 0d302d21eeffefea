"""Notebook 02's figures: predicted vs measured times, % of roof per variant, speed-up against size with the
caches marked, and the roofline with the vector units' own ceiling."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated

from course_utils import declare, display, env, plotting, roofline
from course_utils.declare import NonEmpty, NonNegativeFloat, PositiveFloat, PositiveInt, SameLength, Text
from course_utils.fusion.traffic import PredictionTable
from course_utils.fusion.vector_roof import VectorRoof

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@declare.checked
def prediction_plot(table: PredictionTable, *, title: Text | None = None) -> Figure:
    """Measured time per variant (bars) with the roofline prediction for its bytes (black ticks)."""
    rows = list(table.rows)
    scale, unit = display.time_unit(min(min(r.seconds, r.predicted) for r in rows))
    fig, (ax,) = plotting.figure(height=0.8 + 0.42 * len(rows))
    names = [r.name for r in rows]
    ax.barh(names, [r.seconds / scale for r in rows], color=[plotting.color_for(n, i) for i, n in enumerate(names)],
            label="measured (median)")
    ax.scatter([r.predicted / scale for r in rows], names, marker="|", s=400, color="#111111", zorder=3,
               label="computed: bytes / bandwidth")
    for y, r in enumerate(rows):
        ax.text(r.seconds / scale, y, f" {display.percent(r.fraction_of_bandwidth)} of roof", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set(xscale="log", xlabel=f"time per call ({unit}, log scale)",
           title=title or "Predicted from bytes moved vs measured")
    ax.legend(loc="lower right", fontsize=8)
    return fig


@declare.checked
def roof_bars(fractions: Annotated[Mapping[Text, NonNegativeFloat], NonEmpty], *, title: Text | None = None,
              xlabel: Text | None = None) -> Figure:
    """Horizontal bars of each variant's fraction of its roof (1.0 = on the roof), a line at 100%."""
    values = dict(fractions)
    fig, (ax,) = plotting.figure(height=0.9 + 0.38 * len(values))
    names = list(values)
    ax.barh(names, [100 * v for v in values.values()], color=[plotting.color_for(n, i) for i, n in enumerate(names)])
    for y, v in enumerate(values.values()):
        ax.text(100 * v, y, f" {display.percent(v)}", va="center", fontsize=8)
    ax.axvline(100, color="#222222", linewidth=1)
    ax.invert_yaxis()
    ax.set(xlim=(0, max(110, 115 * max(values.values()))), xlabel=xlabel or "% of the memory roof (measured bandwidth)",
           title=title or "How close each variant gets to its roof")
    return fig


Series = Annotated[Sequence[PositiveFloat], NonEmpty, SameLength("sizes_bytes")]


@declare.checked
def speedup_vs_size_plot(sizes_bytes: Annotated[Sequence[PositiveFloat], NonEmpty],
                         speedups: Annotated[Mapping[Text, Series], NonEmpty], *,
                         predicted: PositiveFloat | None = None,
                         caches: Mapping[Text, PositiveInt] | None = None, title: Text | None = None) -> Figure:
    """Speed-up of fused over op-by-op against the bytes one tensor holds (log x), one series per entry of
    ``speedups`` (as long as ``sizes_bytes``); every cache level marked, one beyond the sizes as an arrow."""
    caches = env.cache_sizes() if caches is None else caches
    fig, (ax,) = plotting.figure(width=7.0, height=4.0)
    for i, (label, values) in enumerate(speedups.items()):
        ax.plot(sizes_bytes, values, marker="o", color=plotting.color_for(label, i), label=label)
    ax.axhline(1.0, color="#333333", linewidth=1, linestyle="--")
    if predicted is not None:
        ax.axhline(predicted, color="#888888", linewidth=1, linestyle=":",
                   label=f"bytes ratio {predicted:.1f}x (computed)")
    low, high = min(sizes_bytes) / 2, max(sizes_bytes) * 2
    ax.set_xscale("log", base=2)
    ax.set(yscale="log", xlim=(low, high))
    for name, size in caches.items():
        text = f"{name} {display.format_bytes(size)}"
        if size > high:
            ax.annotate(f"{text} →", (high, 1.0), xycoords="data", ha="right", textcoords="offset points",
                        xytext=(-3, -14), fontsize=8, color="#666666")
        elif size >= low:
            ax.axvline(size, color="#bbbbbb", linewidth=1)
            ax.annotate(text, (size, 1.0), textcoords="offset points", xytext=(3, 6), fontsize=8, color="#666666")
    ax.set(xlabel="size of one tensor (bytes, log scale)", ylabel="speed-up of fused over op-by-op (log scale)",
           title=title or "Fusion speed-up against tensor size")
    ax.legend(fontsize=8)
    return fig


@declare.checked
def roofline_with_vector_roof(machine: roofline.Machine, vector: VectorRoof | Mapping[str, VectorRoof] | None,
                              points: Iterable[roofline.Point] = (), *, flops: NonNegativeFloat | None = None,
                              tanh: NonNegativeFloat = 0.0, title: Text | None = None) -> Figure:
    """The machine's roofline plus each framework's vector roof measured in cache: its multiply-add rate, or, given
    ``flops`` and ``tanh`` per element, the FLOP/s ceiling of that kernel."""
    roofs = dict(vector) if isinstance(vector, Mapping) else {} if vector is None else {vector.framework: vector}
    fig = plotting.roofline_plot(machine, list(points), title=title)
    ax = fig.axes[0]
    for i, (name, roof) in enumerate(roofs.items()):
        rate = roof.flops_per_second if flops is None else roof.chain_flops_per_second(flops=flops, tanh=tanh)
        what = "elementwise FMA" if flops is None else f"{flops:g} FLOPs + {tanh:g} tanh per element"
        ax.axhline(rate / 1e9, color=plotting.color_for(name, i), linestyle="--", linewidth=1.5,
                   label=plotting.wrap_label(f"{name} vector roof ({what}, in cache): {rate / 1e9:.1f} GFLOP/s"))
    if roofs:  # one legend below the axes for the roofline's entries and these (labels never overlap the lines)
        for legend in list(fig.legends):
            legend.remove()
        fig.legend(loc="outside lower center", fontsize=8)
    return fig
