"""course_utils.migrate.frameworks: XLA:CPU kernel counts read from HLO text; the table's arithmetic."""

from __future__ import annotations

import pytest

from course_utils import migrate, timing
from course_utils.migrate import frameworks

_YNN = ', kind=kCustom, calls=%c, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}'
HLO = "\n".join([
    '%ynn_fusion.1 = f32[2] fusion(%a, %b), metadata={op_name="jit(step)/jvp()/conv_general_dilated" x=1}' + _YNN,
    '%ynn_fusion.2 = f32[2] fusion(%a, %b), metadata={op_name="jit(step)/jvp()/dot_general" x=1}' + _YNN,
    "  %conv.1 = f32[2] convolution(%p0, %p1), window={size=3x3}",
    "  %conv.2 = f32[2] convolution(%p0, %p1), window={size=3x3}",
])


def test_xla_cpu_kernels_counts_ynn_fusions_and_plain_convolutions() -> None:
    counts = migrate.xla_cpu_kernels(HLO)
    assert counts["ynn fusions"] == 2 and counts["ynn convolutions"] == 1 and counts["ynn dots"] == 1
    assert counts["all convolutions"] == 2 and counts["convolutions outside ynn"] == 1
    assert counts["onednn calls"] == 0


def test_table_uses_pytorch_eager_as_the_common_baseline() -> None:
    def m(label, median):
        return timing.Measurement(label, (median, median, median), first_call=median * 10)

    table = frameworks.FrameworkTable((frameworks.FrameworkRow("torch", m("a", 4.0), m("b", 2.0), None, 0),
                                       frameworks.FrameworkRow("jax", m("c", 8.0), m("d", 1.0), 1024, None)),
                                      ("TensorFlow is not installed here, so its row is skipped.",))
    assert table.vs_baseline("jax") == pytest.approx(4.0) and table.vs_own_eager("jax") == pytest.approx(8.0)
    text = repr(table)
    assert "vs PyTorch eager" in text and "not how JAX is used" in text and "TensorFlow is not installed" in text


def test_jax_step_hlo_shows_what_xla_cpu_runs() -> None:
    pytest.importorskip("jax")
    import numpy as np

    hlo = migrate.jax_step_hlo(np.zeros((2, 3, 16, 16), np.float32), np.zeros(2, np.int32))
    counts = migrate.xla_cpu_kernels(hlo)
    assert counts["all convolutions"] >= 3


def test_compile_not_faster_says_slower_within_noise_or_nothing() -> None:
    from course_utils import timing
    from course_utils.migrate import frameworks as fw

    def row(name, eager, compiled):
        m = lambda v: timing.Measurement(name, (v * 0.98, v, v * 1.02))  # noqa: E731
        return fw.FrameworkRow(name, m(eager), m(compiled), None, None)

    table = fw.FrameworkTable((row("torch", 20.0, 10.0), row("jax", 50.0, 70.0), row("tensorflow", 30.0, 30.2)), ())
    assert fw.compile_not_faster(table, "torch") == ""
    slower, level = fw.compile_not_faster(table, "jax"), fw.compile_not_faster(table, "tensorflow")
    assert "JAX's compiled step was slower than" in slower and "take 1.40x as long" in slower
    assert "bought nothing" not in slower  # a loss is not "nothing"
    assert "within the noise" in level and "bought nothing measurable" in level
