"""course_utils.fusion.traffic: bytes and FLOPs of a chain, predicted vs measured rows, FlopCounterMode."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import fusion, models, roofline
from course_utils.timing import Measurement

torch = pytest.importorskip("torch")

ROWS, COLS = 64, 32
N = ROWS * COLS


def machine(bandwidth: float = 1e10, flops: float = 1e11) -> roofline.Machine:
    return roofline.Machine("torch", "cpu", {"copy": bandwidth / 2, "triad": bandwidth}, {"mm": flops})


def chain_traffic() -> fusion.traffic.Traffic:
    return fusion.trace_traffic(models.chain_for("torch"), ((ROWS, COLS), "float32"), ((COLS,), torch.float32))


def test_gelu_chain_traffic_from_shapes_and_dtypes() -> None:
    traffic = chain_traffic()
    assert traffic.n_ops == 11
    # reads: 15 full-size tensor reads + the bias; writes: one full-size tensor per op
    assert traffic.unfused_bytes == 4 * (15 * N + COLS) + 4 * 11 * N
    assert traffic.fused_bytes == 4 * (2 * N + COLS)
    assert traffic.flops == 11 * N
    assert traffic.ratio == pytest.approx(traffic.unfused_bytes / traffic.fused_bytes)


def test_traffic_from_tensors_matches_specs_and_scales_with_dtype() -> None:
    chain = models.chain_for("torch")
    from_tensors = fusion.trace_traffic(chain, torch.ones(ROWS, COLS), torch.ones(COLS))
    from_specs = fusion.trace_traffic(chain, ((ROWS, COLS), np.float32), ((COLS,), "float32"))
    half = fusion.trace_traffic(chain, ((ROWS, COLS), "float16"), ((COLS,), "float16"))
    assert from_tensors.unfused_bytes == from_specs.unfused_bytes
    assert half.unfused_bytes * 2 == from_specs.unfused_bytes


def test_a_tensor_read_twice_counts_once_and_views_move_nothing() -> None:
    square = fusion.trace_traffic(lambda x: x * x, ((10,), "float32"))
    assert [op.read_bytes + op.write_bytes for op in square.ops] == [80]
    viewed = fusion.trace_traffic(lambda x: x.reshape(-1).t() * 2.0, ((4, 5), "float32"))
    assert viewed.n_ops == 1


def test_the_polynomial_chain_has_one_op_less() -> None:
    poly = fusion.trace_traffic(fusion.chain("torch", tanh=False), ((ROWS, COLS), "float32"), ((COLS,), "float32"))
    assert poly.n_ops == 10 and poly.fused_bytes == chain_traffic().fused_bytes


def test_the_traffic_table_uses_binary_units() -> None:
    traffic = chain_traffic()
    text = repr(traffic)
    assert "11 eager ops" in text and "KiB" in text and " MB" not in text
    assert "<table>" in traffic._repr_html_()


def test_flop_counter_counts_matmuls_and_not_elementwise_ops() -> None:
    a = torch.randn(8, 16)
    assert fusion.torch_counted_flops(torch.mm, a, a.T) == 2 * 8 * 16 * 8
    assert fusion.torch_counted_flops(models.chain_for("torch"), torch.randn(4, 3), torch.randn(3)) == 0


def test_compare_to_prediction_rows_and_points() -> None:
    traffic = chain_traffic()
    measured = Measurement("eager", (2e-6, 2e-6, 2e-6))
    table = fusion.compare_to_prediction(traffic, machine(), unfused={"eager": measured}, fused={"fused": 1e-6})
    eager, fused = table["eager"], table["fused"]
    assert not eager.fused and fused.fused
    assert eager.bytes == traffic.unfused_bytes and fused.bytes == traffic.fused_bytes
    assert fused.predicted == pytest.approx(traffic.fused_bytes / 1e10)
    assert fused.fraction_of_bandwidth == pytest.approx(traffic.fused_bytes / 1e-6 / 1e10)
    points = [row.point() for row in table.rows]
    assert [p.label for p in points] == ["eager", "fused"] and points[1].intensity > points[0].intensity
    assert "% of bandwidth" in repr(table) and "predicted (computed)" in repr(table)
    assert "<table>" in table._repr_html_()
    with pytest.raises(KeyError, match="variants are"):
        table["missing"]
