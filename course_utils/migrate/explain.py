"""Sentences computed from a measured ladder: which no-migration rungs won, lost or changed nothing, and what
moved (the wait for data or the compute, per sample), so that the notebook's prose follows the run.

A rung *won* when its whole band (quartiles of the per-round ratios) lies above 1, *lost* when it lies below
1, and changed nothing measurable otherwise.
"""

from __future__ import annotations

from course_utils import display, timing, validate
from course_utils.migrate.ladder import NO_MIGRATION, Ladder, Rung

OUTCOMES = ("won", "lost", "no measurable change")


def outcome(low: float, high: float) -> str:
    """'won' (band above 1), 'lost' (band below 1) or 'no measurable change' (the band holds 1)."""
    return "won" if low > 1 else "lost" if high < 1 else "no measurable change"


def outcomes(ladder: Ladder) -> dict[str, list[str]]:
    """The no-migration rungs by outcome, each as 'label m.mmx'."""
    validate.instance("ladder", ladder, Ladder)
    found: dict[str, list[str]] = {name: [] for name in OUTCOMES}
    for label, kind, median, low, high in ladder.steps_taken():
        if kind == NO_MIGRATION:
            found[outcome(low, high)].append(f"{label} {median:.2f}x")
    return found


def _per_sample(rung: Rung) -> tuple[str, str]:
    return (display.format_time(rung.wait_time / rung.batch_size),
            display.format_time(rung.compute_time / rung.batch_size))


def rung_sentence(ladder: Ladder, label: str, cores: int) -> str:
    """What rung ``label`` did over the rung before it, with the band, the wait and compute per sample, and (for
    a loss) the load average while it ran."""
    validate.instance("ladder", ladder, Ladder)
    validate.positive("cores", cores, integer=True)
    rung, before = ladder[label], ladder.before(label)
    median, low, high = ladder.over_previous_band(label)
    result = outcome(low, high)
    (w0, c0), (w1, c1) = _per_sample(before), _per_sample(rung)
    text = (f"*{label}*: {median:.2f}x per sample (band {low:.2f} to {high:.2f}), "
            + {"won": "a win", "lost": "**a loss**", "no measurable change": "no measurable change"}[result]
            + f"; per sample the wait went {w0} -> {w1} and the compute {c0} -> {c1}")
    if result == "lost":
        rose = rung.compute_time / rung.batch_size > before.compute_time / before.batch_size
        load = "" if rung.load is None else f" (load average {rung.load:.1f} on {cores} cores while it ran)"
        text += (": the compute rose more than the wait fell" if rose else ": the wait grew") + load
        if rose and "loader worker" in label:
            text += "; the model's core was not its own: the worker, and any other load, took cycles from it"
    if ("loader worker" in label or "pinned memory" in label) and rung.batch_size == before.batch_size and \
            rung.computes is not None and before.computes is not None and timing.apart(before.computes, rung.computes):
        text += (f"; its compute changed too ({c0} -> {c1} per sample, beyond the quartiles), which a loader change "
                 "does not do directly: candidates are the caches (data preparation no longer runs on the model's "
                 "core) and the machine's drift between measurement groups; which, is not established by this run")
    if rung in ladder.dropped:
        text += "; not kept: compile is measured on the faster set-up before it"
    return text + "."


def cheap_story(ladder: Ladder, cores: int) -> str:
    """One sentence per no-migration rung after the baseline, in the order they were measured (kept rungs, then
    the ones tried and not kept)."""
    tried = [r for r in ladder.rungs[1:] if r.kind == NO_MIGRATION] + list(ladder.dropped)
    return " ".join(rung_sentence(ladder, r.label, cores) for r in tried)
