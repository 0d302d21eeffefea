"""Figures of notebook 01: cumulative time's crossover, compilations per strategy, the losses' difference between
compiled and eager, and the small-size speed-up against the overhead model."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated

import numpy as np

from course_utils import declare, intervals, plotting, timing
from course_utils.declare import NonEmpty, Range
from course_utils.graphs.breakeven import OverheadModel, break_even_range, cumulative_time
from course_utils.graphs.training import LossRun

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_FLOOR = 1e-10  # where an exact zero difference is drawn on a log axis


@declare.checked
def crossover_plot(pairs: Annotated[Mapping[str, tuple[timing.Measurement, timing.Measurement]], NonEmpty,
                                    declare.MaxItems(12)],
                   speeds: Mapping[str, intervals.Speedup], *, title: declare.Text | None = None) -> Figure:
    """Cumulative time vs number of calls, eager and compiled (medians), one panel per name of ``pairs``; the
    break-even range the interval in ``speeds`` gives is shaded and labelled (none where it gives none)."""
    fig, axes = plotting.figure(len(pairs), width=3.6 * len(pairs), height=3.4)
    for ax, (name, (eager, compiled)) in zip(axes, pairs.items()):
        found = break_even_range(eager, compiled, speeds[name])
        top = 10 ** math.ceil(math.log10(max(1e4, 10 * found[1] if found and math.isfinite(found[1]) else 1e5)))
        calls = np.unique(np.logspace(0, math.log10(top), 200).round())
        ax.plot(calls, cumulative_time(eager.first_call or eager.median, eager.median, calls), color="#555555",
                linestyle="--", label="eager")
        ax.plot(calls, cumulative_time(compiled.first_call, compiled.median, calls), color=plotting.color_for(name),
                label="compiled")
        if found:
            ax.axvspan(found[0], min(found[1], top), color=plotting.color_for(name), alpha=0.15, linewidth=0)
            span = f"{found[0]:,.0f}" + (f" to {found[1]:,.0f}" if found[1] != found[0] else "")
            note = f"break-even: {span} call{'s' if found[1] > 1 else ''} (interval)"
        else:
            note = f"no break-even: compiled {speeds[name].outcome} (interval)"
        ax.text(0.97, 0.04, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
        ax.set(xscale="log", yscale="log", xlabel="number of calls", title=name)
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel("cumulative time (s)")
    if title:
        fig.suptitle(title)
    return fig


@declare.checked
def compile_count_bars(counts: Annotated[Mapping[str, Annotated[Mapping[str, Annotated[int, Range(0)]], NonEmpty]],
                                         NonEmpty], *, calls: declare.PositiveInt | None = None,
                       title: declare.Text | None = None) -> Figure:
    """Horizontal bars: compilations (traces) per framework and strategy; ``calls`` drawn as a dashed line."""
    rows = [(f"{fw}: {strategy}", n, plotting.color_for(fw, i))
            for i, (fw, strategies) in enumerate(counts.items()) for strategy, n in strategies.items()]
    fig, (ax,) = plotting.figure(width=6.4, height=0.6 + 0.32 * len(rows))
    ax.barh([r[0] for r in rows], [r[1] for r in rows], color=[r[2] for r in rows])
    for y, (_, n, _) in enumerate(rows):
        ax.text(n, y, f" {n}", va="center", fontsize=8)
    if calls is not None:
        ax.axvline(calls, color="#333333", linestyle="--", linewidth=1, label=f"{calls} calls with {calls} shapes")
        ax.legend(loc="lower right", fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="compilations (traces)", title=title or "How often each function was compiled")
    return fig


@declare.checked
def loss_difference_plot(runs: Annotated[Sequence[LossRun], NonEmpty], *, title: declare.Text | None = None) -> Figure:
    """|compiled loss - eager loss| per step on a log axis, one line per framework (zeros drawn at 1e-10)."""
    fig, (ax,) = plotting.figure(width=6.4, height=3.6)
    for i, run in enumerate(runs):
        raw = np.abs(np.subtract(run.compiled, run.eager))
        label = f"{run.framework} (0 at every step)" if not raw.any() else run.framework
        ax.plot(range(1, len(raw) + 1), np.maximum(raw, _FLOOR), marker="o", markersize=3,
                color=plotting.color_for(run.framework, i), label=label)
    ax.axhline(_FLOOR, color="#999999", linewidth=0.6, linestyle=":")
    ax.text(1, _FLOOR * 1.5, "identical (0) drawn here", fontsize=7, color="#666666")
    ax.set(yscale="log", xlabel="step", ylabel="|compiled loss - eager loss|",
           title=plotting.wrap_label(title or "Training losses: compiled minus eager, same program and weights", 60))
    fig.legend(loc="outside lower center", ncols=len(runs), fontsize=8)
    return fig


@declare.checked
def overhead_plot(models: Annotated[Sequence[OverheadModel], NonEmpty], *, title: declare.Text | None = None) -> Figure:
    """Predicted (computed) vs measured small-size speed-up per framework, the op count as a dashed line."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, (ax,) = plotting.figure(width=6.0, height=3.6)
    x = np.arange(len(models))
    ax.bar(x - 0.2, [m.predicted for m in models], width=0.4, color="#BBBBBB", hatch="//", edgecolor="white")
    ax.bar(x + 0.2, [m.measured for m in models], width=0.4,
           color=[plotting.color_for(m.framework, i) for i, m in enumerate(models)])
    ax.axhline(models[0].n_ops, color="#333333", linestyle="--", linewidth=1)
    ax.set_xticks(x, [m.framework for m in models])
    ax.set(yscale="log", ylabel="speed-up over own eager", title=title or "Small tensors: the per-call overhead model")
    plotting.plain_log_ticks(ax)
    handles = [Patch(facecolor="#BBBBBB", hatch="//", edgecolor="white", label="predicted (computed)"),
               Patch(facecolor="white", edgecolor="#333333", label="measured (in the framework's colour)"),
               Line2D([], [], color="#333333", linestyle="--", label=f"op count ({models[0].n_ops})")]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    return fig
