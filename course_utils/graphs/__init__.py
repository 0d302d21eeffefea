"""Lesson package of notebook 01 (``01_dynamic_vs_static``): what a compiler sees that eager execution cannot. The
notebook writes the compile calls; these helpers measure, plot and explain what it compiled, one module per job."""

from course_utils.graphs import exercises as _exercises  # noqa: F401  (registers the exercise checkers)
from course_utils.graphs import findings
from course_utils.graphs.breakeven import (
    DYNAMIC,
    MARKED,
    REUSED,
    STATIC,
    against_baseline,
    cumulative_time,
    dynamic_costs,
    dynamic_table,
    eager_op_cost,
    eager_op_costs,
    overhead_model,
    overhead_table,
    timed_pair,
    torch_graph_count,
)
from course_utils.graphs.capture import (
    BUCKET,
    GraphBreaks,  # noqa: F401  (migrate.checklist's annotations)
    capture,
    capture_tf,
    count_compiles,
    fresh_function,
    side_by_side,
    strategy_counts,
    tf_retracing_warnings,
    torch_compile_log,
    torch_graph_breaks,
)
from course_utils.graphs.compile_time import (
    cache_worker,
    call_times,
    compile_cache_times,
    first_call_seconds,
    forward_step,
    stack,
)
from course_utils.graphs.fallback import compile_or_fallback, decisions_table, eagerly, max_abs_diff, ran_compiled
from course_utils.graphs.plots import compile_count_bars, crossover_plot, loss_difference_plot, overhead_plot
from course_utils.graphs.sweep import (
    GENERIC,
    OTHER,
    SWEEP,
    compare_harnesses,
    factor_table,
    harness_factors,
    harness_gap,
    harness_table,
    size_sweep,
)
from course_utils.graphs.training import (
    COMPILED_STEP,
    EAGER_STEP,
    parts_table,
    run_losses,
    step_medians,
    step_parts,
    step_table,
    step_times,
    trace_calls,
    trace_step,
    traced_table,
)

__all__ = [
    "against_baseline", "BUCKET", "cache_worker", "call_times", "capture", "capture_tf",
    "compare_harnesses", "compile_cache_times", "compile_count_bars", "compile_or_fallback", "COMPILED_STEP",
    "count_compiles", "crossover_plot", "cumulative_time", "decisions_table", "DYNAMIC", "dynamic_costs",
    "dynamic_table", "eager_op_cost", "eager_op_costs", "EAGER_STEP", "eagerly", "factor_table", "findings",
    "first_call_seconds", "forward_step", "fresh_function", "GENERIC", "harness_factors", "harness_gap",
    "harness_table", "loss_difference_plot", "MARKED", "max_abs_diff", "OTHER", "overhead_model",
    "overhead_plot", "overhead_table", "parts_table", "ran_compiled", "REUSED", "run_losses",
    "side_by_side", "size_sweep", "stack", "STATIC", "step_medians", "step_parts", "step_table", "step_times",
    "strategy_counts", "SWEEP", "tf_retracing_warnings", "timed_pair", "torch_compile_log", "torch_graph_breaks",
    "torch_graph_count", "trace_calls", "trace_step", "traced_table",
]
