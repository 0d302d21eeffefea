"""The figures of notebook 05."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from course_utils import declare, plotting
from course_utils.distributed import comms

_Seconds = Annotated[float, declare.NonNegative]


def diagram() -> Any:
    """Data parallelism in one picture: replicate the model, shard the batch, all-reduce the gradients, step."""
    fig, (ax,) = plotting.figure(width=9.0, height=3.6)
    ax.set_axis_off()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.2)
    colors = [plotting.PALETTE[0], plotting.PALETTE[1]]
    box = {"boxstyle": "round,pad=0.3", "facecolor": "white"}
    ax.text(0.9, 2.1, "global batch\n(B samples)", ha="center", va="center", bbox={**box, "edgecolor": "#333"})
    for i, y in enumerate((3.2, 1.0)):
        c = colors[i]
        mid = 2.1 + (0.5 if i == 0 else -0.5)
        ax.annotate("", (2.3, y), (1.6, 2.1), arrowprops={"arrowstyle": "->", "color": c})
        ax.text(3.0, y, f"shard {i}\nB/2 samples", ha="center", va="center", bbox={**box, "edgecolor": c})
        ax.text(5.0, y, f"device {i}\nsame weights W\nforward + backward", ha="center", va="center",
                bbox={**box, "edgecolor": c})
        ax.annotate("", (4.1, y), (3.7, y), arrowprops={"arrowstyle": "->", "color": c})
        ax.text(8.9, y, "W ← W − lr·ḡ\n(identical on\nevery device)", ha="center", va="center",
                bbox={**box, "edgecolor": c})
        ax.annotate("", (6.5, mid), (6.0, y), arrowprops={"arrowstyle": "->", "color": c})
        ax.annotate("", (8.1, y), (7.6, mid), arrowprops={"arrowstyle": "->", "color": c})
    ax.text(7.05, 2.1, "all-reduce\nḡ = mean(g₀, g₁)", ha="center", va="center",
            bbox={**box, "edgecolor": "#009E73", "facecolor": "#e8f6f1"})
    ax.set_title("Data parallelism: replicate, shard the batch, all-reduce the gradients, step")
    return fig


_Diffs = Annotated[Mapping[Annotated[str, declare.Matches(r"step\d+", "a checkpoint 'stepN'")],
                           Annotated[float, declare.NonNegative]], declare.NonEmpty]


@declare.checked
def proof_plot(rank_diff: _Diffs, single_diff: _Diffs) -> Any:
    """The largest weight difference at each checkpoint ("stepN"): rank 0 against rank 1, and against one process."""
    if list(rank_diff) != list(single_diff):
        raise ValueError("rank_diff and single_diff must have the same checkpoints, in the same order")
    steps = [int(c.removeprefix("step")) for c in rank_diff]
    fig, (ax,) = plotting.figure(width=6.4, height=3.4)
    floor = 1e-12
    ax.plot(steps, [max(v, floor) for v in single_diff.values()], marker="o", label="DDP rank 0 vs one process")
    ax.plot(steps, [max(v, floor) for v in rank_diff.values()], marker="s",
            label=f"rank 0 vs rank 1 (0 drawn at {floor:g})")
    ax.axhline(1e-5, color="#333333", linestyle="--", linewidth=1, label="tolerance 1e-5")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("max |weight difference|")
    ax.set_title("Two DDP ranks vs each other and vs one process on the whole batch")
    ax.legend(fontsize=8)
    return fig


_Parts = tuple[_Seconds, _Seconds, _Seconds]  # (compute, all-reduce, step) seconds


@declare.checked
def breakdown_plot(groups: Annotated[Mapping[str, Annotated[Mapping[str, _Parts], declare.NonEmpty]], declare.NonEmpty],
                   *, title: declare.Text = "Where a step's time goes") -> Any:
    """One panel per group, one bar per label from (compute, all-reduce, step) seconds: the two parts (each measured
    alone) stacked, then the rest of the step (computed; a black tick marks a step shorter than its parts)."""
    rows_max = max(len(g) for g in groups.values())
    fig, axes = plotting.figure(len(groups), width=5.2 * len(groups), height=1.4 + 0.55 * rows_max)
    for ax, (group, rows) in zip(axes, groups.items()):
        names = list(rows)
        compute, comm, step = (np.array([rows[n][i] for n in names]) * 1e3 for i in range(3))
        rest = np.maximum(step - compute - comm, 0.0)
        ax.barh(names, compute, color=plotting.PALETTE[0], label="compute (measured)")
        ax.barh(names, comm, left=compute, color=plotting.PALETTE[1], label="all-reduce, timed alone (measured)")
        ax.barh(names, rest, left=compute + comm, color="#BBBBBB", hatch="//",
                label="rest of the step (step − compute − all-reduce, computed)")
        for y, (s, c, m) in enumerate(zip(step, compute, comm)):
            if c + m > s:
                ax.plot([s, s], [y - 0.4, y + 0.4], color="black", linewidth=2)
            ax.text(max(s, c + m), y, f" step {s:.3g} ms", va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, float(np.maximum(step, compute + comm).max()) * 1.5 or 1.0)
        ax.set_xlabel("time per step (ms, median)")
        ax.set_title(group, fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=8)
    fig.suptitle(title)
    return fig


@declare.checked
def allreduce_fit_plot(cost: comms.AllReduceCost, others: Mapping[int, comms.AllReduceCost] | None = None) -> Any:
    """The all-reduce sweep (median per size) against message size, with the model fitted on it and the band of
    its 95% interval over rounds; ``others`` (process count -> cost) are drawn against the same model."""
    others = dict(others or {})
    fig, (ax,) = plotting.figure(width=6.8, height=4.0)
    for i, (n, c) in enumerate([(cost.nprocs, cost), *sorted(others.items())]):
        where = "cost" if i == 0 else f"others[{n}]"
        if len(c.sweep) != 2 or len(c.sweep[0]) != len(c.sweep[1]) or not len(c.sweep[0]):
            raise ValueError(f"{where}.sweep must be (bytes, seconds) of one non-empty length; got lengths "
                             f"{[len(part) for part in c.sweep]}")
        b = np.asarray(c.sweep[0], dtype=float)
        color = plotting.PALETTE[i % len(plotting.PALETTE)]
        kind = "fitted" if c is cost else "out of sample"
        ax.scatter(b, np.asarray(c.sweep[1]) * 1e3, color=color, zorder=3, label=f"measured, N={n} ({kind})")
        grid = np.logspace(np.log10(max(b.min(), 1.0)), np.log10(b.max()), 60)
        bands = np.array([cost.predict(g, n) for g in grid])
        ax.plot(grid, bands[:, 0] * 1e3, color=color, linestyle="-" if c is cost else "--")
        ax.fill_between(grid, bands[:, 1] * 1e3, bands[:, 2] * 1e3, color=color, alpha=0.2, linewidth=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plotting.plain_log_ticks(ax)  # 0.3, 2, 4 ms: not 3x10^-1
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("all-reduce time (ms)")
    lat, bw = cost.model.latency, cost.model.bandwidth
    ax.set_title(plotting.wrap_label(f"Ring model fitted on N={cost.nprocs}: {lat * 1e6:.3g} µs/step, "
                                     f"{bw / 1e9:.3g} GB/s (lines: computed; bands: 95% interval over rounds)", 70),
                 fontsize=9)
    ax.legend(fontsize=8)
    return fig


_Devices = Annotated[int, declare.Range(1, 1 << 20)]  # a device count: [0] is refused naming devices
_Link = tuple[Annotated[float, declare.Positive], Annotated[float, declare.NonNegative]]  # (bytes/s, latency s)


@declare.checked
def scaling_plot(nbytes: Annotated[float, declare.Positive],
                 compute_seconds: Annotated[float, declare.Range(0, 3600, low_open=True)],
                 links: Annotated[Mapping[str, _Link], declare.NonEmpty],
                 devices: Annotated[Sequence[_Devices], declare.NonEmpty] = (2, 8, 64, 512),
                 *, compute_label: declare.Text = "assumed compute per step") -> Any:
    """Computed all-reduce time (left) and scaling efficiency (right, no overlap) against device count per link
    (label -> (bytes/s, latency s)); ``compute_seconds`` is an assumption about those devices, not this CPU's time."""
    fig, (left, right) = plotting.figure(2, width=10.0, height=3.8)
    n = np.asarray(devices)
    for i, (label, (bw, lat)) in enumerate(links.items()):
        t = comms.ring_allreduce_time(nbytes, n, bw, lat)
        color = plotting.PALETTE[i % len(plotting.PALETTE)]
        left.plot(n, t * 1e3, marker="o", color=color, label=label)
        right.plot(n, compute_seconds / (compute_seconds + t), marker="o", color=color, label=label)
    left.axhline(compute_seconds * 1e3, color="#333333", linestyle="--", linewidth=1,
                 label=f"{compute_label}: {compute_seconds * 1e3:.3g} ms")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(devices), [str(d) for d in devices])
        ax.set_xlabel("devices N")
    left.set_yscale("log")
    left.set_ylabel("all-reduce time (ms, computed)")
    left.set_title(f"Ring all-reduce of {nbytes / 1e6:.3g} MB")
    right.set_ylabel("scaling efficiency (no overlap)")
    right.set_ylim(0, 1.05)
    right.set_title("compute / (compute + all-reduce)")
    left.legend(fontsize=8)
    return fig
