"""Loops of notebook 04 compared with intervals: the paired per-round medians of ``run_loops`` give
``cu.intervals.speedup``; the floor that overlap can reach; the before/after table. Numbers only: the sentences
are in ``story``.
"""

from __future__ import annotations

from collections.abc import Mapping

from course_utils import display, intervals, timing, validate
from course_utils.pipeline.loop import CLOCK_FLOOR, PARTS, Timeline


def ms(seconds: float) -> str:
    """'12.3 ms' (one decimal) for a step-sized time; below a millisecond, three significant digits ('23.1 µs')."""
    seconds = validate.number("seconds", seconds)
    return f"{seconds * 1e3:.1f} ms" if abs(seconds) >= 1e-3 else display.format_time(seconds)


def spread(m: timing.Measurement) -> str:
    """'19.6-26.2 ms': the quartile range of ``m``."""
    validate.instance("m", m, timing.Measurement)
    if m.p25 >= 1e-3:
        return f"{m.p25 * 1e3:.1f}-{m.p75 * 1e3:.1f} ms"
    return f"{display.format_time(m.p25)} to {display.format_time(m.p75)}"


def later_startups(run: Timeline) -> str:
    """'53, 49, 49 ms': the first batch's wait of every epoch after the first, a fact the story of persistent
    workers quotes."""
    starts = _timeline("run", run).startups[1:]
    if not starts:
        raise ValueError(f"run ({run.label!r}) ran one epoch; later start-ups need at least 2")
    return ", ".join(f"{s * 1e3:.0f}" for s in starts) + " ms"


def _timeline(name: str, run: object) -> Timeline:
    return validate.instance(name, run, Timeline)


def speedup(before: Timeline, after: Timeline, part: str = "step") -> intervals.Speedup:
    """How many times faster ``after``'s ``part`` per steady step ran than ``before``'s, with its interval over
    the rounds both ran in (``run_loops``): above 1, ``after`` took less time."""
    _timeline("before", before)
    _timeline("after", after)
    validate.choice("part", part, PARTS)
    return intervals.speedup(before.part(part), after.part(part))


def floor(alone: Timeline) -> timing.Measurement:
    """The step time that perfect overlap could reach, per round of ``alone`` (a loop that made its data in the
    training thread): max(median compute, median wait) of each round, as a Measurement whose ``rounds`` pair with
    the other loops of the same ``run_loops``."""
    _timeline("alone", alone)
    epochs = sorted(set(alone.epochs))
    if len(epochs) < 2:
        raise ValueError(f"alone ({alone.label!r}) ran {len(epochs)} round(s); a floor per round needs at least 2")
    per_round = [max(CLOCK_FLOOR, alone.epoch_part(e, "compute").median, alone.epoch_part(e, "wait").median)
                 for e in epochs]
    return timing.Measurement(label=f"max(compute, data) of {alone.label}", times=tuple(per_round),
                              total=sum(per_round), rounds=tuple(per_round))


def _pair(framework: str, pair: object) -> tuple[Timeline, Timeline]:
    if not isinstance(pair, tuple) or len(pair) != 2 or not all(isinstance(t, Timeline) for t in pair):
        raise TypeError(f"before_after[{framework!r}] must be a (before, after) pair of Timelines")
    return pair  # type: ignore[return-value]


def before_after_table(before_after: Mapping[str, tuple[Timeline, Timeline]]) -> display.Table:
    """One row per framework: busy share, median compute and step before and after, and the step's speed-up with
    its interval (each framework against its own baseline, over the rounds both loops ran in)."""
    validate.instance("before_after", before_after, Mapping)
    validate.non_empty("before_after", before_after)
    rows = []
    for framework, pair in before_after.items():
        a, b = _pair(framework, pair)
        gain = speedup(a, b)
        rows.append((framework, display.percent(a.utilisation), display.percent(b.utilisation),
                     f"{ms(a.part('compute').median)} ({spread(a.part('compute'))})",
                     f"{ms(b.part('compute').median)} ({spread(b.part('compute'))})",
                     f"{ms(a.part().median)} ({spread(a.part())})", f"{ms(b.part().median)} ({spread(b.part())})",
                     f"{gain}: {gain.outcome}"))
    return display.table(["framework", "busy before", "busy after", "compute before", "compute after",
                          "step before", "step after", "speed-up of the step"], rows,
                         title="Before and after, steady steps",
                         note="Busy share = total compute / total step time over the steady steps; compute and step "
                              "are medians per steady step (quartiles in brackets); speed-up = before / after, each "
                              "framework against its own baseline, a 95% interval over the rounds both loops ran in.")
