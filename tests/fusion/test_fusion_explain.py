"""course_utils.fusion.explain and the limit of a chain: every branch of the generated sentences, from made-up
measurements (no timing runs here)."""

from __future__ import annotations

import pytest

from course_utils import fusion, roofline, timing

MS = 1e-3


def m(label: str, *times_ms: float) -> timing.Measurement:
    return timing.Measurement.from_times(label, [t * MS for t in times_ms])


ROOF = fusion.VectorRoof(1e10, 1e9, 4096, "tensorflow")  # 10^6 elements x (10 FLOPs + 1 tanh): 2 ms of arithmetic


def limits(fresh) -> fusion.ChainRoof:
    return fusion.chain_roofs({"tf": ROOF}, elements=10**6, flops=10, tanh=1, memory_seconds=4 * MS,
                              fresh_output={"tf": fresh})["tf"]


def test_a_fresh_output_within_the_noise_of_the_bytes_is_not_the_limit() -> None:
    close = limits(m("no tanh", 3.9, 4.0, 4.02, 4.1))  # median above the bytes' 4 ms, lower quartile below
    assert close.limit == "bytes" and close.seconds == pytest.approx(4 * MS)
    beyond = limits(m("no tanh", 5.0, 5.1, 5.2, 5.3))
    assert beyond.limit == "fresh output" and beyond.seconds == pytest.approx(5.15 * MS)
    assert limits(5 * MS).limit == "fresh output"  # plain seconds: no spread to weigh


def test_overlap_is_read_from_the_parts_added_up_against_the_measured_time() -> None:
    roof = limits(m("no tanh", 3.9, 4.0, 4.02, 4.1))  # largest part 4 ms (bytes), parts added up 2 + 4.01 ms
    partly = fusion.overlap_text("tf", m("tanh", 4.9, 5.0, 5.1), roof)
    assert "overlapped in part" in partly and "was hidden" in partly
    assert "did not overlap" in fusion.overlap_text("tf", m("tanh", 6.2, 6.3, 6.4), roof)
    assert "hid under it" in fusion.overlap_text("tf", m("tanh", 3.9, 4.05, 4.2), roof)
    assert "over-states" in fusion.overlap_text("tf", m("tanh", 3.0, 3.1, 3.2), roof)
    assert "at the sum within the noise" in fusion.overlap_text("tf", m("tanh", 5.8, 6.1, 6.2), roof)
    assert "cannot tell" in fusion.overlap_text("tf", m("tanh", 2.0, 5.0, 8.0), roof)


def test_working_set_is_placed_against_the_last_level_cache() -> None:
    llc = 32 * 2**20
    assert "it fits" in fusion.working_set_text(16 * 2**20, llc)
    assert "2.0x" in fusion.working_set_text(64 * 2**20, llc)
    assert "served from cache" in fusion.working_set_text(64 * 2**20, llc)
    assert "streams from main memory" in fusion.working_set_text(256 * 2**20, llc)


def test_copies_report_the_faster_one_the_noise_and_a_beaten_roof() -> None:
    apart = {"torch": m("t", 8.8, 8.9, 9.0), "jax": m("j", 6.3, 6.4, 6.5)}
    text = fusion.copies_text(apart, {"torch": 0.87, "jax": 1.21}, "torch")
    assert "jax copy beat the roof" in text and "torch copy took 1.39x the jax copy's time, beyond the noise" in text
    assert "not established" in text
    close = {"torch": m("t", 6.0, 6.5, 7.0), "jax": m("j", 6.2, 6.4, 6.9)}
    text = fusion.copies_text(close, {"torch": 0.95, "jax": 0.97}, "torch")
    assert "within the noise" in text and "beat the roof" not in text


def test_fresh_sum_says_whether_the_two_costs_add_up() -> None:
    assert "add up" in fusion.fresh_sum_text("c", fresh=63 * MS, into=24 * MS, fresh_plain=48 * MS, into_plain=9 * MS)
    text = fusion.fresh_sum_text("c", fresh=192 * MS, into=24 * MS, fresh_plain=48 * MS, into_plain=9 * MS)
    assert "3.05x that sum" in text and "not established" in text


def test_matmul_shares_follow_the_sweep_on_each_side_of_the_ridge() -> None:
    machine = roofline.Machine("torch", "cpu", {"copy": 3.5e10}, {"mm": 1.8e11})  # ridge 5.1 FLOP/byte: n ~ 31

    def point(n: int, share: float) -> roofline.Point:
        return roofline.Point(f"mm n={n}", 2 * n**3, 12 * n * n, 2 * n**3 / (share * 1.8e11))

    rising = fusion.matmul_shares_text([point(16, 0.03), point(48, 0.23), point(128, 0.81), point(384, 0.99),
                                        point(1024, 1.0)], machine)
    assert rising.startswith("Left of it, mm n=16 reached 3%") and "levelled off" in rising and "mm n=384 on" in rising
    flat = fusion.matmul_shares_text([point(128, 0.95), point(1024, 1.0)], machine)
    assert "levels off as soon as it crosses" in flat
    climbing = fusion.matmul_shares_text([point(128, 0.5), point(1024, 1.0)], machine)
    assert "still rose up to the largest size" in climbing
    fell = fusion.matmul_shares_text([point(128, 0.8), point(384, 1.0), point(1024, 0.7)], machine)
    assert "peaked at mm n=384" in fell and "not established" in fell


def test_small_call_text_names_the_call_or_a_candidate_and_the_spread() -> None:
    slow = fusion.small_call_text("torch", fused=m("f", 20, 20.2, 20.4), eager=m("e", 30, 30.2, 30.4), n_ops=11,
                                  gains=(1.5, 5.5), eager_fresh_outputs=11.0, fixed_costs={"a": 15e-3, "b": 20e-3})
    assert "as long as 7.4 of its eager ops" in slow and "spread 1.3x" in slow
    cheap = fusion.small_call_text("jax", fused=m("f", 16, 16.4, 17), eager=m("e", 110, 116, 120), n_ops=11,
                                   gains=(7.1, 11.0), eager_fresh_outputs=11.0, fixed_costs={"a": 7.8e-6})
    assert "only 1.6 eager ops' worth" in cheap and "candidate cause" in cheap and "spread" not in cheap
    alone = fusion.small_call_text("torch", fused=m("f", 20, 20.2), eager=m("e", 30, 30.2, 30.4), n_ops=11,
                                   gains=(1.5, 5.5), eager_fresh_outputs=11.0, fixed_costs={"intercept": 0, "b": 2e-5})
    assert "intercept: too small to resolve" in alone and "measured in other ways" not in alone


def test_fast_tanh_report_flags_a_kernel_faster_than_its_copy() -> None:
    runs = {"fast": m("f", 8.0, 8.1, 8.2), "default": m("d", 23, 24, 25), "plain": m("p", 9.0, 9.1, 9.2),
            "copy": m("c", 8.7, 8.85, 9.0)}
    text = fusion.fast_tanh_report(runs, fast="fast", default="default", plain="plain", copy="copy")
    assert "2.96x the speed of default (beyond the noise)" in text and text.endswith("does not establish which")
    runs["fast"] = m("f", 9.0, 9.5, 10.0)
    assert "consistent" in fusion.fast_tanh_report(runs, fast="fast", default="default", plain="plain", copy="copy")
    text = fusion.fast_tanh_report(runs, fast="fast", default="default", plain="plain", copy="copy",
                                   earlier={"copy": m("c", 6.2, 6.3, 6.4), "plain": m("p", 8.9, 9.1, 9.3)})
    assert "copy: 1.40x its earlier time (6.3 ms)" in text and "plain: " not in text.split("consistent")[1]
    with pytest.raises(ValueError, match="copy"):
        fusion.fast_tanh_report(runs, fast="fast", default="default", plain="plain", copy="nope")
