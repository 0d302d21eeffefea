"""The regression gate on synthetic reports: a gain that fell beyond both intervals fails (exit 3), one within
the noise passes, and a baseline that is not a report is refused before anything is measured."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from fake_assessment import fake

from course_utils import migrate
from course_utils.migrate import __main__ as cli
from course_utils.migrate import record, report

OLD = fake((1.50, 1.52, 1.48))  # the baseline: about 1.5x, a narrow interval


@pytest.fixture
def baseline(tmp_path):
    report.write(OLD, tmp_path / "old")
    return tmp_path / "old" / "report.json"


@pytest.mark.parametrize("speedups, failed", [((1.20, 1.22, 1.18), True), ((1.49, 1.53, 1.47), False),
                                              ((1.80, 1.82, 1.78), False)])
def test_the_gate_fails_only_when_the_gain_fell_beyond_both_intervals(baseline, speedups, failed) -> None:
    new = fake(speedups)
    judged = record.Gate(record.baseline(baseline), new.deciding.speedup, "default")
    assert judged.failed is failed
    assert (judged.change.high < 1) is failed  # the rule, stated in gate's docstring
    sentence = judged.finding().sentence
    assert sentence.startswith("**Regression gate failed:**" if failed else "Regression gate passed:")
    assert str(baseline) in sentence and "the rule:" in sentence


@pytest.mark.parametrize("speedups, code", [((1.20, 1.22, 1.18), 3), ((1.49, 1.53, 1.47), 0)])
def test_the_command_exits_3_on_a_failed_gate(tmp_path, baseline, monkeypatch, capsys, speedups, code) -> None:
    def assessed(*args, baseline, **kwargs):
        found = fake(speedups)
        return replace(found, gate=record.Gate(record.baseline(baseline), found.deciding.speedup, "default"))

    monkeypatch.setattr(cli._assess, "assess", assessed)
    argv = ["assess", "--model", "m:f", "--batches", "m:g", "--out", str(tmp_path / "new"), "--baseline",
            str(baseline)]
    assert cli.main(argv) == code
    assert "Regression gate " + ("failed" if code else "passed") in capsys.readouterr().out


def test_a_bad_baseline_is_named_before_measuring(tmp_path) -> None:
    (tmp_path / "old.json").write_text("{}")
    with pytest.raises(ValueError, match="baseline: .* has no schema_version"):
        migrate.assess("assess_models:raises", "assess_models:mlp_batches", out=tmp_path / "new",
                       baseline=tmp_path / "old.json", progress=False)
    with pytest.raises(ValueError, match="baseline: its gain is of mode 'default'"):
        record.Gate(record.baseline(report.write(OLD, tmp_path / "r")["json"]), OLD.deciding.speedup, "max-autotune")


def test_the_gate_is_in_report_json(tmp_path, baseline) -> None:
    new = fake((1.20, 1.22, 1.18))
    found = replace(new, gate=record.Gate(record.baseline(baseline), new.deciding.speedup, "default"))
    saved = json.loads(report.write(found, tmp_path / "new")["json"].read_text())
    assert saved["gate"]["failed"] is True and saved["gate"]["rule"].startswith("the gate fails only when")
    assert "Regression gate failed" in (tmp_path / "new" / "report.md").read_text()


def test_report_json_follows_its_published_schema(tmp_path) -> None:
    import jsonschema

    schema = json.loads((Path(migrate.__file__).parent / "report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"]["const"] == record.SCHEMA_VERSION
    found = fake()
    record.write(tmp_path / "report.json", found.to_dict())
    saved = json.loads((tmp_path / "report.json").read_text())
    jsonschema.validate(saved, schema)
    saved["speedup"]["low"] = "0.9x"  # a string where a number belongs
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(saved, schema)
