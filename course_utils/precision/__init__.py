"""Notebook 03 (``03_mixed_precision``): what fp16 and bf16 buy, and what they break. The lesson's helpers,
one file per job; ``findings`` holds its predictions, ``exercises`` its checkers."""

from course_utils.precision import exercises as _exercises  # noqa: F401  (registers the exercise checkers)
from course_utils.precision import findings
from course_utils.precision.formats import (
    accumulation_error,
    adam_eps_share,
    format_table,
    overflow_exponent,
    round_to,
    scale_trace,
    simulate_cast,
    torch_activation_grads,
    torch_fp16_overflows,
    torch_weight_grads,
    underflow_stats,
)
from course_utils.precision.fp8 import (
    amax_history,
    cast_errors,
    compare_training,
    delayed_scaling,
    gpu_fp8_status,
    layer_tensors,
)
from course_utils.precision.plots import (
    accumulation_plot,
    amax_plot,
    bit_layout_plot,
    gradient_histogram_plot,
    lines_plot,
    loss_curves_plot,
    memory_stack_plot,
    rounding_error_plot,
    scale_trace_plot,
    throughput_plot,
)
from course_utils.precision.policies import dtype_summary, jax_dtypes, keras_dtypes, op_dtypes, watch_dtypes
from course_utils.precision.remat import (
    TRAINING_SCHEMES,
    block_weights,
    jax_remat,
    predicted_peak_with_remat,
    tf_recompute_same,
    torch_grouped_saved,
    torch_remat,
    training_memory,
)
from course_utils.precision.speed import (
    A100_PUBLISHED,
    CLAIM_BAND,
    STREAM_OPS,
    bf16_bound,
    cpu_vendor,
    library_verbose,
    matmul_check,
    matmul_shares,
    mlp_step_flops,
    step_checks,
    stream_point,
    torch_choices,
)
from course_utils.precision.training import FP32_STEP, SeedSpread, amp_step_label, step_medians, train, unscale_norms

__all__ = [
    "A100_PUBLISHED", "CLAIM_BAND", "FP32_STEP", "STREAM_OPS", "SeedSpread", "TRAINING_SCHEMES",
    "accumulation_error", "accumulation_plot", "adam_eps_share", "amax_history", "amax_plot", "amp_step_label",
    "bf16_bound", "bit_layout_plot", "block_weights", "cast_errors", "compare_training", "cpu_vendor",
    "delayed_scaling", "dtype_summary", "findings", "format_table", "gpu_fp8_status", "gradient_histogram_plot",
    "jax_dtypes", "jax_remat", "keras_dtypes", "layer_tensors", "library_verbose", "lines_plot", "loss_curves_plot",
    "matmul_check", "matmul_shares", "memory_stack_plot", "mlp_step_flops", "op_dtypes", "overflow_exponent",
    "predicted_peak_with_remat", "round_to", "rounding_error_plot", "scale_trace", "scale_trace_plot",
    "simulate_cast", "step_checks", "step_medians", "stream_point", "tf_recompute_same", "throughput_plot",
    "torch_activation_grads", "torch_choices", "torch_fp16_overflows", "torch_grouped_saved", "torch_remat",
    "torch_weight_grads", "train", "training_memory", "underflow_stats", "unscale_norms", "watch_dtypes",
]
