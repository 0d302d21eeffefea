"""Notebook 00 (measuring without fooling yourself): the memory-hierarchy sweep, the computed FP32 peak, the
library behind each framework's matmul, the overhead sweep and its bend, speed-ups with named baselines and
Amdahl's law, and the checkers of 00's exercises.

The roof probes themselves are core (``course_utils.roofline``, ``course_utils.probes``): notebook 02 uses them too.
"""

from course_utils.measuring import exercises, plots
from course_utils.measuring.hierarchy import HierarchySweep, default_working_sets, sweep_hierarchy
from course_utils.measuring.kernels import KernelLibrary, libraries_table, matmul_libraries
from course_utils.measuring.peak import PeakEstimate, clock_ghz, theoretical_peak
from course_utils.measuring.regimes import Bend, bend, bends, bends_table, steep_top_text
from course_utils.measuring.roofs import (
    above_roof_text,
    best_roof,
    elementwise_costs,
    load_note,
    present_frameworks,
    probe_size_text,
    roofs_table,
)
from course_utils.measuring.speedups import (
    ChainSpeedups,
    amdahl,
    amdahl_table,
    cache_state,
    inductor_cache_counts,
    share_needed,
    variant_name,
)
from course_utils.measuring.workloads import (
    chain_inputs,
    chain_runs,
    dispatch_trap,
    matmul_workload,
    overhead_sweep,
    torch_device,
)

__all__ = [
    "Bend", "ChainSpeedups", "HierarchySweep", "KernelLibrary", "PeakEstimate", "above_roof_text", "amdahl",
    "amdahl_table", "bend", "bends", "bends_table", "best_roof", "cache_state", "chain_inputs", "chain_runs",
    "clock_ghz", "default_working_sets", "dispatch_trap", "elementwise_costs", "exercises",
    "inductor_cache_counts", "libraries_table", "load_note", "matmul_libraries", "matmul_workload",
    "overhead_sweep", "plots", "present_frameworks", "probe_size_text", "roofs_table", "share_needed",
    "steep_top_text", "sweep_hierarchy", "theoretical_peak", "torch_device", "variant_name",
]
