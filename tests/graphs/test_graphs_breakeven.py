"""course_utils.graphs.breakeven: break-even formula, cumulative time, cache probe, the overhead model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils import graphs, interop, timing


def test_break_even_calls_formula() -> None:
    # compiled: 10 s, then 1 s per call; eager 2 s per call: 10 + (n-1) <= 2n  ->  n >= 9
    assert graphs.break_even_calls(first_call=10, per_call=1, eager_per_call=2) == 9
    cum_c = graphs.cumulative_time(10, 1, np.array([8, 9]))
    cum_e = graphs.cumulative_time(2, 2, np.array([8, 9]))
    assert cum_c[0] > cum_e[0] and cum_c[1] <= cum_e[1]
    assert graphs.break_even_calls(first_call=1, per_call=1, eager_per_call=2, eager_first_call=5) == 1
    assert graphs.break_even_calls(first_call=10, per_call=3, eager_per_call=2) == math.inf


def test_break_even_from_measurements() -> None:
    eager = timing.Measurement("eager", (2.0, 2.0), first_call=2.0)
    compiled = timing.Measurement("compiled", (1.0, 1.0), first_call=10.0)
    assert graphs.break_even(eager, compiled) == 9
    with pytest.raises(ValueError, match="first_call"):
        graphs.break_even(eager, timing.Measurement("c", (1.0,)))


def test_overhead_model_predicts_and_scores() -> None:
    m = graphs.overhead_model("tf", n_ops=10, eager_per_op=5e-6, compiled_per_call=10e-6, measured=4.0)
    assert m.framework == "tensorflow" and m.predicted == pytest.approx(5.0) and m.ratio == pytest.approx(0.8)
    assert m.within(2) and not m.within(1.1)
    table = graphs.overhead_table([m])
    assert table.column("predicted speed-up (computed)") == ["5.0x"] and "computed" in table.note


def test_size_sweep_times_every_size_and_checks_results() -> None:
    pytest.importorskip("torch")
    import torch

    def make(fw, n):
        return (interop.to_framework(fw, np.ones(n, np.float32)),)

    def fresh(fw):
        return torch.compile(graphs.fresh_function(lambda x: torch.sin(x)), backend="eager")

    out, worst, compiled = graphs.size_sweep({"torch": torch.sin}, fresh, [4, 8], make, min_time=0.001)
    assert set(out) == {"torch eager", "torch compiled"} and len(out["torch eager"]) == 2 and worst == 0.0
    assert compiled == 2  # one static graph per size, no recompile


def test_call_costs_measures_both_fixed_costs() -> None:
    pytest.importorskip("torch")
    costs = graphs.call_costs("torch", size=4, min_time=0.001)
    assert set(costs) == {"eager add", "eager scalar mul", "eager tanh", "compiled x + 1"}
    assert all(isinstance(m, timing.Measurement) for m in costs.values())
    mix = graphs.eager_op_cost(costs)
    assert min(costs[k].median for k in graphs.CHAIN_MIX) <= mix <= max(costs[k].median for k in graphs.CHAIN_MIX)


def test_busy_note_is_text() -> None:
    assert isinstance(graphs.busy_note(), str)


@pytest.mark.integration
def test_compile_cache_times_runs_two_fresh_processes() -> None:
    pytest.importorskip("torch")
    times = graphs.compile_cache_times(2**8)
    assert set(times) == {"cold", "warm"} and all(t > 0 for t in times.values())


def test_dynamic_costs_counts_graphs_and_compares_like_for_like() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    chain = models.chain_for("torch")
    reused = torch.compile(graphs.fresh_function(chain))
    reused(torch.ones(64), torch.ones(64))
    args = (torch.ones(16), torch.ones(16))
    found = graphs.dynamic_costs(chain, args, reused, min_time=0.02, rounds=2)
    assert [v.graphs for v in found.values()] == [1, 1, 1, 1]
    assert list(found) == [graphs.STATIC, graphs.DYNAMIC, graphs.MARKED, graphs.REUSED]
    assert "graphs compiled at this size" in graphs.dynamic_table(found, 16).header
    text = graphs.dynamic_text(found, 64)
    assert "first called at 64 elements" in text and "no static baseline" in text


def test_dynamic_text_follows_the_noise() -> None:
    def v(name, seconds):
        return graphs.Variant(name, timing.Measurement(name, (seconds * 0.95, seconds, seconds * 1.05)), 1)

    slower = {graphs.STATIC: v(graphs.STATIC, 40e-6), graphs.DYNAMIC: v(graphs.DYNAMIC, 65e-6),
              graphs.MARKED: v(graphs.MARKED, 41e-6)}
    assert "Beyond the noise for `dynamic=True`:" in graphs.dynamic_text(slower, 64)
    same = {**slower, graphs.DYNAMIC: v(graphs.DYNAMIC, 40.5e-6)}
    assert "Neither is slower beyond the noise" in graphs.dynamic_text(same, 64)
    faster = {**slower, graphs.MARKED: v(graphs.MARKED, 30e-6)}
    assert "`mark_dynamic(x, 0)` ran faster than the static graph" in graphs.dynamic_text(faster, 64)


def test_probe_beside_chain_times_both_in_turns() -> None:
    torch = pytest.importorskip("torch")
    from course_utils import models

    probe, chain = graphs.probe_beside_chain("torch", models.chain_for("torch"), (torch.ones(16), torch.ones(16)),
                                             min_time=0.02)
    assert probe.median > 0 and chain.median > 0 and probe.label == graphs.PROBE
