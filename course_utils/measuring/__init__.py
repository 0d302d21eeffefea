"""Notebook 00 (measuring without fooling yourself): the memory-hierarchy sweep, the computed FP32 peak, the
library behind each framework's matmul, the overhead sweep and its bend, speed-ups with named baselines and
Amdahl's law, and the checkers of 00's exercises.

The roof probes themselves are core (``course_utils.roofline``, ``course_utils.probes``): notebook 02 uses them too.
"""

from course_utils.measuring import exercises, limits, plots
from course_utils.measuring.allocator import on_fresh_pages, outputs_worth, warm_allocator
from course_utils.measuring.hierarchy import (
    DramRetime,
    HierarchySweep,
    default_working_sets,
    drawn_roof_text,
    levels_text,
    retime_dram,
    roof_verdict,
    sweep_hierarchy,
)
from course_utils.measuring.kernels import KernelLibrary, libraries_table, matmul_libraries
from course_utils.measuring.limits import EagerGap, cache_roof_text, chain_limits, chain_limits_text, eager_gap
from course_utils.measuring.peak import PeakEstimate, clock_ghz, matmuls_text, theoretical_peak
from course_utils.measuring.regimes import Bend, bend, bends, bends_table, slope_budget, slope_why, steep_top_text
from course_utils.measuring.roofs import (
    above_roof_text,
    best_roof,
    fresh_output_note,
    load_note,
    matmul_point_text,
    present_frameworks,
    probe_size_text,
    roofs_table,
)
from course_utils.measuring.speedups import (
    ChainSpeedups,
    amdahl,
    amdahl_table,
    cache_state,
    compile_phase_times,
    first_call_text,
    share_needed,
    variant_name,
)
from course_utils.measuring.workloads import (
    chain_faults,
    chain_inputs,
    chain_runs,
    dispatch_trap,
    host_copy_runs,
    host_copy_text,
    matmul_workload,
    overhead_sweep,
    torch_device,
    torch_eager_threads,
)

__all__ = [
    "above_roof_text", "amdahl", "amdahl_table", "Bend", "bend", "bends", "bends_table", "best_roof",
    "cache_roof_text", "cache_state", "chain_faults", "chain_inputs", "chain_limits", "chain_limits_text",
    "chain_runs", "ChainSpeedups", "clock_ghz", "compile_phase_times", "default_working_sets", "dispatch_trap",
    "DramRetime", "drawn_roof_text", "eager_gap", "EagerGap", "exercises", "first_call_text", "fresh_output_note",
    "HierarchySweep", "host_copy_runs", "host_copy_text", "KernelLibrary", "levels_text",
    "libraries_table", "limits", "load_note", "matmul_libraries", "matmul_point_text", "matmul_workload",
    "matmuls_text", "on_fresh_pages", "outputs_worth", "overhead_sweep", "PeakEstimate", "plots",
    "present_frameworks", "probe_size_text", "retime_dram", "roof_verdict", "roofs_table", "share_needed",
    "slope_budget", "slope_why", "steep_top_text", "sweep_hierarchy", "theoretical_peak", "torch_device",
    "torch_eager_threads", "variant_name", "warm_allocator",
]
