"""course_utils.precision.formats: layouts and limits from finfo, rounding, long sums, the Kahan reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils import precision as P
from course_utils.precision.formats import float_format


def test_formats_come_from_finfo() -> None:
    fp16, bf16, fp32 = float_format("float16"), float_format("bfloat16"), float_format("float32")
    assert (fp16.bits, fp16.exponent_bits, fp16.mantissa_bits) == (16, 5, 10)
    assert fp16.max == 65504.0 and fp16.eps == 2.0**-10 and fp16.min_subnormal == 2.0**-24
    assert fp16.min_normal == 2.0**-14
    assert (bf16.exponent_bits, bf16.mantissa_bits) == (8, 7) and bf16.eps == 2.0**-7
    assert bf16.min_normal == fp32.min_normal and bf16.max == pytest.approx(fp32.max, rel=0.01)
    assert float_format("float8_e4m3fn").max == 448.0
    assert float_format("float8_e5m2").max == 57344.0


def test_tf32_is_fp32_range_with_fp16_mantissa() -> None:
    tf32, fp32 = float_format("tf32"), float_format("float32")
    assert (tf32.bits, tf32.exponent_bits, tf32.mantissa_bits) == (19, 8, 10)
    assert tf32.eps == 2.0**-10 and tf32.min_normal == fp32.min_normal
    assert tf32.max == (2 - 2.0**-10) * 2.0**127
    assert float(P.round_to(tf32.max, "tf32")) == tf32.max


def test_format_properties() -> None:
    fp16 = float_format("float16")
    assert fp16.short == "fp16" and fp16.unit_roundoff == 2.0**-11
    assert fp16.decimal_digits == pytest.approx(-math.log10(2.0**-11))
    assert P.formats.numpy_dtype("tf32") == np.float32


def test_format_table_renders_through_display_table() -> None:
    table = P.format_table()
    assert [f.short for f in table.formats] == [P.formats.SHORT[n] for n in P.formats.FORMATS]
    assert table["bf16"] is table["bfloat16"]
    assert "fp8 e4m3" in repr(table) and "<table>" in table._repr_html_()
    assert table.table().column("format")[0] == "fp32"
    with pytest.raises(KeyError, match="no format"):
        table["fp64"]


def test_round_to_nearest_even() -> None:
    assert float(P.round_to(1 + 2.0**-8, "bfloat16")) == 1.0  # a tie: to even
    assert float(P.round_to(1 + 2.0**-8 + 2.0**-9, "bfloat16")) == 1 + 2.0**-7
    assert float(P.round_to(1 + 2.0**-11, "tf32")) == 1.0
    assert float(P.round_to(1 + 2.0**-10 + 2.0**-11, "tf32")) == 1 + 2.0**-9
    assert P.round_to([1e5], "float16")[0] == np.inf
    assert np.isnan(P.round_to([1e5], "float8_e4m3fn")[0])  # e4m3fn has no inf
    assert P.round_to([np.inf], "tf32")[0] == np.inf


def test_relative_rounding_error_regimes() -> None:
    fp16 = float_format("float16")
    err = P.formats.relative_rounding_error([1.0, 1e3, 1e-9, 1e6], "float16")
    assert err[0] <= fp16.unit_roundoff and err[1] <= fp16.unit_roundoff
    assert err[2] == 1.0 and err[3] == np.inf
    subnormal = P.formats.relative_rounding_error([1e-6], "float16")[0]
    assert fp16.unit_roundoff < subnormal < 1.0


def test_accumulation_error_shows_bf16_stagnation() -> None:
    err = P.accumulation_error([10, 1000, 100_000])
    assert set(err) == {"bf16 accumulator", "fp32 accumulator", "fp32 accumulator, bf16 result"}
    assert err["bf16 accumulator"][-1] > 0.9 and err["bf16 accumulator"][1] > 0.3
    assert err["fp32 accumulator"].max() < 1e-5
    assert err["fp32 accumulator, bf16 result"].max() <= float_format("bfloat16").unit_roundoff


