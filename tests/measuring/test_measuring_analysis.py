"""course_utils.measuring: the memory-hierarchy reading, the bend of a sweep, Amdahl, and named speed-ups."""

from __future__ import annotations

import pytest

from course_utils import measuring, roofline, timing

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


def _retimed(t1: tuple[float, float], t2: tuple[float, float]) -> dict[tuple[int, int], timing.Measurement]:
    """Re-timed points: (one thread, two threads) at 2**20 and at 2**23 elements."""
    return {(2**20, 1): _m(t1[0]), (2**20, 2): _m(t1[1]), (2**23, 1): _m(t2[0]), (2**23, 2): _m(t2[1])}


def test_slope_why_names_the_points_and_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measuring.regimes.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    sizes = [4, 2**10, 2**20, 2**23]
    slow = [_m(2e-6), _m(3e-6), _m(7.5e-3), _m(16e-3)]
    found = {"torch eager": measuring.bend(sizes, slow, "torch eager")}

    def why(retimed: dict[tuple[int, int], timing.Measurement]) -> str:
        return measuring.slope_why(sizes, {"torch eager": slow}, found, ["torch eager"],
                                   retime={"torch eager": retimed})

    slowed = why(_retimed((0.1e-3, 0.1e-3), (1.6e-3, 1.6e-3)))
    assert "8x the elements took only 2.1x the time" in slowed and "on one thread and on 2" in slowed
    assert "1,048,576-element point took 75.0x" in slowed and "slowed while the sweep ran" in slowed
    assert "within the noise of each other at both sizes: the threads do not explain it" in slowed
    assert "re-timed, the top slope is 1.33 on 2 threads: at least 0.7" in slowed
    assert "75.0x the re-timed call" in slowed
    assert "busy" not in slowed and "load average" not in slowed
    handoff = why(_retimed((5e-3, 7.5e-3), (10e-3, 16e-3)))
    assert "one thread was faster than 2 at both sizes" in handoff and "still under 0.7 (and 0.33" in handoff
    threads = why(_retimed((0.1e-3, 8e-3), (14e-3, 19e-3)))
    assert "0.42 on 2 threads: still under 0.7, and 2.38 on one thread" in threads and "80.0x" in threads
    assert "within the noise of (or faster than)" in handoff
    assert "pay off" in why(_retimed((9e-3, 7.5e-3), (20e-3, 16e-3)))
    assert "differs between the sizes" in why(_retimed((5e-3, 7.5e-3), (20e-3, 16e-3)))
    single = {(2**20, 1): _m(7.5e-3), (2**23, 1): _m(16e-3)}
    assert "torch runs one thread here" in why(single)
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
    assert "fits in L3" in text and " 7% of" in text and "38%" in text and "measured once at the start" in text
    assert "where the memory roof applies" in measuring.cache_roof_text(2**26, 1e-2, sweep, 22e9)
    fast_copy = measuring.cache_roof_text(8 * 2**20, 1e-3, sweep, 22e9, copy=_m(8 * 2**20 / 190e9))
    assert "1.58x the sweep's rate there" in fast_copy and "both are L3 rates" in fast_copy
    assert "not established" in fast_copy
    assert "close to it" in measuring.cache_roof_text(8 * 2**20, 1e-3, sweep, 22e9, copy=_m(8 * 2**20 / 120e9))


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
    over = _gap(chain={"torch": _m(4.45e-3), "tensorflow": _m(2.8e-3)}, tanh={"torch": _m(1.46e-3), "tensorflow":
                _m(0.26e-3)}, faults={"torch": 1.7, "tensorflow": 0.0}, fresh=_m(11.9e-3), fresh_faults=7.0).text()
    assert "more than the gap, so the parts do not account for it" in over and "accounted for" not in over.replace(
        "do not account for it", "")
    assert "the largest, page faults (145% of the gap: more than the whole gap on its own)" in over
    assert "malloc_trim" in over and "not established" in over and "count again" in over
    recount = _gap(faults={"torch": 1.7, "tensorflow": 0.0}, earlier_faults={"torch": 1.3, "tensorflow": 0.0})
    assert "the table above counted 1.3 and 0.0 on other calls" in recount.text()
    assert "table above" not in _gap(earlier_faults={"torch": 0.05, "tensorflow": 0.0}).text()


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
    assert "the 2 FMA units per core the formula assumes" in over
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


def _retime(probe: float, points: tuple[float, float], earlier: float) -> measuring.DramRetime:
    """A re-timed copy probe (256 MiB) and two main-memory points, each given as bytes/s."""
    sizes = (2**26, 2**28)
    return measuring.DramRetime(2**28, _m(2**28 / probe), tuple((s, _m(s / r)) for s, r in zip(sizes, points)),
                                earlier)


def test_roof_verdict_judges_the_roof_drawn() -> None:
    sweep = measuring.HierarchySweep((2**23, 2**26, 2**28), (100e9, 45e9, 37e9), {"L3": 32 * 2**20})
    moment = measuring.roof_verdict(sweep, _retime(59.6e9, (64.4e9, 66.2e9), 34e9), ("torch triad", 37.1e9), 2**28)
    assert not moment.held and "roof drawn (torch triad, measured once at the start) 37.1 GB/s" in str(moment)
    assert "0.57x" in str(moment) and "0.57x that rate" in str(moment) and "slower moment" in str(moment)
    held = measuring.roof_verdict(sweep, _retime(59.6e9, (64.4e9, 66.2e9), 60e9), ("torch triad", 62e9), 2**28)
    assert held.held
    pattern = measuring.roof_verdict(sweep, _retime(64e9, (64.4e9, 66.2e9), 63e9), ("torch triad", 37e9), 2**28)
    assert "neither the working set nor the moment" in str(pattern)
    cached = measuring.roof_verdict(sweep, _retime(100e9, (64.4e9, 66.2e9), 100e9), ("torch copy", 100e9), 2**25)
    assert "served from cache" in str(cached)
    lone = measuring.HierarchySweep((2**23, 2**26), (100e9, 45e9), {"L3": 32 * 2**20})
    assert "cannot tell" in str(measuring.roof_verdict(lone, None, ("torch triad", 37e9), 2**28))
    gpu = measuring.roof_verdict(sweep, None, None, 2**28)
    assert gpu.held and "the sweep's copy at 256 MiB" in str(gpu)
    assert "overstates" in measuring.drawn_roof_text(("torch triad", 37.1e9), 65.3e9)
    assert "main memory's speed" in measuring.drawn_roof_text(("torch triad", 60e9), 65.3e9)
    assert measuring.drawn_roof_text(("torch triad", 60e9), None) == ""


def test_matmul_point_is_judged_like_for_like() -> None:
    machines = {"torch": roofline.Machine("torch", "cpu", {"triad": 3e10}, {"mm": 184e9}),
                "jax": roofline.Machine("jax", "cpu", {"triad": 3e10}, {"mm": 427e9})}
    libs = {"torch": "Intel MKL", "jax": "YNNPACK"}
    text = measuring.matmul_point_text(768, 175e9, machines, libs, 332e9)
    assert "95% of torch's own n = " in text and "Intel MKL" in text and "close" in text
    assert "2.32x torch's: that gap is the libraries" in text and "YNNPACK" in text and "41%" in text
    assert "53%" in text
    slow = measuring.matmul_point_text(768, 60e9, machines, libs)
    assert "3.07x slower than its probe" in slow and "candidate" in slow and "computed peak" not in slow
    assert "beat the larger probe" in measuring.matmul_point_text(768, 200e9, machines, libs)
    slowed = measuring.matmul_point_text(768, 33e9, machines, libs, again=_m(2 * 768**3 / 180e9))
    assert "timed again" in slowed and "98% of the probe" in slowed and "candidate" not in slowed
    assert "candidate" in measuring.matmul_point_text(768, 33e9, machines, libs, again=_m(2 * 768**3 / 40e9))
    alone = measuring.matmul_point_text(768, 175e9, {"torch": machines["torch"]}, libs)
    assert "itself the compute roof" in alone


def test_fresh_output_note_follows_the_numbers() -> None:
    slow = roofline.Machine("torch", "cpu", {"triad": 37.1e9}, {"mm": 1e11}, {"triad, fresh output": 1.51e9})
    assert "24.6x the in-place triad's time" in measuring.fresh_output_note(slow)
    same = roofline.Machine("tf", "cpu", {"scale": 34.2e9}, {"mm": 1e11}, {"triad, fresh output": 34.3e9})
    assert "no fresh-output cost shows" in measuring.fresh_output_note(same)
    assert measuring.fresh_output_note(roofline.Machine("x", "cpu", {"t": 1e9}, {"m": 1e9})) == "not measured"


def test_first_call_text_reports_dynamo_timers() -> None:
    before = {"_compile.compile_inner": 1.0, "compile_file": 0.1}
    after = {"_compile.compile_inner": 3.0, "bytecode_tracing": 0.2, "OutputGraph.call_user_compiler": 1.5,
             "PyCodeCache.load_by_key_path": 1.2, "compile_file": 0.35}
    text = measuring.first_call_text(2.1, "warm", before, after)
    assert "2.1 s" in text and "**warm**" in text and "2 s of it in compiling" in text
    assert "C++ compiles 250 ms" in text and "even with the cache warm, 250 ms" in text
    assert "remaining 100 ms" in text
    none = measuring.first_call_text(2.1, "unknown", {}, {})
    assert "not established" in none and "could not tell" in none
    assert "even with" not in measuring.first_call_text(2.1, "cold", before, after)
