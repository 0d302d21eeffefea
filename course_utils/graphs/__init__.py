"""Lesson package of notebook 01 (``01_dynamic_vs_static``): what a compiler sees that eager execution cannot.

- ``capture``: the same function as an FX graph, a jaxpr and a tf.Graph, ops counted, side by side;
- ``recompiles``: compilations per shape, Dynamo's guards and recompiles logs, TF's retracing warning, and
  the one ``GraphBreaks`` (also used by notebooks 02 and 07);
- ``fallback``: the rollback plan (compile, check against eager, fall back) and the real eager switches;
- ``breakeven``: break-even call count, cold vs warm compile cache, the small-size per-call overhead model;
- ``training``: a whole SGD step compiled against the same program run eagerly;
- ``steptrace``: where PyTorch's step spends its time, eager and compiled, read from profiler traces;
- ``traced``: eager vs compiled dispatches per call, counted from profiler traces (``course_utils.profile``);
- ``harness``: the sweep's speed-up at notebook 00's size against 00's own harness, each factor timed apart;
- ``dynamic``: what ``dynamic=True`` and ``mark_dynamic`` cost per call against a fresh static graph, and why
  (the generated code's parallel regions, one thread);
- ``plots``: the lesson's figures; ``exercises``: the checkers of its exercises.
"""

from course_utils.graphs import exercises
from course_utils.graphs.breakeven import (
    CHAIN_MIX,
    COMPILED_PROBE,
    PROBE,
    OverheadModel,
    beat_text,
    break_even,
    break_even_calls,
    busy_note,
    call_costs,
    compile_again,
    compile_cache_times,
    cumulative_time,
    eager_op_cost,
    first_compile_text,
    overhead_model,
    overhead_table,
    probe_beside_chain,
    size_sweep,
    timed_pair,
    xla_gap_text,
)
from course_utils.graphs.capture import (
    Capture,
    GraphRecorder,
    SideBySide,
    capture,
    capture_jax,
    capture_tf,
    capture_torch,
    fresh_function,
    side_by_side,
)
from course_utils.graphs.dynamic import (
    DYNAMIC,
    MARKED,
    REUSED,
    STATIC,
    ThreadCheck,
    Variant,
    dynamic_costs,
    dynamic_summary,
    dynamic_table,
    dynamic_text,
    static_again_text,
    thread_check,
    thread_text,
    torch_graph_count,
)
from course_utils.graphs.fallback import (
    EAGER_SWITCHES,
    CompileDecision,
    compile_or_fallback,
    decisions_table,
    eager_mode,
    max_abs_diff,
    ran_compiled,
)
from course_utils.graphs.harness import (
    Harness,
    Harnesses,
    compare_harnesses,
    harness_table,
    harness_text,
    harness_why,
    measure_harness,
)
from course_utils.graphs.plots import compile_count_bars, crossover_plot, loss_difference_plot, overhead_plot
from course_utils.graphs.recompiles import (
    BUCKET,
    CompileLog,
    GraphBreaks,
    count_compiles,
    strategy_counts,
    tf_retracing_warnings,
    torch_compile_log,
    torch_graph_breaks,
)
from course_utils.graphs.steptrace import StepTrace, step_trace_text, trace_step
from course_utils.graphs.traced import DISPATCH_EVENTS, TracedCalls, trace_calls, traced_table
from course_utils.graphs.training import (
    LossRun,
    StepPair,
    batch_for,
    run_losses,
    step_pair,
    step_parts,
    step_parts_text,
    step_table,
)

__all__ = [
    "BUCKET", "CHAIN_MIX", "COMPILED_PROBE", "Capture", "CompileDecision", "CompileLog", "DISPATCH_EVENTS", "DYNAMIC",
    "EAGER_SWITCHES", "GraphBreaks", "GraphRecorder", "Harness", "Harnesses", "LossRun", "MARKED", "OverheadModel",
    "PROBE", "REUSED", "STATIC", "SideBySide", "StepPair", "StepTrace", "ThreadCheck", "TracedCalls", "Variant",
    "batch_for", "beat_text", "break_even", "break_even_calls", "busy_note", "call_costs", "capture", "capture_jax",
    "capture_tf",
    "capture_torch", "compare_harnesses", "compile_again", "compile_cache_times", "compile_count_bars",
    "compile_or_fallback", "count_compiles", "crossover_plot", "cumulative_time", "decisions_table", "dynamic_costs",
    "dynamic_summary", "dynamic_table", "dynamic_text", "eager_mode", "eager_op_cost", "exercises",
    "first_compile_text", "fresh_function", "harness_table", "harness_text", "harness_why",
    "loss_difference_plot", "max_abs_diff", "measure_harness", "overhead_model", "overhead_plot", "overhead_table",
    "probe_beside_chain", "ran_compiled", "run_losses", "side_by_side", "size_sweep", "static_again_text",
    "step_pair", "step_parts", "step_parts_text", "step_table", "step_trace_text", "strategy_counts",
    "tf_retracing_warnings", "thread_check", "thread_text", "timed_pair", "torch_compile_log", "torch_graph_breaks",
    "torch_graph_count", "trace_calls", "trace_step", "traced_table", "xla_gap_text",
]
