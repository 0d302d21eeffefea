"""Does the migration pay? Break-even and net from what the migration *alone* buys, with its spread.

The seed article's rule: a 100k/month GPU bill, ~30% compute saved, 2 engineers x 2 weeks (~40k) of
migration plus a 20% buffer for harder debugging: pays back in about two months. ``estimate`` takes only a
``ladder.MigrationGain`` (a measured one from ``Ladder.migration_gain``, or an explicitly claimed one), never
a plain ratio, so a no-migration win (loader workers, AMP) cannot inflate the return. Inputs are the ones a
lead knows: spend and its growth, the training share, engineers x weeks x cost, compile time paid per job,
the upkeep of the eager path kept for rollback, and whether the capacity is reserved (then the speed-up
buys time-to-result, not money).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from course_utils import display, validate
from course_utils.migrate.ladder import MigrationGain

SCENARIOS = ("low", "median", "high")
_SEARCH_MONTHS = 120  # break-even later than ten years is reported as never

# The seed article's scenario, stated once (claims, not measurements): "a team waits 3 days per training run
# while a competitor iterates in 3 hours"; "utilisation from 40% to 80% halves hardware cost: 10 GPUs x 10 h
# become 5 GPUs x 5 h".
SEED_JOB_HOURS = 72.0
SEED_COMPETITOR_HOURS = 3.0
SEED_UTILISATION = (0.4, 0.8)
SEED_GPU_HOURS_EXAMPLE = ((10, 10.0), (5, 5.0))  # (GPUs, hours) before and after


def months_text(value: float) -> str:
    """Break-even months as text: '1.2 months', or 'never (within 10 years)' for ``math.inf`` (what
    ``CostEstimate.break_even`` answers when the migration does not pay back); NaN or a negative is refused."""
    if value == math.inf:
        return "never (within 10 years)"
    return f"{validate.non_negative('value', value):.1f} months"


@dataclass(frozen=True)
class CostEstimate:
    """Inputs and outcomes of one migration decision, at the gain's median and at the two ends of its interval."""

    speedup: MigrationGain
    monthly_spend: float
    spend_growth: float
    training_share: float
    migration_cost: float
    debugging_buffer: float
    job_hours: float
    compile_s_per_job: float
    eager_upkeep: float
    reserved: bool
    horizon_months: int
    engineers: float | None = None
    weeks: float | None = None
    migration_months: float = 0.0  # the savings (and the eager path's upkeep) start when the migration ends

    def gain(self, scenario: str = "median") -> float:
        """The per-job speed-up once each job pays its compile time: job / (job / speed-up + compile)."""
        raw = getattr(self.speedup, validate.choice("scenario", scenario, SCENARIOS))
        job = self.job_hours * 3600.0
        return job / (job / raw + self.compile_s_per_job)

    def time_to_result(self, scenario: str = "median") -> float:
        """Hours one job takes after the migration (it took ``job_hours`` before)."""
        return self.job_hours / self.gain(scenario)

    @property
    def one_off_cost(self) -> float:
        """Migration cost with the debugging buffer."""
        return self.migration_cost * (1.0 + self.debugging_buffer)

    def active(self, month: int) -> float:
        """The share of ``month`` (0 = the first) after the migration ends: 0 before, 1 after, a fraction in the
        month it ends in."""
        return min(1.0, max(0.0, month + 1 - self.migration_months))

    def monthly_saving(self, month: int = 0, scenario: str = "median") -> float:
        """Money saved in ``month`` (0 = the first, counted from the migration's start): the trained share of that
        month's spend times the compute saved, minus the eager path's upkeep, for the share of the month after the
        migration ends. Reserved capacity is paid anyway: only the upkeep remains."""
        validate.non_negative("month", month, integer=True)
        if self.reserved:
            return -self.eager_upkeep * self.active(month)
        spend = self.monthly_spend * (1.0 + self.spend_growth) ** month
        return (spend * self.training_share * (1.0 - 1.0 / self.gain(scenario)) - self.eager_upkeep) \
            * self.active(month)

    def cumulative_net(self, scenario: str = "median") -> list[float]:
        """Net position at the end of months 0..horizon (negative until break-even)."""
        net, out = -self.one_off_cost, [-self.one_off_cost]
        for month in range(self.horizon_months):
            net += self.monthly_saving(month, scenario)
            out.append(net)
        return out

    def break_even(self, scenario: str = "median") -> float:
        """Months (fractional) until the savings repay the one-off cost; ``inf`` if not within ten years."""
        net = -self.one_off_cost
        if net >= 0:
            return 0.0
        for month in range(_SEARCH_MONTHS):
            saving = self.monthly_saving(month, scenario)
            if saving > 0 and net + saving >= 0:
                start = max(float(month), self.migration_months)  # the saving accrues evenly from here to month + 1
                return start + (-net) / saving * (month + 1 - start)
            net += saving
        return math.inf

    def full_saving(self, scenario: str = "median") -> float:
        """Money saved in the first whole month after the migration ends."""
        return self.monthly_saving(math.ceil(self.migration_months), scenario)

    @property
    def break_even_months(self) -> float:
        return self.break_even("median")

    @property
    def break_even_range(self) -> tuple[float, float]:
        """(soonest, latest) break-even over the gain's interval."""
        return self.break_even("high"), self.break_even("low")

    def net(self, scenario: str = "median") -> float:
        """Net after ``horizon_months``."""
        return self.cumulative_net(scenario)[-1]

    def table(self) -> display.Table:
        def months(value: float) -> str:
            return "never (10 years)" if math.isinf(value) else f"{value:.1f}"

        band = " to ".join(months(m) for m in self.break_even_range)
        rows = [
            ("speed-up the migration buys", str(self.speedup)),
            ("per job, with compile time paid", f"{self.gain():.3f}x ({display.format_time(self.compile_s_per_job)} "
                                                f"of compile per {self.job_hours:g} h job)"),
            ("monthly spend, growth", f"{self.monthly_spend:,.0f}, {self.spend_growth:+.0%} a month"),
            ("share of spend that is training", f"{self.training_share:.0%}"),
            ("capacity", "reserved: paid anyway, the gain buys time" if self.reserved else "on demand"),
            ("migration (+ debugging buffer)", f"{self.migration_cost:,.0f} (+{self.debugging_buffer:.0%}) = "
                                               f"{self.one_off_cost:,.0f}"),
            ("eager path upkeep", f"{self.eager_upkeep:,.0f} a month"),
            ("savings start", f"when the migration ends, after {self.migration_months:.2f} months"),
            ("saving in a whole month after it", f"{self.full_saving():,.0f} (interval {self.full_saving('low'):,.0f} "
                                                 f"to {self.full_saving('high'):,.0f})"),
            ("break-even, months", f"{months(self.break_even_months)} (interval {band})"),
            (f"net after {self.horizon_months} months", f"{self.net():,.0f} (interval {self.net('low'):,.0f} to "
                                                        f"{self.net('high'):,.0f})"),
            ("time to result", f"{self.job_hours:g} h -> {self.time_to_result():.3g} h"),
        ]
        return display.table(["", "computed from the inputs"], rows, title="Migration cost model (computed)")

    def inputs(self) -> str:
        """The inputs in one line, as a lead would state them (formatted from the estimate itself)."""
        team = (f"{self.engineers:g} engineers x {self.weeks:g} weeks" if self.engineers is not None
                and self.weeks is not None else "the migration")
        return (f"{self.monthly_spend:,.0f} a month ({self.spend_growth:+.0%} a month), "
                f"{self.training_share:.0%} of it training, {team} = {self.migration_cost:,.0f} "
                f"+ {self.debugging_buffer:.0%} debugging buffer, "
                f"{self.eager_upkeep:,.0f} a month to keep the eager path, {self.job_hours:g} h jobs paying "
                f"{display.format_time(self.compile_s_per_job)} of compile each, "
                + ("reserved capacity" if self.reserved else "on-demand capacity"))

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def compare_estimates(named: Mapping[str, CostEstimate]) -> display.Table:
    """Several estimates side by side (computed): break-even, net and time to result, each with its interval."""
    if not isinstance(named, Mapping) or not named:
        raise TypeError(f"named must be a non-empty mapping of name -> CostEstimate; got {named!r}")
    rows = []
    for name, est in named.items():
        validate.instance("named", est, CostEstimate)
        soon, late = est.break_even_range
        band = f" ({months_text(soon)} to {months_text(late)})" if soon != late else ""
        rows.append((validate.text("named", name), f"{est.spend_growth:+.0%}",
                     "reserved" if est.reserved else "on demand", f"{months_text(est.break_even_months)}{band}",
                     f"{est.net():,.0f} ({est.net('low'):,.0f} to {est.net('high'):,.0f})",
                     f"{est.time_to_result():.1f} h ({est.time_to_result('high'):.1f} to "
                     f"{est.time_to_result('low'):.1f})"))
    first = next(iter(named.values()))
    return display.table(["case", "bill growth a month", "capacity", "break-even (interval)",
                          f"net after {first.horizon_months} months (interval)",
                          f"a {first.job_hours:g} h job takes (interval)"], rows,
                         title="The same measured gain in three cases (computed)",
                         note=f"Every case is fed {first.speedup}.")


def estimate(monthly_spend: float, speedup: MigrationGain, migration_cost: float | None = None, *,
             engineers: float = 2, weeks: float = 2, engineer_week_cost: float = 10_000,
             spend_growth: float = 0.0, training_share: float = 1.0, debugging_buffer: float = 0.2,
             job_hours: float = 72.0, compile_s_per_job: float = 0.0, eager_upkeep: float = 0.0,
             reserved: bool = False, horizon_months: int = 12, migration_months: float | None = None) -> CostEstimate:
    """The migration's saving, break-even (with an interval from the gain's) and net.

    ``speedup`` must be a ``MigrationGain``: use ``ladder.migration_gain()`` for a measured one. The one-off
    cost is ``migration_cost`` if given, else engineers x weeks x ``engineer_week_cost``. The savings start when
    the migration ends: after ``migration_months`` (default: ``weeks`` on the calendar, 52 weeks = 12 months).
    """
    if not isinstance(speedup, MigrationGain):
        raise TypeError("speedup must be a MigrationGain (Ladder.migration_gain() measures what the migration "
                        "alone buys; MigrationGain.claimed(x, who) quotes a claim); got "
                        f"{type(speedup).__name__} {speedup!r}")
    given_cost = migration_cost is not None
    if migration_cost is None:
        migration_cost = (validate.non_negative("engineers", engineers) * validate.non_negative("weeks", weeks)
                          * validate.non_negative("engineer_week_cost", engineer_week_cost))
    validate.instance("reserved", reserved, bool)
    return CostEstimate(
        speedup=speedup,
        monthly_spend=float(validate.non_negative("monthly_spend", monthly_spend)),
        spend_growth=float(validate.number("spend_growth", spend_growth, low=-1, high=10, low_open=True)),
        training_share=float(validate.fraction("training_share", training_share)),
        migration_cost=float(validate.non_negative("migration_cost", migration_cost)),
        debugging_buffer=float(validate.number("debugging_buffer", debugging_buffer, low=0, high=10)),
        job_hours=float(validate.positive("job_hours", job_hours)),
        compile_s_per_job=float(validate.non_negative("compile_s_per_job", compile_s_per_job)),
        eager_upkeep=float(validate.non_negative("eager_upkeep", eager_upkeep)),
        reserved=reserved,
        horizon_months=int(validate.number("horizon_months", horizon_months, low=1, high=120, integer=True)),
        engineers=None if given_cost else float(engineers),
        weeks=None if given_cost else float(weeks),
        migration_months=float(validate.number("migration_months", migration_months, low=0, high=_SEARCH_MONTHS)
                               if migration_months is not None else validate.non_negative("weeks", weeks) * 12 / 52),
    )


SEED_SPEND = 100_000.0
SEED_SAVING = 0.30


def seed_example(spend_growth: float = 0.0) -> CostEstimate:
    """The seed article's worked example: 100k/month, 30% saved (a claimed 1.43x), 2 engineers x 2 weeks at
    10k (40k), 20% debugging buffer; ``spend_growth=0.5`` adds the seed's +50% a month. As the seed computes it,
    the savings start in month 0, during the migration (``estimate`` starts them when it ends)."""
    return estimate(SEED_SPEND, MigrationGain.claimed(1 / (1 - SEED_SAVING), "the seed"), engineers=2, weeks=2,
                    engineer_week_cost=10_000, debugging_buffer=0.2, spend_growth=spend_growth, migration_months=0)


def seed_shares() -> dict[str, float]:
    """The seed's two utilisation figures as shares of GPU-hours left (computed): utilisation from 40% to 80%
    leaves ``utilisation`` of them; their example, 10 GPUs x 10 h becoming 5 GPUs x 5 h, leaves ``example``."""
    (gpus0, hours0), (gpus1, hours1) = SEED_GPU_HOURS_EXAMPLE
    before, after = SEED_UTILISATION
    return {"utilisation": before / after, "example": gpus1 * hours1 / (gpus0 * hours0)}


def monthly_spend_for(gpus: float, price_per_gpu_hour: float, *, hours_per_month: float = 730.0) -> float:
    """A monthly bill from its parts (computed): GPUs x price per GPU-hour x hours they run in a month."""
    return (validate.positive("gpus", gpus) * validate.positive("price_per_gpu_hour", price_per_gpu_hour)
            * validate.number("hours_per_month", hours_per_month, low=0, high=744, low_open=True))
