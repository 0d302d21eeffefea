"""Notebook 00 (measuring without fooling yourself): the clock pair, the chains in rounds, the overhead sweep, the
memory hierarchy, the computed peak, the matmul's library, Amdahl, the predictions and the exercises' checkers."""

from course_utils.measuring import exercises as _exercises  # noqa: F401  (registers the exercise checkers)
from course_utils.measuring import findings
from course_utils.measuring.exercises import measured_matmul_seconds
from course_utils.measuring.hierarchy import default_working_sets, retime_dram, sweep_hierarchy
from course_utils.measuring.peak import libraries_table, matmul_libraries, theoretical_peak
from course_utils.measuring.plots import hierarchy_plot, overhead_sweep_plot
from course_utils.measuring.speedups import amdahl_table, cache_state, summary_rows, variant_name
from course_utils.measuring.workloads import (
    bends,
    bends_table,
    chain_inputs,
    chain_medians,
    clock_pairs,
    eager_gap,
    overhead_sweep,
    sweep_sizes,
    time_chains,
    warm_allocator,
)

__all__ = [
    "amdahl_table", "bends", "bends_table", "cache_state", "chain_inputs", "chain_medians", "clock_pairs",
    "default_working_sets", "eager_gap", "findings", "hierarchy_plot", "libraries_table", "matmul_libraries",
    "measured_matmul_seconds", "overhead_sweep", "overhead_sweep_plot", "retime_dram", "summary_rows",
    "sweep_hierarchy", "sweep_sizes", "theoretical_peak", "time_chains", "variant_name",
    "warm_allocator",
]
