"""A saved report priced again with two configs: different answers, nothing measured; report.json is versioned,
stamped, and numbers only (null and a flag where a value is infinite)."""

from __future__ import annotations

import json
import math

import pytest
from fake_assessment import fake

from course_utils import migrate
from course_utils.migrate import __main__ as cli
from course_utils.migrate import assessing, record, report


@pytest.fixture
def saved(tmp_path, monkeypatch):
    """A report folder of a made-up run (gain about 1.3x); measuring is made to fail loudly."""
    report.write(fake((1.30, 1.32, 1.28)), tmp_path / "report")

    def no_measuring(*args, **kwargs):
        raise AssertionError("price measured something")

    monkeypatch.setattr(assessing, "assess", no_measuring)
    return tmp_path / "report" / "report.json"


def _config(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return str(path)


def test_two_configs_give_two_answers_without_measuring(tmp_path, saved, capsys) -> None:
    cheap = _config(tmp_path, "cheap", "monthly_spend = 1_000_000\nengineers = 1\nweeks = 1\n")
    dear = _config(tmp_path, "dear", "monthly_spend = 1_000\nengineers = 10\nweeks = 20\n")
    assert cli.main(["assess", "price", str(saved), "--config", cheap]) == 0
    first = json.loads(saved.read_text())
    assert first["decision"] == "migrate" and first["priced"]["config"] == cheap
    assert first["inputs"]["monthly_spend"]["value"] == 1_000_000
    assert "Decision: migrate." in capsys.readouterr().out
    assert cli.main(["assess", "price", str(saved), "--config", dear]) == 0
    second = json.loads(saved.read_text())
    assert second["decision"] == "do not migrate" and second["priced"]["config"] == dear
    assert second["speedup"] == first["speedup"] and second["modes"] == first["modes"]  # the measurement stays
    assert "Decision: do not migrate." in capsys.readouterr().out


def test_the_record_is_versioned_stamped_and_numbers_only(tmp_path, saved) -> None:
    never = _config(tmp_path, "never", "monthly_spend = 1_000\neager_upkeep = 1_000_000\n")
    assert cli.main(["assess", "price", str(saved), "--config", never]) == 0
    text = saved.read_text()
    assert "Infinity" not in text and '"inf"' not in text
    data = json.loads(text)
    assert data["schema_version"] == record.SCHEMA_VERSION and data["timestamp"].startswith("2026-01-01")
    assert {"cpu", "logical_cores", "physical_cores"} <= set(data["host"])
    assert data["load"]["per_process"][0]["start"] == [0.5, 0.5, 0.5]
    assert data["break_even_speedup"] is None and data["break_even_speedup_infinite"] is True
    assert record.read("report", saved)["break_even_speedup"] == math.inf


@pytest.mark.parametrize("text, match", [("optimizer = 'adam'\n", "config: optimizer = 'adam' differs"),
                                         ("spend = 1\n", "unknown field 'spend'")])
def test_a_config_that_changes_the_measurement_or_is_wrong_is_refused(tmp_path, saved, capsys, text, match) -> None:
    before = saved.read_text()
    assert cli.main(["assess", "price", str(saved), "--config", _config(tmp_path, "bad", text)]) == 2
    assert match in capsys.readouterr().err and saved.read_text() == before


def test_a_file_that_is_not_a_report_is_named(tmp_path, capsys) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    assert cli.main(["assess", "price", str(other)]) == 2
    assert "report: " in capsys.readouterr().err


def test_numbers_only_round_trips_lists_and_scalars() -> None:
    data = {"a": math.inf, "b": [1.0, -math.inf, 2.0], "c": {"d": math.nan}}
    flat = record.numbers_only(data)
    assert flat == {"a": None, "a_infinite": True, "b_negative_infinite": [1], "b": [1.0, None, 2.0],
                    "c": {"d": None, "d_nan": True}}
    back = record.restored(flat)
    assert back["a"] == math.inf and back["b"][1] == -math.inf and math.isnan(back["c"]["d"])
    assert set(back) == {"a", "b", "c"}


def test_ranges_for_the_largest_uncertainties_widen_the_break_even_span(tmp_path) -> None:
    config = tmp_path / "costs.toml"
    config.write_text("monthly_spend = [40_000, 60_000]\nweeks = [2, 6]\nengineers = 2\n")
    ranged = migrate.read_config(config)
    assert ranged.value("weeks") == 4 and ranged.value("monthly_spend") == 50_000
    soonest, latest = ranged.ends()
    assert (soonest.value("weeks"), latest.value("weeks")) == (2, 6)
    assert (soonest.value("monthly_spend"), latest.value("monthly_spend")) == (60_000, 40_000)
    middle = migrate.read_config(_write(tmp_path / "mid.toml", "monthly_spend = 50_000\nweeks = 4\n"))
    wide, point = fake().priced(ranged).pricing, fake().priced(middle).pricing
    assert wide.estimate.break_even_months == point.estimate.break_even_months  # the estimate takes the middle
    assert wide.months_span[0] <= point.months_span[0] and wide.months_span[1] >= point.months_span[1]
    assert wide.months_span != point.months_span and point.span is None
    assert "your inputs' ranges" in migrate.money_sentence(fake().priced(ranged))
    assert wide.to_dict()["break_even_months"]["latest"] == wide.months_span[1]
    assert "2 to 6" in repr(ranged.table())
    for bad, message in (("weeks = [6, 2]", "low <= high"), ("weeks = [1, 2, 3]", "two numbers"),
                         ("training_share = [0.5, 0.8]", "finite number")):
        with pytest.raises((ValueError, TypeError), match=message):
            migrate.read_config(_write(tmp_path / "bad.toml", bad))


def _write(path, text):
    path.write_text(text)
    return path
