"""Bad calls against course_utils.measuring's public API: each raises TypeError/ValueError naming the argument."""

from __future__ import annotations

import math

import pytest
from badinput import rejects

from course_utils import measuring, timing

NAN, INF = math.nan, math.inf
M = timing.Measurement("m", (1e-3,))
SWEEP = measuring.HierarchySweep((2**14, 2**20), (1e10, 5e9), {"L2": 2**21})

BAD_CALLS = [
    (lambda: measuring.amdahl([0.5, 0.6], [2.0, 1.0]), "shares"),
    (lambda: measuring.amdahl([NAN, 1.0], [2.0, 1.0]), "shares"),
    (lambda: measuring.amdahl([1.5, -0.5], [2.0, 1.0]), "shares"),
    (lambda: measuring.amdahl([0.5, 0.5], [2.0, 0.0]), "speedups"),
    (lambda: measuring.amdahl([0.5, 0.5], [INF, 1.0]), "speedups"),
    (lambda: measuring.amdahl([0.5, 0.5], [2.0]), "speedups"),
    (lambda: measuring.amdahl([], []), "shares"),
    (lambda: measuring.amdahl(None, [1.0]), "shares"),
    (lambda: measuring.share_needed(1.0, 2.0), "target"),
    (lambda: measuring.share_needed(1.5, NAN), "speedup"),
    (lambda: measuring.amdahl_table(-2.0), "kernel_speedup"),
    (lambda: measuring.amdahl_table(2.0, shares=[]), "shares"),
    (lambda: measuring.ChainSpeedups({}, {}), "eager"),
    (lambda: measuring.ChainSpeedups({"torch": M}, {"jax": M}), "compiled"),
    (lambda: measuring.ChainSpeedups({"torch": M}, {"torch": M}).own("mxnet"), "framework"),
    (lambda: measuring.variant_name("torch", "yes"), "compiled"),
    (lambda: measuring.variant_name(None, True), "framework"),
    (lambda: measuring.bend([1, 2], [M, M]), "measurements"),
    (lambda: measuring.bend([3, 2, 1], [M, M, M]), "sizes"),
    (lambda: measuring.bend([1, 2, NAN], [M, M, M]), "sizes"),
    (lambda: measuring.bend([1, 2, 3], [M, M, 1e-3]), "measurements"),
    (lambda: measuring.bends({}, {}), "series"),
    (lambda: measuring.HierarchySweep((), (), {}), "working_sets"),
    (lambda: measuring.HierarchySweep((2**14,), (NAN,), {}), "bandwidths"),
    (lambda: measuring.HierarchySweep((2**14,), (-1.0,), {}), "bandwidths"),
    (lambda: measuring.HierarchySweep((0,), (1e9,), {}), "working_sets"),
    (lambda: measuring.HierarchySweep((2**14, 2**15), (1e9,), {}), "bandwidths"),
    (lambda: SWEEP.level_of(-1), "working_set"),
    (lambda: SWEEP.dram_from(tolerance=0), "tolerance"),
    (lambda: measuring.default_working_sets(10), "largest"),
    (lambda: measuring.default_working_sets(2**20, step=1), "step"),
    (lambda: measuring.sweep_hierarchy([]), "working_sets"),
    (lambda: measuring.sweep_hierarchy([2**20], min_time=INF), "min_time"),
    (lambda: measuring.sweep_hierarchy([2**20], min_time=0), "min_time"),
    (lambda: measuring.theoretical_peak(cores=0), "cores"),
    (lambda: measuring.theoretical_peak(cores=2.5), "cores"),
    (lambda: measuring.matmul_libraries([]), "frameworks"),
    (lambda: measuring.matmul_libraries(["mxnet"]), "frameworks"),
    (lambda: measuring.libraries_table([]), "libraries"),
    (lambda: measuring.roofs_table({}), "machines"),
    (lambda: measuring.best_roof({}), "machines"),
    (lambda: measuring.best_roof({"torch": "fast"}), "machines"),
    (lambda: measuring.roofs_table({"torch": None}), "machines"),
    (lambda: measuring.probe_size_text(None), "size"),
    (lambda: measuring.matmul_workload("torch", 0), "n"),
    (lambda: measuring.matmul_workload("caffe", 8), "framework"),
    (lambda: measuring.dispatch_trap([], 8), "frameworks"),
    (lambda: measuring.chain_inputs(["torch"], 0), "size"),
    (lambda: measuring.chain_inputs(["torch"], 8, seed=-1), "seed"),
    (lambda: measuring.chain_runs({}), "inputs"),
    (lambda: measuring.overhead_sweep(["torch"], []), "sizes"),
    (lambda: measuring.overhead_sweep(["torch"], [0, 4]), "sizes"),
    (lambda: measuring.overhead_sweep(["torch"], [4], min_time=NAN), "min_time"),
    (lambda: measuring.chain_limits(None, 0.1, {"f": abs}), "x"),
    (lambda: measuring.chain_limits_text({}, M), "costs"),
    (lambda: measuring.eager_gap({}, {}, measuring.variant_name), "eager"),
    (lambda: measuring.eager_gap({}, {"torch": M}, None), "chain"),
    (lambda: measuring.host_copy_runs([], 8), "frameworks"),
    (lambda: measuring.torch_eager_one_thread(0), "size"),
    (lambda: measuring.slope_why([1, 2, 3], {}, {}, []), "labels"),
    (lambda: SWEEP.dram_plateau(points=0), "points"),
    (lambda: SWEEP.dram_points(multiple=0.5), "multiple"),
    (lambda: SWEEP.rate_at(0), "working_set"),
    (lambda: measuring.default_working_sets(2**20, beyond=-1), "beyond"),
    (lambda: measuring.default_working_sets(2**20, last_level_cache=0), "last_level_cache"),
    (lambda: measuring.default_working_sets(2**20, last_level_cache=2**20, memory=0), "memory"),
    (lambda: measuring.plots.hierarchy_plot(None), "sweep"),
    (lambda: measuring.plots.hierarchy_plot(SWEEP, roof=-1.0), "roof"),
    (lambda: measuring.plots.overhead_sweep_plot([], {}, {}), "sizes"),
    (lambda: measuring.exercises.measured_matmul_seconds(0), "n"),
    (lambda: measuring.steep_top_text([], {}), "sizes"),
    (lambda: measuring.steep_top_text([1, 2], {}), "found"),
    (lambda: measuring.steep_top_text([1, 2], {"a": None}, element_bytes=0), "element_bytes"),
    (lambda: measuring.warm_allocator(nbytes=1), "nbytes"),
    (lambda: measuring.on_fresh_pages(None), "fn"),
    (lambda: measuring.outputs_worth(abs, 1, output_bytes=0), "output_bytes"),
    (lambda: measuring.retime_dram(None, 2**20, 1e9), "sweep"),
    (lambda: measuring.retime_dram(SWEEP, 2**20, -1.0), "earlier"),
    (lambda: measuring.levels_text(None, None, 1e9, M, 2**20), "sweep"),
    (lambda: measuring.levels_text(SWEEP, None, 0.0, M, 2**20), "probe_rate"),
    (lambda: measuring.cache_roof_text(0, 1e-3, SWEEP, 1e9), "moved"),
    (lambda: measuring.cache_roof_text(2**20, 1e-3, None, 1e9), "sweep"),
    (lambda: measuring.matmuls_text({}, None), "matmuls"),
    (lambda: measuring.matmuls_text({"a": 1e9}, None), "peak"),
    (lambda: measuring.slope_budget([], {}, {}, SWEEP), "sizes"),
    (lambda: measuring.slope_budget([1, 2], {"a": None}, {}, None), "sweep"),
    (lambda: measuring.host_copy_text({}, 8), "host"),
    (lambda: measuring.chain_faults({}, {}), "inputs"),
]


@pytest.mark.parametrize(("call", "argument"), BAD_CALLS, ids=[f"{i:02d}-{a}" for i, (_, a) in enumerate(BAD_CALLS)])
def test_bad_input_is_refused_naming_the_argument(call, argument: str) -> None:
    rejects(call, argument)
