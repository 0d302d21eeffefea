"""Every input of the migration's cost model with where it came from (your config, the seed, measured, a default and
why): none is anonymous; ``read_config`` refuses bad fields before anything runs."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_utils import declare, display, validate
from course_utils.migrate.examples import OPTIMIZERS

YOUR_CONFIG, SEED, MEASURED = "your config", "seed article", "measured"

# name: (default, source of the default, kind, what it is). kinds: "money", "share", "count", "number", "text".
FIELDS: dict[str, tuple[Any, str, str, str]] = {
    "monthly_spend": (100_000.0, SEED, "money", "accelerator bill per month"),
    "spend_growth": (0.0, "default: a flat bill (the seed's +50% a month is a claim to check with finance)", "number",
                     "growth of the bill per month (0.1 = +10%)"),
    "training_share": (1.0, SEED + ": the whole bill is training", "share", "share of the bill that is training"),
    "engineers": (2.0, SEED, "number", "engineers on the migration"),
    "weeks": (2.0, SEED, "number", "weeks the migration takes"),
    "engineer_week_cost": (10_000.0, SEED + ": 2 engineers x 2 weeks = 40k", "money", "cost of one engineer-week"),
    "debugging_buffer": (0.2, SEED, "number", "extra share of the migration cost for harder debugging"),
    "eager_upkeep": (0.0, SEED + ": counts none", "money", "monthly cost of keeping the eager path for rollback"),
    "horizon_months": (12, "default: one budget year", "count", "months within which the migration must pay back"),
    "steps_per_job": (0, SEED + ": a 72 h job, at the measured eager step time", "count",
                      "training steps per job (0: the seed's 72 h job)"),
    "compile_cache_persists": (False, "default: each job starts on a fresh machine", "flag",
                               "true when jobs find the previous job's compile cache (warm compile)"),
    "optimizer": ("sgd", "default: plain SGD, the course's optimizer", "text", "sgd, adam or adamw"),
    "learning_rate": (0.01, "default", "number", "the optimizer's learning rate"),
}
# fields that were read and never used, so removed: a config naming one is told why
REMOVED = {"jobs_per_month": "the saving is a share of the training bill, whatever the number of jobs; each job's "
                             "compile is counted through steps_per_job",
           "edits_per_day": "the report gives the run length below which eager is faster instead; it needs no count "
                            "of edits"}
_LIMITS = {"money": 1e12, "number": 1e6, "count": 10**12}
# The largest uncertainties a lead types may be ranges, ``weeks = [2, 6]``: the estimate takes their middle, the
# break-even months' span their ends (a larger bill pays back sooner; more engineers, weeks or cost, later).
RANGED = ("monthly_spend", "engineers", "weeks", "engineer_week_cost")
SOONER_WHEN_HIGH = ("monthly_spend",)


@declare.checked
@dataclass(frozen=True)
class Input:
    """One value and where it came from."""

    value: Any
    source: str

    def __post_init__(self) -> None:
        validate.text("source", self.source)


@declare.checked
@dataclass(frozen=True, repr=False)
class Inputs(display.Tabled):
    """The cost model's inputs by name (every field of ``FIELDS``), each an ``Input``; ``path`` the config read."""

    values: Mapping[str, Input]
    path: str | None = None

    def __getitem__(self, name: str) -> Input:
        return self.values[validate.choice("name", name, list(self.values))]

    def value(self, name: str) -> Any:
        """The value; the middle of a range (``RANGED``)."""
        value = self[name].value
        return sum(value) / 2 if isinstance(value, tuple) else value

    def ends(self) -> tuple[Inputs, Inputs]:
        """These inputs with every range at its end that pays back soonest, and at the one that pays back latest."""
        def at(soon: bool) -> Inputs:
            pick = {n: i.value[(n in SOONER_WHEN_HIGH) == soon] for n, i in self.values.items()
                    if isinstance(i.value, tuple)}
            return Inputs({**self.values, **{n: Input(v, self.values[n].source) for n, v in pick.items()}}, self.path)

        return at(True), at(False)

    @property
    def ranged(self) -> bool:
        return any(isinstance(i.value, tuple) for i in self.values.values())

    def with_value(self, name: str, value: Any, source: str) -> Inputs:
        """A copy with ``name`` set to ``value`` from ``source`` (e.g. a figure measured by assess)."""
        checked = _checked(name, value, "name")
        return Inputs({**self.values, name: Input(checked, validate.text("source", source))}, self.path)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {name: {"value": i.value, "source": i.source} for name, i in self.values.items()}

    def table(self) -> display.Table:
        rows = [(name, _shown(i.value), i.source) for name, i in self.values.items()]
        where = f" ({self.path})" if self.path else ""
        return display.table(["input", "value", "source"], rows, title=f"Cost model inputs{where}")


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return " to ".join(_shown(v) for v in value)
    if isinstance(value, bool) or isinstance(value, str):
        return str(value).lower() if isinstance(value, bool) else value
    if isinstance(value, float) and not value.is_integer():
        return f"{value:g}"
    return f"{value:,.0f}"


def _checked(name: str, value: Any, where: str) -> Any:
    """``value`` checked against field ``name``'s kind; errors name ``where`` (a file and field, or an argument)."""
    if name in REMOVED:
        raise ValueError(f"{where}: field {name!r} was removed ({REMOVED[name]}); delete it")
    if name not in FIELDS:
        raise ValueError(f"{where}: unknown field {name!r}; the fields are {', '.join(FIELDS)}")
    kind = FIELDS[name][2]
    if name in RANGED and isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"{where}: a range is [low, high], two numbers; got {value!r}")
        low, high = (_checked(name, v, where) for v in value)
        if low > high:
            raise ValueError(f"{where}: a range is [low, high] with low <= high; got {value!r}")
        return (low, high)
    if kind == "flag":
        return validate.instance(where, value, bool)
    if kind == "text":
        return validate.choice(where, validate.instance(where, value, str).lower(), OPTIMIZERS)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"{where} must be a finite number; got {type(value).__name__} {value!r}")
    if kind == "share":
        return float(validate.number(where, value, low=0, high=1))
    if name == "spend_growth":
        return float(validate.number(where, value, low=-1, high=10, low_open=True))
    if name == "learning_rate":
        return float(validate.number(where, value, low=0, high=10, low_open=True))
    if kind == "count":
        low = 1 if name == "horizon_months" else 0
        high = 120 if name == "horizon_months" else _LIMITS["count"]
        return int(validate.number(where, value, low=low, high=high, integer=True))
    return float(validate.number(where, value, low=0, high=_LIMITS[kind]))


def defaults() -> Inputs:
    """Every field at its default, each labelled with the default's source (mostly the seed article)."""
    return Inputs({name: Input(default, source) for name, (default, source, _, _) in FIELDS.items()})


def typed(**given: tuple[Any, str]) -> Inputs:
    """Inputs typed in code, each given as ``name=(value, source)``; the rest at their defaults. A source is
    required, so no typed number is anonymous: ``typed(training_share=(0.8, "the lead's estimate"))``."""
    out = defaults()
    for name, pair in given.items():
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"{name} must be a (value, source) pair, e.g. {name}=(0.8, \"the lead's estimate\"); "
                            f"got {pair!r}")
        out = out.with_value(name, _checked(name, pair[0], name), validate.text(f"{name}'s source", pair[1]))
    return out


def read_config(path: str | Path | None) -> Inputs:
    """A flat TOML file's inputs, labelled "your config"; fields left out keep their defaults (None: all defaults)."""
    if path is None:
        return defaults()
    file = Path(validate.instance("config path", path, (str, Path)))
    if not file.is_file():
        raise ValueError(f"config path: no file at {str(file)!r}")
    try:
        data = tomllib.loads(file.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"config {str(file)!r} is not valid TOML: {exc}") from None
    tables = [k for k, v in data.items() if isinstance(v, dict)]
    if tables:
        raise ValueError(f"config {str(file)!r}: fields are plain 'name = value' lines; found a table [{tables[0]}]")
    out = Inputs(defaults().values, str(file))
    for name, value in data.items():
        out = out.with_value(name, _checked(name, value, f"config {str(file)!r}, field {name!r}"), YOUR_CONFIG)
    return out


def example_toml() -> str:
    """A config naming every field with its default and what it means (what README shows)."""
    lines = ["# costs.toml: every field is optional; a field left out takes the value in this file and says so."]
    for name, (default, source, _, what) in FIELDS.items():
        shown = f'"{default}"' if isinstance(default, str) else str(default).lower() if isinstance(default, bool) \
            else f"{default:_}" if isinstance(default, int) else f"{default:g}"
        lines.append(f"{name} = {shown}  # {what}; if left out: {source}")
    return "\n".join(lines) + "\n"
