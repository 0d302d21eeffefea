"""The one set of argument checks: a wrong kind raises TypeError, a wrong value ValueError, naming the argument and
what it accepts; ``declare`` runs them from signatures, and a function calls them for rules a signature cannot state."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Iterable, Sized
from pathlib import Path
from typing import Any, TypeVar

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
    """Return ``value`` if it is a finite real number (an integer when asked; never a bool) within [low, high];
    ``low_open``/``high_open`` exclude the bound."""
    _bounds(name, low, high)
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
        return f"{'>' if low_open else '>='} {bound_text(low)}"
    if low is None:
        return f"{'<' if high_open else '<='} {bound_text(high)}"
    return f"in {'(' if low_open else '['}{bound_text(low)}, {bound_text(high)}{')' if high_open else ']'}"


def bound_text(bound: Any) -> str:
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


def framework(value: Any, name: str = "framework", *, numpy: bool = False) -> str:
    """The canonical framework name: 'torch' (or 'pytorch'), 'jax', 'tensorflow' (or 'tf'), any case; also 'numpy'
    (or 'np') where ``numpy`` is True (a roof or a workload NumPy runs too)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {', '.join(FRAMEWORKS)}; "
                        f"got {type(value).__name__} {value!r}")
    canonical = _FRAMEWORK_ALIASES.get(value.strip().lower())
    if numpy and value.strip().lower() in ("numpy", "np"):
        return "numpy"
    if canonical is None:
        also = ", 'numpy'" if numpy else ""
        raise ValueError(f"{name} must be one of 'torch' ('pytorch'), 'jax', 'tensorflow' ('tf'){also}; got {value!r}")
    return canonical


def count(name: str, value: Any, *, high: int, low: int = 1) -> int:
    """Return ``value`` if it is an integer in [low, high] (numpy integers accepted): a repeat, step or process
    count whose upper bound is what a notebook can afford, so a typo (10**12) fails at once instead of hanging."""
    return int(number(name, value, low=low, high=high, integer=True))


def memory_fits(name: str, nbytes: int, *, share: float = 0.5, what: str | None = None) -> int:
    """Return ``nbytes`` if allocating it takes at most ``share`` of the memory available now; else ValueError
    naming ``name``: a mistyped size is refused here instead of reaching the allocator (or the swap)."""
    nbytes = int(number(name, nbytes, low=0, integer=True))
    share = number("share", share, low=0, high=1, low_open=True)
    available = psutil.virtual_memory().available
    if nbytes > share * available:
        raise ValueError(f"{what or name} needs {nbytes / 2**30:.3g} GiB, more than {share:.0%} of the "
                         f"{available / 2**30:.3g} GiB available now; use a smaller {name}")
    return nbytes


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
