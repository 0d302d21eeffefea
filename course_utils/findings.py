"""A finding is written once: a lesson's ``Template`` (one sentence per outcome) scored on ``Check``s of what the run
measured; the core decides the outcome and writes the direction words, so no sentence contradicts its interval."""

from __future__ import annotations

import math
import numbers
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Annotated, Any, Literal, get_args

import numpy as np

from course_utils import declare, display, intervals, validate
from course_utils.declare import NonEmpty, NonNegativeFloat, Text

HELD, ABOVE, BELOW, FAILED, UNDECIDED, NOT_TESTED = (
    "held", "failed above", "failed below", "failed", "not decided", "not tested")
OUTCOMES = (HELD, ABOVE, BELOW, FAILED, UNDECIDED, NOT_TESTED)
_Kind = Literal["above", "below", "within", "equal", "true"]
KINDS = get_args(_Kind)
#: the outcomes each kind of check can reach (an interval may also straddle its bound: not decided)
REACHES = {"above": (HELD, BELOW, UNDECIDED), "below": (HELD, ABOVE, UNDECIDED),
           "within": (HELD, ABOVE, BELOW, UNDECIDED), "equal": (HELD, ABOVE, BELOW), "true": (HELD, FAILED)}
#: the text field of a Template that tells each outcome
TEXT_OF = {HELD: "held", ABOVE: "above", BELOW: "below", FAILED: "failed", UNDECIDED: "undecided",
           NOT_TESTED: "untested"}
#: placeholders every text may use, filled by the core from the checks
AUTOMATIC = frozenset({"evidence", "failed", "undecided", "why"})
_TEMPLATES: dict[str, Template] = {}


_FORMATS: dict[str, Callable[[float], str]] = {
    "x": lambda v: f"{v:.3g}x", "%": lambda v: display.percent(v, 1 if abs(v) < 0.1 else 0),
    "s": display.format_time, "B": display.format_bytes, "count": lambda v: f"{v:,}", "": lambda v: f"{v:.3g}"}


@declare.checked
@dataclass(frozen=True, repr=False)
class Check:
    """One piece of evidence, an interval (``intervals.Speedup``) or a number, tested against ``bound``: "above",
    "below", "within" ``[bound, high]``, "equal" within ``tolerance``, or "true" (a boolean fact)."""

    name: Text
    kind: _Kind
    value: Any
    bound: float | None = None
    high: float | None = None
    unit: Literal["x", "%", "s", "B", "", "count"] = "x"
    source: Literal["measured", "computed", "counted"] = "measured"
    tolerance: NonNegativeFloat = 0.0

    def __post_init__(self) -> None:
        if self.kind == "true":
            if not isinstance(self.value, (bool, np.bool_)):
                raise TypeError(f"value of a 'true' check must be a bool computed from the run; got "
                                f"{type(self.value).__name__} {self.value!r}")
            object.__setattr__(self, "value", bool(self.value))
            return
        if self.kind == "equal" or not isinstance(self.value, intervals.Speedup):
            validate.number("value", self.value)
        validate.number("bound", self.bound)
        if self.kind == "within":
            validate.number("high", self.high, low=self.bound)
        elif self.high is not None:
            raise ValueError(f"high is the upper bound of a 'within' check only; got high={self.high!r} for a "
                             f"{self.kind!r} check")

    @property
    def interval(self) -> bool:
        """True when the value is an interval (so the check may be undecided)."""
        return isinstance(self.value, intervals.Speedup)

    @property
    def outcome(self) -> str:
        """held, failed above, failed below, failed (a false fact) or not decided (an interval across its bound)."""
        if self.kind == "true":
            return HELD if self.value else FAILED
        if self.kind == "equal":
            low, high = self.bound - self.tolerance, self.bound + self.tolerance
            return HELD if low <= self.value <= high else (ABOVE if self.value > high else BELOW)
        low, high = ((self.value.low, self.value.high) if self.interval else (self.value, self.value))
        top = self.high if self.kind == "within" else self.bound
        bottom = self.bound
        if self.kind in ("above", "within") and high < bottom:
            return BELOW
        if self.kind in ("below", "within") and low > top:
            return ABOVE
        inside = ((self.kind == "above" and low > bottom) or (self.kind == "below" and high < top)
                  or (self.kind == "within" and low >= bottom and high <= top))
        if inside or self.interval:
            return HELD if inside else UNDECIDED
        return BELOW if self.kind == "above" else ABOVE  # a plain number on its bound is not strictly beyond it

    @property
    def relation(self) -> str:
        """The direction words, written from the interval and the bound: 'faster beyond the noise', 'below 8x', ..."""
        outcome = self.outcome
        if self.kind == "true":
            return "true" if self.value else "false"
        if self.interval and self.kind in ("above", "below") and self.bound == 1:  # a speed-up against 1x
            return {HELD: "faster beyond the noise" if self.kind == "above" else "slower beyond the noise",
                    ABOVE: "faster beyond the noise", BELOW: "slower beyond the noise",
                    UNDECIDED: "within the noise of 1x: not decided"}[outcome]
        if self.kind == "equal":
            spread = f" ± {_FORMATS[self.unit](self.tolerance)}" if self.tolerance else ""
            target = _FORMATS[self.unit](self.bound) + spread
            return {HELD: f"equal to {target}", ABOVE: f"above {target}", BELOW: f"below {target}"}[outcome]
        if self.kind == "within":
            span = f"[{_FORMATS[self.unit](self.bound)}, {_FORMATS[self.unit](self.high)}]"
            return {HELD: f"inside {span}", ABOVE: f"above {span}", BELOW: f"below {span}",
                    UNDECIDED: f"across an edge of {span}: not decided"}[outcome]
        bound = _FORMATS[self.unit](self.bound)
        if not self.interval and self.value == self.bound:
            return f"on {bound}, not {self.kind} it"
        if outcome == UNDECIDED:
            return f"its interval straddles {bound}: not decided"
        return f"{ {HELD: self.kind, ABOVE: 'above', BELOW: 'below'}[outcome]} {bound}"

    @property
    def number(self) -> str:
        """The value as printed: an interval with its estimate and scope, or a number with its source."""
        if self.kind == "true" or self.interval:
            return "" if self.kind == "true" else str(self.value)
        text = _FORMATS[self.unit](self.value)
        return text if self.source == "measured" else f"{text} ({self.source})"

    def __str__(self) -> str:
        if self.kind == "true":
            return f"{self.name}: {self.relation}"
        return f"{self.name} {self.number}: {self.relation}"

    __repr__ = __str__


def above(name: str, value: Any, bound: float, *, unit: str = "x", source: str = "measured") -> Check:
    """The prediction "``value`` lies above ``bound``" (a whole interval above it, when ``value`` is one)."""
    return Check(name, "above", value, bound, unit=unit, source=source)


def below(name: str, value: Any, bound: float, *, unit: str = "x", source: str = "measured") -> Check:
    """The prediction "``value`` lies below ``bound``"."""
    return Check(name, "below", value, bound, unit=unit, source=source)


def within(name: str, value: Any, low: float, high: float, *, unit: str = "x", source: str = "measured") -> Check:
    """The prediction "``value`` lies inside [low, high]": for an interval, the whole of it (an equivalence margin:
    "no difference" is held only inside a stated margin, otherwise it is not decided)."""
    return Check(name, "within", value, low, high, unit=unit, source=source)


def faster(name: str, speedup: intervals.Speedup) -> Check:
    """The prediction "faster": the whole interval of the speed-up lies above 1x."""
    return above(name, validate.instance("speedup", speedup, intervals.Speedup), 1.0)


def slower(name: str, speedup: intervals.Speedup) -> Check:
    """The prediction "slower": the whole interval of the speed-up lies below 1x."""
    return below(name, validate.instance("speedup", speedup, intervals.Speedup), 1.0)


def same(name: str, speedup: intervals.Speedup, margin: float) -> Check:
    """The prediction "no difference": the whole interval lies inside [1/margin, margin] (an equivalence test)."""
    validate.instance("speedup", speedup, intervals.Speedup)
    margin = validate.number("margin", margin, low=1, low_open=True, high=100)
    return within(name, speedup, 1 / margin, margin)


def equal(name: str, value: Any, expected: float, *, tolerance: float = 0.0, unit: str = "count",
          source: str = "counted") -> Check:
    """The prediction "``value`` equals ``expected``" (within ``tolerance``): counts, shapes, exact results."""
    return Check(name, "equal", value, expected, unit=unit, source=source, tolerance=tolerance)


def true(name: str, value: Any) -> Check:
    """A fact predicted true (ranks identical, compiled equal to eager), computed from the run."""
    return Check(name, "true", value)


def _fields(text: str) -> set[str]:
    return {f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(text) if f}


@declare.checked
@dataclass(frozen=True, repr=False)
class Template:
    """A prediction's ``str.format`` sentences, one per outcome its ``kinds`` of check can reach (``untested`` where a
    runtime may lack it); the core fills ``AUTOMATIC`` fields, ``score``'s facts the rest. It holds no condition."""

    key: Text
    kinds: Annotated[tuple[_Kind, ...], NonEmpty]
    held: str
    above: str = ""
    below: str = ""
    failed: str = ""
    undecided: str = ""
    untested: str = ""
    facts: tuple[str, ...] = field(default=(), init=False)

    def __post_init__(self) -> None:
        kinds = tuple(self.kinds)
        object.__setattr__(self, "kinds", kinds)
        names: set[str] = set()
        for outcome in self.outcomes:
            text = getattr(self, TEXT_OF[outcome])
            if outcome != NOT_TESTED and not text.strip():
                raise ValueError(f"template {self.key!r} needs a text for {outcome!r} ({TEXT_OF[outcome]}=...): its "
                                 f"checks ({', '.join(kinds)}) can reach that outcome")
            names |= _fields(text)
        for outcome in set(OUTCOMES) - set(self.outcomes) - {NOT_TESTED}:
            if getattr(self, TEXT_OF[outcome]):
                raise ValueError(f"template {self.key!r} has a text for {outcome!r}, which its checks "
                                 f"({', '.join(kinds)}) cannot reach")
        object.__setattr__(self, "facts", tuple(sorted(names - AUTOMATIC)))
        if _TEMPLATES.get(self.key, self) is not self and _TEMPLATES[self.key] != self:
            raise ValueError(f"a template named {self.key!r} is declared already")
        _TEMPLATES[self.key] = self

    @property
    def outcomes(self) -> tuple[str, ...]:
        """Every outcome this prediction can have: those its kinds reach, and not tested where it has a text."""
        reached = {o for kind in self.kinds for o in REACHES[kind]}
        found = [o for o in OUTCOMES if o in reached]
        return (*found, NOT_TESTED) if self.untested.strip() else tuple(found)

    def score(self, *checks: Check, **facts: Any) -> Finding:
        """The finding on this run's evidence: held when every check held, failed when any failed, else not
        decided. ``facts`` fill the template's other placeholders (numbers to quote, never to decide on)."""
        return display.record(self.read(*checks, **facts))

    def read(self, *checks: Check, **facts: Any) -> Finding:
        """As ``score``, but not counted among this process's predictions: a report's finding, read again."""
        validate.non_empty("checks", checks)
        for i, check in enumerate(checks):
            validate.instance(f"checks[{i}]", check, Check)
            if check.kind not in self.kinds:
                raise ValueError(f"checks[{i}] is a {check.kind!r} check; template {self.key!r} is made of "
                                 f"{', '.join(self.kinds)} checks")
        return Finding(self, tuple(checks), self._facts(facts))

    def not_tested(self, why: str, **facts: Any) -> Finding:
        """The finding where this runtime cannot measure the prediction: it has not failed, and says why."""
        if not self.untested.strip():
            raise ValueError(f"template {self.key!r} has no 'untested' text: give it one where the prediction may "
                             "not be testable on some runtime")
        needed = tuple(sorted(_fields(self.untested) - AUTOMATIC))
        return display.record(Finding(self, (), self._facts(facts, needed), why=validate.text("why", why)))

    def _facts(self, facts: Mapping[str, Any], needed: tuple[str, ...] | None = None) -> dict[str, Any]:
        """``facts`` if it names every fact the texts use (``needed``: those of one text) and no other."""
        missing = [name for name in (self.facts if needed is None else needed) if name not in facts]
        if missing:
            raise ValueError(f"template {self.key!r} needs the facts {', '.join(missing)}; got "
                             f"{', '.join(sorted(facts)) or 'none'}")
        extra = sorted(set(facts) - set(self.facts))
        if extra:
            raise ValueError(f"template {self.key!r} uses no fact named {', '.join(extra)}")
        for name, value in facts.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"fact {name} must be finite; got {value!r}")
            if not isinstance(value, (str, numbers.Real)):
                raise TypeError(f"fact {name} must be text or a number; got {type(value).__name__}")
        return dict(facts)


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


@dataclass(frozen=True, repr=False)
class Finding:
    """A scored prediction: ``str`` is the verdict line ('Prediction held: ...'), ``sentence`` the template's text for
    this outcome, ``bool`` True only when it held."""

    template: Template
    checks: tuple[Check, ...]
    facts: dict[str, Any]
    why: str = ""

    @property
    def outcome(self) -> str:
        if not self.checks:
            return NOT_TESTED
        failed = {c.outcome for c in self.checks} & {ABOVE, BELOW, FAILED}
        if failed:  # failed more than one way: "failed", and the sentence tells each way
            return failed.pop() if len(failed) == 1 else FAILED
        return UNDECIDED if any(c.outcome == UNDECIDED for c in self.checks) else HELD

    @property
    def status(self) -> str:
        """held, failed, not decided or not tested: what the summary table counts."""
        outcome = self.outcome
        return display.FAILED if outcome in (ABOVE, BELOW, FAILED) else outcome

    held = property(lambda self: self.outcome == HELD)
    failed = property(lambda self: self.status == display.FAILED)
    undecided = property(lambda self: self.outcome == UNDECIDED)
    tested = property(lambda self: self.outcome != NOT_TESTED)

    def __bool__(self) -> bool:
        return self.held

    @property
    def evidence(self) -> str:
        return "; ".join(str(c) for c in self.checks)

    @property
    def sentence(self) -> str:
        """The template's text for this outcome, each failure direction told with its own checks."""
        if self.status == display.FAILED:  # each way it failed is told with its own checks, then what is undecided
            return " ".join(self._fill(o) for o in (ABOVE, BELOW, FAILED, UNDECIDED)
                            if any(c.outcome == o for c in self.checks))
        return self._fill(self.outcome)

    def _fill(self, outcome: str) -> str:
        text = getattr(self.template, TEXT_OF[outcome])
        automatic = {"evidence": self.evidence, "why": self.why,
                     "failed": _listed([c.name for c in self.checks if c.outcome == outcome]),
                     "undecided": _listed([c.name for c in self.checks if c.outcome == UNDECIDED])}
        return text.format(**automatic, **self.facts)

    def prose(self, *more: str) -> display.Prose:
        """The sentence as Markdown, followed by any paragraphs ``more`` that do not depend on the outcome."""
        return display.prose(self.sentence, *more)

    def __str__(self) -> str:
        if self.outcome == NOT_TESTED:
            return f"Not tested here: {self.why}"
        head = {display.HELD: "Prediction held", display.FAILED: "Prediction failed",
                UNDECIDED: "Not decided"}[self.status]
        return f"{head}: {self.evidence}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = {display.HELD: "#009E73", display.FAILED: "#D55E00"}.get(self.status, "#555555")
        return f"<p style='color:{colour}'><b>{escape(str(self))}</b></p>"


def templates() -> dict[str, Template]:
    """Every template declared so far (import the lesson's findings module first), by key."""
    return dict(_TEMPLATES)

