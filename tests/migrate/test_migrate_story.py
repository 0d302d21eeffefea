"""course_utils.migrate.story and story_lead: every branch of every paragraph notebook 07 tells, each read from
stored verdicts, none over 120 words."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from fake_assessment import fake

from course_utils import display, migrate, timing
from course_utils.migrate import ladder as lad
from course_utils.migrate import story

HELD = display.Verdict("held", "numbers")
FAILED = display.Verdict("failed", "numbers", "why")
NOT_TESTED = display.Verdict("not tested", "", "no bf16 units")


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
    return migrate.build_ladder(rungs, skipped=["pinned memory (no GPU)"], extra=[first[1], dropped, twin])


def _short(prose: display.Prose) -> display.Prose:
    assert prose.longest_paragraph <= display.MAX_PARAGRAPH_WORDS, prose.text
    return prose


@pytest.mark.parametrize("order, cheap", [(HELD, HELD), (FAILED, FAILED)])
def test_ladder_story_follows_both_verdicts(order, cheap) -> None:
    text = _short(story.ladder_story(_ladder(), cheap, order, cores=2)).text
    assert "**Rung by rung.**" in text and "+ batch 64" in text and "not kept" in text and "Skipped here" in text
    assert ("was credited with less" in text) == order.held and ("was not credited" in text) == order.failed
    assert ("come first in any plan" in text) == cheap.held and ("worth costing" in text) == cheap.failed


def test_a_losing_rung_names_the_load_and_the_outcomes_are_sorted() -> None:
    losing = _ladder(worker_step=12.0)
    text = story.rung_sentence(losing, "+ 1 loader worker", cores=2)
    assert "**a loss**" in text and "load average 1.0 on 2 cores" in text
    assert story.outcomes(losing)["lost"][0].startswith("+ 1 loader worker")


@pytest.mark.parametrize("verdict", [HELD, FAILED])
def test_amp_story_when_the_rung_ran(verdict) -> None:
    ladder = _ladder(amp=True)
    text = _short(story.amp_story(ladder, "+ autocast bfloat16", verdict)).text
    assert ("held here" in text) == verdict.held and ("did not hold" in text) == verdict.failed
    assert "needs no migration" in text


def test_amp_story_when_it_could_not_run() -> None:
    text = _short(story.amp_story(_ladder(), None, NOT_TESTED)).text
    assert "says nothing about the seed's mixed-precision claim" in text


@pytest.mark.parametrize("verdict", [HELD, FAILED])
def test_models_story(verdict) -> None:
    cnn, block = fake((1.1, 1.12, 1.08)), fake((1.6, 1.7, 1.65))
    text = _short(story.models_story(cnn, block, verdict)).text
    assert ("differs per model" in text) == verdict.held and ("cannot rank them" in text) == verdict.failed
    assert "MFU" not in text or "peak" in text


def test_models_story_without_a_peak_or_a_warm_compile_and_with_a_parity_failure() -> None:
    cnn = fake(device="cuda", device_name="Unknown GPU", drift=0.05)
    block = replace(fake(), modes=(replace(fake().deciding, compile_warm_s=None),))
    text = _short(story.models_story(cnn, block, FAILED)).text
    assert "MFU was not computed" in text and "n/a" in text and "**beyond**" in text


def test_money_story_branches() -> None:
    lead_inputs = migrate.typed(training_share=(0.8, "the lead"), eager_upkeep=(2000, "the lead"))
    for speedups, verdict, phrase in (((1.30, 1.32, 1.28), HELD, "lies above that bar"),
                                      ((1.5, 0.8, 1.1), FAILED, "holds that bar in its interval"),
                                      ((0.9, 0.91, 0.89), FAILED, "does not lie above")):
        a = fake(speedups)
        priced = {"the seed's own terms": a, "the lead's inputs": a.priced(lead_inputs)}
        if phrase.startswith("holds") and a.priced(lead_inputs).decision.processes_needed is None:
            phrase = "does not lie above"
        text = _short(story.money_story(priced, verdict)).text
        assert phrase in text and "Break-even after" in text and "check with finance" in text
    with pytest.raises(TypeError, match="priced"):
        story.money_story({}, HELD)


def test_checklist_story_reads_the_busy_share_and_says_it_is_not_mfu() -> None:
    ladder, cnn = _ladder(), fake()
    ready = migrate.Checklist("torch", (migrate.Check("MVP", True, "ok"),))
    not_ready = migrate.Checklist("torch", (migrate.Check("MVP", False, "too slow"),))
    assert "Every check passed" in _short(migrate.story.checklist_story(ready, ladder, cnn)).text
    text = _short(migrate.story.checklist_story(not_ready, ladder, fake(device="cuda", device_name="X"))).text
    assert "Not ready: 'MVP' failed" in text and "different quantity from MFU" in text and "not computed" in text


@pytest.mark.parametrize("device, phrase", [("cpu", "decides nothing for a GPU fleet"), ("cuda", "this GPU model")])
def test_the_lead_page_names_the_device(device, phrase) -> None:
    a = fake(device=device, device_name="NVIDIA A100" if device == "cuda" else "Test CPU")
    priced = {"the seed's own terms": a, "the lead's inputs": a}
    for checks in ((migrate.Check("MVP", True, "ok"),), (migrate.Check("MVP", False, "slow"),)):
        page = _short(migrate.story.lead_page(priced, fake((0.9, 0.92, 0.91)), _ladder(),
                                              migrate.Checklist("torch", checks), cores=2)).text
        assert phrase in page and "| compile, transformer block, across fresh processes |" in page
        assert ("not ready: MVP" in page) == (not checks[0].passed)


@pytest.mark.parametrize("verdict, phrase", [(HELD, "held here"), (FAILED, "did not hold"),
                                             (NOT_TESTED, "is not tested here")])
def test_frameworks_story(verdict, phrase) -> None:
    def m(label, median):
        return timing.Measurement(label, (median,) * 3, rounds=(median, median * 1.01, median * 0.99, median))

    table = migrate.FrameworkTable((migrate.frameworks.FrameworkRow("torch", m("e", 4.0), m("c", 2.0), None, 0),),
                                   ())
    assert phrase in _short(migrate.story.frameworks_story(table, verdict)).text


def test_summary_rows_hold_the_runs_numbers() -> None:
    rows = migrate.story.summary_rows(_ladder(), fake(), fake((1.6, 1.7, 1.65)), fake())
    labels = [r[0] for r in rows]
    assert "ladder: + batch 64 (tried, not kept)" in labels and "compile, CNN, fresh processes" in labels
    assert all(len(r) == 4 for r in rows)
