"""The figures of notebook 06: model state per rank (measured vs formula), the elastic job's timeline, and
the cost model's predictions against the measured times.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from course_utils import plotting, validate


def memory_plot(held: Mapping[str, Mapping[str, float]], formula: Mapping[str, float], *, ranks: int) -> Any:
    """Stacked bars of measured bytes per rank (params, grads, optimizer) per training kind; formula as a tick."""
    validate.non_empty("held", held)
    names = list(held)
    fig, (ax,) = plotting.figure(width=7.0, height=3.4)
    left = np.zeros(len(names))
    for i, part in enumerate(("params", "grads", "optimizer")):
        values = np.array([held[n][part] for n in names]) / 2**20
        ax.barh(names, values, left=left, color=plotting.PALETTE[i], label=f"{part} (measured)")
        left += values
    for j, name in enumerate(names):
        if name in formula:
            x = formula[name] / 2**20
            ax.plot([x, x], [j - 0.4, j + 0.4], color="#333333", linewidth=2,
                    label="16 B/param split over N (computed)" if j == 0 else None)
    ax.invert_yaxis()
    ax.set_xlabel("MiB per rank")
    ax.set_title(f"Model state held by one rank, {ranks} ranks")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def elastic_timeline(computed: Mapping[int, list[int]], *, every: int, crash_at: int, steps: int) -> Any:
    """Steps computed by each attempt on a step axis, checkpoints as lines, the crash as a cross."""
    validate.non_empty("computed", computed)
    fig, (ax,) = plotting.figure(width=7.0, height=2.4)
    for attempt, done in sorted(computed.items()):
        ax.barh([f"attempt {attempt}"], [len(done)], left=[done[0] if done else 0], height=0.5,
                color=plotting.PALETTE[attempt % len(plotting.PALETTE)])
    for c in range(every, steps + 1, every):
        ax.axvline(c, color="#009E73", linestyle="--", linewidth=1)
    ax.plot([crash_at], ["attempt 0"], marker="X", markersize=12, color="#D55E00", linestyle="none",
            label=f"crash at step {crash_at}")
    ax.plot([], [], color="#009E73", linestyle="--", label=f"checkpoint every {every} steps")
    ax.set_xlim(0, steps)
    ax.invert_yaxis()
    ax.set_xlabel("training step")
    ax.set_title("Two attempts of one elastic job: steps computed")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def prediction_plot(rows: Mapping[str, Any], *, title: str = "Cost model vs measurement") -> Any:
    """Paired bars: predicted (computed) and measured seconds for each labelled quantity.

    ``rows`` maps a label to (predicted, measured) or to a row of ``sharded.step_predictions``.
    """
    validate.non_empty("rows", rows)
    rows = {k: (v["predicted"], v["measured"]) if isinstance(v, Mapping) else tuple(v) for k, v in rows.items()}
    names = list(rows)
    y = np.arange(len(names))
    fig, (ax,) = plotting.figure(width=7.0, height=1.0 + 0.6 * len(names))
    ax.barh(y - 0.2, [rows[n][0] * 1e3 for n in names], height=0.4, color=plotting.PALETTE[0],
            label="predicted (computed)")
    ax.barh(y + 0.2, [rows[n][1] * 1e3 for n in names], height=0.4, color=plotting.PALETTE[1], label="measured")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    return fig
