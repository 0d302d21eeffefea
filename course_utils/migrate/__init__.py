"""Notebook 07, "Should we migrate?": the optimisation ladder split into no-migration wins and what the
migration buys, the framework table on a common baseline, the cost model fed only the migration's gain,
and the launch checklist run as code.

Files: ``ladder`` (rungs, the ladder's bands, ``MigrationGain``), ``rungs`` (measuring rungs, interleaved),
``torch_rungs`` (the PyTorch ladder, cold compiles, the mixed-precision agreement), ``replicate`` (the
compiled rung measured again in a fresh process), ``account`` (every compile speed-up of the run in one
table, with what differs), ``explain`` (sentences that follow the measured ladder), ``frameworks`` (the
framework table, XLA:CPU's kernels), ``cost`` (break-even with a band), ``checklist`` (five checks that can
fail), ``monitor`` (compile time and busy share read from profiler traces), ``plots`` (waterfall, payback,
widget), ``exercises`` (checkers of exercises 07.x).
"""

from course_utils.migrate import examples, exercises  # noqa: F401  (exercises registers the 07.x checkers)
from course_utils.migrate.assessing import assess
from course_utils.migrate.assessment import Assessment
from course_utils.migrate.account import CompileAccount, FixedBatch, compile_account, fixed_batch
from course_utils.migrate.checklist import Check, Checklist, compile_or_eager, compilers, run_checklist
from course_utils.migrate.cost import (
    SEED_COMPETITOR_HOURS,
    SEED_GPU_HOURS_EXAMPLE,
    SEED_JOB_HOURS,
    SEED_SPEND,
    SEED_UTILISATION,
    CostEstimate,
    compare_estimates,
    estimate,
    monthly_spend_for,
    months_text,
    seed_example,
)
from course_utils.migrate.decision import (
    DO_NOT_MIGRATE,
    MIGRATE,
    NOT_DECIDED,
    break_even_run,
    break_even_speedup,
    decide,
    processes_needed,
)
from course_utils.migrate.explain import cheap_story, outcome, outcomes, rung_sentence
from course_utils.migrate.frameworks import (
    FrameworkTable,
    compile_not_faster,
    framework_table,
    jax_step_factory,
    jax_step_hlo,
    outputs_agree,
    xla_cpu_kernels,
)
from course_utils.migrate.inputs import Input, Inputs, example_toml, read_config, typed
from course_utils.migrate.ladder import (
    DROPPED,
    MIGRATION,
    NO_MIGRATION,
    TWIN,
    Ladder,
    MigrationGain,
    Rung,
    build_ladder,
)
from course_utils.migrate.monitor import Monitoring, busy_share, compile_seconds, monitor
from course_utils.migrate.plots import explore, payback, waterfall
from course_utils.migrate.replicate import Replicate, replicate_gain, replicate_text
from course_utils.migrate.rungs import measure_rung, measure_rungs
from course_utils.migrate.torch_rungs import (
    AMP_LOSS_RTOL,
    AMP_UPDATE_RTOL,
    amp_agreement,
    autocast_dtype,
    compile_model,
    empty_compile_cache,
    make_loader,
    step_agreement,
    step_factory,
    torch_ladder,
    train_step,
    workers_label,
)

__all__ = [
    "AMP_LOSS_RTOL", "Assessment", "DO_NOT_MIGRATE", "Input", "Inputs", "MIGRATE", "NOT_DECIDED", "assess",
    "break_even_run", "break_even_speedup", "decide", "example_toml", "examples", "processes_needed", "read_config",
    "typed", "AMP_UPDATE_RTOL", "Check", "Checklist", "CompileAccount", "CostEstimate", "DROPPED",
    "FixedBatch", "FrameworkTable", "Ladder", "MIGRATION", "MigrationGain", "Monitoring", "NO_MIGRATION",
    "Replicate", "Rung", "SEED_COMPETITOR_HOURS", "SEED_GPU_HOURS_EXAMPLE", "SEED_JOB_HOURS", "SEED_SPEND",
    "SEED_UTILISATION", "TWIN", "amp_agreement", "autocast_dtype", "build_ladder", "busy_share", "cheap_story",
    "compare_estimates", "compile_account", "compile_model", "compile_not_faster", "compile_or_eager",
    "compile_seconds", "compilers", "empty_compile_cache", "estimate", "explore", "fixed_batch", "framework_table",
    "jax_step_factory", "jax_step_hlo", "make_loader", "measure_rung", "measure_rungs", "monitor",
    "monthly_spend_for", "months_text", "outcome", "outcomes", "outputs_agree", "payback", "replicate_gain",
    "replicate_text", "run_checklist", "rung_sentence", "seed_example", "step_agreement", "step_factory",
    "torch_ladder", "train_step", "waterfall", "workers_label", "xla_cpu_kernels",
]
