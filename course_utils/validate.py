"""The one set of argument checks: a wrong kind raises TypeError, a wrong value ValueError, and every message
names the argument and what it accepts, so a learner's typo fails at the call, not deep inside numpy.

A public function declares its checks in its signature and is decorated with ``@checked``: each annotation
(``int``, ``float``, ``bool``, ``str``, ``Path``, ``Sequence[...]``, ``Mapping[...]``, ``Callable``, a course class,
``Literal``, ``X | None``) is a check, and ``Annotated`` adds the declared constraints (``Range``, ``Positive``,
``NonNegative``, ``NonEmpty``, ``Unique``, ``MinItems``, ``MaxItems``, ``SameLength``, ``Regex``, ``Matches``).
Numbers are finite unless declared otherwise. The checks below it are what the declarations run; a function
calls them by hand only for rules a signature cannot state, e.g.
``repeats = validate.positive("repeats", repeats, integer=True)``.
"""

from __future__ import annotations

import functools
import inspect
import math
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
import psutil

T = TypeVar("T")

FRAMEWORKS = ("torch", "jax", "tensorflow")
MAX_ELEMENTS = 2**31  # elements of one array: 8 GiB of float32, past any machine this course runs on
MAX_WORKING_SET = 2**36  # bytes a probe may touch: 64 GiB
_FRAMEWORK_ALIASES = {"torch": "torch", "pytorch": "torch", "jax": "jax",
                      "tensorflow": "tensorflow", "tf": "tensorflow"}
_FRAMEWORK_TITLES = {"torch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}


def number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
) -> Any:
    """Return ``value`` if it is a finite real number (an integer when asked) within [low, high].

    ``low_open``/``high_open`` exclude the bound itself. bool is refused: ``True`` is not a count.
    """
    _bounds(name, low, high)
    for flag, given in (("low_open", low_open), ("high_open", high_open), ("integer", integer)):
        if not isinstance(given, bool):
            raise TypeError(f"{flag} must be True or False; got {type(given).__name__} {given!r}")
    kind = "an integer" if integer else "a number"
    wanted = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, wanted):
        raise TypeError(f"{name} must be {kind}; got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise ValueError(f"{name} must be {_range_text(low, high, low_open, high_open)}; got {value!r}")
    return value


def _bounds(name: str, low: Any, high: Any) -> None:
    """Refuse bounds that are not finite numbers, or reversed ones (low above high): no value could pass them."""
    for bound, given in (("low", low), ("high", high)):
        if given is None:
            continue
        if isinstance(given, bool) or not isinstance(given, numbers.Real):
            raise TypeError(f"the {bound} bound of {name} must be a number or None; got {type(given).__name__} "
                            f"{given!r}")
        if not math.isfinite(given):
            raise ValueError(f"the {bound} bound of {name} must be finite; got {given!r}")
    if low is not None and high is not None and low > high:
        raise ValueError(f"{name} has no accepted value: its bounds are reversed (low={low!r} above high={high!r})")


def _range_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if high is None:
        return f"{'>' if low_open else '>='} {_bound_text(low)}"
    if low is None:
        return f"{'<' if high_open else '<='} {_bound_text(high)}"
    return f"in {'(' if low_open else '['}{_bound_text(low)}, {_bound_text(high)}{')' if high_open else ']'}"


def _bound_text(bound: Any) -> str:
    """A bound as a reader takes it in: whole numbers in full ('2,147,483,648'), others with :g."""
    if isinstance(bound, numbers.Integral) or float(bound).is_integer() and abs(bound) < 1e15:
        return f"{int(bound):,}" if abs(bound) >= 10_000 else f"{int(bound)}"
    return f"{bound:g}"


def positive(name: str, value: Any, *, integer: bool = False) -> Any:
    """Return ``value`` if it is a finite number > 0 (an integer >= 1 when ``integer``)."""
    return number(name, value, low=0, low_open=True, integer=integer)


def non_negative(name: str, value: Any, *, integer: bool = False) -> Any:
    """Return ``value`` if it is a finite number >= 0."""
    return number(name, value, low=0, integer=integer)


def fraction(name: str, value: Any) -> Any:
    """Return ``value`` if it is a number in [0, 1] (a share, a probability)."""
    return number(name, value, low=0, high=1)


def choice(name: str, value: Any, choices: Iterable[T]) -> T:
    """Return ``value`` if it is one of ``choices``; the error lists them."""
    if isinstance(choices, (str, bytes)) or not isinstance(choices, Iterable):
        raise TypeError(f"choices must be a list or tuple of the accepted values; got {type(choices).__name__} "
                        f"{choices!r}")
    options = tuple(choices)
    try:
        ok = value in options
    except TypeError:  # an unhashable value against a set-like container
        ok = False
    if not ok:
        listed = ", ".join(repr(c) for c in options)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def function(name: str, value: Any) -> Callable[..., Any]:
    """Return ``value`` if it can be called."""
    if not callable(value):
        raise TypeError(f"{name} must be callable; got {type(value).__name__} {value!r}")
    return value


def instance(name: str, value: Any, types: type | tuple[type, ...]) -> Any:
    """Return ``value`` if it is an instance of ``types``; the error names the accepted types."""
    if not (isinstance(types, type) or isinstance(types, tuple) and types and all(isinstance(t, type) for t in types)):
        raise TypeError(f"types must be a type or a tuple of types; got {types!r}")
    if not isinstance(value, types):
        accepted = types if isinstance(types, tuple) else (types,)
        names = " or ".join(t.__name__ for t in accepted)
        raise TypeError(f"{name} must be {names}; got {type(value).__name__} {value!r}")
    return value


def text(name: str, value: Any) -> str:
    """Return ``value`` if it is a non-empty string."""
    instance(name, value, str)
    if not value.strip():
        raise ValueError(f"{name} must be a non-empty string; got {value!r}")
    return value


def non_empty(name: str, value: Any) -> Any:
    """Return ``value`` if it is a sized container with at least one element (not a string)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sized):
        raise TypeError(f"{name} must be a list, tuple or other container; got {type(value).__name__} {value!r}")
    if len(value) == 0:
        raise ValueError(f"{name} must not be empty")
    return value


def framework_title(value: Any) -> str:
    """How prose names a framework: 'PyTorch', 'JAX', 'TensorFlow' (any accepted spelling in)."""
    return _FRAMEWORK_TITLES[framework(value)]


def framework(value: Any, name: str = "framework") -> str:
    """The canonical framework name: 'torch' (or 'pytorch'), 'jax', 'tensorflow' (or 'tf'), any case."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {', '.join(FRAMEWORKS)}; "
                        f"got {type(value).__name__} {value!r}")
    canonical = _FRAMEWORK_ALIASES.get(value.strip().lower())
    if canonical is None:
        raise ValueError(f"{name} must be one of 'torch' ('pytorch'), 'jax', 'tensorflow' ('tf'); got {value!r}")
    return canonical


def count(name: str, value: Any, *, high: int, low: int = 1) -> int:
    """Return ``value`` if it is an integer in [low, high] (numpy integers accepted): a repeat, step or process
    count whose upper bound is what a notebook can afford, so a typo (10**12) fails at once instead of hanging."""
    return int(number(name, value, low=low, high=high, integer=True))


def seconds(name: str, value: Any, *, high: float = 3600.0, low_open: bool = True) -> float:
    """Return ``value`` if it is a duration in seconds in (0, high]: a timeout, a minimum time."""
    return float(number(name, value, low=0, high=high, low_open=low_open))


def elements(name: str, value: Any, *, itemsize: int = 4, arrays: int = 1) -> int:
    """Return ``value`` if it is an element count >= 1 whose ``arrays`` arrays of ``itemsize`` bytes fit in half
    of the memory available now: a size that would exhaust the machine fails here, naming the argument."""
    itemsize = count("itemsize", itemsize, high=64)
    arrays = count("arrays", arrays, high=1024)
    value = int(number(name, value, low=1, high=MAX_ELEMENTS, integer=True))
    memory_fits(name, value * itemsize * arrays, what=f"{name}={value:,} ({arrays} array(s) of {itemsize}-byte "
                "elements)")
    return value


def memory_fits(name: str, nbytes: int, *, share: float = 0.5, what: str | None = None) -> int:
    """Return ``nbytes`` if allocating it takes at most ``share`` of the memory available now; else ValueError
    naming ``name``: a mistyped size is refused here instead of reaching the allocator (or the swap)."""
    nbytes = int(number(name, nbytes, low=0, integer=True))
    share = number("share", share, low=0, high=1, low_open=True)
    if what is not None:
        text("what", what)
    available = psutil.virtual_memory().available
    if nbytes > share * available:
        raise ValueError(f"{what or name} needs {nbytes / 2**30:.3g} GiB, more than {share:.0%} of the "
                         f"{available / 2**30:.3g} GiB available now; use a smaller {name}")
    return nbytes


def sequence(name: str, value: Any, *, min_length: int = 0) -> Any:
    """Return ``value`` if it is a list, tuple or other sequence (a string is not one) of at least
    ``min_length`` items."""
    min_length = count("min_length", min_length, low=0, high=2**62)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list or tuple; got {type(value).__name__} {value!r}")
    if len(value) < min_length:
        raise ValueError(f"{name} must hold at least {min_length} item(s); got {len(value)}")
    return value


def folder(name: str, value: Any) -> Path:
    """Return ``value`` as a Path if it can name a folder to write into: a non-empty str or path, without a '..'
    part (a folder that climbs out of where it points is a typo or an escape), and not an existing file."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a folder path (str or pathlib.Path); got {type(value).__name__} {value!r}")
    path = Path(value)
    if not str(value).strip():
        raise ValueError(f"{name} must name a folder; got {value!r}")
    if ".." in path.parts:
        raise ValueError(f"{name} must not climb out with '..'; got {str(value)!r}: pass the folder itself "
                         "(an absolute path, or one below the current folder)")
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {str(value)!r} is a file, not a folder")
    return path


# ---------------------------------------------------------------------------------------------------------
# Declared checks: the annotations of a ``@checked`` function are its argument checks


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
            raise ValueError(f"{name} must hold at most {_bound_text(self.high)} items; got {_size(value):,}")


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
    """What one argument accepts, read from its annotation: its ``kind`` (see _KINDS, or 'class', 'choice',
    'union', 'any'), whether None is accepted, the declared ``marks``, and the rules of its ``items`` (one for a
    sequence's items, key and value for a mapping, one per position for a fixed tuple, the members of a union)."""

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
        return Rule(inner.kind, inner.optional, inner.marks + tuple(hint.__metadata__), inner.items, inner.cls,
                    inner.choices)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        optional = len(members) < len(args)
        kinds = [rule(m) for m in members]
        plain = {k.kind for k in kinds if not k.marks and not k.items}
        if len(kinds) == 1:
            only = kinds[0]
            return Rule(only.kind, optional, only.marks, only.items, only.cls, only.choices)
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
