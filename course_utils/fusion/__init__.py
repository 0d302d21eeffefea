"""Notebook 02 (operator fusion): why a fused kernel is faster, and by how much it should be.

- ``traffic``: the bytes and FLOPs an op chain moves unfused and fused (``trace_traffic``), the roofline time
  they predict beside measured times (``compare_to_prediction``), FlopCounterMode's count (``torch_counted_flops``);
- ``readers``: the code that counts fusions: Inductor's generated code (``capture_inductor_code``,
  ``InductorCode``), XLA's optimized HLO from JAX and TensorFlow (``jax_hlo``, ``tf_hlo``, ``hlo_summary``),
  XLA's cost analysis (``jax_cost``), kernels in a profiler trace (``trace_kernels``) and their busy time
  (``kernel_busy_share``), a compiler's refusal
  as a name (``compile_error``);
- ``variants``: the chain per framework, eager/compiled, into a reused buffer (``variant_calls``), timed in
  alternating rounds (``measure_variants``);
- ``vector_roof``: each framework's in-cache multiply-add and tanh rates and fixed call cost
  (``measure_vector_roof``), what limits a chain (``chain_roofs``: arithmetic, bytes, a fresh output) and its
  table (``vector_roof_table``);
- ``matmul``: the matmul roof as the best rate measured in the run (``best_matmul_roof``);
- ``sweep``: fused against eager across sizes, each size compiled fresh and static (``size_sweep``);
- ``custom_ops``: a legacy NumPy operator and its per-framework wrappers;
- ``explain``: the sentences the notebook generates from its numbers, every branch a run can take;
- ``plots``: the notebook's figures; ``exercises``: the checkers of exercises 02.1-02.3.

Graph breaks are counted by ``course_utils.graphs.torch_graph_breaks`` (notebook 01's package).
"""

from course_utils.fusion import exercises  # noqa: F401  (registers the checkers of 02.1-02.3)
from course_utils.fusion.custom_ops import (
    GRID,
    TABLE,
    chain_with_callback_jax,
    chain_with_numpy_function_tf,
    legacy_tanh_torch,
    table_tanh_np,
)
from course_utils.fusion.exercises import decomposed_tanh_error
from course_utils.fusion.explain import (
    copies_text,
    fast_tanh_report,
    fresh_sum_text,
    matmul_shares_text,
    small_call_text,
    working_set_text,
)
from course_utils.fusion.matmul import best_matmul_roof
from course_utils.fusion.plots import prediction_plot, roof_bars, roofline_with_vector_roof, speedup_vs_size_plot
from course_utils.fusion.readers import compile_error, kernel_busy_share, trace_kernels
from course_utils.fusion.sweep import SizeSweep, size_sweep
from course_utils.fusion.traffic import (
    OpTraffic,
    PredictionTable,
    Traffic,
    VariantResult,
    compare_to_prediction,
    torch_counted_flops,
    trace_traffic,
)
from course_utils.fusion.variants import (
    EAGER,
    FUSED,
    INTO,
    chain,
    copy_into,
    identity,
    into_buffer,
    measure_variants,
    variant_calls,
)
from course_utils.fusion.vector_roof import (
    ChainRoof,
    VectorRoof,
    chain_roofs,
    measure_vector_roof,
    overlap_text,
    vector_roof_table,
)

__all__ = [
    "ChainRoof", "EAGER", "FUSED", "GRID", "INTO", "OpTraffic", "PredictionTable",
    "SizeSweep", "TABLE", "Traffic", "VariantResult", "VectorRoof", "best_matmul_roof",
    "chain", "chain_roofs", "chain_with_callback_jax", "chain_with_numpy_function_tf", "compare_to_prediction",
    "compile_error", "copies_text", "copy_into", "decomposed_tanh_error", "fast_tanh_report", "fresh_sum_text",
    "identity", "into_buffer", "kernel_busy_share", "legacy_tanh_torch",
    "matmul_shares_text", "measure_variants", "measure_vector_roof", "overlap_text", "prediction_plot", "roof_bars",
    "roofline_with_vector_roof", "size_sweep", "small_call_text", "speedup_vs_size_plot", "table_tanh_np",
    "torch_counted_flops", "trace_kernels", "trace_traffic", "variant_calls", "vector_roof_table", "working_set_text",
]
