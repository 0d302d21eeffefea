"""The public API of course_utils as a list of calls to try: every public callable of every core module and lesson
package (``cu.<package>.<name>``), each parameter classified by its type hint and name, and for each kind the
values a learner who mistypes would pass. A ``@declare.checked`` callable's parameters carry their declared
``declare.Rule``: the bad values then come from the declaration itself (``declared_bad_values``): each type it
refuses, each bound crossed, empty strings and containers, a repeated item, a length that does not match, and
the extreme floats. Used by tests/test_api_properties.py; a new function is covered the day it is added, without
writing a case.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import re
from dataclasses import dataclass
from typing import Any

import course_utils
from course_utils import declare

# Parameters whose name says what they hold, where the type hint is too loose to tell.
COUNT_NAMES = re.compile(r"^(n|size|sizes|repeats|rounds|steps|calls|trials|batch_size|workers|processes|epochs|"
                         r"warmup|classes|ranks|nproc|width|depth|seq_len|heads|max_\w+|min_repeats|"
                         r"\w+_count|num_\w+|n_\w+)$")
DURATION_NAMES = re.compile(r"^(min_time|seconds|timeout|\w+_seconds|\w+_timeout|interval)$")
PATH_NAMES = re.compile(r"^(path|folder|out|directory|dir|\w+_dir|\w+_path|file)$")


@dataclass(frozen=True)
class Target:
    """One public callable and one of its parameters."""

    spelling: str  # cu.<package>.<name>
    obj: Any
    parameter: str
    kind: str
    annotation: str
    required: tuple[str, ...]  # the other parameters without a default
    rule: declare.Rule | None = None  # the declaration, where the callable is @declare.checked


def public_modules() -> list[tuple[str, Any]]:
    """(spelling prefix, module) for every core module and lesson package; workers are scripts, not API."""
    found = []
    for info in pkgutil.iter_modules(course_utils.__path__):
        if info.name.startswith("_") or info.name == "workers":
            continue
        found.append((f"cu.{info.name}", importlib.import_module(f"course_utils.{info.name}")))
    return found


def public_callables() -> list[tuple[str, Any]]:
    """(cu.<package>.<name>, callable) for every public function and class that course_utils defines, once each,
    spelled through the package that defines it (``Machine`` is ``cu.roofline.Machine`` although ``cu.plotting``
    imports it too; a lesson's name re-exported by its ``__init__`` is ``cu.<lesson>.<name>``)."""
    found: dict[int, tuple[str, Any]] = {}
    for prefix, module in public_modules():
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for name in sorted(names):
            obj = getattr(module, name, None)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            home = getattr(obj, "__module__", "") or ""
            if not home.startswith("course_utils"):
                continue
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                continue
            defines = home == f"course_utils.{prefix[3:]}" or home.startswith(f"course_utils.{prefix[3:]}.")
            if defines or id(obj) not in found:
                found[id(obj)] = (f"{prefix}.{name}", obj)
    return sorted(found.values(), key=lambda pair: pair[0])


def _members(hint: str) -> list[str]:
    """The members of a union hint at its top level ("Mapping[str, int | None] | None" -> ["Mapping[str, int | None]"]),
    without None."""
    members, depth, current = [], 0, ""
    for char in hint:
        depth += char == "["
        depth -= char == "]"
        if char == "|" and depth == 0:
            members.append(current)
            current = ""
        else:
            current += char
    members.append(current)
    return [m for m in members if m and m != "None"]


def _outer(member: str) -> str:
    """The outer type of one hint member, without its module and parameters: "collections.abc.Mapping[str, X]" ->
    "Mapping"."""
    return member.split("[", 1)[0].rsplit(".", 1)[-1]


def kind_of(name: str, annotation: str) -> str:
    """The parameter's kind: count, duration, number, text, callable, sequence, mapping, path, flag or other.

    Decided by the hint's outer types (a ``Sequence[int]`` is a sequence, a ``Mapping[str, Callable]`` a mapping),
    then by the name where the hint is a bare int or float."""
    members = _members(annotation.replace(" ", ""))
    outer = [_outer(m) for m in members]
    if not outer:
        return "other"
    if outer[0] == "bool":
        return "flag"
    if set(outer) <= {"int", "float"}:
        if DURATION_NAMES.match(name):
            return "duration"
        if outer == ["int"] or COUNT_NAMES.match(name) and "int" in outer:
            return "count"
        return "number"
    if outer == ["str"]:
        return "path" if PATH_NAMES.match(name) else "text"
    if set(outer) <= {"str", "Path", "PathLike"}:
        return "path"
    containers = {"Callable": "callable", "Sequence": "sequence", "list": "sequence", "tuple": "sequence",
                  "Iterable": "sequence", "Mapping": "mapping", "dict": "mapping"}
    return next((containers[o] for o in outer if o in containers), "other")


def targets() -> list[Target]:
    """Every (public callable, parameter) pair whose kind has bad values to try."""
    found = []
    for spelling, obj in public_callables():
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        params = [p for p in signature.parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
        required = tuple(p.name for p in params if p.default is p.empty)
        rules = declare.declared(obj) if hasattr(obj, "__checked__") or hasattr(obj.__init__, "__checked__") else {}
        for p in params:
            annotation = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
            kind = kind_of(p.name, annotation or "")
            if kind != "other" or p.name in rules:
                found.append(Target(spelling, obj, p.name, kind, annotation or "",
                                    tuple(r for r in required if r != p.name), rules.get(p.name)))
    return found


NAN, INF = math.nan, math.inf


def bad_values(kind: str, annotation: str) -> list[Any]:
    """What a learner who mistypes passes for a parameter of ``kind`` (None only where the hint refuses it)."""
    values = {
        "count": [-1, 0, 10**12, 2.5, NAN, "3", True],
        "duration": [-1.0, 0.0, NAN, INF, 10**9, "1"],
        "number": [NAN, INF, -INF, "1"],
        "text": [123, b"x", ["a"]],
        "path": [123, "/etc/passwd-not-a-course-file/../..", "../../outside-the-course-not-a-file"],
        "callable": [42, "f"],
        "sequence": ["abc", 5],
        "mapping": [[1, 2], 5, "ab"],
        "flag": ["yes", 2],
    }[kind]
    if "None" not in annotation:
        values.append(None)
    return values


EXTREME_FLOATS = [1e308, -1e308, 5e-324, -5e-324]  # finite, yet past what most formulas survive

# A value of another kind than each declared kind: what the declaration must refuse as a TypeError.
_WRONG_KIND = {"int": ["3", 2.5, True], "float": ["1", True], "bool": ["yes", 2], "str": [123, b"x", ["a"]],
               "path": [123, ["a"]], "sequence": ["abc", 5], "iterable": [5], "mapping": [[1, 2], 5, "ab"],
               "callable": [42, "f"], "class": [object()], "choice": ["not-one-of-them"]}


def declared_bad_values(rule: declare.Rule, good: Any) -> list[Any]:
    """Every value the declaration ``rule`` refuses that a mistyping learner could pass, made from ``good`` (a value
    it accepts) where the rule is relative: a repeated item, a length that does not match, one item too few."""
    values = [] if rule.optional else [None]
    if rule.kind == "union":
        values += [v for member in rule.items for v in _WRONG_KIND.get(member.kind, [])
                   if not _accepted(rule, v, good)]
    else:
        values += _WRONG_KIND.get(rule.kind, [])
    for mark in rule.marks:
        values += _crossing(mark, rule, good)
    if rule.kind in ("int", "float"):
        values += [math.nan, math.inf, -math.inf]
    if rule.kind in ("sequence", "iterable") and len(rule.items) == 1:
        values += [[item] for item in declared_bad_values(rule.items[0], _first(good)) if item is not None][:4]
    if rule.kind == "mapping" and len(rule.items) == 2:
        key = next(iter(good)) if isinstance(good, dict) and good else "a"
        values += [{key: item} for item in declared_bad_values(rule.items[1], good.get(key) if isinstance(good, dict)
                                                                else None) if item is not None][:4]
    return [v for v in values if not _accepted(rule, v, good)]


def _crossing(mark: Any, rule: declare.Rule, good: Any) -> list[Any]:
    """Values just past one declared constraint."""
    if isinstance(mark, declare.Range):
        step = 1 if rule.kind == "int" else 1e-9
        below = [] if mark.low is None else [mark.low if mark.low_open else mark.low - step, -1e308]
        above = [] if mark.high is None else [mark.high if mark.high_open else mark.high + step, 1e308]
        return [int(v) if rule.kind == "int" and abs(v) < 1e18 else v for v in below + above]
    if mark is declare.NonEmpty:
        return {"str": ["", "   "], "path": [""], "mapping": [{}]}.get(rule.kind, [[], ()])
    if mark is declare.Unique and _sized(good):
        return [[_first(good), _first(good)]]
    if isinstance(mark, declare.SameLength) and _sized(good):
        return [[*good, _first(good)]]
    if isinstance(mark, declare.MinItems) and _sized(good):
        return [list(good)[:mark.low - 1]]
    if isinstance(mark, declare.MaxItems):
        return [[_first(good) if _sized(good) else 0.0] * (mark.high + 1)]
    if mark is declare.Regex:
        return ["[", "("]
    if isinstance(mark, declare.Matches):
        return ["a b; rm -rf ~", ""]
    return []


def _sized(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) > 0


def _first(value: Any) -> Any:
    return value[0] if _sized(value) else 1.0


def _accepted(rule: declare.Rule, value: Any, good: Any) -> bool:
    """Whether the declaration lets ``value`` through (then it is not a bad value of it). A relative mark
    (SameLength) is judged against ``good`` as the other argument."""
    try:
        rule.check("value", value, _Partner(good))
        return True
    except (TypeError, ValueError):
        return False


class _Partner(dict):
    """The arguments a relative mark reads: every other argument is ``good`` (what the walk passes for it)."""

    def __init__(self, good: Any) -> None:
        super().__init__()
        self.good = good

    def get(self, key: Any, default: Any = None) -> Any:
        return self.good if _sized(self.good) else default


def declared_good_value(rule: declare.Rule, by_class: dict[str, Any], path: Any) -> Any:
    """A value the declaration ``rule`` accepts, so that a call's other arguments are not what is wrong with it;
    ``by_class`` holds a good instance of each course class the walk knows. KeyError where none is known."""
    for value in _candidates(rule, by_class, path):
        if _accepted(rule, value, None):
            return value
    raise KeyError(f"a value of {rule.describe()}")


def _candidates(rule: declare.Rule, by_class: dict[str, Any], path: Any) -> list[Any]:
    bounds = [v for m in rule.marks if isinstance(m, declare.Range) for v in (m.low, m.high) if v is not None]
    if rule.kind in ("int", "float"):
        numbers = [4, 1, 2, 0, *(b + s for b in bounds for s in (0, 1, -1))]
        return [int(v) for v in numbers] if rule.kind == "int" else [1.0, 0.05, 0.5, *map(float, numbers)]
    if rule.kind in ("sequence", "iterable"):
        items = [declared_good_value(r, by_class, path) for r in rule.items]
        return [items if len(items) > 1 else items * 2] if items else [[1.0, 2.0]]
    if rule.kind == "mapping":
        items = [declared_good_value(r, by_class, path) for r in rule.items] or ["a", 1.0]
        return [{items[0]: items[1]}]
    if rule.kind == "union":
        return [v for member in rule.items for v in _candidates(member, by_class, path)]
    return {"bool": [False], "str": ["x", "trace", "a"], "path": [str(path)], "callable": [lambda *a, **k: 0.0],
            "class": [by_class.get(getattr(rule.cls, "__name__", ""))], "choice": list(rule.choices[:1]),
            "any": [1.0]}[rule.kind]
