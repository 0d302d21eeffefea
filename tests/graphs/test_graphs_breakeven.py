"""course_utils.graphs.breakeven: break-even formula, cumulative time, eager against the learner's compiled
function in turns, the overhead model fed with the run's call cost, and the size sweep."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils import graphs, interop, intervals, models, timing
from course_utils.graphs.breakeven import CHAIN_MIX, break_even_range


def _m(seconds: float) -> timing.Measurement:
    return timing.Measurement("m", (seconds * 0.95, seconds, seconds * 1.05))


def test_break_even_calls_formula() -> None:
    # compiled: 10 s, then 1 s per call; eager 2 s per call: 10 + (n-1) <= 2n  ->  n >= 9
    assert graphs.breakeven.break_even_calls(first_call=10, per_call=1, eager_per_call=2) == 9
    cum_c = graphs.cumulative_time(10, 1, np.array([8, 9]))
    cum_e = graphs.cumulative_time(2, 2, np.array([8, 9]))
    assert cum_c[0] > cum_e[0] and cum_c[1] <= cum_e[1]
    assert graphs.breakeven.break_even_calls(first_call=1, per_call=1, eager_per_call=2, eager_first_call=5) == 1
    assert graphs.breakeven.break_even_calls(first_call=10, per_call=3, eager_per_call=2) == math.inf


def test_break_even_range_comes_from_the_interval_and_is_none_where_it_reaches_1x() -> None:
    eager = timing.Measurement("eager", (2.0, 2.0), first_call=2.0)
    compiled = timing.Measurement("compiled", (1.0, 1.0), first_call=10.0)
    found = break_even_range(eager, compiled, intervals.Speedup("e", "c", 2.0, 1.6, 2.5, 6, intervals.ROUNDS))
    assert found == (8, 12)  # 8 / (2 - 2/2.5) -> 7.7 extra calls; 8 / (2 - 2/1.6) -> 10.7
    for low, high in ((0.9, 4.0), (0.4, 0.8)):  # within the noise, slower: no count
        assert break_even_range(eager, compiled, intervals.Speedup("e", "c", low * 1.1, low, high, 6,
                                                                         intervals.ROUNDS)) is None


def test_timed_pair_labels_pairs_rounds_and_keeps_first_calls() -> None:
    eager, compiled = graphs.timed_pair(abs, abs, (-1.0,), label="py", min_time=0.004, rounds=2)
    assert (eager.label, compiled.label) == ("py eager", "py compiled")
    assert eager.first_call is not None and compiled.first_call is not None
    assert len(eager.rounds) == len(compiled.rounds) == 2  # what cu.intervals.speedup pairs


def test_overhead_model_predicts_scores_and_keeps_the_chain_call() -> None:
    m = graphs.overhead_model("tensorflow", n_ops=10, eager_per_op=5e-6, compiled_per_call=10e-6, eager_chain=_m(80e-6),
                              compiled_chain=_m(20e-6))
    assert m.framework == "tensorflow" and m.predicted == pytest.approx(5.0) and m.measured == pytest.approx(4.0)
    assert m.ratio == pytest.approx(0.8) and m.chain_call == pytest.approx(20e-6)
    table = graphs.overhead_table([m])
    assert table.column("predicted speed-up (computed)") == ["5x"] and "cu.machine.figures()" in table.note
    assert table.column("measured / predicted") == ["0.8"]
    assert table.column("compiled chain's call / figure (computed)") == ["2x"]  # 20 µs against the 10 µs figure
    assert table.column("eager chain's average op / op mix (computed)") == ["1.6x"]  # 80 µs / 10 ops against 5 µs


X = np.random.default_rng(0).standard_normal((64, 32), dtype=np.float32)
B = np.random.default_rng(1).standard_normal(32, dtype=np.float32)


def _rows(fw, n):
    x, bias = interop.to_framework(fw, X, B)
    return x[:n], bias


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_size_sweep_compiles_a_fresh_copy_at_every_size_with_the_learners_call() -> None:
    torch = pytest.importorskip("torch")
    seen = []

    def my_compile(fw, fn):
        seen.append((fw, fn))
        return torch.compile(fn, dynamic=False)

    found = graphs.size_sweep({"torch": models.chain_for("torch")}, my_compile, [4, 16], _rows, min_time=0.002)
    assert found.worst["torch"] < 1e-5 and found.compiles == {"torch": 2} and [fw for fw, _ in seen] == ["torch"] * 2
    assert seen[0][1].__code__ is not seen[1][1].__code__  # a fresh code object per size: no shape-generic graph
    assert set(found.series) == {"torch eager", "torch compiled"} and len(found.series["torch compiled"]) == 2
    assert len(found.speedups["torch"]) == 2 and all(s > 0 for s in found.speedups["torch"])


def test_size_sweep_counts_jax_traces_and_takes_any_callable() -> None:
    pytest.importorskip("jax")
    import jax

    found = graphs.size_sweep({"jax": models.chain_for("jax")}, lambda fw, fn: jax.jit(fn), [4, 8], _rows,
                              min_time=0.002)
    assert found.worst["jax"] < 1e-5 and found.compiles == {"jax": 2}


def test_the_learners_own_compile_error_passes_through() -> None:
    torch = pytest.importorskip("torch")

    def broken(fw, fn):
        raise KeyError("the learner's own bug")

    with pytest.raises(KeyError, match="own bug"):
        graphs.size_sweep({"torch": torch.sin}, broken, [2], lambda fw, n: (torch.ones(n),))


def test_eager_op_costs_measure_the_chains_op_mix() -> None:
    pytest.importorskip("torch")
    costs = graphs.eager_op_costs("torch", size=4, min_time=0.001)
    assert set(costs) == set(CHAIN_MIX)
    mix = graphs.eager_op_cost(costs)
    assert min(costs[k].median for k in CHAIN_MIX) <= mix <= max(costs[k].median for k in CHAIN_MIX)
