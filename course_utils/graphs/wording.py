"""How notebook 01's stories write numbers: a speed ratio rounded to the precision its interval supports, a share,
the words for an interval's outcome. No sentence lives here; ``story`` and ``story_further`` hold them."""

from __future__ import annotations

import math

from course_utils import intervals, validate

OUTCOME = {intervals.FASTER: "faster", intervals.SLOWER: "slower", intervals.WITHIN_NOISE: "within the noise"}


def rounded(s: intervals.Speedup) -> str:
    """A speed ratio with its interval, each rounded to the precision the interval supports: the ratio to the
    decade of the interval's width, the bounds one digit finer ('160x (95% interval 150x to 171x over 6 paired
    rounds)', never '161.30x')."""
    validate.instance("s", s, intervals.Speedup)
    width = s.high - s.low
    if not (math.isfinite(width) and width > 0):
        return str(s)
    step = math.floor(math.log10(width))
    return (f"{_round(s.ratio, step)}x ({s.confidence:.0%} interval {_round(s.low, step - 1)}x to "
            f"{_round(s.high, step - 1)}x over {s.n} paired {s.unit if s.n != 1 else s.unit[:-1]})")


def _round(value: float, step: int) -> str:
    """``value`` rounded to a multiple of 10**step, but to no fewer than two significant digits (a ratio of 2.7 in
    an interval 80 wide is '2.7', not '0') and no more than four, written without false digits."""
    if value > 0:
        magnitude = math.floor(math.log10(value))
        step = max(min(step, magnitude - 1), magnitude - 3)
    return f"{round(value, -step):.0f}" if step >= 0 else f"{value:.{-step}f}"


def share(part: float, whole: float) -> str:
    """``part`` as a percentage of ``whole`` ('12%')."""
    validate.number("part", part)
    whole = validate.positive("whole", whole)
    return f"{part / whole:.0%}"
