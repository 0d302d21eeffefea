"""course_utils.measuring: the computed peak, the matmul libraries found, the roofs table, the plots."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from course_utils import compiled, measuring, timing
from course_utils.measuring import hierarchy, peak


def test_theoretical_peak_multiplies_its_factors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peak.env, "simd_flags", lambda: ("avx", "avx2", "fma", "avx512f"))
    monkeypatch.setattr(peak, "_clock_ghz", lambda: (2.5, "test"))
    estimate = measuring.theoretical_peak(cores=4)
    assert (estimate.lanes, estimate.fma_units, estimate.isa) == (16, 2, "AVX-512")
    assert estimate.flops == pytest.approx(4 * 16 * 2 * 2 * 2.5e9)
    text = repr(estimate)
    assert "computed" in text and "assumed" in text and "test" in text


def test_theoretical_peak_without_fma_or_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peak.env, "simd_flags", lambda: ("sse4_2",))
    monkeypatch.setattr(peak, "_clock_ghz", lambda: (None, "not reported"))
    estimate = measuring.theoretical_peak(cores=2)
    assert estimate.lanes == 4 and not estimate.fma and estimate.flops is None
    assert "unknown" in repr(estimate)


def test_clock_has_a_source() -> None:
    ghz, source = peak._clock_ghz()
    assert source and (ghz is None or 0.1 < ghz < 10)


@pytest.mark.parametrize(("hlo", "library"), [
    ('ROOT %f = fusion(%a), kind=kCustom, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}', "YNNPACK"),
    ('%c = custom-call(%a, %b), custom_call_target="__onednn$matmul"', "oneDNN"),
    ("ROOT %MatMul.2 = f32[8,8]{1,0} dot(%a, %b)", "Eigen (XLA:CPU runtime)"),
    ("ROOT %add = f32[8] add(%a, %b)", "unknown"),
])
def test_libraries_are_read_from_the_hlo(hlo: str, library: str) -> None:
    assert compiled.hlo_summary(f"HloModule m\n\nENTRY %main {{\n  {hlo}\n}}\n").library()[0] == library


def test_torch_and_numpy_libraries_are_found() -> None:
    pytest.importorskip("torch")
    found = measuring.matmul_libraries(["torch", "numpy"])
    assert [lib.framework for lib in found] == ["torch", "numpy"]
    assert all(lib.library and lib.evidence for lib in found)
    assert "not measured" in repr(measuring.libraries_table(found, {"torch": 1e11}))


def test_figures_are_built() -> None:
    sweep = hierarchy.HierarchySweep((2**14, 2**20, 2**26), (9e10, 5e10, 2e10), {"L2": 2**21})
    assert isinstance(measuring.plots.hierarchy_plot(sweep, roof=2e10), Figure)
    sizes = [4, 32, 256, 2048]
    series = {name: [timing.Measurement(name, (1e-6 + s * 1e-9,)) for s in sizes]
              for name in ("torch eager", "torch.compile")}
    fig = measuring.plots.overhead_sweep_plot(sizes, series, measuring.bends(sizes, series),
                                              call_cost={"torch": 1e-5})
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert "fixed cost" in fig.axes[1].get_title()
