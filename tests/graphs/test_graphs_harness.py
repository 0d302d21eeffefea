"""course_utils.graphs.harness: several harnesses of one speed-up, each factor measured apart, and the text."""

from __future__ import annotations

import pytest

from course_utils import graphs, timing


def _m(seconds: float) -> timing.Measurement:
    return timing.Measurement("m", (seconds * 0.95, seconds, seconds * 1.05))


def _set(sweep_compiled: float, generic_compiled: float, other_compiled: float, fresh_eager: float | None = None,
         ) -> graphs.Harnesses:
    fresh = graphs.Harness("fresh", _m(fresh_eager), _m(other_compiled), 6.3) if fresh_eager else None
    return graphs.Harnesses(graphs.Harness("sweep", _m(4e-3), _m(sweep_compiled), 0.0),
                            graphs.Harness("generic", _m(4e-3), _m(generic_compiled), 0.0),
                            graphs.Harness("00", _m(4e-3), _m(other_compiled), 0.0), fresh)


def test_harness_why_names_the_factor_beyond_the_noise() -> None:
    generic = graphs.harness_why(_set(2e-3, 4.1e-3, 2e-3))
    assert "shape-generic graph instead of a static one: 2.05x (beyond the noise)" in generic
    assert "within 1.5x" not in generic and "largest" not in generic  # same speed-up in both harnesses
    bias = graphs.harness_why(_set(4e-3, 4e-3, 2e-3))
    assert "largest beyond the noise is a `bias` array instead of a scalar" in bias
    wide = timing.Measurement("m", (1e-3, 2e-3, 4e-3))
    unknown = graphs.harness_why(graphs.Harnesses(
        graphs.Harness("sweep", _m(4e-3), wide, 0.0), graphs.Harness("g", _m(4e-3), wide, 0.0),
        graphs.Harness("00", _m(4e-3), timing.Measurement("m", (0.5e-3, 1e-3, 3e-3)), 0.0)))
    assert "not established" in unknown


def test_harness_text_names_both_fault_counts() -> None:
    earlier = graphs.Harness("earlier", _m(4.1e-3), _m(2e-3))
    text = graphs.harness_text(earlier, _set(2e-3, 4.1e-3, 2e-3, fresh_eager=20e-3))
    assert "Within 1.5x" in text and "with 6.3 against 0.0 outputs' worth" in text and "(5.00x, beyond" in text
    assert "Only the eager side slowed beyond the noise" in text and "- against 0.0" not in text
    cheap = graphs.harness_text(earlier, _set(2e-3, 4.1e-3, 2e-3, fresh_eager=4.2e-3))
    assert "fresh pages cost little" in cheap
    moved = graphs.Harness("earlier", _m(40e-3), _m(2e-3))
    assert "depends on the moment" in graphs.harness_text(moved, _set(2e-3, 4.1e-3, 2e-3))
    table = graphs.harness_table([earlier])
    assert table.column("eager page faults / call (outputs' worth)") == table.column("compiled page faults / call")


def test_harness_text_compares_both_sides_on_fresh_pages() -> None:
    warm = graphs.Harness("00", _m(2.6e-3), _m(0.75e-3), 0.0, 0.0)
    fresh = graphs.Harness("fresh", _m(13.5e-3), _m(4.24e-3), 7.0, 6.5)
    h = graphs.Harnesses(graphs.Harness("sweep", _m(2.5e-3), _m(0.76e-3)),
                         graphs.Harness("generic", _m(2.6e-3), _m(0.77e-3)), warm, fresh)
    text = graphs.harness_text(graphs.Harness("earlier", _m(2.5e-3), _m(0.76e-3)), h)
    assert "Both sides slowed, the compiled side more (5.65x against 5.19x)" in text
    assert "with 6.5 against 0.0 outputs' worth" in text and "went from 3.5x to 3.2x" in text
    assert "shape-generic" not in text.split("Measured apart")[1].split(". ", 1)[1]  # no generic cost to explain


def test_harness_text_states_the_shape_generic_cost_and_its_candidate() -> None:
    earlier = graphs.Harness("earlier", _m(4e-3), _m(2e-3))
    plain = graphs.harness_text(earlier, _set(2e-3, 4.1e-3, 2e-3))
    assert "took 2.05x the static graph's" in plain and "not established by this run" in plain
    check = graphs.ThreadCheck(2, 1, 0, _m(1.7e-3), _m(1.72e-3))
    assert "on one thread the two are within the noise" in graphs.harness_text(earlier, _set(2e-3, 4.1e-3, 2e-3),
                                                                                check)


def test_compare_harnesses_times_every_harness() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    chain = models.chain_for("torch")
    x = torch.randn(64)
    found = graphs.compare_harnesses(chain, (x, x), (x, torch.tensor(0.1)), min_time=0.02, rounds=2)
    assert all(h.speedup > 0 and h.faults >= 0 and h.compiled_faults >= 0 for h in found.rows())
    assert len(found.rows()) >= 3


@pytest.mark.parametrize(("call", "name"), [
    (lambda: graphs.harness_table([]), "rows"),
    (lambda: graphs.harness_why(None), "h"),
    (lambda: graphs.harness_text(None, None), "earlier"),
    (lambda: graphs.compare_harnesses(None, (), ()), "chain"),
    (lambda: graphs.measure_harness("", abs, abs, (1,), min_time=0.1), "label"),
    (lambda: graphs.measure_harness("x", abs, abs, (1,), min_time=0), "min_time"),
])
def test_bad_input_names_the_argument(call, name: str) -> None:
    with pytest.raises((TypeError, ValueError), match=name):
        call()
