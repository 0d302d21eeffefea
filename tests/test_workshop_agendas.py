"""Agendas (issue 39): two days, one day, half a day and the lead track, with minutes recomputed from the notebooks
(a cut session loses exactly its cut sections) and a running-late order for every notebook of every plan."""

from __future__ import annotations

import copy
import importlib
import re
import sys

import nbformat
import pytest
from conftest import ROOT

pytestmark = pytest.mark.integration  # reads the notebooks, deck.toml and the guide

sys.path.insert(0, str(ROOT / "tools"))
agendas = importlib.import_module("agendas")
build_slides = importlib.import_module("build_slides")
minutes = importlib.import_module("minutes")

CONFIG = build_slides.load_config()
NOTEBOOKS = {p.stem: nbformat.read(p, as_version=4) for p in build_slides.course_notebooks()}


def test_the_five_plans_and_the_two_days_split() -> None:
    assert set(CONFIG["agenda"]) == set(agendas.ORDER)
    day1, day2 = CONFIG["agenda"]["two_days_1"], CONFIG["agenda"]["two_days_2"]
    assert day1["notebooks"] == [n for n in NOTEBOOKS if n < "04"]
    assert day2["notebooks"] == [n for n in NOTEBOOKS if n >= "04"]
    assert not day1.get("cut") and not day2.get("cut"), "two days teach every section"
    assert any("assess" in extra[1] for extras in day2["extra"].values() for extra in extras)


@pytest.mark.parametrize("key", agendas.ORDER)
def test_each_session_is_its_computed_sections(key: str) -> None:
    day = CONFIG["agenda"][key]
    for name in day["notebooks"]:
        nb = NOTEBOOKS[name]
        session = agendas.session(CONFIG, day, name, nb)
        if day.get("track") == "lead" and name not in day.get("whole", []):
            assert session.minutes == minutes.lead_minutes(nb)
            continue
        cut = agendas.late_order(CONFIG, name, minutes.sections(nb))[:day.get("cut", {}).get(name, 0)]
        assert session.minutes == minutes.session_minutes(nb) - sum(s.minutes for s in cut)
        assert all(s.title != "Summary" for s in cut), "the Summary is never cut"


def test_every_plan_in_the_guide_has_a_running_late_order_per_notebook() -> None:
    text = build_slides.GUIDE.read_text()
    for key in agendas.ORDER:
        day = CONFIG["agenda"][key]
        block = text.split(f"### {day['title']}:")[1].split("\n### ")[0]
        assert f"Running late ({day['title'].lower()})" in block
        for name in day["notebooks"]:
            assert re.search(rf"^\| `{name}` \| \d+ \| ", block, re.MULTILINE), f"{key}: no running-late row for {name}"


def test_running_late_orders_name_real_sections_and_keep_the_lead_last() -> None:
    for name, nb in NOTEBOOKS.items():
        order = agendas.late_order(CONFIG, name, minutes.sections(nb))
        leads = [s.lead for s in order]
        assert leads == sorted(leads), f"{name}: a lead-track section is cut before a non-lead one: {order}"


def test_a_wrong_agenda_is_refused_by_name() -> None:
    nb = NOTEBOOKS["00_measuring"]
    bad = copy.deepcopy(CONFIG)
    bad["running_late"]["00_measuring"] = ["9"]
    with pytest.raises(ValueError, match=r"00_measuring: no section \['9'\]"):
        agendas.late_order(bad, "00_measuring", minutes.sections(nb))
    with pytest.raises(ValueError, match=r"cut\['00_measuring'\] must be 0 to"):
        agendas.session(CONFIG, {"cut": {"00_measuring": 99}}, "00_measuring", nb)
    with pytest.raises(ValueError, match="keys must be among"):
        agendas.agenda_markdown({"agenda": {"weekend": {}}}, {}, {}, {})
