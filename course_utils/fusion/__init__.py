"""Notebook 02 (operator fusion): why a fused kernel is faster, and by how much it should be. The notebook writes the
compiled variants; this package counts bytes, supplies the chain, measures the vector roof, predicts, draws, checks."""

from course_utils.fusion import exercises as _exercises  # noqa: F401  (registers the exercise checkers)
from course_utils.fusion import findings
from course_utils.fusion.plots import prediction_plot, roof_bars, roofline_with_vector_roof, speedup_vs_size_plot
from course_utils.fusion.traffic import (
    attention_bytes,
    compare_to_prediction,
    compile_error,
    kernel_busy_share,
    torch_counted_flops,
    trace_kernels,
    trace_traffic,
)
from course_utils.fusion.variants import (
    EAGER,
    FUSED,
    INTO,
    chain,
    chain_with_callback_jax,
    chain_with_numpy_function_tf,
    legacy_tanh_torch,
    matmul_tolerance,
    table_tanh_np,
)
from course_utils.fusion.vector_roof import chain_roofs, measure_vector_roof, vector_roof_table

__all__ = [
    "EAGER", "FUSED", "INTO", "attention_bytes", "chain", "chain_roofs", "chain_with_callback_jax",
    "chain_with_numpy_function_tf", "compare_to_prediction", "compile_error", "findings", "kernel_busy_share",
    "legacy_tanh_torch", "matmul_tolerance", "measure_vector_roof", "prediction_plot", "roof_bars",
    "roofline_with_vector_roof", "speedup_vs_size_plot", "table_tanh_np", "torch_counted_flops", "trace_kernels",
    "trace_traffic", "vector_roof_table",
]
