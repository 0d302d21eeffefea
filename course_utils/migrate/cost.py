"""Does the migration pay? Break-even and net from what the migration *alone* buys (a ``MigrationGain``, never a plain
ratio, so a no-migration win cannot inflate the return), with its interval, from the inputs a lead knows."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from course_utils import declare, display, validate
from course_utils.declare import NonEmpty, Range
from course_utils.migrate.ladder import MigrationGain

Money = Annotated[float, Range(0, 1e12)]
Growth = Annotated[float, Range(-1, 10, low_open=True)]  # of the bill per month
Share = Annotated[float, Range(0, 1)]

SCENARIOS = ("low", "median", "high")
_SEARCH_MONTHS = 120  # break-even later than ten years is reported as never

# The seed article's scenario (claims, not measurements): a 3-day run against a competitor's 3 hours; "utilisation
# from 40% to 80% halves hardware cost: 10 GPUs x 10 h become 5 GPUs x 5 h".
SEED_JOB_HOURS = 72.0
SEED_COMPETITOR_HOURS = 3.0
SEED_UTILISATION = (0.4, 0.8)
SEED_GPU_HOURS_EXAMPLE = ((10, 10.0), (5, 5.0))  # (GPUs, hours) before and after
SEED_SPEND, SEED_SAVING = 100_000.0, 0.30  # its worked example: a month's bill, the share compile saves


def months_text(value: float) -> str:
    """Break-even months as text: '1.2 months', or 'never (within 10 years)' for ``math.inf``."""
    return "never (within 10 years)" if value == math.inf else f"{validate.non_negative('value', value):.1f} months"


@declare.checked
@dataclass(frozen=True, repr=False)
class CostEstimate(display.Tabled):
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
        """The share of ``month`` (0 = the first) after the migration ends."""
        return min(1.0, max(0.0, month + 1 - self.migration_months))

    def monthly_saving(self, month: int = 0, scenario: str = "median") -> float:
        """Money saved in ``month`` (0 = the migration's first): the trained share of the spend times the compute saved,
        minus the eager path's upkeep, after the migration ends; reserved capacity is paid anyway."""
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


@declare.checked
def compare_estimates(named: Annotated[Mapping[declare.Text, CostEstimate], NonEmpty]) -> display.Table:
    """Several estimates side by side (computed): break-even, net and time to result, each with its interval."""
    rows = []
    for name, est in named.items():
        soon, late = est.break_even_range
        band = f" ({months_text(soon)} to {months_text(late)})" if soon != late else ""
        rows.append((name, f"{est.spend_growth:+.0%}", "reserved" if est.reserved else "on demand",
                     f"{months_text(est.break_even_months)}{band}",
                     f"{est.net():,.0f} ({est.net('low'):,.0f} to {est.net('high'):,.0f})",
                     f"{est.time_to_result():.1f} h ({est.time_to_result('high'):.1f} to "
                     f"{est.time_to_result('low'):.1f})"))
    first = next(iter(named.values()))
    return display.table(["case", "bill growth a month", "capacity", "break-even (interval)",
                          f"net after {first.horizon_months} months (interval)",
                          f"a {first.job_hours:g} h job takes (interval)"], rows,
                         title="The same measured gain in three cases (computed)",
                         note=f"Every case is fed {first.speedup}.")


@declare.checked
def estimate(monthly_spend: Money, speedup: MigrationGain, migration_cost: Money | None = None, *,
             engineers: Annotated[float, Range(0, 1000)] = 2, weeks: Annotated[float, Range(0, 520)] = 2,
             engineer_week_cost: Money = 10_000, spend_growth: Growth = 0.0, training_share: Share = 1.0,
             debugging_buffer: Annotated[float, Range(0, 10)] = 0.2,
             job_hours: Annotated[float, Range(1e-6, 1e6)] = 72.0,
             compile_s_per_job: Annotated[float, Range(0, 1e9)] = 0.0,
             eager_upkeep: Money = 0.0, reserved: bool = False, horizon_months: Annotated[int, Range(1, 120)] = 12,
             migration_months: Annotated[float, Range(0, _SEARCH_MONTHS)] | None = None) -> CostEstimate:
    """The migration's saving, break-even (interval from the gain's) and net; the one-off cost is ``migration_cost``,
    else engineers x weeks x ``engineer_week_cost``, savings from ``migration_months`` (default: ``weeks``)."""
    given = migration_cost is not None
    return CostEstimate(
        speedup=speedup, monthly_spend=float(monthly_spend), spend_growth=float(spend_growth),
        training_share=float(training_share),
        migration_cost=float(migration_cost if given else engineers * weeks * engineer_week_cost),
        debugging_buffer=float(debugging_buffer), job_hours=float(job_hours),
        compile_s_per_job=float(compile_s_per_job),
        eager_upkeep=float(eager_upkeep), reserved=reserved, horizon_months=horizon_months,
        engineers=None if given else float(engineers), weeks=None if given else float(weeks),
        migration_months=float(weeks * 12 / 52 if migration_months is None else migration_months))


@declare.checked
def seed_example(spend_growth: Growth = 0.0) -> CostEstimate:
    """The seed article's worked example: 100k/month, 30% saved (a claimed 1.43x), 2 engineers x 2 weeks at 10k, a
    20% debugging buffer, savings from month 0 as the seed computes it (``estimate`` starts them when it ends)."""
    return estimate(SEED_SPEND, MigrationGain.claimed(1 / (1 - SEED_SAVING), "the seed"), engineers=2, weeks=2,
                    engineer_week_cost=10_000, debugging_buffer=0.2, spend_growth=spend_growth, migration_months=0)


def seed_shares() -> dict[str, float]:
    """The seed's two utilisation figures as shares of GPU-hours left (computed): 40% -> 80%, and 10x10 -> 5x5."""
    (gpus0, hours0), (gpus1, hours1) = SEED_GPU_HOURS_EXAMPLE
    before, after = SEED_UTILISATION
    return {"utilisation": before / after, "example": gpus1 * hours1 / (gpus0 * hours0)}


@declare.checked
def monthly_spend_for(gpus: Annotated[float, Range(0, 10**7, low_open=True)], price_per_gpu_hour: Money, *,
                      hours_per_month: Annotated[float, Range(0, 744, low_open=True)] = 730.0) -> float:
    """A monthly bill from its parts (computed): GPUs x price per GPU-hour x hours they run in a month."""
    if price_per_gpu_hour <= 0:
        raise ValueError(f"price_per_gpu_hour must be > 0; got {price_per_gpu_hour!r}")
    return gpus * price_per_gpu_hour * hours_per_month
