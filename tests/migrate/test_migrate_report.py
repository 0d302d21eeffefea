"""course_utils.migrate.report: the findings assess's report tells (the rule's three outcomes, parity, the
fallback, the run length), the report's files (decision first, plots embedded, JSON without inf), the tables, the
lead's page and the summary rows; report findings are not counted as the notebook's predictions."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from fake_assessment import fake

from course_utils import display, findings, migrate, timing
from course_utils.migrate import checklist, decision, ladder, report
from course_utils.migrate import ladder as lad


def _rung(label, kind, step, compute, *, group, batch=32, note="", over="", peak=None, load=1.0):
    wiggle = [1 + 0.01 * math.sin(k + sum(map(ord, label))) for k in range(4)]
    return lad.Rung(label, kind, batch, step * 5, timing.Measurement(label, (step * 0.98, step, step * 1.02)), 0.2,
                    peak, (), tuple(step * w for w in wiggle), group,
                    timing.Measurement(label, (compute,) * 3), tuple(compute * w for w in wiggle), load, over, note,
                    {"batch": batch, "workers": 1, "pin": False, "amp": None})


def _ladder(*, worker_step=8.0, amp=False):
    first = [_rung("eager fp32", "no migration", 10.0, 8.0, group=1),
             _rung("torch.compile on the baseline", "migration", 9.0, 7.0, group=1),
             _rung("+ 1 loader worker", "no migration", worker_step, 7.9, group=1)]
    if amp:
        first.append(_rung("+ autocast bfloat16", "no migration", worker_step / 1.4, 5.0, group=1, peak=1 << 20))
    first.append(_rung("+ batch 64", "no migration", 30.0, 28.0, group=1, batch=64))  # slower per sample: dropped
    kept = first[-2]
    twin = _rung(f"{kept.label} (eager, beside compile)", "no migration", kept.step_time, 7.5, group=2,
                 note=lad.TWIN, over=kept.label)
    last = _rung("+ torch.compile", "migration", kept.step_time / 1.3, 5.0, group=2, over=twin.label)
    dropped = replace(first[-1], note=lad.DROPPED, over=kept.label)
    rungs = [first[0], *first[2:-1], last]
    return ladder.build_ladder(rungs, skipped=["pinned memory (no GPU)"], extra=[first[1], dropped, twin])


MIGRATING = fake((1.30, 1.32, 1.28))  # well above the seed's 1.04x break-even
NOT_DECIDED = fake((1.5, 0.8, 1.1))
LOSING = fake((0.90, 0.91, 0.89))


@pytest.mark.parametrize("found, head", [(MIGRATING, "**Decision: migrate.**"),
                                         (LOSING, "**Decision: do not migrate.**"),
                                         (NOT_DECIDED, "**Decision: not decided: measure more.**")])
def test_the_headline_tells_the_rules_outcome(found, head) -> None:
    before = display.verdict_counts()
    decision = report.findings_of(found)["decision"]
    assert decision.sentence.startswith(head) and found.decision.outcome in head
    assert display.verdict_counts() == before  # the report's findings are not the notebook's predictions


def test_parity_the_fallback_and_the_run_length() -> None:
    fine = report.findings_of(MIGRATING)
    assert fine["parity"].held and fine["fallback"].held and fine["run"].held and "compile it" in fine["run"].sentence
    assert migrate.story.blockers(fine["parity"], fine["fallback"]) == []
    drifting = report.findings_of(fake(drift=0.05))
    assert drifting["parity"].failed and drifting["fallback"].failed
    never = report.findings_of(fake(fallback_error=None))["fallback"]
    assert never.failed and "the forced compile failure raised" in never.sentence
    short = report.findings_of(MIGRATING.priced(migrate.typed(steps_per_job=(10, "a test"))))["run"]
    assert short.outcome == findings.FAILED and "ends sooner eager" in short.sentence
    losing = report.findings_of(LOSING)["run"]
    assert "never" in losing.sentence and "any length" in losing.sentence


def test_tables_and_the_report_markdown() -> None:
    both = repr(migrate.compare_assessments({"a": MIGRATING, "b": LOSING}))
    assert "across 3 fresh processes" in both and "MFU against" in both
    priced = repr(migrate.compare_pricing({"seed": MIGRATING, "lead": MIGRATING.priced(migrate.typed(
        training_share=(0.8, "the lead")))}))
    assert "80% (the lead)" in priced and "seed article" in priced
    cases = repr(migrate.pricing_cases(MIGRATING, growth=0.5))
    assert "+50% a month" in cases and "reserved" in cases
    text = report.report_markdown(fake(breaks=["f.py:3 Data-dependent branching"], recompiles=["size mismatch"]))
    assert text.startswith("# Should we migrate mypkg.models:make_model?") and text.index("Decision") < text.index(
        "## Speed")
    assert "| monthly_spend | 100,000 | seed article |" in text and "- graph break: f.py:3" in text
    assert "1 graph break(s) and 1 recompile(s)" in text and "decides nothing for a GPU fleet" in text
    assert "Break-even at the median gain" in report.money_sentence(MIGRATING)


def test_the_report_files(tmp_path) -> None:
    paths = report.write(LOSING.priced(migrate.typed(eager_upkeep=(10**9, "a test"))), tmp_path)
    data = json.loads(paths["json"].read_text())
    assert data["break_even_speedup"] is None and data["break_even_speedup_infinite"] is True
    assert data["decision"] == decision.DO_NOT_MIGRATE
    page = paths["html"].read_text()
    assert page.index("Decision: do not migrate") < page.index("data:image/png;base64,") < page.index("Money")
    assert "<script" not in page and "http" not in page.split("<body>")[1] and "never (no speed-up" in page


def test_the_command_prints_the_decision_and_the_blockers(monkeypatch, capsys) -> None:
    from course_utils.migrate import __main__ as cli

    monkeypatch.setattr(cli._assess, "assess", lambda *a, **k: fake(drift=0.05))
    assert cli.main(["assess", "--model", "m:f", "--batches", "m:g", "--out", "x"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Decision: migrate.") and out.count("blocker: ") == 2


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_lead_page_names_the_device(device) -> None:
    a = fake(device=device, device_name="NVIDIA A100" if device == "cuda" else "Test CPU")
    priced = {"the seed's own terms": a, "the lead's inputs": a}
    for checks in ((checklist.Check("MVP", True, "ok"),), (checklist.Check("MVP", False, "slow"),)):
        page = migrate.lead_page(priced, fake((0.9, 0.92, 0.91)), _ladder(), checklist.Checklist(checks),
                                 cores=2)
        assert page.longest_paragraph <= display.MAX_PARAGRAPH_WORDS
        assert f"({device}, 2 cores" in page.text and "| compile, transformer block, across fresh processes |" in \
            page.text
        assert ("not ready: MVP" in page.text) == (not checks[0].passed)


def test_summary_rows_hold_the_runs_numbers() -> None:
    rows = migrate.summary_rows(_ladder(), fake(), fake((1.6, 1.7, 1.65)), fake())
    labels = [r[0] for r in rows]
    assert "ladder: + batch 64 (tried, not kept)" in labels and "compile, CNN, fresh processes" in labels
    assert all(len(r) == 4 for r in rows)


@pytest.mark.parametrize("found", [MIGRATING, NOT_DECIDED, LOSING])
def test_the_figure_draws_every_process(found) -> None:
    fig = migrate.assess_figure(found, MIGRATING, labels=["x", "y"])
    assert len(fig.axes[0].collections) >= 2
    with pytest.raises(ValueError, match="labels"):
        migrate.assess_figure(found, labels=["a", "b"])


def test_replace_keeps_a_stuck_decision_undecided() -> None:
    stuck = migrate.decision.Decision(decision.NOT_DECIDED, NOT_DECIDED.deciding.speedup, 1.2, None)
    found = replace(NOT_DECIDED, pricing=replace(NOT_DECIDED.pricing, decision=stuck))
    assert "would likely not decide it" in report.findings_of(found)["decision"].sentence


def test_saved_report_folds_the_report_under_its_title_with_bold_headings(tmp_path) -> None:
    (tmp_path / "report.md").write_text("# Should we migrate m?\n\nDecision: migrate.\n\n## Speed\n\n| a |\n|---|\n")
    shown = migrate.saved_report(tmp_path).text
    assert shown.startswith("<details><summary>report.md: Should we migrate m?</summary>")
    assert "**Speed**" in shown and "## " not in shown and shown.endswith("</details>")
