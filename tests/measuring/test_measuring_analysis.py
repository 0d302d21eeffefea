"""course_utils.measuring: the memory-hierarchy reading, the bend read off a sweep, Amdahl, the chains' speed-ups
with their intervals, the two clock readings of one call, and the deadline around learner code."""

from __future__ import annotations

import time

import pytest

from course_utils import calls, intervals, measuring, timing
from course_utils.measuring import hierarchy, speedups

CACHES = {"L1d": 48 * 2**10, "L2": 2 * 2**20, "L3": 32 * 2**20}


def _m(seconds: float, label: str = "m", *, rounds: tuple[float, ...] = (), **metadata: float) -> timing.Measurement:
    rounds = rounds or (seconds * 0.99, seconds, seconds * 1.01, seconds)
    return timing.Measurement(label, (seconds * 0.99, seconds, seconds * 1.01), rounds=tuple(rounds),
                              first_call=100 * seconds, metadata=dict(metadata))


def test_hierarchy_table_shows_the_measured_level_beside_the_reported_cache() -> None:
    sizes = (2**14, 2**18, 2**22, 2**26, 2**27, 2**28)
    sweep = hierarchy.HierarchySweep(sizes, (60e9, 80e9, 78e9, 25e9, 20e9, 19e9), CACHES)
    assert [sweep.level_of(s) for s in sizes] == ["cache 1"] * 3 + ["cliff 1", "main memory", "main memory"]
    assert [sweep.reported_level(s) for s in sizes] == ["L1d", "L2", "L3", "past L3", "past L3", "past L3"]
    text = repr(sweep)
    assert "main memory past the sweep's last cliff, between 4 MiB and 128 MiB" in text and "second fact" in text
    assert "<table>" in sweep._repr_html_()


def test_default_working_sets_reach_main_memory_within_the_cap() -> None:
    sets = measuring.default_working_sets(2**26, step=4, last_level_cache=2**20, memory=2**34, cap=2**36)
    assert sets[0] == 2**14 and sets[-1] == 2**26 and all(b > a for a, b in zip(sets, sets[1:]))
    # a probe set just past a large cache: points at 4x and 8x the cache, so the plateau is measured on its own
    big = measuring.default_working_sets(2**29, last_level_cache=480 * 2**20, memory=2**36, cap=2**36)
    assert [s for s in big if s >= 4 * 480 * 2**20] == [1920 * 2**20, 3840 * 2**20]
    # too little memory, or the ci cap: the points that do not fit are left out (the notebook says it cannot tell)
    assert max(measuring.default_working_sets(2**29, last_level_cache=480 * 2**20, memory=2**33, cap=2**36)) == \
        1920 * 2**20
    assert max(measuring.default_working_sets(2**29, last_level_cache=480 * 2**20, memory=2**36, cap=2**29)) == 2**29


def test_sweep_hierarchy_measures_each_working_set() -> None:
    pytest.importorskip("torch")
    sweep = measuring.sweep_hierarchy([2**14, 2**20], min_time=0.01)
    assert len(sweep.bandwidths) == 2 and all(r > 0 for r in sweep.bandwidths)
    retimed = measuring.retime_dram(hierarchy.HierarchySweep((2**14, 2**16, 2**17), (1e9,) * 3, {"L1d": 2**14}),
                                    2**15, 1e9, rounds=2, min_time=0.02)
    assert [s for s, _ in retimed.points] == [2**16, 2**17] and retimed.plateau > 0 and retimed.probe_rate > 0


def test_bend_is_read_off_the_curve_not_from_the_faulting_top() -> None:
    sizes = [4, 32, 256, 2048, 16384, 131072, 1048576, 8388608]
    # flat to 16k, twice the floor between 16k and 131k, then a top paid for by page faults
    times = [2e-6, 2e-6, 2.1e-6, 2.3e-6, 3e-6, 8e-6, 60e-6, 9e-3]
    faults = [0, 0, 0, 0, 0, 0, 0, 1.0]
    found = measuring.bends(sizes, {"torch eager": [_m(t, faults=f) for t, f in zip(times, faults)]})["torch eager"]
    assert found.floor == pytest.approx(2e-6) and 16384 < found.size < 131072
    assert found.faulted_from == 8388608 and found.slope == pytest.approx(2.41, abs=0.01) and found.within
    flat = measuring.bends(sizes[:3], {"flat": [_m(1e-6), _m(1.1e-6), _m(1.2e-6)]})["flat"]
    assert flat.size is None and not flat.within and flat.faulted_from is None
    table = repr(measuring.bends_table({"torch eager": found, "flat": flat}))
    assert "past the sweep" in table and "8,388,608" in table


def test_amdahl_is_the_time_weighted_harmonic_mean() -> None:
    assert speedups.amdahl([0.5, 0.5], [2.0, 1.0]) == pytest.approx(1 / 0.75)
    assert speedups.amdahl([1.0], [5.0]) == pytest.approx(5.0)
    assert speedups.amdahl([0.3, 0.7], [1e9, 1.0]) == pytest.approx(1 / 0.7, rel=1e-6)  # the cap
    table = repr(measuring.amdahl_table({"gelu chain": 3.0, "chain without tanh": 1.5}))
    assert "Amdahl" in table and "chain without tanh (1.5x; computed)" in table and "2.5x" in table


def _runs(eager: dict[str, float], compiled: dict[str, float], poly: bool = True) -> speedups.ChainRuns:
    found = {"eager": {fw: _m(t) for fw, t in eager.items()}, "compiled": {fw: _m(t) for fw, t in compiled.items()}}
    if poly:
        found["eager, no tanh"] = {fw: _m(0.8 * t) for fw, t in eager.items()}
        found["compiled, no tanh"] = {fw: _m(0.5 * t) for fw, t in compiled.items()}
    return speedups.ChainRuns(found)


def test_chain_runs_name_their_baselines_and_carry_intervals() -> None:
    runs = _runs({"torch": 10e-3, "jax": 40e-3}, {"torch": 5e-3, "jax": 2e-3})
    assert runs.own("torch").ratio == pytest.approx(2.0) and runs.own("jax").ratio == pytest.approx(20.0)
    assert runs.own("torch").faster and runs.own("torch").n == 4
    assert runs.best("eager") == "torch" and runs.best("compiled") == "jax"
    assert runs.best_vs_best().ratio == pytest.approx(5.0)  # best compiled over best eager, not 20x
    assert runs.best_vs_best(tanh=False).ratio == pytest.approx(8e-3 / 1e-3)
    assert runs.eager_spread().ratio == pytest.approx(4.0) and runs.eager_spread().faster
    assert runs.first_call_ratio("torch") == pytest.approx(100.0, rel=0.02)
    text = repr(runs)
    assert "best eager (torch eager)" in text and "best compiled (jax.jit)" in text and "without tanh" in text
    alone = _runs({"torch": 1e-3}, {"torch": 5e-4}, poly=False)
    assert alone.eager_spread() is None and not alone.has_polynomial and "without tanh" not in repr(alone)
    with pytest.raises(ValueError, match="tanh"):
        alone.best_vs_best(tanh=False)


def test_chain_runs_refuse_runs_from_different_calls() -> None:
    with pytest.raises(ValueError, match="one cu.timing.interleaved"):
        speedups.ChainRuns({"eager": {"torch": _m(1e-3)}, "compiled": {"torch": _m(1e-3, rounds=(1e-3, 1e-3))}})
    with pytest.raises(ValueError, match="frameworks"):
        speedups.ChainRuns({"eager": {"torch": _m(1e-3)}, "compiled": {"jax": _m(1e-3)}})
    with pytest.raises(ValueError, match="compiled"):
        speedups.ChainRuns({"eager": {"torch": _m(1e-3)}})


def test_cache_state_reads_hits_and_misses() -> None:
    assert measuring.cache_state({"hits": 1, "misses": 0}, {"hits": 3, "misses": 0}) == "warm"
    assert measuring.cache_state({"hits": 1, "misses": 0}, {"hits": 3, "misses": 1}) == "cold"
    assert measuring.cache_state({"hits": 0, "misses": 0}, {"hits": 0, "misses": 0}) == "unknown"
    with pytest.raises(ValueError, match="after"):
        measuring.cache_state({"hits": 3, "misses": 0}, {"hits": 1, "misses": 0})


def test_clock_pairs_pair_the_two_readings_of_each_call() -> None:
    def early() -> tuple[float, float]:
        return 1e-5, 1e-3

    def synchronous() -> tuple[float, float]:
        return 1e-3, 1.001e-3

    found = measuring.clock_pairs({"jax": early, "torch": synchronous}, rounds=3, min_time=0.03)
    returned, ready = found["jax"]
    assert len(returned.rounds) == len(ready.rounds) == 3 and returned.first_call is not None
    assert returned.median == pytest.approx(1e-5) and ready.median == pytest.approx(1e-3)
    assert intervals.speedup(ready, returned).ratio == pytest.approx(100.0)


def test_clock_pairs_refuse_what_a_clock_cannot_read() -> None:
    with pytest.raises(TypeError, match=r"clocks\['torch'\]"):
        measuring.clock_pairs({"torch": lambda: None}, rounds=2, min_time=0.01)
    with pytest.raises(ValueError, match="returned <= ready"):
        measuring.clock_pairs({"torch": lambda: (2.0, 1.0)}, rounds=2, min_time=0.01)
    with pytest.raises(ValueError, match="returned <= ready"):
        measuring.clock_pairs({"torch": lambda: (float("nan"), 1.0)}, rounds=2, min_time=0.01)


def test_a_learner_function_that_never_returns_is_stopped_and_named() -> None:
    def hangs() -> tuple[float, float]:
        while True:
            time.sleep(0.01)

    start = time.monotonic()
    with pytest.raises(calls.LearnerTimeout, match="clocks"):
        measuring.clock_pairs({"torch": hangs}, rounds=2, min_time=0.01, timeout=0.3)
    assert time.monotonic() - start < 5
    with pytest.raises(calls.LearnerTimeout, match="the chains"):
        measuring.time_chains({"torch": (1,)}, {"eager": {"torch": lambda x: hangs()}, "compiled": {"torch": abs}},
                              rounds=2, min_time=0.01, timeout=0.3)
    with calls.time_limit(5, "quick"):  # the timer is disarmed after the block
        pass
    time.sleep(0.05)


def test_time_chains_time_every_variant_in_the_same_rounds() -> None:
    def slow(x: float) -> float:
        time.sleep(2e-3)
        return x

    def quick(x: float) -> float:
        return x

    runs = measuring.time_chains({"torch": (1.0,), "jax": (2.0,)},
                                 {"eager": {"torch": slow, "jax": slow}, "compiled": {"torch": quick, "jax": quick}},
                                 rounds=2, min_time=0.02)
    assert runs.frameworks == ["torch", "jax"] and runs.own("torch").ratio > 10
    with pytest.raises(ValueError, match="inputs lacks"):
        measuring.time_chains({"torch": (1.0,)}, {"eager": {"jax": quick}, "compiled": {"jax": quick}})


def test_overhead_sweep_counts_faults_at_every_point() -> None:
    pytest.importorskip("torch")
    sweep = measuring.overhead_sweep(["torch"], [4, 64, 1024], min_time=0.005)
    assert list(sweep) == ["torch eager", "torch.compile"]
    assert all("faults" in m.metadata for m in sweep["torch eager"])
    assert measuring.sweep_sizes(23) == [4, 32, 256, 2048, 16384, 131072, 1048576, 8388608]
