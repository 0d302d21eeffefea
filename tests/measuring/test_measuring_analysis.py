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


def test_default_working_sets_reach_main_memory() -> None:
    sets = measuring.default_working_sets(2**26, step=4, last_level_cache=2**20, memory=2**34)
    assert sets[0] == 2**14 and sets[-1] == 2**26 and all(b > a for a, b in zip(sets, sets[1:]))
    # a probe set just past a large cache: two more points at 2x and 4x the cache, so the plateau is measured
    big = measuring.default_working_sets(2**29, last_level_cache=480 * 2**20, memory=2**35)
    assert 2**29 in big and [s for s in big if s >= 2 * 480 * 2**20] == [960 * 2**20, 1920 * 2**20]
    # too little memory: the points that do not fit are left out (the notebook then says it cannot tell)
    small = measuring.default_working_sets(2**29, last_level_cache=480 * 2**20, memory=2**32)
    assert max(small) == 960 * 2**20


def test_dram_plateau_needs_two_points_past_twice_the_cache() -> None:
    sizes = (2**14, 2**22, 2**25, 2**26, 2**27)
    sweep = measuring.HierarchySweep(sizes, (100e9, 40e9, 30e9, 20e9, 18e9), {"L3": 2**24})
    assert sweep.last_level_cache == 2**24
    assert [s for s, _ in sweep.dram_points()] == [2**25, 2**26, 2**27]
    assert sweep.dram_plateau() == 20e9
    assert sweep.rate_at(2**26 + 1) == 20e9
    assert sweep.seconds_per_call("DRAM") == pytest.approx(2**26 / 20e9)
    with pytest.raises(ValueError, match="level"):
        sweep.seconds_per_call("L9")
    short = measuring.HierarchySweep(sizes[:3], (100e9, 40e9, 30e9), {"L3": 2**24})
    assert short.dram_plateau() is None  # one point is not a plateau
    assert measuring.HierarchySweep(sizes, (1e9,) * 5, {}).dram_plateau() is None


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
    assert "not established" in measuring.steep_top_text([4, 2**20, 2**23], steep)
    assert measuring.steep_top_text([4, 2**17, 2**20], {"b": steep["b"]}) == ""
    text = measuring.steep_top_text([4, 2**20, 2**23], steep, series={"a": _paged()})
    assert "a 1.0 (0.0)" in text and "fresh memory" in text and "not established" not in text


def _paged() -> list[timing.Measurement]:
    return [_m(1e-6), timing.Measurement("m", (1e-3,) * 3, metadata={"faults": 0.0}),
            timing.Measurement("m", (1e-1,) * 3, metadata={"faults": 1.0})]


def test_slope_budget_names_what_the_hierarchy_leaves() -> None:
    sweep = measuring.HierarchySweep((2**23, 2**26), (100e9, 25e9), {"L3": 32 * 2**20})
    steep = {"a": measuring.Bend("a", 1e-6, 1e-9, 1e3, 2.45), "b": measuring.Bend("b", 1e-6, 1e-9, 1e3, 1.5)}
    text = measuring.slope_budget([4, 2**20, 2**23], steep, {"a": _paged()}, sweep)
    assert "at most 1.67" in text and "a (2.45: its top size paid 1.0" in text and "b (" not in text
    assert "account for it" in measuring.slope_budget([4, 2**20, 2**23], {"b": steep["b"]}, {}, sweep)
    assert "not established" in measuring.slope_budget([4, 2**20, 2**23], {"a": steep["a"]}, {}, sweep)


def test_slope_why_names_the_points_and_the_threads() -> None:
    sizes = [4, 2**10, 2**20, 2**23]
    slow = [_m(2e-6), _m(3e-6), _m(7.5e-3), _m(16e-3)]
    found = {"torch eager": measuring.bend(sizes, slow, "torch eager")}
    text = measuring.slope_why(sizes, {"torch eager": slow}, found, ["torch eager"],
                               retime={"torch eager": 0.5e-3})
    assert "8x the elements took only 2.1x the time" in text and "threads waiting" in text
    assert "do not explain" in measuring.slope_why(sizes, {"torch eager": slow}, found, ["torch eager"],
                                                    retime={"torch eager": 7e-3})
    outside = {"x": measuring.Bend("x", 1e-6, 1e-15, 1e9, 1.0)}
    assert "outside the sweep" in measuring.slope_why(sizes, {"x": slow}, outside, ["x"])


def _costs(copy: float, tanh: float, fused: float, poly: float) -> dict[str, timing.Measurement]:
    return {"copy": _m(copy), "tanh": _m(tanh), measuring.limits.FUSED: _m(fused), measuring.limits.POLY: _m(poly)}


def test_chain_limits_text_follows_the_run() -> None:
    bound = measuring.chain_limits_text(_costs(1e-4, 2e-3, 3e-3, 1.1e-4), _m(3.01e-3))
    assert "**not** memory-bound" in bound and "27.3x" in bound and "within the noise" in bound
    assert "Inductor's tanh" in bound and "hands back" in bound
    roof = measuring.chain_limits_text(_costs(1e-4, 2e-4, 1.1e-4, 1e-4), _m(3e-4))
    assert "only 1.10x" in roof and "on the memory roof" in roof and "page faults" in roof
    pages = measuring.chain_limits_text(_costs(1e-4, 2e-4, 1.1e-4, 1e-4), _m(3e-4), 1.0)
    assert "(1.0 outputs' worth of page faults per call): page faults" in pages
    cheap = measuring.chain_limits_text(_costs(1e-4, 2e-3, 3e-3, 1.1e-4), _m(3.01e-3), 1.0)
    assert "small share" in cheap and "hands back" not in cheap
    moment = measuring.chain_limits_text(_costs(1e-4, 2e-4, 1.1e-4, 1e-4), _m(3e-4), 0.0)
    assert "with only 0.0 outputs' worth of page faults per call, so not the pages" in moment
    assert "not established" in moment
    faster = measuring.chain_limits_text(_costs(1e-4, 2e-3, 3e-3, 1.1e-4), _m(2.2e-3), 0.3)
    assert "**faster**" in faster and "not established" in faster
    dearer = measuring.chain_limits_text(_costs(1e-4, 2e-3, 3e-3, 1.1e-4), _m(3.6e-3), 1.0)
    assert "1.20x the reused buffer's time (quartile ranges apart)" in dearer
    odd = measuring.chain_limits_text(_costs(3e-4, 1.5e-4, 3e-3, 1e-3), _m(3e-3))
    assert "Eager tanh ran well under" in odd and "cannot beat" in odd
    slow_copy = measuring.chain_limits_text(_costs(1.5e-3, 2e-3, 16e-3, 2.4e-4), _m(21e-3))
    assert "The polynomial ran well under" in slow_copy


def test_cache_roof_text_uses_the_level_that_holds_the_working_set() -> None:
    sweep = measuring.HierarchySweep((2**23, 2**26), (120e9, 25e9), {"L3": 32 * 2**20})
    text = measuring.cache_roof_text(8 * 2**20, 1e-3, sweep, 22e9)
    assert "fits in L3" in text and " 7% of" in text and "38%" in text
    assert "which is its roof here" in measuring.cache_roof_text(2**26, 1e-2, sweep, 22e9)


def _gap(**kw: object) -> measuring.EagerGap:
    base = dict(fast="tensorflow", chain={"torch": _m(80e-3), "tensorflow": _m(6e-3)},
                tanh={"torch": _m(10e-3), "tensorflow": _m(1e-3)}, faults={"torch": 0.0, "tensorflow": 0.0},
                one_thread=_m(80e-3), threads=2, torch_library="Intel MKL 2024.2")
    return measuring.EagerGap(**{**base, **kw})


def test_eager_gap_prints_its_time_budget() -> None:
    text = _gap().text()
    assert "Time budget of the 74 ms gap" in text and "tanh" in text and "12%" in text
    assert "left unexplained 65 ms (88%)" in text and "not established" in text
    assert "one thread the chain ran" not in text and "MKL" not in text
    threads = _gap(tanh={"torch": _m(1e-3), "tensorflow": _m(1e-3)}, one_thread=_m(10e-3)).text()
    assert "8.0x faster" in threads and "not added" in threads
    faults = _gap(faults={"torch": 9.0, "tensorflow": 0.0}, fresh=_m(89e-3), fresh_faults=12.0).text()
    assert "one output's worth of faults costs it 3 ms" in faults and "page faults (9.0 outputs' worth" in faults
    assert "27 ms (36%)" in faults
    assert "whose cost this run did not measure" in _gap(faults={"torch": 9.0, "tensorflow": 0.0}).text()
    faster = _gap(chain={"torch": _m(4.7e-3), "tensorflow": _m(6.7e-3)}, one_thread=_m(26e-3)).text()
    assert "faster of the two" in faster and "5.5x its time" in faster
    assert "Within 1.5x" in _gap(chain={"torch": _m(7e-3), "tensorflow": _m(6e-3)}).text()
    assert "accounted for" in _gap(chain={"torch": _m(15e-3), "tensorflow": _m(6e-3)}).text()


def test_host_copy_of_a_cpu_tensor_is_a_view() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("on a GPU the host copy really copies")
    (measured, synced, copied), = measuring.host_copy_runs(["torch"], 8, min_time=0.02).values()
    assert not copied and measured.median > 0 and synced.median > 0
    text = measuring.host_copy_text({"torch": (measured, synced, copied)}, 256)
    assert "copied nothing" in text and "the noise" in text


def test_host_copy_text_says_what_the_difference_is() -> None:
    copied = measuring.host_copy_text({"jax": (_m(7e-3), _m(5e-3), True)}, 2**20)
    assert "copied the 1 MiB result, which is the difference" in copied and "beyond the noise" in copied
    assert "not established" in measuring.host_copy_text({"torch": (_m(7e-3), _m(5e-3), False)}, 2**20)
    same = measuring.host_copy_text({"torch": (_m(5.01e-3), _m(5e-3), False)}, 2**20)
    assert "within the noise" in same and "not established" not in same


def test_matmuls_text_computes_the_clock_a_matmul_needs() -> None:
    peak = measuring.PeakEstimate(2, "given", 8, "AVX2", 2, True, 2.45, "cpuinfo")
    over = measuring.matmuls_text({"torch 768": 173e9, "jax probe": 143e9}, peak)
    assert "110%" in over and "at least 2.70 GHz" in over and "2.45 GHz" in over and "torch 768 exceeds" in over
    assert "cannot see" in measuring.matmuls_text({"jax probe": 143e9}, peak)
    assert "AVX2" in peak.table().note and "AVX-512" not in peak.table().note


def test_fresh_pages_fault_and_a_warm_allocator_reuses() -> None:
    """In a fresh process, as the module describes: the allocator's state is per process, and the tests before
    this one leave theirs in any state."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    if measuring.on_fresh_pages(abs) is None:
        pytest.skip("no glibc malloc_trim here")
    code = """
import torch
from course_utils import measuring
measuring.warm_allocator()
x = torch.ones(2**20)
def chain(a):
    return (a * 2 + 1) * 3
print(measuring.outputs_worth(measuring.on_fresh_pages(chain), x, output_bytes=4 * 2**20) >= 0.5,
      measuring.outputs_worth(chain, x, output_bytes=4 * 2**20) < 0.5)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True"], out.stdout + out.stderr[-2000:]
