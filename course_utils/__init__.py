"""course_utils, the plumbing of 'Eager to Compiled': submodules load on first use (``cu.timing``); no framework is
imported here, so ``import course_utils`` is fast and works with any framework missing."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from types import ModuleType

__version__ = "0.2.0"


def __getattr__(name: str) -> ModuleType:
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'course_utils' has no attribute {name!r}")


def __dir__() -> list[str]:
    modules = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    return sorted([*globals(), *modules])
