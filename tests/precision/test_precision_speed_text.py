"""course_utils.precision.speed_text (and remat.temp_change_text): every branch of the generated sentences."""

from __future__ import annotations

import pytest

from course_utils import precision as P
from course_utils.timing import Measurement

AVX = ("avx512_bf16",)


def _m(*times: float) -> Measurement:
    return Measurement.from_times("m", times)


def test_bf16_units_name_only_the_flags_present() -> None:
    assert P.bf16_units(("avx2", "avx512_bf16")) == ("AVX512-BF16 (avx512_bf16)",)
    assert P.bf16_units(["amx_bf16", "amx_tile", "avx512_bf16"])[0] == "AMX (amx_bf16, amx_tile)"
    assert P.bf16_units(("avx2",)) == ()
    assert P.bf16_unit_ratio(("avx512_bf16",)) == 2.0
    assert P.bf16_unit_ratio(("avx512_bf16", "amx_bf16")) is None and P.bf16_unit_ratio(("avx2",)) is None


def test_bf16_units_text_blames_the_fp32_side_above_the_bound() -> None:
    over = P.bf16_units_text(("avx512_bf16",), (3.33, 3.1, 3.5), fp32_flops=164e9, bf16_flops=544e9, peak_flops=332e9)
    assert "no AMX" in over and "**2x**" in over and "fp32 kernel at this size is the slow side" in over
    assert "60%" in over and "82%" in over and "too low" not in over
    assert "too low" in P.bf16_units_text(("avx512_bf16",), (4.3, 4.2, 4.4), fp32_flops=186e9, bf16_flops=800e9,
                                          peak_flops=332e9)
    noisy = P.bf16_units_text(("avx512_bf16",), (9.22, 1.45, 14.1), fp32_flops=32e9, bf16_flops=292e9, peak_flops=None)
    assert "within the noise" in noisy and "slow side" not in noisy
    within = P.bf16_units_text(("avx512_bf16",), (1.8, 1.7, 1.9), fp32_flops=1e9, bf16_flops=1.8e9, peak_flops=None)
    assert "within the 2x" in within and "slow side" not in within
    assert "Yet bf16 ran at 0.50x" in P.bf16_units_text(AVX, (0.5, 0.4, 0.6), fp32_flops=1e9, bf16_flops=5e8,
                                                         peak_flops=None)
    amx = P.bf16_units_text(("amx_bf16", "amx_tile", "avx512_bf16"), (5.0, 4.0, 6.0), fp32_flops=1e9, bf16_flops=5e9,
                            peak_flops=None)
    assert "AMX" in amx and "no per-instruction bound" in amx
    assert "no bf16 unit" in P.bf16_units_text(("avx2",), (0.1, 0.1, 0.1), fp32_flops=1e9, bf16_flops=1e8,
                                               peak_flops=None)


def test_fp32_share_text_gives_both_fractions() -> None:
    text = P.fp32_share_text(164e9, 512, roof_flops=198e9, roof_label="matmul fp32 n=1024", peak_flops=332e9)
    assert "83%" in text and "49%" in text and "n = 512" in text
    assert "no computed peak" in P.fp32_share_text(1e9, 8, roof_flops=2e9, roof_label="r", peak_flops=None)
    assert "under-read" in P.fp32_share_text(186e9, 512, roof_flops=62e9, roof_label="r", peak_flops=332e9)
    assert "under-read" not in text


def test_step_outcome_and_reason_cover_every_branch() -> None:
    matmul = (3.33, 3.0, 3.6)
    assert P.step_outcome((2.0, 1.8, 2.2), matmul) == "diluted"
    assert P.step_outcome((3.42, 3.07, 3.86), matmul) == "noise of matmul"
    assert P.step_outcome((1.05, 0.9, 1.2), matmul) == "noise of 1"
    assert P.step_outcome((5.0, 4.5, 5.5), matmul) == "further"
    assert P.step_outcome((0.5, 0.4, 0.6), matmul) == "opposite"
    assert P.step_outcome((0.5, 0.45, 0.55), (0.1, 0.09, 0.11)) == "diluted"
    noise = P.step_reason("noise of matmul", (3.42, 3.07, 3.86), matmul, 512)
    assert "within the noise of the matmul's ratio" in noise and "lies inside the step's quartiles" in noise
    assert "overlap" in P.step_reason("noise of matmul", (3.8, 3.5, 4.0), matmul, 512)
    assert "not established" in P.step_reason("further", (5.0, 4.5, 5.5), matmul, 512)
    with pytest.raises(ValueError, match="step"):
        P.step_outcome((1.0, 1.5, 2.0), matmul)


def test_ratio_band_matches_compare() -> None:
    med, low, high = P.ratio_band(_m(4, 4, 4, 4), _m(1, 1, 2, 2))
    assert low <= med <= high and med == pytest.approx(4 / 1.5)


def test_mlp_step_flops_and_matmul_shares() -> None:
    assert P.mlp_step_flops((2, 3, 4), 5) == 2 * 5 * (3 * (6 + 12) - 6)
    shares = P.matmul_shares(1e9, {"fp32": 1e11, "bf16": 4e11}, {"fp32": 0.0125, "bf16": 0.004})
    assert shares == pytest.approx({"fp32": 0.8, "bf16": 0.625})
    assert "mostly matmuls" in P.matmul_share_text({"fp32": 0.9, "bf16": 0.8}, 1e9, "noise of matmul")
    assert "not established" in P.matmul_share_text({"fp32": 0.3, "bf16": 0.2}, 1e9, "noise of matmul")
    assert "above 100%" in P.matmul_share_text({"fp32": 1.2, "bf16": 0.9}, 1e9, "diluted")
    assert "cannot size" in P.matmul_share_text({"fp32": 4.7, "bf16": 1.9}, 1e9, "noise of matmul")


def test_claim_outcome_has_three_ends() -> None:
    assert P.claim_outcome(3.07, 3.86) == "exceeded"
    assert P.claim_outcome(1.1, 1.25) == "held"
    assert P.claim_outcome(0.8, 1.1) == "short"
    assert "not ~1.3x" in P.claim_text("exceeded", 3.42, 3.07, 3.86)
    assert "does not hold" in P.claim_text("short", 1.0, 0.8, 1.1)
    assert "holds" in P.claim_text("held", 1.3, 1.1, 1.5)


def test_bandwidth_and_roof_texts() -> None:
    bw = {"copy": (1.18, 1.09, 1.26), "triad": (1.03, 0.95, 1.12)}
    text = P.bandwidth_text(bw, {"copy": 0.42, "triad": 0.48}, array_bytes=2**27, llc=2**25)
    assert "In the triad bf16's bandwidth is within the noise" in text
    assert "beyond the noise" in text and "not established" in text and "64 MiB" in text
    slow = P.bandwidth_text({"triad": (0.7, 0.6, 0.8)}, {"triad": 0.7}, array_bytes=2**20, llc=None)
    assert "slower than fp32" in slow and "converting" in slow
    copy = P.bandwidth_text({"copy": (0.5, 0.5, 0.51)}, {"copy": 1.0}, array_bytes=2**20, llc=None)
    assert "converts nothing" in copy
    assert P.roof_share_text({"triad fp32": 0.9}, 40e9, 2**27) == ""
    over = P.roof_share_text({"triad fp32": 1.08, "triad bf16": 1.12}, 37e9, 2**27)
    assert "108% and 112%" in over and "under-read" in over and "lower bound" in over


def test_temp_change_text_states_growth_and_leaves_the_cause_open() -> None:
    grew = P.temp_change_text((214 * 2**20, 254 * 2**20), 4096, 128)
    assert "+19%" in grew and "5.0 of them" in grew and "not established" in grew
    assert "below half" in P.temp_change_text((100 * 2**20, 10 * 2**20), 4096, 128)
    assert "less than half" in P.temp_change_text((100 * 2**20, 80 * 2**20), 4096, 128)
    assert "did not report" in P.temp_change_text((None, None), 4096, 128)
