"""The figures of notebook 05: the data-parallel diagram, where a step's time goes, the all-reduce fit
against measurement, and the computed scaling of a ring all-reduce over typical links.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from course_utils import plotting, validate
from course_utils.distributed import comms


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


def breakdown_plot(groups: Mapping[str, Mapping[str, tuple[float, float]]],
                   *, title: str = "Where a step's time goes") -> Any:
    """One panel per group (e.g. model): stacked bars of compute and exposed communication (seconds) per label."""
    validate.non_empty("groups", groups)
    for group, rows in groups.items():
        validate.non_empty(f"groups[{group!r}]", rows)
        for label, pair in rows.items():
            if len(pair) != 2:
                raise ValueError(f"groups[{group!r}][{label!r}] must be (compute, communication) seconds")
            for part in pair:
                validate.non_negative(f"groups[{group!r}][{label!r}]", part)
    rows_max = max(len(g) for g in groups.values())
    fig, axes = plotting.figure(len(groups), width=5.0 * len(groups), height=1.2 + 0.55 * rows_max)
    for ax, (group, rows) in zip(axes, groups.items()):
        names = list(rows)
        compute = np.array([rows[n][0] for n in names]) * 1e3
        comm = np.array([rows[n][1] for n in names]) * 1e3
        ax.barh(names, compute, color=plotting.PALETTE[0], label="compute (forward + backward + update)")
        ax.barh(names, comm, left=compute, color=plotting.PALETTE[1], label="communication not hidden by compute")
        for y, (c, m) in enumerate(zip(compute, comm)):
            share = m / (c + m) if c + m > 0 else 0.0
            ax.text(c + m, y, f" {c + m:.3g} ms ({share:.0%} comm)", va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, float((compute + comm).max()) * 1.6 or 1.0)
        ax.set_xlabel("time per step (ms, median)")
        ax.set_title(group)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2)
    fig.suptitle(title)
    return fig


def allreduce_fit_plot(sweeps: Mapping[int, tuple[Sequence[float], Sequence[float]]],
                       model: comms.AllReduceModel) -> Any:
    """Measured all-reduce times against message size for each process count, with the model's lines.

    ``sweeps`` maps a process count N to (bytes, seconds); the model was fitted on ``model.fitted_on`` only,
    so the other counts are out of sample.
    """
    validate.non_empty("sweeps", sweeps)
    validate.instance("model", model, comms.AllReduceModel)
    fig, (ax,) = plotting.figure(width=6.8, height=4.0)
    for i, (n, (nbytes, seconds)) in enumerate(sorted(sweeps.items())):
        b = np.asarray(nbytes, dtype=float)
        color = plotting.PALETTE[i % len(plotting.PALETTE)]
        kind = "fitted" if n == model.fitted_on else "out of sample"
        ax.scatter(b, np.asarray(seconds) * 1e3, color=color, zorder=3, label=f"measured, N={n} ({kind})")
        grid = np.logspace(np.log10(max(b.min(), 1.0)), np.log10(b.max()), 100)
        ax.plot(grid, model.time(grid, n) * 1e3, color=color, linestyle="-" if n == model.fitted_on else "--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("all-reduce time (ms)")
    ax.set_title(f"Ring model fitted on N={model.fitted_on}: {model.latency * 1e6:.3g} µs/step, "
                 f"{model.bandwidth / 1e9:.3g} GB/s (lines: computed)", fontsize=10)
    ax.legend(fontsize=8)
    return fig


def scaling_plot(nbytes: float, compute_seconds: float, links: Mapping[str, tuple[float, float]],
                 devices: Sequence[int] = (2, 8, 64, 512), *, compute_label: str = "assumed compute per step") -> Any:
    """Computed all-reduce time (left) and scaling efficiency (right) against device count, per link type.

    ``links`` maps a label to (bytes/s, latency s). ``compute_seconds`` is an assumption about the devices
    the links connect, not this CPU's time. Efficiency assumes no overlap: compute / (compute + all-reduce).
    """
    nbytes = validate.positive("nbytes", nbytes)
    compute_seconds = validate.positive("compute_seconds", compute_seconds)
    validate.non_empty("links", links)
    validate.non_empty("devices", devices)
    fig, (left, right) = plotting.figure(2, width=10.0, height=3.8)
    n = np.asarray(devices, dtype=float)
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
