"""Notebook 07, "Should we migrate?": the optimisation ladder split into no-migration wins and what the migration
buys, ``assess`` (the decision measured on your own model in fresh processes, priced with every input's source,
against the break-even speed-up), the cost model, the launch checklist run as code, and the framework table on a
common baseline.

Files: ``ladder`` (rungs, intervals over paired rounds, ``MigrationGain``), ``rungs`` (measuring rungs,
interleaved), ``torch_rungs`` (the PyTorch ladder, cold compiles, the mixed-precision agreement), ``assessing``
(``assess``: checks, fresh processes, report), ``assessment`` (what assess found), ``children`` (processes that
cannot outlive their parent), ``factories`` (the user's 'module:function' factories, probed), ``trainstep`` (the
step pieces shared with the worker), ``examples`` (two models to assess), ``inputs`` (cost inputs with their
sources, TOML), ``decision`` (break-even speed-up, the rule, processes to decide, break-even run length), ``cost``
(break-even with an interval), ``checklist`` (five checks that can fail), ``frameworks`` (the framework table),
``findings`` (every prediction and report finding, declared once), ``story`` (paragraphs arranging findings),
``report`` (the report's findings, report.json/md/html, the comparison tables, the lead's page), ``plots``,
``exercises`` (checkers of exercises 07.x).
"""

from course_utils.migrate import examples, exercises, findings, story  # noqa: F401  (exercises registers the 07.x checkers)
from course_utils.migrate.assessing import assess, command_line
from course_utils.migrate.assessment import Assessment
from course_utils.migrate.checklist import Check, Checklist, compilers, fall_back, run_checklist
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
    seed_shares,
)
from course_utils.migrate.decision import (
    DO_NOT_MIGRATE,
    MIGRATE,
    NOT_DECIDED,
    break_even_run,
    break_even_speedup,
    decide,
    gap,
    processes_needed,
    speed_text,
)
from course_utils.migrate.examples import cnn, cnn_batches, token_batches, transformer
from course_utils.migrate.frameworks import FrameworkTable, framework_table, jax_step_factory, outputs_agree
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
from course_utils.migrate.parity import PARITY_RTOL
from course_utils.migrate.plots import assess_figure, explore, payback, waterfall
from course_utils.migrate.report import compare_pricing, lead_page, money_sentence, pricing_cases, summary_rows
from course_utils.migrate.report import compare_table as compare_assessments
from course_utils.migrate.rungs import measure_rung, measure_rungs
from course_utils.migrate.story import frameworks_story, ladder_story
from course_utils.migrate.torch_rungs import (
    AMP_LOSS_RTOL,
    AMP_UPDATE_RTOL,
    amp_agreement,
    autocast_dtype,
    make_loader,
    step_agreement,
    step_factory,
    torch_ladder,
    train_step,
    workers_label,
)

__all__ = [
    "cnn", "cnn_batches", "frameworks_story", "ladder_story", "speed_text", "token_batches", "transformer",
    "AMP_LOSS_RTOL", "AMP_UPDATE_RTOL", "Assessment", "Check", "Checklist", "CostEstimate", "DO_NOT_MIGRATE",
    "DROPPED", "FrameworkTable", "Input", "Inputs", "Ladder", "MIGRATE", "MIGRATION", "MigrationGain", "NOT_DECIDED",
    "NO_MIGRATION", "PARITY_RTOL", "Rung", "SEED_COMPETITOR_HOURS", "SEED_GPU_HOURS_EXAMPLE", "SEED_JOB_HOURS",
    "SEED_SPEND", "SEED_UTILISATION", "TWIN", "amp_agreement", "assess", "assess_figure", "autocast_dtype",
    "break_even_run", "break_even_speedup", "build_ladder", "command_line", "compare_assessments",
    "compare_estimates", "compare_pricing", "compilers", "decide", "estimate", "example_toml", "examples", "explore",
    "fall_back", "findings", "framework_table", "gap", "jax_step_factory", "lead_page", "make_loader",
    "measure_rung", "measure_rungs", "money_sentence", "monthly_spend_for", "months_text", "outputs_agree",
    "payback", "pricing_cases", "processes_needed", "read_config", "run_checklist", "seed_example", "seed_shares",
    "step_agreement", "step_factory", "story", "summary_rows", "torch_ladder", "train_step", "typed", "waterfall",
    "workers_label",
]
