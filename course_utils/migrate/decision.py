"""The migration decision as arithmetic (computed, never measured): the break-even speed-up, the rule on the 95%
interval, the processes that would likely settle an undecided case, the run length that pays."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

from course_utils import declare, findings, intervals, validate
from course_utils.declare import NonNegative, Positive
from course_utils.migrate import cost
from course_utils.migrate.inputs import Inputs
from course_utils.migrate.ladder import MigrationGain

MIGRATE, DO_NOT_MIGRATE, NOT_DECIDED = "migrate", "do not migrate", "not decided: measure more"
NOTHING = "nothing to migrate"  # the compiled variant compiled no graph: its timings price no compiler
BUSY = "not decided: the machine was busy"  # other work shared the cores: the gain depends on it
DECISIONS = (MIGRATE, DO_NOT_MIGRATE, NOT_DECIDED, NOTHING, BUSY)
_REASONED = (NOTHING, BUSY)
_MAX_SPEEDUP = 1000.0
_MAX_PROCESSES = 1000


@declare.checked
def estimate_for(inputs: Inputs, gain: MigrationGain, *, job_hours: Annotated[float, Positive],
                 compile_s_per_job: Annotated[float, NonNegative], reserved: bool = False) -> cost.CostEstimate:
    """``cost.estimate`` fed from ``inputs`` (each with its source) and the measured ``gain``."""
    v = inputs.value
    return cost.estimate(v("monthly_spend"), gain, engineers=v("engineers"), weeks=v("weeks"),
                         engineer_week_cost=v("engineer_week_cost"), spend_growth=v("spend_growth"),
                         training_share=v("training_share"), debugging_buffer=v("debugging_buffer"),
                         job_hours=job_hours, compile_s_per_job=compile_s_per_job, eager_upkeep=v("eager_upkeep"),
                         horizon_months=v("horizon_months"), reserved=reserved)


@declare.checked
def break_even_speedup(inputs: Inputs, *, job_hours: Annotated[float, Positive],
                       compile_s_per_job: Annotated[float, NonNegative] = 0.0) -> float:
    """The smallest speed-up that pays the migration back within ``horizon_months`` (``inf`` if none up to 1000x)."""
    horizon = inputs.value("horizon_months")

    def pays(g: float) -> bool:
        gain = MigrationGain.claimed(g, "the break-even search")
        months = estimate_for(inputs, gain, job_hours=job_hours, compile_s_per_job=compile_s_per_job).break_even()
        return months <= horizon

    if pays(1.0):
        return 1.0
    if not pays(_MAX_SPEEDUP):
        return math.inf
    low, high = 1.0, _MAX_SPEEDUP
    while high / low > 1 + 1e-6:
        mid = math.sqrt(low * high)
        low, high = (low, mid) if pays(mid) else (mid, high)
    return high


@declare.checked
@dataclass(frozen=True)
class Decision:
    """The rule's outcome for ``speedup`` against ``break_even``; ``processes_needed``: processes in all that would
    likely decide an undecided case (computed); ``reason``: why nothing to migrate, or why the machine was busy."""

    outcome: Literal[DECISIONS]
    speedup: intervals.Speedup
    break_even: Any  # a positive number; inf: no speed-up up to 1000x pays back
    processes_needed: int | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        be = self.break_even
        if isinstance(be, bool) or not isinstance(be, (int, float)) or not be > 0:
            raise ValueError(f"break_even must be a positive number (inf allowed); got {self.break_even!r}")
        if (self.outcome in _REASONED) != (self.reason is not None):
            raise ValueError(f"reason is given for the outcomes {_REASONED} only, and always for them; got outcome "
                             f"{self.outcome!r} with reason {self.reason!r}")

    @property
    def text(self) -> str:
        """The outcome as the report states it, with its reason where it has one."""
        return f"{self.outcome}: {self.reason}" if self.reason else self.outcome

    @property
    def more_processes(self) -> int | None:
        """Processes to add to the ones measured (None where ``processes_needed`` is None or the case is decided)."""
        return None if self.processes_needed is None else self.processes_needed - self.speedup.n

    @property
    def next_step(self) -> str:
        """How many processes would likely settle an undecided case (computed), as the report words it."""
        if self.processes_needed is None:
            return "more processes would likely not decide it: the measured gain sits on the break-even speed-up"
        return (f"about {self.processes_needed} processes in all ({self.more_processes} more) would likely decide it, "
                "if they keep this mean and spread (computed from the interval's width and its distance to the "
                "break-even speed-up, not measured)")

    def check(self, name: str) -> findings.Check:
        """The rule as a check the core scores: the interval against the break-even speed-up (capped at 1000x)."""
        return findings.above(name, self.speedup, min(self.break_even, _MAX_SPEEDUP))

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.text, "break_even_speedup": self.break_even,
                "processes_needed": self.processes_needed, "more_processes": self.more_processes}


def decide(speedup: intervals.Speedup, break_even: float) -> Decision:
    """Migrate when the whole interval lies above ``break_even``, do not when it lies below, else not decided."""
    validate.instance("speedup", speedup, intervals.Speedup)
    if isinstance(break_even, bool) or not isinstance(break_even, (int, float)) or not break_even > 0:
        raise ValueError(f"break_even must be a positive number (inf allowed); got {break_even!r}")
    if math.isinf(break_even) or speedup.below(break_even):
        return Decision(DO_NOT_MIGRATE, speedup, float(break_even))
    if speedup.above(break_even):
        return Decision(MIGRATE, speedup, float(break_even))
    return Decision(NOT_DECIDED, speedup, float(break_even), processes_needed(speedup, break_even))


def speed_text(break_even: float) -> str:
    """A break-even speed-up as text: '1.08x', or 'never' with why for ``inf``."""
    if isinstance(break_even, bool) or not isinstance(break_even, (int, float)) or math.isnan(break_even):
        raise TypeError(f"break_even must be a number (inf: never pays back); got {break_even!r}")
    return "never (no speed-up up to 1000x pays back)" if math.isinf(break_even) else f"{break_even:.3g}x"


@declare.checked
def gap(top: intervals.Speedup, bottom: intervals.Speedup) -> intervals.Speedup:
    """How many times ``top``'s speed-up exceeds ``bottom``'s, each end over the other's far end: wholly above 1
    exactly when the two intervals are disjoint with ``top`` higher (coverage at least the confidences' product)."""
    return intervals.Speedup(f"{bottom.baseline} -> {bottom.candidate}", f"{top.baseline} -> {top.candidate}",
                             top.ratio / bottom.ratio, top.low / bottom.high,
                             top.high / bottom.low if bottom.low > 0 else math.inf, top.n + bottom.n, top.unit,
                             max(0.5, top.confidence * bottom.confidence))


@declare.checked
def processes_needed(speedup: intervals.Speedup, break_even: Annotated[float, Positive]) -> int | None:
    """Processes in all whose interval would likely exclude ``break_even`` at this measurement's geometric mean and
    spread (computed); None when the mean sits on it or more than 1000 would be needed."""
    n, confidence = speedup.n, speedup.confidence
    distance = abs(math.log(speedup.ratio) - math.log(break_even))
    half = math.log(speedup.high / speedup.ratio)
    if distance == 0 or not math.isfinite(half):
        return None
    spread = half * math.sqrt(n) / intervals.t_quantile(0.5 + confidence / 2, n - 1)
    if spread == 0:
        return n
    for m in range(n + 1, _MAX_PROCESSES + 1):
        if intervals.t_quantile(0.5 + confidence / 2, m - 1) * spread / math.sqrt(m) < distance:
            return m
    return None


@dataclass(frozen=True)
class RunLength:
    """Steps from which compiling pays: the cold compile over the time a step saves, at the median and interval ends."""

    compile_s: float
    eager_step_s: float
    steps: float
    steps_low: float  # at the interval's high end (the most saved per step)
    steps_high: float  # at the interval's low end

    def seconds(self) -> float:
        """Eager wall-clock time of the break-even run at the median gain."""
        return self.steps * self.eager_step_s

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@declare.checked
def break_even_run(compile_s: Annotated[float, NonNegative], eager_step_s: Annotated[float, Positive],
                   speedup: intervals.Speedup) -> RunLength:
    """The run length from which a compiled run ends sooner than an eager one (compile time included)."""

    def steps(g: float) -> float:
        saved = eager_step_s * (1 - 1 / g)
        return math.inf if saved <= 0 else compile_s / saved

    return RunLength(float(compile_s), float(eager_step_s), steps(speedup.ratio), steps(speedup.high),
                     steps(speedup.low))
