"""course_utils.graphs.story: every branch of every sentence notebook 01 tells, told from stored verdicts and
measurements; no paragraph over 120 words; a framework that is absent gets no sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from course_utils import display, intervals, timing
from course_utils.compile_report import CompileReport
from course_utils.graphs import story
from course_utils.graphs.breakeven import OverheadModel
from course_utils.graphs.cache import COLD, LOCAL, PORTABLE, CacheTimes, Run
from course_utils.graphs.dynamic import DYNAMIC, MARKED, REUSED, STATIC, Variant
from course_utils.graphs.fallback import CompileDecision
from course_utils.graphs.harness import GENERIC, OTHER, SWEEP, Harness
from course_utils.graphs.recompiles import GraphBreaks
from course_utils.graphs.traced import TracedCalls

HELD = display.Verdict(display.HELD, "numbers")
FAILED = display.Verdict(display.FAILED, "numbers", "what happened instead")
UNTESTED = display.Verdict(display.NOT_TESTED, "", "no CUDA GPU here")


def _s(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("a", "b", ratio, low, high, 6, "rounds")


FAST, SAME, SLOW = _s(2.0, 1.8, 2.2), _s(1.0, 0.9, 1.1), _s(0.5, 0.45, 0.55)


def _m(seconds: float, first_call: float | None = None) -> timing.Measurement:
    return timing.Measurement("m", (seconds * 0.95, seconds, seconds * 1.05), first_call=first_call,
                              rounds=(seconds,) * 6)


def _short(p: display.Prose) -> str:
    assert isinstance(p, display.Prose)
    assert p.longest_paragraph <= display.MAX_PARAGRAPH_WORDS, p.longest_paragraph
    return p.text


def test_rounded_keeps_only_the_digits_the_interval_supports() -> None:
    assert story.rounded(_s(161.3, 150.2, 170.9)).startswith("160x (95% interval 150x to 171x over 6 paired rounds")
    assert story.rounded(_s(1.4237, 1.21, 1.58)).startswith("1.4x (95% interval 1.21x to 1.58x")
    assert story.rounded(_s(1.0412, 1.021, 1.062)).startswith("1.04x (95% interval 1.021x")
    assert story.rounded(_s(2.0, 2.0, 2.0)) == str(_s(2.0, 2.0, 2.0))  # no width: as the interval prints it
    assert "161.3" not in story.rounded(_s(161.3, 150.2, 170.9))
    wide = story.rounded(_s(2.75, 0.0177, 430.0))  # never rounded to nothing: two significant digits at least
    assert wide.startswith("2.8x (95% interval 0.018x to 430x")


def test_same_ops_both_branches_and_tensorflow_only_when_present() -> None:
    held = _short(story.same_ops(HELD, {"torch": 11, "jax": 11, "tensorflow": 11}))
    assert "**11 compute ops**" in held and "skip 10 intermediate" in held and "Placeholder" in held
    assert "Placeholder" not in _short(story.same_ops(HELD, {"torch": 11, "jax": 11}))
    assert "The counts differ" in _short(story.same_ops(FAILED, {"torch": 11, "jax": 12}))


def test_break_even_follows_each_outcome() -> None:
    eager = {fw: _m(100e-6, first_call=1e-3) for fw in ("torch", "jax", "tensorflow")}
    compiled = {"torch": _m(50e-6, 2.0), "jax": _m(100e-6, 0.2), "tensorflow": _m(200e-6, 0.3)}
    text = _short(story.break_even(2**16, eager, compiled, {"torch": FAST, "jax": SAME, "tensorflow": SLOW}))
    assert "pays off after **" in text and "within the noise of eager, so this run gives no break-even" in text
    assert "never pays off" in text and "65,536 elements" in text
    # faster over the rounds while the median is not below eager's: no break-even claimed
    odd = _short(story.break_even(16, {"jax": _m(100e-6, 1e-3)}, {"jax": _m(120e-6, 0.2)}, {"jax": FAST}))
    assert "break-even is not established" in odd
    jax = _short(story.break_even(16, {"jax": _m(100e-6, 1e-3)}, {"jax": _m(50e-6, 0.2)}, {"jax": FAST}))
    assert "compiles each primitive" in jax


def _cache(portable_built: int) -> CacheTimes:
    return CacheTimes({COLD: Run(12.0, 0, 1, 0, 16), PORTABLE: Run(11.0 if portable_built else 2.0, 1, 0, 0,
                                                                    portable_built, load_seconds=0.3),
                       LOCAL: Run(1.5, 1, 0, 16, 16)}, 268_102)


def test_compile_cache_says_what_a_warm_hit_still_runs_and_what_the_artifacts_lack() -> None:
    failed = _short(story.compile_cache(FAILED, _cache(16)))
    assert "Dynamo tracing the bytecode" in failed and "still built 16 compiled libraries" in failed
    assert "92%" in failed and "12% of the cold" in failed and "One process each" in failed
    held = _short(story.compile_cache(HELD, _cache(0)))
    assert "built no library" in held and "17%" in held and "One process each" not in held


def test_regional_tells_each_outcome_of_the_step() -> None:
    compile_s = {"whole model": 8.0, "block.compile()": 2.0, "nested_compile_region": 2.5}
    text = _short(story.regional(HELD, compile_s, {"block.compile()": SLOW, "nested_compile_region": SAME}, 4))
    assert "`block.compile()` 2 s (25%)" in text and "4 fixed costs" in text and "within the noise" in text
    other = _short(story.regional(FAILED, compile_s, {"block.compile()": FAST, "nested_compile_region": SLOW}, 4))
    assert "faster than the whole model" in other and "why is not established" in other
    assert "Not as predicted" in other


def _model(measured: float, chain_call: float = 20e-6) -> OverheadModel:
    return OverheadModel("torch", 11, 5e-6, 10e-6, measured, chain_call)


def test_overhead_sets_the_chain_beside_the_figure_and_names_the_cost_further_off() -> None:
    held = _short(story.overhead(HELD, [_model(5.0)], "Measured now (10:00) and kept."))
    assert "the run's figure: Measured now" in held and "2x the figure" in held and "Within 2x" in held
    eager_off = _short(story.overhead(FAILED, [_model(30.0, 10e-6)], "Read from build/machine/."))
    assert "the eager op cost is further off" in eager_off
    compiled_off = _short(story.overhead(FAILED, [_model(1.0, 60e-6)], "Read."))
    assert "the compiled call cost is further off" in compiled_off


def test_cuda_graphs_every_status() -> None:
    assert "On a CUDA GPU" in _short(story.cuda_graphs(UNTESTED, None))
    assert "Not tested" not in _short(story.cuda_graphs(UNTESTED, None))  # the verdict said it, once
    assert "one graph launch" in _short(story.cuda_graphs(HELD, FAST))
    assert "within the noise" in _short(story.cuda_graphs(FAILED, SAME))


COUNTS = {"torch": {"dynamic=False": 6, "default (automatic dynamic)": 2, "mark_dynamic(x, 0)": 1},
          "jax": {"jax.jit": 6, "padded to multiples of 256": 3},
          "tensorflow": {"tf.function": 6, "reduce_retracing=True": 2, "input_signature [None]": 1}}


def test_recompiles_speaks_only_for_frameworks_present() -> None:
    text = _short(story.recompiles(HELD, COUNTS, 1))
    assert "PyTorch compiled 6 times" in text and "JAX traced 6" in text and "logged 1 retracing" in text
    torch_only = _short(story.recompiles(FAILED, {"torch": COUNTS["torch"]}, 0))
    assert "TensorFlow" not in torch_only and "JAX" not in torch_only and "Not as predicted" in torch_only


def test_control_flow_names_the_frameworks_present() -> None:
    breaks = GraphBreaks(2, 1, ("generic_jump TensorVariable()",))
    text = _short(story.control_flow(HELD, breaks, 0.0, ["torch", "jax", "tensorflow"]))
    assert "2 graph(s) with 1 break(s)" in text and "JAX refuses" in text and "AutoGraph" in text
    alone = _short(story.control_flow(FAILED, GraphBreaks(1, 0, ()), 0.0, ["torch"]))
    assert "JAX" not in alone and "none given" in alone and "Not as predicted" in alone


def _decision(compiled: bool, reason: str = "r") -> CompileDecision:
    return CompileDecision(abs, "jax", compiled, reason)


def test_fallbacks_running_sum_caught_kept_or_absent() -> None:
    base = {("torch", "gelu chain"): _decision(True), ("torch", "clip"): _decision(False)}
    caught = _short(story.fallbacks(HELD, {**base, ("jax", "running sum in a Python list"): _decision(
        False, "disagrees with eager: max abs diff 1")}))
    assert "1 of 3 functions were kept" in caught and "Only the comparison with eager catches it" in caught
    kept = _short(story.fallbacks(FAILED, {**base, ("jax", "running sum in a Python list"): _decision(True)}))
    assert "was kept" in kept and "Not as predicted" in kept
    assert "Without JAX" in _short(story.fallbacks(HELD, base))


def test_training_step_and_the_jax_baseline() -> None:
    times = {"torch": (_m(2e-3), _m(1e-3)), "jax": (_m(9e-3), _m(1e-3))}
    held = _short(story.training_step(HELD, times, {"torch": FAST, "jax": FAST}, 256))
    assert "op-by-op dispatch" in held and "Every compiled step beat" in held and "batch of 256" in held
    failed = _short(story.training_step(FAILED, {"torch": times["torch"]}, {"torch": SLOW}, 256))
    assert "slower" in failed and "Going further" in failed and "op-by-op" not in failed


@pytest.mark.parametrize(("v", "s", "said"), [(HELD, _s(2.0, 1.6, 2.4), "saved at least 30%"),
                                              (FAILED, _s(1.3, 1.1, 1.5), "does not lie above the 1.43x"),
                                              (FAILED, SLOW, "slower than eager"),
                                              (FAILED, SAME, "within the noise of eager")])
def test_seed_claim_every_branch(v: display.Verdict, s: intervals.Speedup, said: str) -> None:
    assert said in _short(story.seed_claim(v, s))


def test_dynamic_and_the_reused_function() -> None:
    found = {k: Variant(k, _m(1e-5), g) for k, g in ((STATIC, 1), (DYNAMIC, 1), (MARKED, 1), (REUSED, 1))}
    held = _short(story.dynamic(HELD, found, {DYNAMIC: SLOW, MARKED: SLOW, REUSED: SLOW}, 65536))
    assert "use them where shapes really vary" in held and "first called at 65,536" in held
    failed = _short(story.dynamic(FAILED, {k: found[k] for k in (STATIC, DYNAMIC, MARKED)},
                                  {DYNAMIC: SAME, MARKED: SLOW}, 65536))
    assert "less than the run's spread" in failed and "first called" not in failed


def test_op_count_bound_both_branches() -> None:
    assert "held in this run" in _short(story.op_count_bound(HELD, [_model(5.0)]))
    assert "caps the small-size speed-up" in _short(story.op_count_bound(FAILED, [_model(20.0)]))


def test_traced_both_branches() -> None:
    class _Trace:  # only what TracedCalls reads
        def __init__(self, n: int) -> None:
            self.n = n

        def count(self, pattern: str) -> int:
            return self.n

    eleven = TracedCalls("torch", 1, _Trace(11), _Trace(11))
    assert "counted exactly" not in _short(story.traced(HELD, [eleven], [_model(5.0)]))
    assert "charged the dispatches" in _short(story.traced(HELD, [eleven], [_model(5.0)]))
    assert "fed with them, the model computes torch" in _short(story.traced(FAILED, [eleven], [_model(5.0)]))


def _harnesses(sweep_c: float, generic_c: float, other_c: float) -> dict[str, Harness]:
    return {SWEEP: Harness(SWEEP, _m(4e-3), _m(sweep_c), 0.0, 0.0),
            GENERIC: Harness(GENERIC, _m(4e-3), _m(generic_c), 0.0, 0.0),
            OTHER: Harness(OTHER, _m(4e-3), _m(other_c), 0.0, 0.0)}


def test_harnesses_name_the_largest_factor_or_none() -> None:
    found = _harnesses(2e-3, 4e-3, 2e-3)
    factors = {"a `bias` array": SAME, "a shape-generic graph": SLOW, "eager": SAME}
    assert "Within 1.5x" in _short(story.harnesses(HELD, found, factors, 2**20))
    assert "The largest factor beyond the noise: a shape-generic graph" in _short(
        story.harnesses(FAILED, found, factors, 2**20))
    assert "None of the factors" in _short(story.harnesses(FAILED, found, {"x": SAME}, 2**20))


def test_prints_only_for_frameworks_present() -> None:
    every = _short(story.prints(HELD, 1, ["torch", "jax", "tensorflow"]))
    assert "jax.debug.print" in every and "tf.print" in every and "1 graph break(s)" in every
    alone = _short(story.prints(FAILED, 1, ["torch"]))
    assert "tf.print" not in alone and "jax.debug" not in alone and "Not as predicted" in alone


def test_tlparse_with_and_without_a_report() -> None:
    assert "TORCH_TRACE=/tmp/trace" in _short(story.tlparse(UNTESTED, None))
    report = CompileReport(Path("build/tlparse/x/report"), 2, 3, 1, 1, ("size",), ("print",))
    assert "index.html" in _short(story.tlparse(HELD, report))


def test_every_story_refuses_a_verdict_that_is_not_one() -> None:
    with pytest.raises(TypeError, match="v"):
        story.same_ops("held", {"torch": 11})
    with pytest.raises(TypeError, match="v"):
        story.cuda_graphs(True, None)
