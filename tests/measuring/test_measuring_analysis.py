"""course_utils.measuring: the memory-hierarchy reading, the bend of a sweep, Amdahl, and named speed-ups."""

from __future__ import annotations

import pytest

from course_utils import measuring, timing

CACHES = {"L1d": 48 * 2**10, "L2": 2 * 2**20, "L3": 32 * 2**20}


def _m(seconds: float, label: str = "m") -> timing.Measurement:
    return timing.Measurement(label, (seconds * 0.99, seconds, seconds * 1.01))


def test_hierarchy_levels_plateaus_and_the_last_plateau() -> None:
    sizes = (2**14, 2**18, 2**22, 2**26, 2**28)
    sweep = measuring.HierarchySweep(sizes, (100e9, 80e9, 40e9, 20e9, 19e9), CACHES)
    assert [sweep.level_of(s) for s in sizes] == ["L1d", "L2", "L3", "DRAM", "DRAM"]
    assert sweep.plateaus() == {"L1d": 100e9, "L2": 80e9, "L3": 40e9, "DRAM": 19.5e9}
    assert sweep.dram_from() == 2**26 and sweep.largest == 19e9
    assert "DRAM" in repr(sweep) and "<table>" in sweep._repr_html_()


def test_default_working_sets_end_at_the_largest() -> None:
    sets = measuring.default_working_sets(2**26, step=4)
    assert sets[0] == 2**14 and sets[-1] == 2**26 and all(b > a for a, b in zip(sets, sets[1:]))


def test_sweep_hierarchy_measures_each_working_set() -> None:
    pytest.importorskip("torch")
    sweep = measuring.sweep_hierarchy([2**14, 2**20], min_time=0.01)
    assert len(sweep.bandwidths) == 2 and all(r > 0 for r in sweep.bandwidths)


def test_bend_recovers_floor_and_slope() -> None:
    sizes = [10**k for k in range(1, 8)]
    floor, per = 5e-6, 1e-9  # bend at 5000 elements
    found = measuring.bend(sizes, [_m(floor + s * per) for s in sizes], "x")
    assert found.floor == pytest.approx(floor + 10 * per)
    assert found.size == pytest.approx(5000, rel=0.01)
    assert found.slope == pytest.approx(1.0, abs=0.05)
    assert "x" in repr(measuring.bends_table({"x": found}))


def test_amdahl_is_the_time_weighted_harmonic_mean() -> None:
    assert measuring.amdahl([0.5, 0.5], [2.0, 1.0]) == pytest.approx(1 / 0.75)
    assert measuring.amdahl([1.0], [5.0]) == pytest.approx(5.0)
    assert measuring.amdahl([0.3, 0.7], [1e9, 1.0]) == pytest.approx(1 / 0.7, rel=1e-6)  # the cap
    needed = measuring.share_needed(1 / 0.7, 4.0)
    assert measuring.amdahl([needed, 1 - needed], [4.0, 1.0]) == pytest.approx(1 / 0.7)
    assert "Amdahl" in repr(measuring.amdahl_table(3.0))


def test_chain_speedups_name_their_baselines() -> None:
    eager = {"torch": _m(10e-3), "jax": _m(40e-3)}
    compiled = {"torch": _m(5e-3), "jax": _m(2e-3)}
    chain = measuring.ChainSpeedups(eager, compiled)
    assert chain.own("torch") == pytest.approx(2.0) and chain.own("jax") == pytest.approx(20.0)
    assert chain.best_eager == "torch" and chain.best_compiled == "jax"
    assert chain.best_vs_best == pytest.approx(5.0)  # best compiled over best eager, not 20x
    text = repr(chain)
    assert "best eager (torch eager)" in text and "best compiled (jax.jit)" in text


def test_cache_state_reads_hits_and_misses() -> None:
    assert measuring.cache_state({"hits": 1, "misses": 0}, {"hits": 3, "misses": 0}) == "warm"
    assert measuring.cache_state({"hits": 1, "misses": 0}, {"hits": 3, "misses": 1}) == "cold"
    assert measuring.cache_state({"hits": 0, "misses": 0}, {"hits": 0, "misses": 0}) == "unknown"


def test_steep_top_names_the_cache_outgrown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measuring.regimes.env, "cache_sizes", lambda: {"L2": 2 * 2**20})
    steep = {"a": measuring.Bend("a", 1e-6, 1e-9, 1e3, 2.0), "b": measuring.Bend("b", 1e-6, 1e-9, 1e3, 1.0)}
    text = measuring.steep_top_text([4, 2**17, 2**20], steep)
    assert "a:" in text and "b" not in text.split(":")[1] and "L2" in text
    assert "page faults" in measuring.steep_top_text([4, 2**20, 2**23], steep)
    assert measuring.steep_top_text([4, 2**17, 2**20], {"b": steep["b"]}) == ""
