"""Every outcome's sentence of a findings template, each fact filled with its own name: what the property tests of
the templates read (a template's texts, checked without a run)."""

from __future__ import annotations

from collections.abc import Callable

from course_utils.findings import NOT_TESTED, REACHES, Check, Finding, Template


class _Named(str):
    """A stand-in fact that prints its own name whatever format spec the template gives it ('{busy:.0%}')."""

    def __format__(self, spec: str) -> str:
        return str(self)


def render_all(template: Template, make_check: Callable[[str, str], Check]) -> dict[str, str]:
    """Each reachable outcome's sentence of ``template``, with checks from ``make_check(kind, outcome)`` and every
    fact filled with its own name."""
    facts = {name: _Named(f"<{name}>") for name in template.facts}
    out = {}
    for outcome in template.outcomes:
        if outcome == NOT_TESTED:
            out[outcome] = Finding(template, (), facts, why="a reason").sentence
            continue
        kind = next(k for k in template.kinds if outcome in REACHES[k])
        out[outcome] = Finding(template, (make_check(kind, outcome),), facts).sentence
    return out
