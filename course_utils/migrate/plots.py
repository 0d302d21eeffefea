"""The migration lesson's figures: the ladder as a waterfall, the payback curve with its interval, the widget, and
assess's figure (each process, the interval, the break-even speed-up)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from course_utils import declare, display, plotting
from course_utils.migrate import cost as _cost
from course_utils.migrate.ladder import Ladder, MigrationGain

if TYPE_CHECKING:
    from matplotlib.figure import Figure


Labels = Sequence[declare.Text] | None  # one per row; None: each row labels itself


@declare.checked
def waterfall(ladder: Ladder, *, title: str | None = None) -> Figure:
    """Time per sample rung by rung; compile last is drawn at its own gain over its eager twin (``waterfall_steps``)."""
    kinds = {r.label: r.kind for r in ladder.rungs}
    steps = [(f"{label}\n[{kinds[label]}]" if kinds[label] != "no migration" else label, t)
             for label, t in ladder.waterfall_steps()]
    _, unit = display.time_unit(max(t for _, t in steps))
    fig = plotting.waterfall(steps, unit=unit, title=title or "Time per sample: no-migration wins, then compile")
    fig.axes[0].set_ylabel(f"time per sample ({unit})")
    return fig


def _rows(name: str, given: tuple[Any, ...], labels: Labels, default: list[str]) -> list[str]:
    """One label per row: ``labels``, else ``default``; the rows must not be empty."""
    if not given:
        raise ValueError(f"{name}: pass at least one")
    if labels is not None and len(labels) != len(given):
        raise ValueError(f"labels must have one entry per item of {name} ({len(given)}); got {len(labels)}")
    return list(labels) if labels is not None else default


@declare.checked
def payback(*estimates: _cost.CostEstimate, labels: Labels = None) -> Figure:
    """Cumulative net per month for each estimate: the median line and the interval shaded."""
    labels = _rows("estimates", estimates, labels, [str(e.speedup.label) for e in estimates])
    fig, (ax,) = plotting.figure(width=6.8, height=3.8)
    for i, (est, label) in enumerate(zip(estimates, labels)):
        months = range(est.horizon_months + 1)
        color = plotting.color_for(label, i)
        ax.plot(months, [v / 1000 for v in est.cumulative_net()], color=color, label=label, marker="o",
                markersize=3)
        ax.fill_between(months, [v / 1000 for v in est.cumulative_net("low")],
                        [v / 1000 for v in est.cumulative_net("high")], color=color, alpha=0.2, linewidth=0)
    ax.axhline(0, color="#333333", linewidth=1)
    ax.set_xlabel("months after the migration starts")
    ax.set_ylabel("cumulative net (thousands, computed)")
    ax.set_title("When does the migration pay back? (shaded: the speed-up's interval)")
    ax.legend(fontsize=8)
    return fig


def explore(gain: MigrationGain, **inputs: Any) -> Any:
    """Sliders over ``cost.estimate`` for the measured ``gain``: in a kernel the estimate at ``inputs`` shown first
    as a static table (slides keep no widget state), then the widget; elsewhere that estimate."""
    first = _cost.estimate(inputs.pop("monthly_spend", 100_000), gain, **inputs)
    try:
        import ipywidgets as widgets
        from IPython import get_ipython
    except ImportError:
        return first
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return first
    from IPython.display import display as show

    show(first)  # the static copy: rendered wherever the widget below is not
    style = {"description_width": "14em"}
    controls = {
        "monthly_spend": widgets.FloatLogSlider(value=first.monthly_spend, base=10, min=3, max=7, step=0.05,
                                                description="monthly spend", style=style),
        "spend_growth": widgets.FloatSlider(value=first.spend_growth, min=0, max=0.5, step=0.05,
                                            description="spend growth a month", style=style),
        "training_share": widgets.FloatSlider(value=first.training_share, min=0.05, max=1.0, step=0.05,
                                              description="share that is training", style=style),
        "weeks": widgets.FloatSlider(value=2, min=0.5, max=26, step=0.5, description="weeks (2 engineers)",
                                     style=style),
        "compile_s_per_job": widgets.FloatLogSlider(value=max(first.compile_s_per_job, 1), base=10, min=0, max=4,
                                                    description="compile s per job", style=style),
        "reserved": widgets.Checkbox(value=first.reserved, description="capacity reserved"),
    }
    output = widgets.Output()

    def redraw(_: Any = None) -> None:
        values = {k: c.value for k, c in controls.items()}
        est = _cost.estimate(values.pop("monthly_spend"), gain, **{**inputs, **values})
        output.clear_output(wait=True)
        with output:
            show(est, payback(est, labels=[f"measured {gain.median:.2f}x"]))

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return widgets.VBox([*controls.values(), output])


@declare.checked
def assess_figure(*found: Any, labels: Labels = None) -> Figure:
    """One row per ``Assessment``: each fresh process's speed-up (dots), their 95% interval (bar) and the break-even
    speed-up at that assessment's inputs (a dashed tick): the comparison that decides ``assess``'s rule."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    labels = _rows("found", found, labels, [getattr(a, "model", "").split(":")[-1] for a in found])
    fig, (ax,) = plotting.figure(width=6.8, height=1.2 + 0.9 * len(found))
    for row, (a, label) in enumerate(zip(found, labels)):
        s, rule, color = a.deciding.speedup, a.decision, plotting.color_for(label, row)
        ax.scatter(a.deciding.per_process, [row + 0.15] * len(a.deciding.per_process), color=color, s=18, zorder=3,
                   label="one fresh process" if row == 0 else None)
        ax.errorbar([s.ratio], [row - 0.1], xerr=[[s.ratio - s.low], [s.high - s.ratio]], fmt="s", color=color,
                    capsize=4, label="95% interval across processes" if row == 0 else None)
        if rule.break_even < 1000:
            ax.plot([rule.break_even] * 2, [row - 0.35, row + 0.35], color="#D55E00", linestyle="--",
                    label="break-even speed-up" if row == 0 else None)
        ax.annotate(rule.outcome, (s.high, row - 0.1), xytext=(6, -3), textcoords="offset points", fontsize=8)
    ax.axvline(1.0, color="#999999", linewidth=1)
    ax.set_xscale("log")  # a ratio: 0.5x and 2x lie as far from 1x
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(range(len(found)), labels)
    ax.set_ylim(-0.6, len(found) - 0.4)
    ax.set_xlabel("speed-up of a training step: eager time / compiled time (log scale)")
    ax.set_title("Gain across fresh processes against the break-even speed-up")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=3, frameon=False)
    return fig


def png_base64(fig: Figure) -> str:
    """The figure as a base64 PNG (for a report readable offline); the figure is closed."""
    import base64
    import io

    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
