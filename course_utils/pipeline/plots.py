"""The figures of notebook 04: samples, step timelines (Gantt), the stall in a trace, before/after, the worker sweep."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import numpy as np

from course_utils import declare, plotting, profile
from course_utils.pipeline.dataset import MEAN, STD, SyntheticImages
from course_utils.pipeline.loop import MAX_ROUNDS, BeforeAfter, Timeline, Timelines, timeline_list
from course_utils.pipeline.stall import STEP_MARK, Stalls

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WAIT_COLOR = "#bbbbbb"


def _legend(fig: Figure, colors: Mapping[str, str]) -> None:
    """One legend under the axes: grey waits for data, each framework's colour computes."""
    from matplotlib.patches import Patch

    handles = [Patch(color=WAIT_COLOR, label="waiting for data")]
    handles += [Patch(color=c, label=f"computing ({name})") for name, c in colors.items()]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)))


@declare.checked
def samples_plot(dataset: SyntheticImages, count: Annotated[int, declare.Range(1, 16)] = 8) -> Figure:
    """The first ``count`` augmented samples, as the model receives them (normalised; shown rescaled to [0, 1])."""
    if count > len(dataset):
        raise ValueError(f"count must be at most len(dataset) = {len(dataset)}; got {count}")
    fig, axes = plotting.figure(count, width=1.2 * count, height=1.6)
    for i, ax in enumerate(axes):
        x, y = dataset[i]
        ax.imshow(np.clip(x.transpose(1, 2, 0) * STD + MEAN, 0, 1))
        ax.set_title(f"class {y}", fontsize=9)
        ax.axis("off")
    fig.suptitle("Synthetic samples after decode + augment (seeded: the same on every run)")
    return fig


@declare.checked
def trace_plot(trace: profile.Trace, stalls: Stalls, *, steps: Annotated[int, declare.Range(1, 50)] = 3,
               title: declare.Text | None = None) -> Figure:
    """The training thread of ``trace`` over ``steps`` marked steps: the steps, the loader's calls, the gaps."""
    from matplotlib.patches import Patch

    marked = sorted((e for e in trace.events if e.thread == stalls.thread and e.name == STEP_MARK),
                    key=lambda e: e.start)
    if len(marked) < 2:
        raise ValueError(f"trace must hold at least two {STEP_MARK!r} events on thread {stalls.thread!r}")
    shown = marked[1:steps + 2] if len(marked) > steps + 1 else marked  # the first step holds the loader's start
    start, end = shown[0].start, shown[-1].end
    loader = [e for e in trace.events if e.thread == stalls.thread and "DataLoader" in e.name
              and e.end > start and e.start < end]
    fig, (ax,) = plotting.figure(width=8.0, height=2.6)
    step_color = plotting.color_for("torch")
    ax.broken_barh([((e.start - start) * 1e3, e.duration * 1e3) for e in shown], (0.55, 0.4), facecolors=step_color)
    ax.broken_barh([((max(e.start, start) - start) * 1e3, (min(e.end, end) - max(e.start, start)) * 1e3)
                    for e in loader], (0.05, 0.4), facecolors=WAIT_COLOR)
    for a, b in zip(shown, shown[1:]):
        gap = b.start - a.end
        if gap > 0:
            ax.annotate(f"{gap * 1e3:.1f} ms idle", xy=((a.end + gap / 2 - start) * 1e3, 1.02), ha="center",
                        va="bottom", fontsize=9)
    ax.set_ylim(0, 1.3)
    ax.set_yticks([0.25, 0.75], ["loader calls", "train steps"])
    ax.set_xlabel(f"ms on the training thread ({stalls.label}), from the second marked step")
    ax.grid(axis="y", visible=False)
    handles = [Patch(color=step_color, label=f"'{STEP_MARK}': the model computes"),
               Patch(color=WAIT_COLOR, label="DataLoader __next__: the batch is made here")]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=9)
    ax.set_title(title or "The stall in the trace: between steps, the training thread makes the next batch")
    return fig


@declare.checked
def timeline_plot(timelines: Timelines, *, title: declare.Text | None = None,
                  width: Annotated[float, declare.Range(2, 40)] = 9.0,
                  epoch: Annotated[int, declare.Range(0, MAX_ROUNDS)] | None = None) -> Figure:
    """Gantt chart, one row per loop (of ``epoch`` alone if given): grey waits, coloured computes; the first
    wait is written on the right so that one slow start squashes no row."""
    timelines = timeline_list(timelines)
    if epoch is not None:
        timelines = [t.epoch(epoch) for t in timelines]
    fig, (ax,) = plotting.figure(width=width, height=1.9 + 0.42 * len(timelines))
    shift = [t.starts[0] + t.waits[0] for t in timelines]
    end = max(t.starts[-1] + t.waits[-1] + t.computes[-1] - s for t, s in zip(timelines, shift)) * 1e3
    colors: dict[str, str] = {}
    for row, (t, s) in enumerate(zip(timelines, shift)):
        name = t.label.split(",")[0].split()[0].strip().lower()  # "torch, num_workers=0" -> "torch"
        color = colors.setdefault(name, plotting.color_for(name, len(colors)))
        starts = (np.asarray(t.starts) - s) * 1e3
        waits, computes = np.asarray(t.waits) * 1e3, np.asarray(t.computes) * 1e3
        ax.broken_barh(list(zip(starts[1:], waits[1:])), (row - 0.35, 0.7), facecolors=WAIT_COLOR, edgecolor="none")
        ax.broken_barh(list(zip(starts + waits, computes)), (row - 0.35, 0.7), facecolors=color,
                       edgecolor="white", linewidth=0.3)
        ax.text(end * 1.01, row, f"{t.utilisation:.0%} · start-up {t.startups[0] * 1e3:.0f} ms", va="center",
                ha="left", fontsize=8)
    ax.set_yticks(range(len(timelines)), [t.label for t in timelines])
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.32)
    ax.set_xlabel("ms since the first batch arrived; right: utilisation (busy share, steady steps) · first wait")
    ax.grid(axis="y", visible=False)
    _legend(fig, colors)
    ax.set_title(title or "Where each step's time goes")
    return fig


@declare.checked
def utilisation_plot(before_after: BeforeAfter, *, title: declare.Text | None = None) -> Figure:
    """Two panels, before vs after per framework: steady step time (compute + wait stacked) and utilisation."""
    fig, (left, right) = plotting.figure(2, width=9.5, height=1.6 + 0.75 * len(before_after))
    names, waits, computes, utils, colors = [], [], [], [], []
    for framework, pair in before_after.items():
        for tag, t in zip(("before", "after"), pair):
            names.append(f"{framework} {tag}")
            waits.append(t.wait_time * 1e3)
            computes.append(t.compute_time * 1e3)
            utils.append(t.utilisation * 100)
            colors.append(plotting.color_for(framework))
    y = np.arange(len(names))
    left.barh(y, computes, color=colors)
    left.barh(y, waits, left=computes, color=WAIT_COLOR)
    left.set_yticks(y, names)
    left.invert_yaxis()
    left.set_xlabel("steady step time (ms)")
    _legend(fig, {f: plotting.color_for(f) for f in before_after})
    right.barh(y, utils, color=colors)
    for yy, u in zip(y, utils):
        right.text(u, yy, f" {u:.0f}%", va="center")
    right.set_yticks(y, [])
    right.invert_yaxis()
    right.set_xlim(0, 115)
    right.set_xlabel("utilisation: busy share of the step (%)")
    fig.suptitle(title or "Before and after: step time and utilisation")
    return fig


@declare.checked
def workers_plot(runs: Annotated[Mapping[Annotated[int, declare.Range(0, 1024)], Timeline], declare.NonEmpty], *,
                 free_cores: Annotated[int, declare.Range(1, 1024)], title: declare.Text | None = None) -> Figure:
    """Median step and compute per worker count against the model max(compute, data / min(n, free))."""
    if 0 not in runs:
        raise ValueError("runs must include 0 workers (the data time and compute time of the model come from it)")
    counts = sorted(runs)
    data_time, compute_time = runs[0].part("wait").median, runs[0].part("compute").median
    model = [data_time + compute_time if n == 0 else max(compute_time, data_time / min(n, free_cores))
             for n in counts]
    fig, (ax,) = plotting.figure(width=6.4, height=3.8)
    color = plotting.color_for("torch")
    ax.plot(counts, [runs[n].part().median * 1e3 for n in counts], "o-", color=color, label="median step")
    ax.plot(counts, [runs[n].part("compute").median * 1e3 for n in counts], "o:", color=color, alpha=0.6,
            label="median compute per step")
    ax.plot(counts, [m * 1e3 for m in model], "s--", color="#555555",
            label="model (computed): max(compute, data / workers)")
    ax.axvline(free_cores, color=WAIT_COLOR, linestyle=":", label=f"cores free for data = {free_cores}")
    ax.set_xticks(counts)
    ax.set_xlabel("DataLoader num_workers")
    ax.set_ylabel("ms per steady step")
    ax.set_ylim(0, None)
    ax.set_title(title or "Workers against cores")
    fig.legend(loc="outside lower center", ncols=2, fontsize=8)
    return fig
