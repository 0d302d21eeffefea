"""course_utils.graphs.breakeven (dynamic) and compile_time: shape-generic graphs against a static one, the stack
compiled whole or by region, and one job's compile in fresh processes (cold, portable, local)."""

from __future__ import annotations

import pytest

from course_utils import calls, graphs, models
from course_utils.graphs.compile_time import Run


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_dynamic_costs_counts_graphs_of_the_learners_variants() -> None:
    torch = pytest.importorskip("torch")
    chain = models.chain_for("torch")
    reused = torch.compile(graphs.fresh_function(chain))
    reused(torch.ones(64), torch.ones(64))
    args = (torch.ones(16), torch.ones(16))
    marked = [a.clone() for a in args]
    for a in marked:
        torch._dynamo.mark_dynamic(a, 0)
    found = graphs.dynamic_costs({
        graphs.STATIC: (torch.compile(graphs.fresh_function(chain), dynamic=False), args),
        graphs.DYNAMIC: (torch.compile(graphs.fresh_function(chain), dynamic=True), args),
        graphs.MARKED: (torch.compile(graphs.fresh_function(chain)), marked),
        graphs.REUSED: (reused, args)}, min_time=0.02, rounds=2)
    assert [v.graphs for v in found.values()] == [1, 1, 1, 1]
    speeds = graphs.against_baseline(found)
    assert list(speeds) == [graphs.DYNAMIC, graphs.MARKED, graphs.REUSED] and all(s.n == 2 for s in speeds.values())
    assert "graphs compiled at this size" in graphs.dynamic_table(found, 16).header


@pytest.mark.slow  # seconds: outside make test-unit's fast lane, inside make test
def test_stack_is_identical_blocks_and_block_compile_reuses_one_graph() -> None:
    torch = pytest.importorskip("torch")
    eager, regional = graphs.stack(3, 8), graphs.stack(3, 8)
    assert len(eager.blocks) == 3 and torch.equal(eager.head.weight, regional.head.weight)  # same seed, same weights
    for block in regional.blocks:
        block.compile()
    x = torch.randn(4, 8)
    before = graphs.torch_graph_count()
    seconds = graphs.first_call_seconds(graphs.forward_step(regional), x)
    assert seconds > 0 and graphs.torch_graph_count() - before == 1  # three blocks, one compiled graph
    assert graphs.max_abs_diff(graphs.forward_step(eager)(x), graphs.forward_step(regional)(x)) < 1e-5


def test_nested_compile_region_is_one_graph() -> None:
    torch = pytest.importorskip("torch")

    @torch.compiler.nested_compile_region
    def region(block, x):
        return block(x)

    nested = torch.compile(graphs.stack(3, 8, block_call=region), backend="eager")
    x = torch.randn(4, 8)
    before = graphs.torch_graph_count()
    graphs.forward_step(nested)(x)
    assert graphs.torch_graph_count() - before == 1
    assert graphs.max_abs_diff(graphs.forward_step(graphs.stack(3, 8))(x), graphs.forward_step(nested)(x)) < 1e-5


def test_call_times_pairs_rounds() -> None:
    found = graphs.call_times({"a": abs, "b": abs}, -1.0, rounds=2, min_time=0.004)
    assert set(found) == {"a", "b"} and all(len(m.rounds) == 2 for m in found.values())


def test_cache_times_table_and_seconds() -> None:
    runs = {graphs.compile_time.COLD: Run(10.0, 0, 1, 0, 4), graphs.compile_time.PORTABLE: Run(9.0, 1, 0, 0, 4, 0.2),
            graphs.compile_time.LOCAL: Run(1.0, 1, 0, 4, 4)}
    times = graphs.compile_time.CacheTimes(runs, 1000)
    assert (times.cold, times.portable, times.local) == (10.0, 9.0, 1.0)
    assert runs["portable"].libraries_built == 4 and runs["local"].libraries_built == 0
    assert times.table().column("compiled libraries built") == ["4", "4", "0"]
    assert times.facts() == {"cold": "10 s", "load": "200 ms", "cold_built": 4, "portable_built": 4, "local_built": 0,
                             "before": 0}


def test_cache_worker_shows_the_file() -> None:
    assert "save_cache_artifacts" in graphs.cache_worker().data


def test_first_call_seconds_stops_a_hang() -> None:
    import time

    def hangs(x):
        while True:
            time.sleep(0.01)

    with pytest.raises(calls.LearnerTimeout, match="hangs"):
        graphs.first_call_seconds(hangs, 1, timeout=0.3)
