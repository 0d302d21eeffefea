"""Bad calls against course_utils.fusion's public API: each raises TypeError/ValueError naming the argument,
and an error raised by the learner's own function passes through unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from badinput import rejects

from course_utils import compiled, fusion, memory, profile, roofline

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
MACHINE = roofline.Machine("torch", "cpu", {"copy": 1e10}, {"mm": 1e11})
TRAFFIC = fusion.trace_traffic(lambda x: x + 1, ((8,), "float32"))
MODULE = compiled.InductorCode("cpp_fused_0 = async_compile.cpp_pybinding(['float*'], r'''\n''')\n"
                               "def call(args):\n    pass\n\n")
HLO = compiled.hlo_summary("HloModule m\n\nENTRY %main (x: f32[2]) -> f32[2] {\n  ROOT %x = f32[2]{0} parameter(0)"
                           "\n}\n")
ROOF = fusion.vector_roof.VectorRoof(1e10, 1e9, 4096)
CHAIN = fusion.chain("torch")

BAD_CALLS = [
    # the traffic model
    ("fn", lambda: fusion.trace_traffic("notfn", ((2,), "float32"))),
    ("inputs", lambda: fusion.trace_traffic(lambda x: x)),
    ("inputs[0]", lambda: fusion.trace_traffic(lambda x: x, [2, 3])),
    ("inputs[0]", lambda: fusion.trace_traffic(lambda x: x, ((2,), "float99"))),
    ("inputs[0]", lambda: fusion.trace_traffic(lambda x: x, (5, "float32"))),
    ("inputs[0]", lambda: fusion.trace_traffic(lambda x: x, ((-1,), "float32"))),
    ("inputs[0]", lambda: fusion.trace_traffic(lambda x: x, ((2.5,), "float32"))),
    ("fn", lambda: fusion.torch_counted_flops(None)),
    ("traffic", lambda: fusion.compare_to_prediction(None, MACHINE, fused={"a": 1.0})),
    ("machine", lambda: fusion.compare_to_prediction(TRAFFIC, "cpu", fused={"a": 1.0})),
    ("unfused", lambda: fusion.compare_to_prediction(TRAFFIC, MACHINE)),
    ("fused", lambda: fusion.compare_to_prediction(TRAFFIC, MACHINE, fused=[1.0])),
    ("fused['a']", lambda: fusion.compare_to_prediction(TRAFFIC, MACHINE, fused={"a": NAN})),
    ("fused['a']", lambda: fusion.compare_to_prediction(TRAFFIC, MACHINE, fused={"a": INF})),
    ("fused['a']", lambda: fusion.compare_to_prediction(TRAFFIC, MACHINE, fused={"a": -1.0})),
    ("unfused['a']", lambda: fusion.compare_to_prediction(TRAFFIC, MACHINE, unfused={"a": "fast"})),
    ("fused key", lambda: fusion.compare_to_prediction(TRAFFIC, MACHINE, fused={"": 1.0})),
    # the readers
    ("source", lambda: compiled.InductorCode(None)),
    ("name", lambda: MODULE.kernel_source("nope")),
    ("max_lines", lambda: MODULE.excerpt(max_lines=0)),
    ("text", lambda: compiled.hlo_summary(None)),
    ("text", lambda: compiled.hlo_summary("not hlo")),
    ("max_lines", lambda: HLO.excerpt(max_lines=-1)),
    ("width", lambda: HLO.excerpt(width=5)),
    ("fn", lambda: compiled.jax_hlo("notfn", 1.0)),
    ("fn", lambda: compiled.jax_cost(42)),
    ("fn", lambda: compiled.tf_hlo(lambda x: x, 1.0)),
    ("fn", lambda: fusion.compile_error(3)),
    ("trace", lambda: fusion.trace_kernels(None, "torch")),
    ("trace", lambda: fusion.trace_kernels(None, "torch")),
    ("trace", lambda: fusion.kernel_busy_share(None, "jax")),
    ("timeout", lambda: fusion.trace_traffic(lambda x: x, ((2,), "float32"), timeout=0)),
    ("timeout", lambda: fusion.trace_traffic(lambda x: x, ((2,), "float32"), timeout=float("nan"))),
    ("timeout", lambda: fusion.torch_counted_flops(lambda x: x, torch.ones(2), timeout=10**9)),
    ("timeout", lambda: fusion.compile_error(lambda x: x, 1, timeout=float("inf"))),
    # attention
    ("q", lambda: fusion.attention_bytes(None, None, None)),
    ("block_mask", lambda: fusion.attention_bytes(*[torch.empty(1, 1, 8, 4, device="meta")] * 3, block_mask=3)),
    ("scores", lambda: fusion.traffic.AttentionBytes(0, 8, 8, 1, 4)),
    # the variants and probes
    ("framework", lambda: fusion.chain("mxnet")),
    ("framework", lambda: fusion.chain(None)),
    ("tanh", lambda: fusion.chain("torch", tanh="yes")),
    ("fn", lambda: fusion.variants.into_buffer("torch", None, torch.ones(2))),
    ("framework", lambda: fusion.variants.into_buffer("mxnet", CHAIN, torch.ones(2))),
    ("steps", lambda: fusion.measure_vector_roof(steps=0)),
    ("elements", lambda: fusion.measure_vector_roof(elements=10)),
    ("min_time", lambda: fusion.measure_vector_roof(min_time=NAN)),
    ("flops_per_second", lambda: fusion.vector_roof.VectorRoof(NAN, 1.0, 10)),
    ("tanh_per_second", lambda: fusion.vector_roof.VectorRoof(1.0, -1.0, 10)),
    ("framework", lambda: fusion.vector_roof.VectorRoof(1.0, 1.0, 10, "mxnet")),
    ("tanh_error", lambda: fusion.vector_roof.VectorRoof(1.0, 1.0, 10, "jax", -1.0)),
    ("framework", lambda: fusion.measure_vector_roof("mxnet")),
    ("chains", lambda: fusion.measure_vector_roof(chains=0)),
    ("steps", lambda: fusion.measure_vector_roof(steps=10**9)),
    ("tanhs", lambda: fusion.measure_vector_roof(tanhs=np.int64(10**6))),
    ("min_time", lambda: fusion.measure_vector_roof(min_time=10**6)),
    ("points", lambda: fusion.exercises.decomposed_tanh_error(points=10**12)),
    ("trace", lambda: fusion.trace_kernels(profile.Trace("empty", None, ()), "torch")),
    ("tanhs", lambda: fusion.measure_vector_roof(tanhs=1.5)),
    ("roofs", lambda: fusion.vector_roof_table({}, elements=10, flops=1, tanh=1, memory_seconds=1.0)),
    ("roofs['a']", lambda: fusion.vector_roof_table({"a": 1}, elements=10, flops=1, tanh=1, memory_seconds=1.0)),
    ("call_cost", lambda: fusion.vector_roof_table({"a": ROOF}, elements=10, flops=1, tanh=1, memory_seconds=1.0,
                                                   call_cost=[1.0])),
    ("call_cost['a']", lambda: fusion.vector_roof_table({"a": ROOF}, elements=10, flops=1, tanh=1,
                                                        memory_seconds=1.0, call_cost={"a": float("nan")})),
    ("arithmetic", lambda: fusion.vector_roof.ChainRoof(float("nan"), 1.0)),
    ("bytes", lambda: fusion.vector_roof.ChainRoof(1.0, -1.0)),
    ("memory_seconds", lambda: fusion.vector_roof_table({"a": ROOF}, elements=10, flops=1, tanh=1, memory_seconds=0)),
    ("elements", lambda: ROOF.chain_seconds(-5, flops=1, tanh=1)),
    ("tanh", lambda: ROOF.chain_seconds(10, flops=1, tanh=INF)),
    # the legacy operator and the exercises' reference
    ("points", lambda: fusion.exercises.decomposed_tanh_error(points=0)),
    ("span", lambda: fusion.exercises.decomposed_tanh_error(span=NAN)),
    # the plots
    ("table", lambda: fusion.prediction_plot(None)),
    ("fractions", lambda: fusion.roof_bars({})),
    ("fractions['a']", lambda: fusion.roof_bars({"a": NAN})),
    ("sizes_bytes", lambda: fusion.speedup_vs_size_plot([], {"a": []})),
    ("sizes_bytes[0]", lambda: fusion.speedup_vs_size_plot([0], {"a": [1.0]})),
    ("speedups['a']", lambda: fusion.speedup_vs_size_plot([1024], {"a": [1.0, 2.0]})),
    ("speedups['a'][0]", lambda: fusion.speedup_vs_size_plot([1024], {"a": [NAN]})),
    ("speedups", lambda: fusion.speedup_vs_size_plot([1024], None)),
    ("predicted", lambda: fusion.speedup_vs_size_plot([1024], {"a": [1.0]}, predicted=-1)),
    ("caches['L3']", lambda: fusion.speedup_vs_size_plot([1024], {"a": [1.0]}, caches={"L3": -1})),
    ("machine", lambda: fusion.roofline_with_vector_roof(None, None)),
    ("vector", lambda: fusion.roofline_with_vector_roof(MACHINE, "fast")),
    ("vector", lambda: fusion.roofline_with_vector_roof(MACHINE, {"torch": 1.0})),
    ("flops", lambda: fusion.roofline_with_vector_roof(MACHINE, ROOF, flops=-1)),
]


@pytest.mark.parametrize(("argument", "call"), BAD_CALLS, ids=[f"{i}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_call_is_refused_naming_the_argument(argument: str, call) -> None:
    rejects(call, argument)


def test_there_are_enough_bad_calls() -> None:
    assert len(BAD_CALLS) >= 25


class LearnerError(RuntimeError):
    pass


def _raises(*args):
    raise LearnerError("the learner's own bug")


@pytest.mark.parametrize("call", [
    lambda: fusion.trace_traffic(_raises, ((2,), "float32")),
    lambda: fusion.torch_counted_flops(_raises, torch.ones(2)),
    lambda: memory.page_faults(_raises),
    lambda: fusion.compile_error(_raises, 1),
], ids=["trace_traffic", "torch_counted_flops", "page_faults", "compile_error"])
def test_the_learners_own_error_passes_through(call) -> None:
    with pytest.raises(LearnerError, match="own bug"):
        call()
