"""Does a migration pay? Monthly saving, break-even and 12-month net from a *measured* speed-up.

The seed article's rule: a 100k/month GPU bill, ~30% compute saved, 2 engineers x 2 weeks (~40k) of
migration, plus a 20% buffer for harder debugging, pays back in about two months. ``estimate`` computes the
same thing from your own numbers; ``explore`` puts sliders on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class CostEstimate:
    """Inputs and outcome of one migration decision (money in the same currency as ``monthly_spend``)."""

    monthly_spend: float
    speedup: float
    training_share: float
    migration_cost: float
    risk_buffer: float
    horizon_months: int

    @property
    def compute_saved(self) -> float:
        """Share of training compute saved: 1 - 1/speedup (a 1.43x speed-up saves 30%)."""
        return 1.0 - 1.0 / self.speedup

    @property
    def monthly_saving(self) -> float:
        return self.monthly_spend * self.training_share * self.compute_saved

    @property
    def migration_cost_with_buffer(self) -> float:
        return self.migration_cost * (1.0 + self.risk_buffer)

    @property
    def break_even_months(self) -> float:
        """Months until savings repay the migration; ``inf`` when there is nothing saved."""
        if self.monthly_saving <= 0:
            return math.inf
        return self.migration_cost_with_buffer / self.monthly_saving

    @property
    def net(self) -> float:
        """Savings over the horizon minus the buffered migration cost."""
        return self.horizon_months * self.monthly_saving - self.migration_cost_with_buffer

    def cumulative_net(self) -> list[float]:
        """Net position at the end of months 0..horizon (negative until break-even)."""
        return [m * self.monthly_saving - self.migration_cost_with_buffer for m in range(self.horizon_months + 1)]

    def rows(self) -> list[tuple[str, str]]:
        months = "never" if math.isinf(self.break_even_months) else f"{self.break_even_months:.1f} months"
        return [
            ("monthly accelerator spend", f"{self.monthly_spend:,.0f}"),
            ("measured speed-up", f"{self.speedup:.2f}x (saves {self.compute_saved:.0%} of compute)"),
            ("share of spend that is training", f"{self.training_share:.0%}"),
            ("migration cost (+ risk buffer)", f"{self.migration_cost:,.0f} (+{self.risk_buffer:.0%}) = "
                                               f"{self.migration_cost_with_buffer:,.0f}"),
            ("monthly saving", f"{self.monthly_saving:,.0f}"),
            ("break-even", months),
            (f"net after {self.horizon_months} months", f"{self.net:,.0f}"),
        ]

    def __repr__(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.rows())

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td>{escape(v)}</td></tr>"
                       for k, v in self.rows())
        return f"<table>{body}</table>"


def _number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
            strict_low: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise TypeError(f"{name} must be a number; got {value!r}")
    if low is not None and (value < low or (strict_low and value == low)):
        raise ValueError(f"{name} must be {'>' if strict_low else '>='} {low:g}; got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high:g}; got {value!r}")
    return float(value)


def estimate(
    monthly_spend: float,
    speedup: float,
    migration_cost: float,
    *,
    training_share: float = 1.0,
    risk_buffer: float = 0.2,
    horizon_months: int = 12,
) -> CostEstimate:
    """The migration's monthly saving, break-even months and net over ``horizon_months``.

    ``speedup`` is the measured ratio of step times (old / new), not a hope; ``training_share`` the part of
    the spend that the speed-up applies to; ``risk_buffer`` inflates the migration cost (the seed's 20%).
    """
    if isinstance(horizon_months, bool) or not isinstance(horizon_months, int) or horizon_months < 1:
        raise ValueError(f"horizon_months must be a positive int; got {horizon_months!r}")
    return CostEstimate(
        monthly_spend=_number("monthly_spend", monthly_spend, low=0),
        speedup=_number("speedup", speedup, low=0, strict_low=True),
        training_share=_number("training_share", training_share, low=0, high=1),
        migration_cost=_number("migration_cost", migration_cost, low=0),
        risk_buffer=_number("risk_buffer", risk_buffer, low=0),
        horizon_months=horizon_months,
    )


def seed_example() -> CostEstimate:
    """The seed article's worked example: 100k/month, 30% saved, 40k migration, 20% debugging buffer."""
    return estimate(100_000, 1 / (1 - 0.30), 40_000, training_share=1.0, risk_buffer=0.2)


def plot(*estimates: CostEstimate, labels: list[str] | None = None) -> Figure:
    """Cumulative net position per month for one or more estimates, break-even points marked."""
    from course_utils import plotting

    if not estimates:
        raise ValueError("plot() needs at least one estimate")
    labels = labels or [f"{e.speedup:.2f}x speed-up" for e in estimates]
    if len(labels) != len(estimates):
        raise ValueError(f"labels must have one entry per estimate ({len(estimates)}); got {len(labels)}")
    fig, (ax,) = plotting.figure(width=6.4, height=3.8)
    for i, (est, label) in enumerate(zip(estimates, labels)):
        color = plotting.color_for(label, i)
        ax.plot(range(est.horizon_months + 1), [v / 1000 for v in est.cumulative_net()], color=color, label=label,
                marker="o", markersize=3)
        if est.break_even_months <= est.horizon_months:
            ax.axvline(est.break_even_months, color=color, linestyle=":", linewidth=1)
    ax.axhline(0, color="#333333", linewidth=1)
    ax.set_xlabel("months after the migration starts")
    ax.set_ylabel("cumulative net (thousands)")
    ax.set_title("When does the migration pay back?")
    ax.legend()
    return fig


def explore(speedup: float, *, monthly_spend: float = 100_000, migration_cost: float = 40_000,
            training_share: float = 1.0, risk_buffer: float = 0.2) -> Any:
    """Sliders over ``estimate`` (JupyterLab, Colab). Returns the widget, or the estimate where widgets
    cannot render (no ipywidgets, or no kernel), so a static run still shows the numbers.
    """
    first = estimate(monthly_spend, speedup, migration_cost, training_share=training_share, risk_buffer=risk_buffer)
    try:
        import ipywidgets as widgets
        from IPython import get_ipython
    except ImportError:
        return first
    if get_ipython() is None or not hasattr(get_ipython(), "kernel"):
        return first
    style = {"description_width": "14em"}
    controls = {
        "monthly_spend": widgets.FloatLogSlider(value=monthly_spend, base=10, min=3, max=7, step=0.05,
                                                description="monthly spend", style=style),
        "speedup": widgets.FloatSlider(value=speedup, min=0.5, max=max(4.0, speedup * 1.5), step=0.01,
                                       description="speed-up (measured)", style=style),
        "training_share": widgets.FloatSlider(value=training_share, min=0.05, max=1.0, step=0.05,
                                              description="share that is training", style=style),
        "migration_cost": widgets.FloatLogSlider(value=migration_cost, base=10, min=3, max=7, step=0.05,
                                                 description="migration cost", style=style),
        "risk_buffer": widgets.FloatSlider(value=risk_buffer, min=0.0, max=1.0, step=0.05,
                                           description="risk buffer", style=style),
    }
    output = widgets.Output()

    def redraw(_: Any = None) -> None:
        values = {k: c.value for k, c in controls.items()}
        est = estimate(values.pop("monthly_spend"), values.pop("speedup"), values.pop("migration_cost"), **values)
        output.clear_output(wait=True)
        with output:
            from IPython.display import display

            display(est, plot(est))

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return widgets.VBox([*controls.values(), output])
