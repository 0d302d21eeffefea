"""course_utils.graphs.harness: two harnesses of one speed-up, and the text that says which side differs."""

from __future__ import annotations

import pytest

from course_utils import graphs, timing


def _m(seconds: float) -> timing.Measurement:
    return timing.Measurement("m", (seconds * 0.9, seconds, seconds * 1.1))


def test_harness_text_names_the_side_that_moved() -> None:
    earlier = graphs.Harness("earlier", _m(9e-3), _m(8e-3))
    now = graphs.Harness("now", _m(10e-3), _m(8e-3), 0.5)
    eager_moved = graphs.Harness("00", _m(84e-3), _m(8e-3), 6.3)
    assert eager_moved.speedup == pytest.approx(10.5)
    text = graphs.harness_text(earlier, now, eager_moved)
    assert "eager side differs most" in text.lower() and "6.3 against 0.5" in text and "page touched" in text
    compiled_moved = graphs.Harness("00", _m(10e-3), _m(1e-3), 0.5)
    assert "reads one more input" in graphs.harness_text(earlier, now, compiled_moved)
    same = graphs.Harness("00", _m(11e-3), _m(8e-3), 0.5)
    assert "Within 1.5x" in graphs.harness_text(earlier, now, same)
    moved = graphs.Harness("earlier", _m(40e-3), _m(8e-3))
    assert "depends on the moment" in graphs.harness_text(moved, now, same)
    assert "-" in graphs.harness_table([earlier, now]).column("eager page faults / call (outputs' worth)")


def test_compare_harnesses_times_both() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    chain = models.chain_for("torch")
    x = torch.randn(64)
    now, other = graphs.compare_harnesses(chain, torch.compile(chain), (x, x), (x, torch.tensor(0.1)),
                                          sweep_min_time=0.01, other_min_time=0.01)
    assert now.speedup > 0 and other.speedup > 0 and other.faults >= 0


@pytest.mark.parametrize(("call", "name"), [
    (lambda: graphs.harness_table([]), "rows"),
    (lambda: graphs.harness_why(None, None), "now"),
    (lambda: graphs.measure_harness("", abs, abs, (1,), min_time=0.1), "label"),
    (lambda: graphs.measure_harness("x", abs, abs, (1,), min_time=0), "min_time"),
])
def test_bad_input_names_the_argument(call, name: str) -> None:
    with pytest.raises((TypeError, ValueError), match=name):
        call()
