"""Notebook 07, "Should we migrate?": the optimisation ladder split into no-migration wins and what the
migration buys, the framework table on a common baseline, the cost model fed only the migration's gain,
and the launch checklist run as code.

Files: ``ladder`` (rungs, ``MigrationGain``), ``torch_rungs`` (the PyTorch ladder), ``frameworks`` (the
framework table, XLA:CPU's kernels), ``cost`` (break-even with a band), ``checklist`` (five checks that can
fail), ``monitor`` (compile time and busy share read from profiler traces), ``plots`` (waterfall, payback,
widget), ``exercises`` (checkers of exercises 07.x).
"""

from course_utils.migrate import exercises  # noqa: F401  (registers the 07.x checkers)
from course_utils.migrate.checklist import Check, Checklist, compile_or_eager, compilers, run_checklist
from course_utils.migrate.cost import CostEstimate, estimate, monthly_spend_for, seed_example
from course_utils.migrate.frameworks import (
    FrameworkTable,
    framework_table,
    jax_step_factory,
    jax_step_hlo,
    outputs_agree,
    xla_cpu_kernels,
)
from course_utils.migrate.ladder import (
    MIGRATION,
    NO_MIGRATION,
    Ladder,
    MigrationGain,
    Rung,
    build_ladder,
    measure_rung,
    measure_rungs,
)
from course_utils.migrate.monitor import Monitoring, busy_share, compile_seconds, monitor
from course_utils.migrate.plots import explore, payback, waterfall
from course_utils.migrate.torch_rungs import (
    autocast_dtype,
    compile_model,
    make_loader,
    peak_bytes,
    step_agreement,
    step_factory,
    torch_ladder,
    train_step,
)

__all__ = [
    "MIGRATION", "NO_MIGRATION", "Check", "Checklist", "CostEstimate", "FrameworkTable", "Ladder",
    "MigrationGain", "Monitoring", "Rung", "autocast_dtype", "build_ladder", "busy_share", "compile_model",
    "compile_or_eager", "compile_seconds", "compilers", "estimate", "explore", "framework_table",
    "jax_step_factory", "jax_step_hlo", "make_loader", "measure_rung", "measure_rungs", "monitor",
    "monthly_spend_for", "outputs_agree", "payback", "peak_bytes", "run_checklist", "seed_example",
    "step_agreement", "step_factory", "torch_ladder", "train_step", "waterfall", "xla_cpu_kernels",
]
