"""Parity and the rollback judged on the right losses: the timed steps of every process for a model without
dropout, the first process's matched-random-state steps for a model with dropout (made-up results)."""

from __future__ import annotations

from fake_assessment import worker_result

from course_utils.migrate import parity


def _with_dropout(results: list[dict], shift: float) -> list[dict]:
    """The same results for a model with dropout: its timed losses differ (different masks), its matched ones by
    ``shift``."""
    losses = [2.3 - 0.01 * i for i in range(10)]
    for r in results:
        r["random"] = ["2: Dropout(p=0.3)"]
        r["variants"]["default"]["losses"] = [x * 1.2 for x in r["variants"]["default"]["losses"]]
    results[0]["matched"] = {"eager": losses, "default": [x * (1 + shift) for x in losses]}
    results[0]["fallback"]["losses"] = list(losses)
    return results


def test_without_dropout_every_process_is_judged_and_the_worst_reported() -> None:
    results = [worker_result(0, 0.01, 0.008), worker_result(1, 0.01, 0.008, drift=0.01)]
    found = parity.of(results, "default", None)
    assert found.method == parity.TIMED and not found.passed and abs(found.largest - 0.01) < 1e-9


def test_with_dropout_parity_is_judged_on_the_matched_steps() -> None:
    results = _with_dropout([worker_result(0, 0.01, 0.008), worker_result(1, 0.01, 0.008)], shift=1e-5)
    found = parity.of(results, "default", None)
    assert found.passed and found.steps == 10
    assert found.method.startswith("random state matched") and "2: Dropout(p=0.3)" in found.method
    assert parity.fallback_result(results, "default", None).passed


def test_with_dropout_a_real_difference_still_fails() -> None:
    results = _with_dropout([worker_result(0, 0.01, 0.008), worker_result(1, 0.01, 0.008)], shift=0.05)
    assert not parity.of(results, "default", None).passed
