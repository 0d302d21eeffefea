"""How notebook 04 compares two loops in words: medians beside their quartiles, a mean named only with a flag
when a few outlier steps push it outside its quartiles, and a difference called real only when the quartile
ranges are apart (``loop.apart``); otherwise "within the noise".
"""

from __future__ import annotations

from collections.abc import Mapping

from course_utils import display, timing, validate
from course_utils.pipeline.loop import PARTS, Timeline, apart

SAME_DROP = 0.1  # the step "fell by the wait removed" when the two drops differ by at most 10% of the wait's


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


def _part(run: Timeline, part: str) -> timing.Measurement:
    validate.instance("run", run, Timeline)
    return run.part(validate.choice("part", part, PARTS))


def skewed(run: Timeline, part: str = "step") -> bool:
    """True when the mean of ``part`` per steady step lies outside its quartile range: a few outlier steps."""
    m = _part(run, part)
    return not m.p25 <= m.mean <= m.p75


def outliers(run: Timeline, part: str = "step") -> str:
    """'' when the mean of ``part`` lies within its quartiles; else a clause saying that it does not, and why."""
    m = _part(run, part)
    if not skewed(run, part):
        return ""
    side = "above" if m.mean > m.p75 else "below"
    return f"; its mean, {ms(m.mean)}, lies {side} its quartiles: a few outlier steps"


def median(run: Timeline, part: str = "step") -> str:
    """'20.1 ms (quartiles 19.6-26.2 ms)': the median of ``part`` per steady step, the mean flagged if outside."""
    m = _part(run, part)
    return f"{ms(m.median)} (quartiles {spread(m)}{outliers(run, part)})"


def grew(a: Timeline, b: Timeline, part: str = "compute") -> bool:
    """True when ``b``'s ``part`` lies above ``a``'s beyond the quartiles (a rise this run's noise does not explain)."""
    return apart(a, b, part) and _part(b, part).median > _part(a, part).median


def change(a: Timeline, b: Timeline, part: str = "compute") -> str:
    """'median 17.1 → 20.3 ms (quartiles ... → ...): within the noise' or '...: up, beyond the quartiles'."""
    qa, qb = _part(a, part), _part(b, part)
    if not apart(a, b, part):
        verdict = "within the noise of each other"
    else:
        verdict = ("up" if qb.median > qa.median else "down") + ", beyond the quartiles"
    flags = [f"{t.label}, {ms(q.mean)}" for t, q in ((a, qa), (b, qb)) if skewed(t, part)]
    return (f"median {ms(qa.median)} → {ms(qb.median)} (quartiles {spread(qa)} → {spread(qb)}): {verdict}"
            + (f" (a mean outside its quartiles, a few outlier steps: {'; '.join(flags)})" if flags else ""))


def speedup(a: Timeline, b: Timeline) -> float:
    """Median steady step of ``a`` / that of ``b``: ``b``'s speed-up over the baseline ``a``."""
    top, bottom = _part(a, "step").median, _part(b, "step").median
    if bottom <= 0:
        raise ValueError(f"b must have a positive median step; got {bottom!r}")
    return top / bottom


def speedup_text(a: Timeline, b: Timeline) -> str:
    """'1.84x (medians; quartiles apart)' or '1.03x (medians), within the noise (quartiles overlap)'."""
    text = f"{speedup(a, b):.2f}x (medians"
    return text + ("; quartiles apart)" if apart(a, b) else "), within the noise (quartiles overlap)")


def twins(a: Timeline, b: Timeline) -> str:
    """A sentence comparing two runs of the same configuration: this run's noise between identical loops."""
    qa, qb = _part(a, "step"), _part(b, "step")
    said = (f"`{a.label}` and `{b.label}` are the same configuration: median step {ms(qa.median)} (quartiles "
            f"{spread(qa)}) and {ms(qb.median)} ({spread(qb)})")
    if apart(a, b):
        return (said + ". Their quartiles are apart: two identical loops differed beyond their quartiles in this "
                "run; why is not established by this run.")
    return said + ", within the noise of each other."


def same_drop(before: Timeline, after: Timeline) -> bool:
    """True when the mean wait fell and the mean step fell by the same amount, within ``SAME_DROP`` of the wait's
    drop: the speed-up is the wait removed and the busy share tells the same story as the step time."""
    for name, run in (("before", before), ("after", after)):
        validate.instance(name, run, Timeline)
    wait_drop, step_drop = before.wait_time - after.wait_time, before.step_time - after.step_time
    return wait_drop > 0 and abs(step_drop - wait_drop) <= SAME_DROP * wait_drop


def busy_share_moral(before_after: Mapping[str, tuple[Timeline, Timeline]]) -> str:
    """The closing advice on the busy share, or '' when every row's step fell by the wait removed."""
    validate.instance("before_after", before_after, Mapping)
    pairs = [validate.instance("before_after", pair, tuple) for pair in before_after.values()]
    changed = [(a, b) for a, b in pairs if not same_drop(a, b)]
    if not changed:
        return ""
    grown = any(b.compute_time > a.compute_time for a, b in changed)
    return (("The busy share rewards a step that computes longer. " if grown else "")
            + "Where the compute changed, the busy share and the step time tell different stories: judge a pipeline "
            "fix by its step time, and read the busy share next to the compute.")


def before_after_table(before_after: Mapping[str, tuple[Timeline, Timeline]]) -> display.Table:
    """One row per framework: busy share, median compute and step before and after, the median speed-up."""
    validate.instance("before_after", before_after, Mapping)
    validate.non_empty("before_after", before_after)
    rows, flagged = [], False
    for framework, pair in before_after.items():
        if not isinstance(pair, tuple) or len(pair) != 2 or not all(isinstance(t, Timeline) for t in pair):
            raise TypeError(f"before_after[{framework!r}] must be a (before, after) pair of Timelines")
        a, b = pair
        mark = " *" if any(skewed(t, p) for t in pair for p in ("step", "compute")) else ""
        flagged = flagged or bool(mark)
        rows.append((framework + mark, display.percent(a.utilisation), display.percent(b.utilisation),
                     f"{ms(a.part('compute').median)} ({spread(a.part('compute'))})",
                     f"{ms(b.part('compute').median)} ({spread(b.part('compute'))})",
                     f"{ms(a.part().median)} ({spread(a.part())})", f"{ms(b.part().median)} ({spread(b.part())})",
                     f"{speedup(a, b):.2f}x" + ("" if apart(a, b) else " (within the noise)")))
    note = ("Busy share = total compute / total step time over the steady steps; compute and step are medians "
            "per steady step (quartiles in brackets); speed-up = median step before / after, each framework "
            "against its own baseline.")
    if flagged:
        note += " * a mean step or compute of this row lies outside its quartiles (a few outlier steps): the " \
                "busy share, made of totals, includes them."
    return display.table(["framework", "busy before", "busy after", "compute before", "compute after",
                          "step before", "step after", "speed-up"], rows, title="Before and after, steady steps",
                         note=note)


def before_after_text(framework: str, before: Timeline, after: Timeline, *, twin: Timeline | None = None) -> str:
    """What one framework's before/after row says: the median speed-up, then whether the step fell by the
    wait that was removed (means, which add up) or compute grew, and what the busy share would suggest."""
    validate.text("framework", framework)
    if twin is not None:
        validate.instance("twin", twin, Timeline)
    a, b = before, after
    wait_drop, step_drop = a.wait_time - b.wait_time, a.step_time - b.step_time
    text = f"**{framework}**: median step {median(a)} → {median(b)}: against its own baseline, {speedup_text(a, b)}. "
    if wait_drop <= 0:
        return text + f"The mean wait did not fall ({ms(a.wait_time)} → {ms(b.wait_time)})."
    text += (f"In means, which add up (step = wait + compute), the wait fell by {ms(wait_drop)} "
             f"({ms(a.wait_time)} → {ms(b.wait_time)}) "
             + (f"and the step by {ms(step_drop)}" if step_drop >= 0 else f"while the step rose by {ms(-step_drop)}")
             + f" ({ms(a.step_time)} → {ms(b.step_time)})")
    if same_drop(a, b):
        text += (f": the same within {SAME_DROP:.0%}, so the speed-up is the wait removed and the busy share "
                 f"({display.percent(a.utilisation)} → {display.percent(b.utilisation)}) tells the same story as "
                 "the step time.")
    else:
        moved = "grew" if b.compute_time > a.compute_time else "fell"
        text += (f": the difference is compute, whose mean {moved} {ms(a.compute_time)} → {ms(b.compute_time)}; "
                 f"per step, {change(a, b, 'compute')}.")
        if not apart(a, b, "compute") and (skewed(a, "compute") or skewed(b, "compute")):
            text += " The means moved more than the medians: a few outlier steps, not the typical step."
        text += (f" Read alone, the busy share {display.percent(a.utilisation)} → {display.percent(b.utilisation)} "
                 f"would suggest {b.utilisation / a.utilisation:.2f}x (computed: the speed-up if the compute had "
                 f"stayed the same); the mean step gave {a.step_time / b.step_time:.2f}x.")
    if twin is not None:
        text += " " + twins(b, twin)
    return text
