"""course_utils.migrate.account: every compile speed-up of the run in one table, each difference computed."""

from __future__ import annotations

import pytest

from course_utils import migrate, timing
from course_utils.migrate import frameworks
from course_utils.migrate import ladder as lad


def _m(label, median):
    return timing.Measurement(label, (median * 0.95, median, median * 1.05))


def _rung(label, kind, batch, step, compute, wait_share, group):
    return lad.Rung(label, kind, batch, 1.0, timing.Measurement(label, (step,) * 3), wait_share, None, (),
                    (step, step), group, timing.Measurement(label, (compute,) * 3), (compute, compute), 1.0)


def _inputs():
    base = _rung("eager fp32", "no migration", 32, 10.0, 8.0, 0.2, 1)
    first = _rung("torch.compile on the baseline", "migration", 32, 6.0, 4.0, 0.33, 1)
    workers = _rung("+ 1 loader worker", "no migration", 32, 8.2, 8.0, 0.02, 2)
    batch = _rung("+ batch 64", "no migration", 64, 16.0, 15.8, 0.01, 3)
    last = _rung("+ torch.compile", "migration", 64, 9.0, 8.5, 0.05, 3)
    ladder = migrate.build_ladder([base, workers, batch, last], extra=[first])
    table = frameworks.FrameworkTable((frameworks.FrameworkRow("torch", _m("e", 7.0), _m("c", 3.5), None, 0),), (),
                                      32)
    fixed = migrate.FixedBatch(64, {"fp32": (_m("e", 14.0), _m("c", 7.5))})
    return ladder, table, fixed


def test_rows_name_each_setting_and_the_last_is_the_stated_gain() -> None:
    ladder, table, fixed = _inputs()
    account = migrate.compile_account(ladder, table, fixed)
    names = [r.name for r in account.rows]
    assert names[0].startswith("compile first") and names[1].startswith("framework table")
    assert names[2] == "fixed batch, fp32" and names[-1].startswith("compile last")
    assert account.rows[0].step[0] == pytest.approx(10 / 6) and account.rows[0].compute[0] == pytest.approx(2.0)
    assert account.rows[1].step[0] == pytest.approx(2.0) and account.rows[2].batch == 64
    assert account.rows[-1].loader == "1 loader worker" and account.rows[0].loader == "in-process"
    assert account.stated == ladder.migration_gain() and account.rows[-1].step[0] == pytest.approx(16 / 9)
    assert "One number for torch.compile" in repr(account) and "<table>" in account._repr_html_()


def test_findings_follow_the_numbers() -> None:
    ladder, table, fixed = _inputs()
    text = " ".join(migrate.compile_account(ladder, table, fixed).findings())
    assert "dilutes it" in text  # 1.67x per step < 2.00x compute
    assert "the bands overlap" in text  # compute 2.00x, table 2.00x
    assert "32 fp32 -> 64 fp32" in text and "Every row is fp32" in text
    assert "1 loader worker running beside them" in text


def test_a_setting_measured_twice_is_called_a_repeat_not_a_change() -> None:
    ladder, table, _ = _inputs()
    fixed = migrate.FixedBatch(32, {"fp32": (_m("e", 7.0), _m("c", 3.5))})
    text = " ".join(migrate.compile_account(ladder, table, fixed).findings())
    assert "The repeat" in text and "32 fp32 -> 32 fp32" not in text


def test_the_loader_sentence_sets_each_side_with_and_without_the_worker() -> None:
    ladder, table, _ = _inputs()
    fixed = migrate.FixedBatch(64, {"fp32": (_m("e", 10.0), _m("c", 8.0))})
    text = " ".join(migrate.compile_account(ladder, table, fixed).findings())
    assert "slowed eager's compute more than the compiled one's" in text  # eager 15.8/10, compiled 8.5/8
