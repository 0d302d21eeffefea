"""The figures of notebook 06: model state per rank (measured vs formula), the elastic job's timeline, and 05's cost
model's predictions against the measured steps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np

from course_utils import declare, plotting
from course_utils.beyond import sharded
from course_utils.beyond.elastic import ElasticRun


def memory_plot(result: Any) -> Any:
    """Stacked bars of the bytes one rank held (params, grads, DDP's extra buckets, optimizer: measured, the largest
    rank of each kind) with the formula's bytes as a tick (computed), for a ``sharded.run`` result."""
    held, formula = sharded.held_bytes(result), sharded.formula_bytes(sharded.params(result), sharded.world(result))
    kinds = ("ddp", sharded.DEFAULT_DDP, "zero1", "fsdp2")
    worst = {k: max(held[k].values(), key=lambda h: sum(h.values())) for k in kinds}
    names = [sharded.LABELS[k] for k in kinds]
    fig, (ax,) = plotting.figure(width=7.0, height=3.6)
    left = np.zeros(len(kinds))
    for i, part in enumerate(("params", "grads", "buckets", "optimizer")):
        values = np.array([worst[k].get(part, 0) for k in kinds]) / 2**20
        ax.barh(names, values, left=left, color=plotting.PALETTE[i], label=f"{part} (measured)")
        left += values
    for j, kind in enumerate(kinds):
        x = formula[kind] / 2**20
        ax.plot([x, x], [j - 0.4, j + 0.4], color="#333333", linewidth=2,
                label="formula: 16 (20) B/param split over N (computed)" if j == 0 else None)
    ax.invert_yaxis()
    ax.set_xlabel("MiB per rank")
    ax.set_title(f"Model state held by one rank (the largest), {sharded.world(result)} ranks")
    ax.legend(fontsize=8, loc="lower right")
    return fig


@declare.checked
def elastic_timeline(run: ElasticRun) -> Any:
    """Steps computed by each attempt of an elastic job on a step axis, checkpoints as lines, the crash as a cross."""
    fig, (ax,) = plotting.figure(width=7.0, height=2.4)
    for attempt, done in sorted(run.computed.items()):
        ax.barh([f"attempt {attempt}"], [len(done)], left=[done[0] if done else 0], height=0.5,
                color=plotting.PALETTE[attempt % len(plotting.PALETTE)])
    for c in range(run.every, run.steps + 1, run.every):
        ax.axvline(c, color="#009E73", linestyle="--", linewidth=1)
    ax.plot([run.crash_at], ["attempt 0"], marker="X", markersize=12, color="#D55E00", linestyle="none",
            label=f"crash at step {run.crash_at}")
    ax.plot([], [], color="#009E73", linestyle="--", label=f"checkpoint every {run.every} steps")
    ax.set_xlim(0, run.steps)
    ax.invert_yaxis()
    ax.set_xlabel("training step")
    ax.set_title("Two attempts of one elastic job: steps computed")
    ax.legend(fontsize=8, loc="lower right")
    return fig


@declare.checked
def prediction_plot(rows: Annotated[Mapping[str, Any], declare.NonEmpty], *,
                    title: declare.Text = "Cost model vs measurement") -> Any:
    """Paired bars: predicted (computed) and measured seconds per label (to a (predicted, measured) pair or to a row
    of ``predict.step_predictions``)."""
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
