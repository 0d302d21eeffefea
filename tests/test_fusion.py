"""course_utils.fusion: bytes accounting, predicted vs measured rows, reading Inductor code and XLA HLO."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import fusion, models, plotting, roofline, units
from course_utils.timing import Measurement

torch = pytest.importorskip("torch")

ROWS, COLS = 64, 32
N = ROWS * COLS


def _machine(bandwidth: float = 1e10, flops: float = 1e11) -> roofline.Machine:
    return roofline.Machine("torch", "cpu", {"copy": bandwidth / 2, "triad": bandwidth}, {"mm": flops})


# ----------------------------------------------------------------------------------------- trace_traffic


def test_gelu_chain_traffic_from_shapes_and_dtypes() -> None:
    traffic = fusion.trace_traffic(models.chain_for("torch"), ((ROWS, COLS), "float32"), ((COLS,), torch.float32))
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
    assert [op.bytes for op in square.ops] == [80]
    viewed = fusion.trace_traffic(lambda x: x.reshape(-1).t() * 2.0, ((4, 5), "float32"))
    assert viewed.n_ops == 1


def test_predicted_seconds_use_the_roofline() -> None:
    traffic = fusion.trace_traffic(models.chain_for("torch"), ((ROWS, COLS), "float32"), ((COLS,), "float32"))
    machine = _machine()
    assert traffic.predicted_seconds(machine, fused=True) == pytest.approx(traffic.fused_bytes / 1e10)
    assert traffic.predicted_seconds(machine, fused=False) == pytest.approx(traffic.unfused_bytes / 1e10)
    assert "<table>" in traffic._repr_html_() and "11 ops" in repr(traffic)


def test_trace_traffic_rejects_bad_input() -> None:
    with pytest.raises(TypeError, match="fn"):
        fusion.trace_traffic("not a function", ((2,), "float32"))
    with pytest.raises(ValueError, match="inputs"):
        fusion.trace_traffic(lambda x: x)
    with pytest.raises(TypeError, match="shape, dtype"):
        fusion.trace_traffic(lambda x: x, [2, 3])
    with pytest.raises(ValueError, match="dtype"):
        fusion.trace_traffic(lambda x: x, ((2,), "float99"))


# ------------------------------------------------------------------------------- compare_to_prediction


def test_compare_to_prediction_rows_and_points() -> None:
    traffic = fusion.trace_traffic(models.chain_for("torch"), ((ROWS, COLS), "float32"), ((COLS,), "float32"))
    machine = _machine()
    measured = Measurement("eager", (2e-6, 2e-6, 2e-6))
    table = fusion.compare_to_prediction(traffic, machine, unfused={"eager": measured}, fused={"fused": 1e-6})
    eager, fused = table["eager"], table["fused"]
    assert not eager.fused and fused.fused
    assert eager.bytes == traffic.unfused_bytes and fused.bytes == traffic.fused_bytes
    assert fused.predicted == pytest.approx(traffic.fused_bytes / 1e10)
    assert fused.fraction_of_bandwidth == pytest.approx(traffic.fused_bytes / 1e-6 / 1e10)
    assert fused.slowdown == pytest.approx(1e-6 / fused.predicted)
    points = table.points()
    assert [p.label for p in points] == ["eager", "fused"] and points[1].intensity > points[0].intensity
    assert "% of bandwidth" in repr(table) and "<table>" in table._repr_html_()
    with pytest.raises(KeyError, match="variants are"):
        table["missing"]


def test_compare_to_prediction_rejects_bad_input() -> None:
    traffic = fusion.trace_traffic(lambda x: x + 1, ((8,), "float32"))
    with pytest.raises(ValueError, match="at least one"):
        fusion.compare_to_prediction(traffic, _machine())
    with pytest.raises(ValueError, match="seconds > 0"):
        fusion.compare_to_prediction(traffic, _machine(), fused={"bad": -1.0})


def test_plots_return_figures_and_check_lengths() -> None:
    from matplotlib.figure import Figure

    traffic = fusion.trace_traffic(lambda x: x + 1, ((8,), "float32"))
    table = fusion.compare_to_prediction(traffic, _machine(), unfused={"torch eager": 2e-9}, fused={"jax.jit": 1e-9})
    assert isinstance(fusion.prediction_plot(table), Figure)
    fig = fusion.speedup_vs_size_plot([1024, 2**20], {"torch": [3.0, 5.0]}, predicted=13.0, caches={"L2": 2**19})
    assert isinstance(fig, Figure)
    with pytest.raises(ValueError, match="one value per entry"):
        fusion.speedup_vs_size_plot([1024, 2048], {"torch": [1.0]})


# --------------------------------------------------------------------------------------- Inductor code

_CPU_MODULE = '''
cpp_fused_add_mul_tanh_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r\'\'\'
extern "C" void kernel(const float* in_ptr0, float* out_ptr0)
{
    auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + x0, 16);
    auto tmp1 = tmp0 * tmp0;
    tmp1.store(out_ptr0 + x0);
}
\'\'\')


cpp_fused_add_1 = async_compile.cpp_pybinding(['float*'], r\'\'\'
extern "C" void kernel(float* in_out_ptr0) {}
\'\'\')


class Runner:
    def call(self, args):
        arg0_1, arg1_1 = args
        args.clear()
        # Topologically Sorted Source Nodes: [mm]
        buf0 = empty_strided_cpu((4, 4), (4, 1), torch.float32)
        extern_kernels.mm(arg0_1, arg1_1, out=buf0)
        cpp_fused_add_mul_tanh_0(buf0, buf0)
        buf1 = torch.ops.course02.table_tanh.default(buf0)
        cpp_fused_add_1(buf1)
        return (buf1, )

runner = Runner(partitions=[])
'''

_TRITON_MODULE = '''
triton_poi_fused_add_mul_tanh_0 = async_compile.triton('triton_poi_fused_add_mul_tanh_0', \'\'\'
@triton.jit
def triton_poi_fused_add_mul_tanh_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tmp0 * tmp0
    tl.store(out_ptr0 + (x0), tmp1, xmask)
\'\'\', device_str='cuda')


def call(args):
    arg0_1, = args
    buf0 = empty_strided_cuda((4, ), (1, ), torch.float32)
    triton_poi_fused_add_mul_tanh_0.run(arg0_1, buf0, 4, stream=stream0)
    return (buf0, )

'''


def test_inductor_code_counts_kernels_library_calls_and_fallbacks() -> None:
    code = fusion.InductorCode(_CPU_MODULE)
    assert code.kernels == ["cpp_fused_add_mul_tanh_0", "cpp_fused_add_1"]
    assert code.language == "c++"
    assert code.extern_calls == ["mm"]
    assert code.fallback_ops == ["course02.table_tanh"]
    assert "Topologically" not in code.call_body() and "extern_kernels.mm" in code.call_body()
    assert code.excerpt().splitlines()[0].startswith("auto tmp0 = ")
    assert "in_out_ptr0" in code.kernel_source("cpp_fused_add_1")
    with pytest.raises(ValueError, match="name must be one of"):
        code.kernel_source("nope")


def test_inductor_code_reads_triton() -> None:
    code = fusion.InductorCode(_TRITON_MODULE)
    assert code.kernels == ["triton_poi_fused_add_mul_tanh_0"] and code.language == "triton"
    assert "tl.store(" in code.excerpt() and "empty_strided_cuda" in code.call_body()


@pytest.mark.slow
def test_capture_inductor_code_sees_one_fused_kernel_for_the_chain() -> None:
    chain = models.chain_for("torch")
    x, bias = torch.randn(16, 8), torch.randn(8)
    with fusion.capture_inductor_code() as modules:
        out = torch.compile(chain)(x, bias)
    assert torch.allclose(out, chain(x, bias), atol=1e-5)
    assert len(modules) == 1 and len(modules[0].kernels) == 1


# -------------------------------------------------------------------------------------------- XLA HLO

_HLO = """HloModule jit_f, is_scheduled=true

%fused_computation (param_0: f32[8]) -> f32[8] {
  ROOT %add = f32[8]{0} add(%param_0, %param_0), metadata={op_name="jit(f)/add" source_file="a{b}.py"}
}

ENTRY %main.1 (x.1: f32[8]) -> f32[8] {
  %x.1 = f32[8]{0} parameter(0), metadata={op_name="x"}
  %ynn_fusion = f32[8]{0} fusion(%x.1), kind=kCustom, calls=%fused_computation, backend_config={"a":{"b":1}}
  %cb = f32[8]{0} custom-call(%ynn_fusion), custom_call_target="xla_ffi_python_cpu_callback"
  ROOT %add_fusion = f32[8]{0} fusion(%cb), kind=kLoop, calls=%fused_computation, metadata={op_name="y"}
}
"""


def test_hlo_summary_counts_fusions_and_callbacks() -> None:
    summary = fusion.hlo_summary(_HLO)
    assert summary.fusions == [("ynn_fusion", "kCustom"), ("add_fusion", "kLoop")]
    assert summary.n_fusions == 2
    assert summary.custom_calls == ["xla_ffi_python_cpu_callback"]
    excerpt = summary.excerpt()
    assert excerpt.startswith("ENTRY") and "metadata" not in excerpt and "backend_config" not in excerpt
    assert "kind=kLoop, calls=%fused_computation" in excerpt
    with pytest.raises(ValueError, match="HloModule"):
        fusion.hlo_summary("not hlo")


def test_jax_hlo_of_the_chain_has_one_loop_fusion() -> None:
    jnp = pytest.importorskip("jax.numpy")
    summary = fusion.hlo_summary(fusion.jax_hlo(models.chain_for("jax"), jnp.ones((16, 8)), jnp.ones(8)))
    assert [kind for _, kind in summary.fusions] == ["kLoop"]


def test_tf_hlo_needs_a_tf_function() -> None:
    with pytest.raises(TypeError, match="tf.function"):
        fusion.tf_hlo(lambda x: x, 1.0)


# ------------------------------------------------------------------------------------ what breaks fusion


def test_torch_graph_breaks_counts_a_numpy_call() -> None:
    def plain(x):
        return torch.tanh(x) + 1

    def with_numpy(x):
        return torch.from_numpy(np.interp(x.numpy(), [-1.0, 1.0], [0.0, 1.0]).astype(np.float32)) + 1

    assert fusion.torch_graph_breaks(plain, torch.ones(4)).breaks == 0
    broken = fusion.torch_graph_breaks(with_numpy, torch.ones(4))
    assert broken.breaks >= 1 and broken.graphs >= 2 and broken.reasons


def test_compile_error_names_the_exception() -> None:
    def fails(x):
        raise ValueError(x)

    assert fusion.compile_error(fails, 1) == "ValueError"
    assert fusion.compile_error(lambda: None) is None
    with pytest.raises(TypeError, match="fn"):
        fusion.compile_error(3)


# ------------------------------------------------------------------------------------------------ misc


def test_cache_sizes_and_format_bytes() -> None:
    sizes = fusion.cache_sizes()
    assert all(isinstance(v, int) and v > 0 for v in sizes.values())
    assert units.format_bytes(48 * 2**10) == "48 KiB"
    assert units.format_bytes(480 * 2**20) == "480 MiB"
    assert units.format_bytes(100) == "100 B"


def test_roofline_plot_stacks_labels_of_points_at_one_intensity() -> None:
    points = [roofline.Point(name, 1e9, 1e9, t) for name, t in (("a", 1.0), ("b", 1.01), ("c", 1.02))]
    fig = plotting.roofline_plot(_machine(), points)
    offsets = sorted(t.xyann[1] for t in fig.axes[0].texts if hasattr(t, "xyann"))
    assert len(offsets) == 3 and offsets[1] - offsets[0] > 5 and offsets[2] - offsets[1] > 5
