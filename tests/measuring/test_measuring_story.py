"""course_utils.measuring.story (and story_further): every branch of every sentence notebook 00 tells, on
numbers built for the branch; no paragraph over 120 words."""

from __future__ import annotations

import pytest

from course_utils import display, intervals, machine, probes, roofline, timing
from course_utils.measuring import (
    Bend,
    ChainRuns,
    DramRetime,
    EagerGap,
    HierarchySweep,
    KernelLibrary,
    PeakEstimate,
    story,
)

MAX = display.MAX_PARAGRAPH_WORDS


def _short(p: display.Prose) -> str:
    assert isinstance(p, display.Prose)
    assert p.longest_paragraph <= MAX, p.text
    return p.text


def _m(seconds: float, label: str = "m", rounds: tuple[float, ...] | None = None) -> timing.Measurement:
    rounds = rounds or (seconds * 0.99, seconds, seconds * 1.01, seconds)
    return timing.Measurement(label, (seconds * 0.99, seconds, seconds * 1.01), rounds=rounds, first_call=200 * seconds)


_PATTERN = (0.5, 2.0, 0.7, 1.6)


def _noisy(seconds: float, shift: int = 0) -> timing.Measurement:
    """Per-round medians that wander, each series its own way (``shift`` rotates the pattern)."""
    pattern = _PATTERN[shift % 4:] + _PATTERN[:shift % 4]
    return _m(seconds, rounds=tuple(seconds * p for p in pattern))


def _s(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("a", "b", ratio, low, high, 6, "rounds")


HELD, FAILED = display.Verdict("held", "numbers"), display.Verdict("failed", "numbers", "not as predicted: jax")
NOT_TESTED = display.Verdict("not tested", "", "no device here")


def _figures(device: str = "cpu", roofs: dict | None = None) -> machine.MachineFigures:
    roofs = roofs or {"torch": roofline.Machine("torch", device, {"triad": 4e10, "copy": 3.5e10}, {"matmul": 2e11}),
                      "jax": roofline.Machine("jax", device, {"triad": 3.8e10}, {"matmul": 4.4e11})}
    return machine.MachineFigures("k", roofs, 3e-10, {"torch": 1.2e-5, "jax": 4e-6}, "2026-12-05T08:33:00",
                                  "measured")


def _runs(eager: dict[str, float], compiled: dict[str, float], poly: dict[str, float] | None = None,
          noisy: bool = False) -> ChainRuns:
    def make(t: float, i: int) -> timing.Measurement:
        return _noisy(t, i) if noisy else _m(t)

    found = {"eager": {fw: make(t, i) for i, (fw, t) in enumerate(eager.items())},
             "compiled": {fw: make(t, i + 1) for i, (fw, t) in enumerate(compiled.items())}}
    if poly is not None:
        found["eager, no tanh"] = {fw: make(0.9 * t, i + 2) for i, (fw, t) in enumerate(eager.items())}
        found["compiled, no tanh"] = {fw: make(t, i + 3) for i, (fw, t) in enumerate(poly.items())}
    return ChainRuns(found)


TRAP = {"torch": (_m(2e-3), _m(2.0001e-3)), "jax": (_m(7e-5), _m(2e-3))}
WAITS = {"torch": _s(1.0, 1.0, 1.0), "jax": _s(28.6, 25.0, 31.0)}


def test_dispatch_every_branch() -> None:
    held = _short(story.dispatch(HELD, TRAP, WAITS, ["jax"]))
    assert "jax's call returned after 70 µs" in held and "(torch), the two readings agree" in held
    assert "block_until_ready" in held
    assert "(torch)" not in _short(story.dispatch(HELD, {"jax": TRAP["jax"]}, WAITS, ["jax"]))
    failed = _short(story.dispatch(FAILED, TRAP, WAITS, ["jax"]))
    assert "did not follow" in failed and "(not as predicted: jax)" in failed
    alone = _short(story.dispatch(NOT_TESTED, {"torch": TRAP["torch"]}, WAITS, []))
    assert "not tested here: no device here" in alone and "torch 1x" in alone and "the trap shows" in alone


def test_first_call_every_branch() -> None:
    runs = _runs({"torch": 3e-3, "jax": 2e-3}, {"torch": 1e-3, "jax": 3e-4})
    held = _short(story.first_call(HELD, runs, "warm"))
    assert "200x a steady call" in held and "was warm" in held and "Afterwards every compiled chain" in held
    assert "was cold" in _short(story.first_call(HELD, runs, "cold"))
    assert "could not tell" in _short(story.first_call(HELD, runs, "unknown"))
    failed = _short(story.first_call(FAILED, runs, "warm"))
    assert "Not every part held (not as predicted: jax)" in failed and "faster" in failed
    assert "not tested here" in _short(story.first_call(NOT_TESTED, runs, "warm"))
    jax_only = _short(story.first_call(HELD, _runs({"jax": 2e-3}, {"jax": 3e-4}), "unknown"))
    assert "torch.compile's cache" not in jax_only
    with pytest.raises(ValueError, match="cache"):
        story.first_call(HELD, runs, "hot")


def test_eager_rows_every_branch() -> None:
    assert "Only one framework" in _short(story.eager_rows(_runs({"torch": 2e-3}, {"torch": 1e-3})))
    differ = _short(story.eager_rows(_runs({"torch": 4e-3, "tensorflow": 2e-3}, {"torch": 1e-3, "tensorflow": 1e-3})))
    assert "The eager rows differ" in differ and "torch eager's slower baseline inflates its own ratio" in differ
    agree = _short(story.eager_rows(_runs({"torch": 2.1e-3, "tensorflow": 2e-3},
                                          {"torch": 1e-3, "tensorflow": 1e-3}, noisy=True)))
    assert "agree within the noise" in agree and "inflates" not in agree
    flipped = {"eager": {"torch": _m(2.2e-3, rounds=(1e-3,) * 4), "jax": _m(2e-3, rounds=(2e-3,) * 4)},
               "compiled": {"torch": _m(1e-3), "jax": _m(1e-3)}}
    assert "disagree" in _short(story.eager_rows(ChainRuns(flipped)))


def test_tanh_share_every_branch() -> None:
    paced = _short(story.tanh_share(_runs({"torch": 3e-3, "jax": 3e-3}, {"torch": 1e-3, "jax": 3e-4},
                                          {"torch": 2e-4, "jax": 2e-4})))
    assert "tens of vector instructions per vector" in paced and "per element" not in paced
    assert "with tanh" in paced and "without it" in paced and "compares compilation alone" in paced
    hidden = _short(story.tanh_share(_runs({"torch": 3e-3}, {"torch": 1e-3}, {"torch": 1e-3}, noisy=True)))
    assert "cannot tell the two apart" in hidden
    with pytest.raises(ValueError, match="without tanh"):
        story.tanh_share(_runs({"torch": 3e-3}, {"torch": 1e-3}))


def test_machine_figures_every_branch() -> None:
    figures = _figures()
    plain = _short(story.machine_figures(figures, probes.ProbeSize(2**27, 2**25, 2**27)))
    assert "jax matmul's FLOP/s" in plain and "ridge point lies at 11.0 FLOP/byte" in plain
    assert "stream from main memory" in plain and "4x the 32 MiB" in plain
    capped = _short(story.machine_figures(figures, probes.ProbeSize(2**28, 480 * 2**20, 1920 * 2**20, "ci size")))
    assert "capped by the ci size" in capped and "may be the cache's speed" in capped and "0.53x" in capped
    assert "the free memory" in _short(story.machine_figures(figures, probes.ProbeSize(2**28, 2**29, 2**31, "memory")))
    gpu = _short(story.machine_figures(_figures("cuda:0"), probes.ProbeSize(2**30, 2**25, 2**30)))
    assert "ran on the cuda:0" in gpu


BENDS = {"torch eager": Bend("torch eager", 2e-6, 3e4, 1.8, 8388608), "torch.compile": Bend("torch.compile", 1e-5,
                                                                                            2e5, 1.0)}


def test_regimes_every_branch() -> None:
    held = _short(story.regimes(HELD, BENDS, _figures(), [4, 8388608]))
    assert "bent inside the sweep, at torch eager 30,000 elements" in held and "fresh memory" in held
    assert "begin at 8,388,608 elements for torch eager:" in held
    assert "dashed lines" in held
    no_faults = {"torch eager": Bend("torch eager", 2e-6, 3e4, 1.0)}
    assert "fresh memory" not in _short(story.regimes(HELD, no_faults, _figures(), [4, 2**20]))
    failed = _short(story.regimes(FAILED, {**BENDS, "jax.jit": Bend("jax.jit", 4e-6, None, 0.3)}, _figures(), [4, 8]))
    assert "Not every variant" in failed and "(not as predicted: jax)" in failed
    assert "not tested here" in _short(story.regimes(NOT_TESTED, BENDS, _figures(), [4, 8]))


def test_roofline_points_every_branch() -> None:
    figures = _figures()
    points = [roofline.Point("tiny", 4, 32, 2e-6), roofline.Point("cached chain", 1e7, 8e6, 1e-4),
              roofline.Point("mm", 2 * 768**3, 3 * 4 * 768**2, 1e-3)]
    held = _short(story.roofline_points(HELD, points, figures, _s(1.1, 1.05, 1.15), 1.6e11, cache_bytes=2**25))
    assert "80% of torch's own probe" in held and "36% of the compute roof drawn" in held
    assert "overhead dominates" in held and "Above the memory roof: cached chain: their bytes" in held
    assert "larger than the cache" not in held
    big = _short(story.roofline_points(HELD, points, figures, _s(1.1, 1.05, 1.15), 1.6e11, cache_bytes=2**20))
    assert "larger than the cache: cached chain" in big
    assert "Above the compute roof: mm" in held
    failed = _short(story.roofline_points(FAILED, points[:1], figures, _s(2.0, 1.9, 2.1), 1e11))
    assert "The prediction failed: not as predicted: jax" in failed and "Above" not in failed
    assert "not tested here" in _short(story.roofline_points(NOT_TESTED, points[:1], figures, _s(1, 1, 1), 1e11))
    no_torch = _figures(roofs={"jax": roofline.Machine("jax", "cpu", {"triad": 4e10}, {"mm": 4e11})})
    assert "25% of torch's own probe" in _short(story.roofline_points(HELD, [], no_torch, _s(1, 1, 1), 1e11))


def test_money_every_branch() -> None:
    both = _short(story.money(_runs({"torch": 2e-3}, {"torch": 4e-4}, {"torch": 9e-4}), run_hours=72,
                              monthly_bill=100_000, saving=0.3))
    assert "a 1.43x step" in both and "the 3-day run would take 14.4 hours" in both and "without tanh" in both
    assert "% of the eager step without tanh" in both
    weak = _short(story.money(_runs({"torch": 2e-3}, {"torch": 1.6e-3}, {"torch": 3e-3}), run_hours=72,
                              monthly_bill=100_000, saving=0.3))
    assert "no share with tanh" in weak and "nothing would shrink" in weak
    alone = _short(story.money(_runs({"torch": 2e-3}, {"torch": 1e-3}), run_hours=72, monthly_bill=1e5, saving=0.3))
    assert "without tanh" not in alone


def _gap(chain: tuple[float, float], tanh: tuple[float, float], faults: tuple[float, float],
         threads: dict[int, timing.Measurement] | None = None, noisy: bool = False) -> EagerGap:
    slow, fast = (_noisy(chain[0]), _noisy(chain[1], 1)) if noisy else (_m(chain[0]), _m(chain[1]))
    return EagerGap("torch", "tensorflow", {"torch": slow, "tensorflow": fast},
                    {"torch": _m(tanh[0]), "tensorflow": _m(tanh[1])},
                    {"torch": faults[0], "tensorflow": faults[1]}, 1e-3, threads)


def test_eager_gap_every_branch() -> None:
    assert "Only one framework" in _short(story.eager_gap(None))
    none = _short(story.eager_gap(_gap((2.1e-3, 2e-3), (1e-3, 2e-4), (0, 0), noisy=True)))
    assert "within the noise" in none and "no gap to explain" in none and "budget" not in none
    left = _short(story.eager_gap(_gap((5e-3, 2e-3), (1e-3, 2e-4), (0.0, 0.0))))
    assert "tanh 800 µs (27%)" in left and "left unexplained" in left
    whole = _short(story.eager_gap(_gap((5e-3, 2e-3), (2e-3, 2e-4), (1.2, 0.0))))
    assert "account for the gap" in whole and "page faults 1.2 ms" in whole
    over = _short(story.eager_gap(_gap((3e-3, 2e-3), (2e-3, 2e-4), (1.0, 0.0))))
    assert "more than the gap" in over
    one_faster = {1: _m(2e-3), 2: _m(5e-3)}
    assert "costs more than it gives" in _short(story.eager_gap(_gap((5e-3, 2e-3), (1e-3, 2e-4), (0, 0), one_faster)))
    many_faster = {1: _m(8e-3), 2: _m(5e-3)}
    assert "pay off" in _short(story.eager_gap(_gap((5e-3, 2e-3), (1e-3, 2e-4), (0, 0), many_faster)))
    same = {1: _noisy(5e-3), 2: _noisy(5e-3, 1)}
    assert "no difference" in _short(story.eager_gap(_gap((5e-3, 2e-3), (1e-3, 2e-4), (0, 0), same)))


def _retime(probe: float, points: tuple[float, float], earlier: float) -> DramRetime:
    sizes = (2**27, 2**28)
    return DramRetime(2**28, _m(2**28 / probe), tuple((s, _m(s / r)) for s, r in zip(sizes, points)), earlier)


SWEEP = HierarchySweep((2**14, 2**22, 2**27, 2**28), (2.4e10, 1.6e11, 4.4e10, 3.8e10), {"L1d": 2**15, "L3": 2**25})


def test_hierarchy_every_branch() -> None:
    size = probes.ProbeSize(2**27, 2**25, 2**27)
    figures = _figures()
    held = _short(story.hierarchy(HELD, SWEEP, _retime(3.6e10, (4.4e10, 3.8e10), 4.1e10), figures, size,
                                  floor=2e-6))
    assert "main memory's speed" in held and "1.14x: a roof carries the moment" in held
    assert "measures the call more than the bytes" in held
    failed = _short(story.hierarchy(FAILED, SWEEP, _retime(3.6e10, (2e10, 2.2e10), 4.1e10), figures, size))
    assert "higher than main memory gave" in failed and "not established" in failed and "the call more" not in failed
    low = _short(story.hierarchy(FAILED, SWEEP, _retime(3.6e10, (8e10, 9e10), 4.1e10), figures, size))
    assert "lower than main memory gave" in low
    capped = probes.ProbeSize(2**28, 480 * 2**20, 1920 * 2**20, "ci size")
    big = HierarchySweep((2**14, 2**29), (2.4e10, 5e9), {"L3": 480 * 2**20})
    skipped = _short(story.hierarchy(display.Verdict("not tested", "", "only 0 working set(s) fit"), big, None,
                                     figures, capped))
    assert "Main memory was not reached: only 0 working set(s) fit" in skipped and "'L3 or DRAM'" in skipped


def test_matmuls_every_branch() -> None:
    libs = [KernelLibrary("torch", "Intel MKL 2024.2", "config"), KernelLibrary("jax", "YNNPACK", "hlo")]
    peak = PeakEstimate(2, "test", 16, "AVX-512", 2, True, 2.6, "cpuinfo")  # 333 GFLOP/s
    over = _short(story.matmuls(_figures(), peak, libs, cpu="AMD EPYC"))
    assert "Highest over lowest probe: 2.20x" in over and "its own library" in over
    assert "MKL picks its code path" in over
    assert "jax exceeds it" in over and "3.44 GHz" in over
    intel = _short(story.matmuls(_figures(), peak, libs, cpu="Intel(R) Xeon(R) Processor"))
    assert "MKL picks" not in intel
    close = {"torch": roofline.Machine("torch", "cpu", {"triad": 4e10}, {"mm": 2e11}),
             "jax": roofline.Machine("jax", "cpu", {"triad": 4e10}, {"mm": 2.2e11})}
    near = _short(story.matmuls(_figures(roofs=close), peak, libs))
    assert "end near the same limit" in near and "cannot see" in near
    alone = _short(story.matmuls(_figures(roofs={"torch": close["torch"]}), peak, libs[:1]))
    assert "Fastest over slowest" not in alone
    no_clock = PeakEstimate(2, "test", 16, "AVX-512", 2, True, None, "not reported")
    assert "does not report the clock" in _short(story.matmuls(_figures(), no_clock, libs))
