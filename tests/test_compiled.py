"""course_utils.compiled (Inductor code, XLA HLO, cost analysis, cache counts) and fusion.compile_error."""

from __future__ import annotations

import pytest

from course_utils import compiled, fusion, interop, models

torch = pytest.importorskip("torch")

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
    code = compiled.InductorCode(_CPU_MODULE)
    assert code.kernels == ["cpp_fused_add_mul_tanh_0", "cpp_fused_add_1"]
    assert code.language == "c++"
    assert code.extern_calls == ["mm"]
    assert code.fallback_ops == ["course02.table_tanh"]
    assert code.allocates_output
    assert "Topologically" not in code.call_body() and "extern_kernels.mm" in code.call_body()
    assert code.excerpt().splitlines()[0].startswith("auto tmp0 = ")
    assert "in_out_ptr0" in code.kernel_source("cpp_fused_add_1")
    with pytest.raises(ValueError, match="name must be one of"):
        code.kernel_source("nope")


def test_inductor_code_reads_triton() -> None:
    code = compiled.InductorCode(_TRITON_MODULE)
    assert code.kernels == ["triton_poi_fused_add_mul_tanh_0"] and code.language == "triton"
    assert "tl.store(" in code.excerpt() and "empty_strided_cuda" in code.call_body()


def test_a_module_without_kernels_says_so() -> None:
    with pytest.raises(ValueError, match="no generated kernel"):
        compiled.InductorCode("def call(args):\n    return args\n\n").kernel_source()


@pytest.mark.slow
def test_capture_inductor_code_sees_one_fused_kernel_and_out_writes_into_the_buffer() -> None:
    x, bias = torch.randn(16, 8), torch.randn(8)
    with compiled.capture_inductor_code() as modules:
        out = interop.compile_default("torch", fusion.chain("torch"))(x, bias)
        into = fusion.variants.into_buffer("torch", fusion.chain("torch"), x)(x, bias)
    reference = models.chain_for("torch")(x, bias)
    assert torch.allclose(out, reference, atol=1e-5) and torch.allclose(into, reference, atol=1e-5)
    assert [len(m.kernels) for m in modules] == [1, 1]
    assert modules[0].allocates_output and not modules[1].allocates_output


def test_hlo_summary_counts_fusions_and_callbacks() -> None:
    summary = compiled.hlo_summary(_HLO)
    assert summary.fusions == [("ynn_fusion", "kCustom"), ("add_fusion", "kLoop")]
    assert summary.n_fusions == 2
    assert summary.custom_calls == ["xla_ffi_python_cpu_callback"]
    excerpt = summary.excerpt()
    assert excerpt.startswith("ENTRY") and "metadata" not in excerpt and "backend_config" not in excerpt
    assert "kind=kLoop, calls=%fused_computation" in excerpt


@pytest.mark.slow
def test_jax_hlo_of_the_chain_has_one_loop_fusion_and_cost_analysis_agrees_with_the_hand_count() -> None:
    jnp = pytest.importorskip("jax.numpy")
    x, bias = jnp.ones((16, 8)), jnp.ones(8)
    summary = compiled.hlo_summary(compiled.jax_hlo(models.chain_for("jax"), x, bias))
    assert [kind for _, kind in summary.fusions] == ["kLoop"]
    cost = compiled.jax_cost(models.chain_for("jax"), x, bias)
    traffic = fusion.trace_traffic(models.chain_for("torch"), ((16, 8), "float32"), ((8,), "float32"))
    assert cost["flops"] + cost["transcendentals"] == traffic.flops
    assert cost["bytes accessed"] == traffic.fused_bytes


@pytest.mark.slow
def test_tf_hlo_of_the_chain_has_one_fusion() -> None:
    pytest.importorskip("tensorflow")
    from course_utils import env

    tf = env.import_tensorflow()
    fn = tf.function(models.chain_for("tensorflow"), jit_compile=True)
    summary = compiled.hlo_summary(compiled.tf_hlo(fn, tf.ones((16, 8)), tf.ones(8)))
    assert summary.n_fusions == 1


def test_compile_error_names_the_compilers_exception_and_passes_the_learners_own() -> None:
    def fails(x):
        raise ValueError(x)

    with pytest.raises(ValueError):  # the learner's own bug is not the compiler refusing (issue 31)
        fusion.compile_error(fails, 1)
    framework = {"__name__": "jax._src.fake"}  # raised from a framework's module: the compiler refused
    exec("def refuse(x):\n    raise ValueError(x)", framework)
    assert fusion.compile_error(lambda x: framework["refuse"](x), 1) == "ValueError"
    assert fusion.compile_error(lambda: None) is None


def _trace(*names: str):
    from course_utils import profile

    events = tuple(profile.Event(n, "op", "main", i * 1e-3, 1e-4) for i, n in enumerate(names))
    return profile.Trace("test", None, events)


def test_trace_kernels_reads_inductor_and_xla_kernels() -> None:
    torch_trace = _trace("TorchDynamo Cache Lookup", "graph_0_cpp_fused_add_mul_tanh_0", "aten::mul",
                         "graph_0_cpp_fused_add_mul_tanh_0", "triton_poi_fused_add_0")
    assert fusion.trace_kernels(torch_trace, "torch") == {"cpp_fused_add_mul_tanh_0": 2, "triton_poi_fused_add_0": 1}
    xla_trace = _trace("PjitFunction(f)", "multiply_add_fusion", "end: multiply_add_fusion", "multiply_add_fusion",
                       "end: multiply_add_fusion", "ThunkExecutor::Execute")
    assert fusion.trace_kernels(xla_trace, "jax") == {"multiply_add_fusion": 2}
    assert fusion.trace_kernels(xla_trace, "tf") == {"multiply_add_fusion": 2}




def test_kernel_busy_share_counts_overlapping_kernels_once_and_the_gaps_between_them() -> None:
    from course_utils import profile

    def event(name: str, thread: str, start: float, duration: float):
        return profile.Event(name, "op", thread, start, duration)

    # two kernels 0-3 ms and 5-9 ms, the second split over two threads (5-8 and 6-9 ms): 7 ms busy in 9 ms
    trace = profile.Trace("test", None, (
        event("PjitFunction(f)", "main", 0.0, 10e-3),  # not a kernel: left out
        event("multiply_add_fusion", "w0", 0.0, 3e-3), event("end: multiply_add_fusion", "w0", 3e-3, 0.0),
        event("multiply_add_fusion", "w0", 5e-3, 3e-3), event("multiply_add_fusion", "w1", 6e-3, 3e-3)))
    assert fusion.kernel_busy_share(trace, "jax") == pytest.approx(7 / 9)
    with pytest.raises(ValueError, match="no generated kernel"):
        fusion.kernel_busy_share(_trace("aten::mul"), "torch")


def test_readers_refuse_text_that_is_not_compiler_output() -> None:
    with pytest.raises(ValueError, match="source"):
        compiled.InductorCode("garbage that holds no launch function")
    for text in ("garbage", "HloModule m but no entry computation"):
        with pytest.raises(ValueError, match="text"):
            compiled.hlo_summary(text)
        with pytest.raises(ValueError, match="text"):
            compiled.HloSummary(text)  # built directly, it counted zero fusions in garbage


def test_hlo_summary_reads_collectives_operand_types_and_counts() -> None:
    text = ("HloModule m\n\nENTRY %main (a: bf16[4,4], b: bf16[4,4]) -> f32[4,4] {\n"
            "  %a = bf16[4,4]{1,0} parameter(0)\n  %b = bf16[4,4]{1,0} parameter(1)\n"
            "  %d = f32[4,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
            "  %r = f32[4,4]{1,0} all-reduce(%d), replica_groups={{0,1}}, to_apply=%sum\n"
            "  ROOT %s = f32[4,4]{1,0} all-reduce-start(%r), replica_groups={{0,1}}, to_apply=%sum\n}\n")
    summary = compiled.hlo_summary(text)
    assert summary.collectives()["all-reduce"] == 2 and summary.collectives()["all-gather"] == 0
    assert summary.operand_types("dot") == ("bf16",)
    assert summary.count("dot") == 1 and summary.library()[0] == "Eigen (XLA:CPU runtime)"
