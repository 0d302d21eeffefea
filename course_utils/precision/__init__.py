"""Notebook 03 (``03_mixed_precision``): what fp16 and bf16 buy, and what they break.

One file per job: ``formats`` (bit layouts, range, rounding, long sums), ``scaling`` (fp16 underflow and loss
scaling), ``training`` (the AMP loop with and without a GradScaler, over seeds), ``policies`` (torch autocast,
Keras dtype policies, an explicit JAX policy, dtypes read back), ``speed`` (FLOP/s and bytes per format),
``speed_text`` (the speed section's sentences, generated from the run's numbers), ``memory`` (bytes per parameter
per training scheme; the peak, saved-tensor and held-state measurements it shows come from the core
``course_utils.memory``), ``remat`` (activation checkpointing in each framework), ``exercises`` (the checkers)
and ``plots``.
"""

from course_utils.memory import (  # core; re-exported because notebook 03 calls them as cu.precision.*
    compiled_stats,
    jax_compiled_stats,
    jax_memory,
    peak_rss_delta,
    rss_peak_supported,
    saved_activation_bytes,
    saved_for_backward,
    torch_peak_bytes,
    torch_state_bytes,
)
from course_utils.precision import exercises
from course_utils.precision.formats import (
    FORMATS,
    SHORT,
    FloatFormat,
    FormatTable,
    accumulation_error,
    float_format,
    format_table,
    kahan_sum_bf16,
    numpy_dtype,
    relative_rounding_error,
    round_to,
)
from course_utils.precision.memory import TRAINING_SCHEMES, training_memory
from course_utils.precision.plots import (
    accumulation_plot,
    before_after_plot,
    bit_layout_plot,
    gradient_histogram_plot,
    lines_plot,
    loss_curves_plot,
    memory_stack_plot,
    rounding_error_plot,
    scale_trace_plot,
    throughput_plot,
)
from course_utils.precision.policies import (
    KERAS_POLICIES,
    Policy,
    dtype_summary,
    jax_activation_dtypes,
    jax_dtypes,
    keras_compile_wraps_optimizer,
    keras_dtypes,
    torch_dtypes,
)
from course_utils.precision.remat import (
    Remat,
    block_weights,
    jax_remat,
    predicted_peak_with_remat,
    temp_change_text,
    tf_recompute_same,
    torch_grouped_saved,
    torch_live_peak,
    torch_remat,
)
from course_utils.precision.scaling import (
    UnderflowStats,
    adam_eps_share,
    overflow_exponent,
    simulate_cast,
    torch_activation_grads,
    torch_fp16_overflows,
    torch_weight_grads,
    underflow_stats,
)
from course_utils.precision.speed import (
    A100_PUBLISHED,
    STREAM_OPS,
    bandwidth_ratio,
    copy_times,
    jax_dot_dtypes,
    matmul_times,
    stream_point,
    stream_times,
    torch_onednn_bf16,
)
from course_utils.precision.speed_text import (
    CLAIM_BAND,
    bandwidth_text,
    bf16_unit_ratio,
    bf16_units,
    bf16_units_text,
    claim_outcome,
    claim_text,
    fp32_share_text,
    matmul_share_text,
    matmul_shares,
    mlp_step_flops,
    ratio_band,
    roof_share_text,
    step_outcome,
    step_reason,
)
from course_utils.precision.training import MODES, SeedSpread, TrainRun, amp_train, seed_spread, unscale_norms

__all__ = [
    "A100_PUBLISHED", "FORMATS", "KERAS_POLICIES", "MODES", "SHORT", "TRAINING_SCHEMES", "accumulation_error",
    "accumulation_plot", "amp_train", "before_after_plot", "bit_layout_plot", "block_weights", "compiled_stats",
    "copy_times", "dtype_summary", "exercises", "float_format", "FloatFormat", "format_table", "FormatTable",
    "gradient_histogram_plot", "jax_activation_dtypes", "jax_compiled_stats", "jax_dtypes", "jax_memory",
    "jax_remat", "kahan_sum_bf16", "keras_compile_wraps_optimizer", "keras_dtypes", "lines_plot",
    "loss_curves_plot", "matmul_times", "memory_stack_plot", "numpy_dtype", "overflow_exponent", "peak_rss_delta",
    "Policy", "predicted_peak_with_remat", "relative_rounding_error", "Remat", "round_to", "rounding_error_plot",
    "rss_peak_supported", "saved_activation_bytes", "saved_for_backward", "scale_trace_plot", "seed_spread",
    "SeedSpread", "simulate_cast", "tf_recompute_same", "throughput_plot", "torch_activation_grads", "torch_dtypes",
    "torch_fp16_overflows", "torch_grouped_saved", "torch_peak_bytes", "torch_remat", "torch_state_bytes",
    "training_memory", "TrainRun", "underflow_stats", "UnderflowStats", "unscale_norms", "STREAM_OPS",
    "bandwidth_ratio", "jax_dot_dtypes", "stream_point", "stream_times", "torch_live_peak", "adam_eps_share",
    "torch_weight_grads", "torch_onednn_bf16", "CLAIM_BAND", "bandwidth_text", "bf16_unit_ratio", "bf16_units",
    "bf16_units_text", "claim_outcome", "claim_text", "fp32_share_text", "matmul_share_text", "matmul_shares",
    "mlp_step_flops", "ratio_band", "roof_share_text", "step_outcome", "step_reason", "temp_change_text",
]
