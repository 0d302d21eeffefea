"""Argument checks by declaration: ``@checked`` runs each parameter's annotation (types, ``X | None``, ``Literal``,
``Annotated`` marks such as ``Range``, ``NonEmpty``) at the call; ``declared(fn)`` reads them back for the tests."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
import os
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import numpy as np

from course_utils.validate import bound_text, choice, function, number, text

T = TypeVar("T")

@dataclass(frozen=True)
class Range:
    """A number within [low, high]; ``low_open``/``high_open`` exclude the bound (``Annotated[int, Range(1, 100)]``)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        number(name, value, low=self.low, high=self.high, low_open=self.low_open, high_open=self.high_open)


Positive = Range(0, low_open=True)
NonNegative = Range(0)


@dataclass(frozen=True)
class _NonEmpty:
    """A string with a visible character, or a container with an item."""

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        if isinstance(value, str):
            text(name, value)
        elif _size(value) == 0:
            raise ValueError(f"{name} must not be empty")


NonEmpty = _NonEmpty()
Text = Annotated[str, NonEmpty]  # the common declarations, spelled once
PositiveInt = Annotated[int, Positive]
PositiveFloat = Annotated[float, Positive]
NonNegativeFloat = Annotated[float, NonNegative]


@dataclass(frozen=True)
class _Unique:
    """A sequence whose items are all different (a framework named twice is a typo, not two runs)."""

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        seen: list[Any] = []
        for item in value:
            if any(item is s or _equal(item, s) for s in seen):
                raise ValueError(f"{name} must not repeat an item; got {item!r} more than once in {value!r:.80}")
            seen.append(item)


Unique = _Unique()


@dataclass(frozen=True)
class _Regex:
    """A string that is a regular expression (``re.compile`` accepts it)."""

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"{name} must be a regular expression; {value!r} is not one: {error}") from None


Regex = _Regex()
Pattern = Annotated[str, Regex]


@dataclass(frozen=True)
class Matches:
    """A string that ``pattern`` matches whole; ``meaning`` says in words what it accepts ('a host name')."""

    pattern: str
    meaning: str

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        if re.fullmatch(self.pattern, value) is None:
            raise ValueError(f"{name} must be {self.meaning}; got {value!r}")


FileName = Annotated[str, Matches(r"\w[\w.-]*", "a file name of letters, digits, '.', '-' or '_' (not starting "
                                                  "with '.')")]


@dataclass(frozen=True)
class MaxItems:
    """A container (or array) of at most ``high`` items: a size that would run for minutes fails at the call."""

    high: int

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        if _size(value) > self.high:
            raise ValueError(f"{name} must hold at most {bound_text(self.high)} items; got {_size(value):,}")


@dataclass(frozen=True)
class MinItems:
    """A container (or array) of at least ``low`` items (two points make a line; one step left out leaves one)."""

    low: int

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        if _size(value) < self.low:
            raise ValueError(f"{name} must hold at least {self.low} items; got {_size(value)}")


@dataclass(frozen=True)
class SameLength:
    """A container as long as the argument ``other`` (skipped where ``other`` is None or not passed)."""

    other: str

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        partner = arguments.get(self.other)
        if partner is not None and len(value) != len(partner):
            raise ValueError(f"{name} and {self.other} must be the same length; got {len(value)} and {len(partner)}")


def _size(value: Any) -> int:
    """Items in an array (all of its elements), a container, or a number (one)."""
    size = getattr(value, "size", None)
    if isinstance(size, numbers.Integral):
        return int(size)
    return len(value) if isinstance(value, Sized) else int(np.size(value))


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays compare element-wise
        return False


_KINDS = {"int": "an integer", "float": "a number", "bool": "True or False", "str": "a string",
          "path": "a path (str or pathlib.Path)", "sequence": "a list or tuple", "iterable": "a list or tuple",
          "mapping": "a dict", "callable": "callable"}


@dataclass(frozen=True)
class Rule:
    """What one argument accepts, read from its annotation: its ``kind``, whether None is accepted, its ``marks``, and
    its ``items``' rules (a sequence's items, a mapping's key and value, a tuple's positions, a union's members)."""

    kind: str
    optional: bool = False
    marks: tuple[Any, ...] = ()
    items: tuple[Rule, ...] = ()
    cls: type | None = None
    choices: tuple[Any, ...] = ()

    def describe(self) -> str:
        if self.kind == "class":
            return f"a {self.cls.__name__}"
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "union":
            return " or ".join(r.describe() for r in self.items)
        return _KINDS.get(self.kind, "anything")

    def check(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        """Raise TypeError (wrong kind) or ValueError (a declared rule broken), naming ``name``."""
        if value is None and self.optional:
            return
        self._check_kind(name, value, arguments)
        for mark in self.marks:
            mark.check(name, value, arguments)

    def _check_kind(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        if self.kind == "any":
            return
        if self.kind in ("int", "float"):
            number(name, value, integer=self.kind == "int")
        elif self.kind == "choice":
            choice(name, value, self.choices)
        elif self.kind == "union":
            self._check_union(name, value, arguments)
        elif not _KIND_TESTS[self.kind](value, self):
            raise TypeError(f"{name} must be {self.describe()}; got {type(value).__name__} {value!r:.80}")
        elif self.kind == "path" and not str(value).strip():
            raise ValueError(f"{name} must name a file or folder; got {value!r}")
        elif self.kind in ("sequence", "iterable") and self.items and isinstance(value, Sized):
            self._check_items(name, value, arguments)
        elif self.kind == "mapping" and self.items:
            for key, item in value.items():
                self.items[0].check(f"{name} key {key!r}", key, arguments)
                self.items[1].check(f"{name}[{key!r}]", item, arguments)

    def _check_union(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        refused: list[Exception] = []
        for member in self.items:
            try:
                member.check(name, value, arguments)
                return
            except (TypeError, ValueError) as error:
                refused.append(error)
        raise next((e for e in refused if isinstance(e, ValueError)), None) or \
            TypeError(f"{name} must be {self.describe()}; got {type(value).__name__} {value!r:.80}")

    def _check_items(self, name: str, value: Any, arguments: Mapping[str, Any]) -> None:
        if len(self.items) > 1 and len(value) != len(self.items):
            raise ValueError(f"{name} must hold {len(self.items)} items; got {len(value)}")
        item = self.items[0]
        if isinstance(value, np.ndarray) and len(self.items) == 1 and item.kind in ("int", "float"):
            _check_array(name, value, item)
            return
        for i, element in enumerate(value):
            (self.items[i] if len(self.items) > 1 else item).check(f"{name}[{i}]", element, arguments)


def _check_array(name: str, value: np.ndarray, item: Rule) -> None:
    """A numeric array checked at once (a Python loop over 10**8 items would take a minute)."""
    wanted = "iu" if item.kind == "int" else "iuf"
    if value.dtype.kind not in wanted:
        raise TypeError(f"{name} must hold {item.describe()}s; got an array of {value.dtype}")
    if value.size and not np.isfinite(value).all():
        raise ValueError(f"{name} must hold finite numbers; got {float(value[~np.isfinite(value)].flat[0])!r}")
    for mark in item.marks:
        if isinstance(mark, Range) and value.size:
            mark.check(f"{name} (its {'lowest' if mark.low is not None else 'highest'} item)",
                       (value.min() if mark.low is not None else value.max()).item(), {})
            if mark.low is not None and mark.high is not None:
                mark.check(f"{name} (its highest item)", value.max().item(), {})


def _is_sequence(value: Any, rule: Rule) -> bool:
    if isinstance(value, (str, bytes, Mapping)):
        return False
    return isinstance(value, Sequence) or isinstance(value, np.ndarray) and value.ndim >= 1


_KIND_TESTS: dict[str, Callable[[Any, Rule], bool]] = {
    "bool": lambda v, r: isinstance(v, (bool, np.bool_)),
    "str": lambda v, r: isinstance(v, str),
    "path": lambda v, r: isinstance(v, (str, os.PathLike)),
    "sequence": _is_sequence,
    "iterable": lambda v, r: isinstance(v, Iterable) and not isinstance(v, (str, bytes, Mapping)),
    "mapping": lambda v, r: isinstance(v, Mapping),
    "callable": lambda v, r: callable(v),
    "class": lambda v, r: isinstance(v, r.cls),
}
_SEQUENCES = {Sequence, list, tuple}
_MAPPINGS = {Mapping, dict}


def rule(hint: Any) -> Rule:
    """The Rule an annotation declares (evaluated hint, ``Annotated`` extras kept)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        inner = rule(args[0])
        return dataclasses.replace(inner, marks=inner.marks + tuple(hint.__metadata__))
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        optional = len(members) < len(args)
        kinds = [rule(m) for m in members]
        plain = {k.kind for k in kinds if not k.marks and not k.items}
        if len(kinds) == 1:
            return dataclasses.replace(kinds[0], optional=optional)
        if plain == {"int", "float"} and len(kinds) == 2:
            return Rule("float", optional)
        if len(kinds) == len(plain) and plain <= {"str", "path"}:
            return Rule("path", optional)
        if any(k.kind == "any" for k in kinds):
            return Rule("any", optional)
        return Rule("union", optional, items=tuple(kinds))
    if origin is Literal:
        return Rule("choice", choices=args)
    if hint in (int, float, bool, str):
        return Rule(hint.__name__)
    if hint is Path or hint is os.PathLike or origin is os.PathLike:
        return Rule("path")
    if hint in _SEQUENCES or origin in _SEQUENCES:
        items = tuple(rule(a) for a in args if a is not Ellipsis)
        return Rule("sequence", items=items)
    if Iterable in (hint, origin):
        return Rule("iterable", items=tuple(rule(a) for a in args))
    if hint in _MAPPINGS or origin in _MAPPINGS:
        return Rule("mapping", items=tuple(rule(a) for a in args) if args else ())
    if Callable in (hint, origin):
        return Rule("callable")
    if isinstance(hint, type) and hint.__module__.startswith("course_utils"):
        return Rule("class", cls=hint)
    return Rule("any")


def declared(fn: Callable[..., Any]) -> dict[str, Rule]:
    """The Rule of each parameter of a ``@checked`` function or class whose annotation checks anything (a
    dataclass's or NamedTuple's fields, another class's ``__init__`` parameters)."""
    target = getattr(function("fn", fn), "__checked__", fn)
    if inspect.isclass(target) and not (hasattr(target, "__dataclass_fields__") or issubclass(target, tuple)):
        target = target.__init__
    if inspect.isclass(target):  # the fields, each evaluated where its class was written
        owners = [(vars(sys.modules[k.__module__]), inspect.get_annotations(k)) for k in reversed(target.__mro__)]
    else:
        owners = [(inspect.unwrap(target).__globals__, inspect.get_annotations(target))]
    found: dict[str, Rule] = {}
    for namespace, hints in owners:
        for name, hint in hints.items():
            if name not in ("return", "self"):
                found[name] = rule(_evaluated(hint, namespace))
    return {name: r for name, r in found.items() if r.kind != "any" or r.marks}


def _evaluated(hint: Any, namespace: dict[str, Any]) -> Any:
    """An annotation as an object; a name imported only for type checkers (matplotlib's Axes) checks nothing."""
    if isinstance(hint, typing.ForwardRef):  # how a NamedTuple keeps its fields' annotation text
        hint = hint.__forward_arg__
    if not isinstance(hint, str):
        return hint
    try:
        return eval(hint, namespace)  # the annotation text, in the namespace of the module that wrote it
    except NameError:
        return Any


def checked(fn: T) -> T:
    """Check every argument of ``fn`` against its annotation at each call, before ``fn`` runs (see the module
    docstring). On a class (a dataclass, a NamedTuple) the fields' annotations check its construction."""
    if inspect.isclass(fn):
        method = "__new__" if issubclass(fn, tuple) else "__init__"
        setattr(fn, method, _checking(getattr(fn, method), fn))
        return fn
    return _checking(fn, fn)


def _checking(fn: Callable[..., Any], declares: Any) -> Any:
    signature = inspect.signature(fn)
    rules: dict[str, Rule] = {}

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not rules:
            rules.update(declared(declares) or {"": Rule("any")})
        bound = signature.bind(*args, **kwargs)
        arguments = bound.arguments
        for name, value in arguments.items():
            found = rules.get(name)
            if found is None:
                continue
            kind = signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                for i, item in enumerate(value):
                    found.check(f"{name}[{i}]", item, arguments)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                for key, item in value.items():
                    found.check(key, item, arguments)
            else:
                found.check(name, value, arguments)
                if found.kind == "int" and isinstance(value, np.integer):  # NumPy's integers as Python's
                    arguments[name] = int(value)
        return fn(*bound.args, **bound.kwargs)

    wrapper.__checked__ = declares  # type: ignore[attr-defined]
    return wrapper
