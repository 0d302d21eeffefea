"""The workshop's agendas, generated into slides/instructor_guide.md from slides/deck.toml and the minutes computed
from the notebooks (tools/minutes.py): two days, one day, half a day and the lead track, each a timetable with
what to cut when running late.

deck.toml's ``[running_late]`` gives each notebook one order in which its sections are cut (a section number as a
string, "Exercises" or "Summary"). A cut section is not talked through: its cells still run when learners run
the notebook, so no later cell misses a name, and its exercises become homework with hidden solutions that run.
An ``[agenda.<key>]`` lists ``notebooks``, ``breaks`` after a notebook, ``extra`` sessions after that break,
``cut`` (how many sections of the running-late order a shortened session drops) and, for the lead track,
``track = "lead"`` (only the sections marked ``course.lead``) with ``whole`` for notebooks taught in full.
"""

from __future__ import annotations

from dataclasses import dataclass

import minutes  # tools/minutes.py: minutes computed from the material
import nbformat

AGENDA_BEGIN = "<!-- BEGIN generated agendas: python tools/build_slides.py --update-guide -->"
AGENDA_END = "<!-- END generated agendas -->"
ORDER = ("two_days_1", "two_days_2", "full_day", "half_day", "lead_track")


@dataclass(frozen=True)
class Session:
    """One notebook's session in an agenda: the sections taught, its minutes and the cuts still available."""

    name: str
    taught: tuple[minutes.Section, ...]
    source: str  # where the minutes come from, in words
    late: tuple[minutes.Section, ...]  # what to cut next when running late, in order

    @property
    def minutes(self) -> int:
        return sum(s.minutes for s in self.taught)


def section_key(section: minutes.Section) -> str:
    """The name deck.toml gives a section: its number ("4" for "4. The machine's limits") or its title."""
    head = section.title.split(".", 1)[0]
    return head if head.isdigit() else section.title.split(":")[0].strip()


def late_order(config: dict, name: str, found: list[minutes.Section]) -> list[minutes.Section]:
    """The notebook's sections in the order ``[running_late]`` cuts them; an unknown key is refused by name."""
    keys = config.get("running_late", {}).get(name)
    if keys is None:
        raise ValueError(f"[running_late] has no order for {name!r}")
    by_key = {section_key(s): s for s in found if not s.optional}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ValueError(f"[running_late] {name}: no section {unknown}; its sections are {list(by_key)}")
    return [by_key[k] for k in keys]


def session(config: dict, day: dict, name: str, nb: nbformat.NotebookNode) -> Session:
    """The session ``day`` plans for notebook ``name``: the lead sections, a cut session or the whole one."""
    found = minutes.sections(nb)
    order = late_order(config, name, found)
    planned = [s for s in found if not s.optional]
    if day.get("track") == "lead" and name not in day.get("whole", []):
        taught = [s for s in planned if s.lead]
        source = "lead-track sections " + ", ".join(section_key(s) for s in taught)
    else:
        cut = int(day.get("cut", {}).get(name, 0))
        if not 0 <= cut <= len(order):
            raise ValueError(f"cut[{name!r}] must be 0 to {len(order)} (its running-late order); got {cut}")
        dropped = {s.title for s in order[:cut]}
        taught = [s for s in planned if s.title not in dropped]
        source = "whole session" if not cut else "cut: " + ", ".join(section_key(s) for s in order[:cut])
    kept = {s.title for s in taught}
    return Session(name, tuple(taught), source, tuple(s for s in order if s.title in kept))


def _clock(start: str, elapsed: int) -> str:
    hours, mins = (int(x) for x in start.split(":"))
    total = hours * 60 + mins + elapsed
    return f"{total // 60:02d}:{total % 60:02d}"


def agenda_table(config: dict, key: str, notebooks: dict[str, nbformat.NotebookNode], titles: dict[str, str],
                 planned: dict[str, dict]) -> list[str]:
    """One agenda as Markdown: its timetable, then its running-late order per notebook."""
    day = config["agenda"][key]
    rows: list[tuple[int, str, str]] = []
    late: list[str] = []
    if "opening" in day:
        rows.append((int(day["opening"][0]), day["opening"][1], "-"))
    for name in day["notebooks"]:
        nb = notebooks.get(name)
        if nb is None:
            rows.append((int(planned.get(name, {}).get("minutes", 0)), f"`{name}` (not written yet)", "course.toml"))
        else:
            planned_session = session(config, day, name, nb)
            rows.append((planned_session.minutes, f"`{name}`: {titles[name]}", planned_session.source))
            cuts = " → ".join(f"{section_key(s)} ({s.minutes})" for s in planned_session.late) or "nothing left to cut"
            late.append(f"| `{name}` | {planned_session.minutes} | {cuts} |")
        if name in day.get("breaks", {}):
            rows.append((int(day["breaks"][name][0]), f"*{day['breaks'][name][1]}*", "-"))
        for extra in day.get("extra", {}).get(name, []):
            rows.append((int(extra[0]), extra[1], "-"))
    if "closing" in day:
        rows.append((int(day["closing"][0]), day["closing"][1], "-"))
    elapsed, timetable = 0, []
    for length, what, source in rows:
        timetable.append(f"| {_clock(day['start'], elapsed)} | {what} | {length} | {source} |")
        elapsed += length
    return ["", f"### {day['title']}: {day['start']} to {_clock(day['start'], elapsed)} "
                f"({elapsed // 60} h {elapsed % 60:02d} min)", "",
            "| start | session | minutes | sections |", "|---|---|---|---|", *timetable, "",
            f"Running late ({day['title'].lower()}): cut the next sections in this order; minutes saved in brackets.",
            "", "| notebook | minutes planned | cut next, in order |", "|---|---|---|", *late]


def agenda_markdown(config: dict, notebooks: dict[str, nbformat.NotebookNode], titles: dict[str, str],
                    planned: dict[str, dict]) -> str:
    """Every agenda of deck.toml, in ``ORDER``, between the guide's markers."""
    unknown = sorted(set(config.get("agenda", {})) - set(ORDER))
    if unknown:
        raise ValueError(f"[agenda.*] keys must be among {ORDER}; got {unknown}")
    parts = [AGENDA_BEGIN]
    for key in ORDER:
        if key in config.get("agenda", {}):
            parts += agenda_table(config, key, notebooks, titles, planned)
    return "\n".join(parts + ["", AGENDA_END])
