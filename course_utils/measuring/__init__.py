"""Notebook 00 (measuring without fooling yourself): the two clock readings of one call, the learner's chains timed
in alternating rounds (``ChainRuns``: every speed-up with its interval), the overhead sweep read off its curve, the
memory-hierarchy sweep with its levels read off its own cliffs (``cliffs``), the computed FP32 peak, the library
behind each framework's matmul, Amdahl's law, the notebook's predictions (``findings``: each declared once, scored
in the notebook), and the checkers of 00's exercises.

The machine's roofs, page-fault cost and compiled-call cost are core (``cu.machine.figures()``): measured once per
run and read by every notebook.
"""

from course_utils.measuring import cliffs, exercises, findings, limits, plots
from course_utils.measuring.allocator import on_fresh_pages, outputs_worth, tensor_bytes, warm_allocator
from course_utils.measuring.exercises import measured_matmul_seconds
from course_utils.measuring.hierarchy import (
    DramRetime,
    HierarchySweep,
    default_working_sets,
    retime_dram,
    size_cap,
    sweep_hierarchy,
)
from course_utils.measuring.kernels import KernelLibrary, libraries_table, matmul_libraries
from course_utils.measuring.limits import EagerGap, eager_gap
from course_utils.measuring.peak import PeakEstimate, clock_ghz, theoretical_peak
from course_utils.measuring.plots import hierarchy_plot, overhead_sweep_plot
from course_utils.measuring.regimes import Bend, bend, bends, bends_table
from course_utils.measuring.speedups import (
    ChainRuns,
    amdahl,
    amdahl_table,
    cache_state,
    variant_name,
)
from course_utils.measuring.summary import summary_rows
from course_utils.measuring.workloads import (
    chain_faults,
    chain_inputs,
    clock_pairs,
    overhead_sweep,
    sweep_sizes,
    time_chains,
    torch_device,
)

__all__ = [
    "hierarchy_plot", "measured_matmul_seconds", "overhead_sweep_plot",
    "amdahl", "amdahl_table", "Bend", "bend", "bends", "bends_table", "cache_state", "chain_faults", "chain_inputs",
    "ChainRuns", "cliffs", "clock_ghz", "clock_pairs", "default_working_sets", "DramRetime", "eager_gap", "EagerGap",
    "exercises", "findings", "HierarchySweep", "KernelLibrary", "libraries_table", "limits",
    "matmul_libraries", "on_fresh_pages", "outputs_worth", "overhead_sweep", "PeakEstimate", "plots", "retime_dram",
    "size_cap", "summary_rows", "sweep_hierarchy", "sweep_sizes", "tensor_bytes",
    "theoretical_peak", "time_chains", "torch_device", "variant_name", "warm_allocator",
]
