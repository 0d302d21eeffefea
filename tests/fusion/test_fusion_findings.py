"""course_utils.fusion.findings: notebook 02's predictions composed as its cells compose them (made-up intervals and
counts, no timing runs), each outcome told in sentences of at most 120 words that name the checks behind it."""

from __future__ import annotations

import pytest

from course_utils import display, findings, fusion, intervals
from course_utils.fusion import findings as f02


def gain(ratio: float, low: float, high: float, name: str = "x") -> intervals.Speedup:
    return intervals.Speedup("base", name, ratio, low, high, 4, intervals.ROUNDS)


FASTER, SLOWER, NOISE, SAME = gain(3.0, 2.5, 3.5), gain(0.5, 0.4, 0.6), gain(1.05, 0.9, 1.2), gain(1.0, 0.97, 1.03)


def told(v: findings.Finding, *more: str) -> str:
    prose = v.prose(*more)
    assert prose.longest_paragraph <= display.MAX_PARAGRAPH_WORDS, prose.text
    return prose.text


def test_the_package_exports_its_findings() -> None:
    assert fusion.findings is f02 and "findings" in fusion.__all__


@pytest.mark.parametrize(("torch_gain", "outcome", "said"), [
    (FASTER, findings.HELD, "no speed-up went beyond the 13.0x bytes ratio"),
    (gain(20.0, 16.0, 25.0), findings.ABOVE, "torch.compile over torch eager ran faster than the 13.0x bytes ratio"),
    (SLOWER, findings.BELOW, "torch.compile over torch eager ran slower fused than eager"),
    (NOISE, findings.UNDECIDED, "For torch.compile over torch eager the interval reaches across 1x")])
def test_the_chain_is_told_per_framework_against_the_bytes_ratio(torch_gain, outcome: str, said: str) -> None:
    v = f02.CHAIN.score(findings.within("torch.compile over torch eager", torch_gain, 1, 13.0),
                        findings.within("jax.jit over jax op-by-op", FASTER, 1, 13.0), ratio="13.0x")
    assert v.outcome == outcome and said in told(v)


def test_a_chain_failed_both_ways_tells_each_way() -> None:
    v = f02.CHAIN.score(findings.within("torch", gain(20.0, 16.0, 25.0), 1, 13.0),
                        findings.within("jax", SLOWER, 1, 13), ratio="13.0x")
    found = told(v)
    assert v.failed and "torch ran faster than" in found and "jax ran slower fused" in found


def test_the_buffer_pays_where_pages_faulted_and_stays_within_the_margin_elsewhere() -> None:
    def score(tf_gain: intervals.Speedup) -> findings.Finding:
        return f02.BUFFER.score(findings.faster("torch.compile, out=", FASTER),
                                findings.same("tf Variable", tf_gain, 1.1))
    assert score(SAME).held and "nothing else" in told(score(SAME))
    straddling = score(NOISE)
    assert straddling.undecided and "For tf Variable the interval reaches across its bound" in told(straddling)
    assert "tf Variable, whose fresh output took no page faults" in told(score(FASTER))
    assert "tf Variable ran slower into the buffer" in told(score(SLOWER))


def test_the_allocation_fails_above_or_below_the_probes_price_and_says_why_not_on_a_gpu() -> None:
    price = {"price": "1.28 ms (computed)", "pages": 8192}
    def score(extra: float) -> findings.Finding:
        return f02.ALLOCATION.score(findings.faster("out=", FASTER),
                                    findings.within("time added", extra, 0.64e-3, 2.56e-3, unit="s"), **price)
    v = score(2e-3)
    assert v.held and "8192 pages, 1.28 ms (computed):" in told(v) and "time added 2 ms: inside [640 µs" in str(v)
    assert score(6e-3).outcome == findings.ABOVE and "several threads at once" in told(score(6e-3))
    assert score(1e-4).outcome == findings.BELOW and "huge pages" in told(score(1e-4))
    untested = f02.ALLOCATION.not_tested("on a GPU the caching allocator hands back the same block", **price)
    assert told(untested) == "The price of a fresh output was not tested here: on a GPU the caching allocator " \
                             "hands back the same block."


def test_the_roof_tells_the_copy_and_the_cost_of_tanh_with_the_working_set() -> None:
    v = f02.ROOF.score(findings.same("torch, no tanh, against the copy", SAME, 1.25),
                       findings.faster("torch: no tanh over with tanh", FASTER))
    found = told(v, f02.WORKING_SET.format(working="64 MiB", cache="480 MiB"))
    assert v.held and "**On the roof**" in found and "64 MiB in and out, against a last-level cache of 480 MiB" in found
    no_cost = f02.ROOF.score(findings.same("torch copy", SAME, 1.25), findings.faster("torch tanh", SLOWER))
    assert no_cost.outcome == findings.BELOW and "`tanh` added no time" in told(no_cost)


def test_counts_are_equal_checks_and_the_custom_op_tells_each_failure() -> None:
    kernels = f02.KERNELS.score(findings.equal("torch.compile: fused kernels", 1, 1),
                                findings.equal("jax.jit: fused kernels", 3, 1), n_ops=11, first_kernel="cpp_fused_0")
    assert kernels.outcome == findings.ABOVE and "jax.jit: fused kernels split the chain" in told(kernels)
    facts = {"breaks": 3, "reason": "Unsupported ndarray attribute access", "gain": str(NOISE)}
    held = f02.CUSTOM_OP.score(findings.true("the legacy op splits the chain (4 graphs)", True),
                               findings.equal("graphs once registered", 1, 1), **facts)
    assert held.held and "at 3 breaks" in told(held) and "over 4 paired rounds" in told(held)
    unbroken = f02.CUSTOM_OP.score(findings.true("the legacy op splits the chain (1 graphs)", False),
                                   findings.equal("generated kernels", 1, 2), **facts)
    assert unbroken.failed and "without splitting it" in told(unbroken) and "which graphs or kernels" in told(unbroken)


def test_attention_is_scored_on_peaks_against_one_score_matrix() -> None:
    scores = 16 * 2**20
    v = f02.ATTENTION.score(findings.below("FlexAttention's peak memory", 2**20, scores, unit="B"),
                            findings.above("unfused attention's peak memory", 49 * 2**20, scores, unit="B"),
                            findings.faster("FlexAttention over unfused attention", FASTER))
    assert v.held and "its design, not something this run observed" in told(v)
    assert "FlexAttention's peak memory 1 MiB: below 16 MiB" in str(v)
    assert "was not tested here: no /proc" in told(f02.ATTENTION.not_tested("no /proc"))


def test_busy_time_is_never_scored_and_quotes_its_facts() -> None:
    v = f02.BUSY.not_tested("one long kernel per call", busy="torch.compile 94.1%", shares="torch.compile 13%")
    found = told(v)
    assert not v.tested and "torch.compile 94.1%" in found and "torch.compile 13% of the memory roof" in found


def test_the_size_sweep_and_the_vector_roof_name_what_fell_outside() -> None:
    sizes = f02.SIZES.score(findings.above("torch fused over eager at 16 KiB", 1.0, 5.3), full="32 MiB",
                            n_ops=11, smallest="torch's fused call took 25 µs and its eager ops 26 µs")
    assert sizes.outcome == findings.BELOW and "full size (32 MiB) in torch fused over eager at 16 KiB." in told(sizes)
    roof = f02.VECTOR_ROOF.score(findings.above("torch over its roof (arithmetic)", 1.2, 0.8),
                                 findings.below("torch over its parts added up", 1.4, 1.25))
    assert roof.outcome == findings.ABOVE and "Outside the model in torch over its parts added up: " in told(roof)
