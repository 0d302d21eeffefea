"""Notebook 07, "Should we migrate?": the ladder, ``assess`` (the gain on your own model in fresh processes, priced
against the break-even speed-up), the cost model, the launch checklist and the framework table."""

from course_utils.migrate import examples, exercises, findings  # noqa: F401  (exercises registers the 07.x checkers)
from course_utils.migrate.assessing import assess, command_line
from course_utils.migrate.checklist import run_checklist
from course_utils.migrate.cost import SEED_COMPETITOR_HOURS, estimate, monthly_spend_for, seed_example, seed_shares
from course_utils.migrate.decision import gap, speed_text
from course_utils.migrate.examples import cnn, cnn_batches, recipe, token_batches, transformer
from course_utils.migrate.frameworks import framework_table, outputs_agree
from course_utils.migrate.inputs import read_config, typed
from course_utils.migrate.ladder import MIGRATION
from course_utils.migrate.parity import PARITY_RTOL
from course_utils.migrate.plots import assess_figure, explore, payback, waterfall
from course_utils.migrate.report import (
    compare_pricing,
    compile_gains,
    lead_page,
    money_sentence,
    pricing_cases,
    saved_report,
    summary_rows,
)
from course_utils.migrate.report import compare_table as compare_assessments
from course_utils.migrate.story import frameworks_story, ladder_story
from course_utils.migrate.torch_rungs import (  # noqa: F401  (make_loader: tests/test_bad_input_40.py)
    amp_agreement,
    autocast_dtype,
    make_loader,
    skipped_rungs,
    step_agreement,
    torch_ladder,
    workers_label,
)

__all__ = [
    "MIGRATION", "PARITY_RTOL", "SEED_COMPETITOR_HOURS", "amp_agreement", "assess", "assess_figure", "autocast_dtype",
    "cnn", "cnn_batches", "command_line", "compare_assessments", "compare_pricing", "compile_gains", "estimate",
    "explore", "findings", "framework_table", "frameworks_story", "gap", "ladder_story", "lead_page",
    "money_sentence", "monthly_spend_for", "outputs_agree", "payback", "pricing_cases", "read_config", "recipe",
    "run_checklist", "saved_report", "seed_example", "seed_shares", "skipped_rungs", "speed_text", "step_agreement",
    "summary_rows", "token_batches", "torch_ladder", "transformer", "typed", "waterfall", "workers_label",
]
