"""Loops of notebook 04 compared: the floor that overlap can reach, the before/after table, and the facts the
findings quote (``ms``, ``later_startups``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from course_utils import declare, display, intervals, timing
from course_utils.pipeline.loop import CLOCK_FLOOR, Timeline


@declare.checked
def ms(seconds: Annotated[float, declare.Range(0, 1e7)]) -> str:
    """'12.3 ms' (one decimal) for a step-sized time; below a millisecond, three significant digits ('23.1 µs')."""
    return f"{seconds * 1e3:.1f} ms" if seconds >= 1e-3 else display.format_time(seconds)


def _median(m: timing.Measurement) -> str:  # '21.4 ms (19.6 ms to 26.2 ms)'
    return f"{ms(m.median)} ({timing.quartiles(m, ms)})"


@declare.checked
def later_startups(run: Timeline) -> str:
    """'53, 49, 49 ms': the first batch's wait of every epoch after the first (what persistent workers change)."""
    starts = run.startups[1:]
    if not starts:
        raise ValueError(f"run ({run.label!r}) ran one epoch; later start-ups need at least 2")
    return ", ".join(f"{s * 1e3:.0f}" for s in starts) + " ms"


@declare.checked
def floor(alone: Timeline) -> timing.Measurement:
    """The step perfect overlap could reach, per round of ``alone`` (data made in the training thread): max(median
    compute, median wait) of each round, as ``rounds`` that pair with the other loops of the same ``run_loops``."""
    epochs = sorted(set(alone.epochs))
    if len(epochs) < 2:
        raise ValueError(f"alone ({alone.label!r}) ran {len(epochs)} round(s); a floor per round needs at least 2")
    per_round = tuple(max(CLOCK_FLOOR, alone.epoch_part(e, "compute").median, alone.epoch_part(e, "wait").median)
                      for e in epochs)
    return timing.Measurement(label=f"max(compute, data) of {alone.label}", times=per_round, total=sum(per_round),
                              rounds=per_round)


BeforeAfter = Annotated[Mapping[declare.Text, tuple[Timeline, Timeline]], declare.NonEmpty, declare.MaxItems(8)]


@declare.checked
def before_after_table(before_after: BeforeAfter) -> display.Table:
    """One row per framework: busy share, median compute and step before and after, and the step's speed-up (the
    geometric mean of the per-round ratios, named in the header) with its interval against its own baseline."""
    rows, rounds = [], set()
    for framework, (a, b) in before_after.items():
        gain = intervals.speedup(a.part(), b.part())
        rounds.add(gain.n)
        rows.append((framework, display.percent(a.utilisation), display.percent(b.utilisation),
                     _median(a.part("compute")), _median(b.part("compute")), _median(a.part()), _median(b.part()),
                     f"{gain.printed()[0]} ({gain.interval}): {gain.outcome}"))
    n = "/".join(str(r) for r in sorted(rounds))
    return display.table(["framework", "busy before", "busy after", "compute before", "compute after",
                          "step before", "step after", f"step speed-up: geometric mean of {n} per-round ratios"],
                         rows, title="Before and after, steady steps",
                         note="Busy share = total compute / total step time over the steady steps; compute and step "
                              "are medians per steady step (quartiles in brackets). The speed-up is not the ratio of "
                              "the two medians: it is the geometric mean of each round's before / after, each "
                              "framework against its own baseline, with a 95% interval over those paired rounds.")
