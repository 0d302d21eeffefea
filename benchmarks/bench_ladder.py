"""The PyTorch optimisation ladder of notebook 07 at the default (laptop) size: time per sample per rung.

Records, per rung, whether it needs the migration, the median step time with its quartiles, the first step
(compile) and the share of the step spent waiting for data, each rung's per-sample speed-up over the eager
fp32 baseline, and what the migration alone buys (compile on top of the no-migration wins) with its band.
"""

from __future__ import annotations

import os


def run() -> dict:
    from course_utils import migrate, models, pipeline

    dataset = pipeline.SyntheticImages(1536, size=32, classes=10, work=8)
    workers = min(2, os.cpu_count() or 1)
    result, _ = migrate.torch_ladder(dataset, 32, lambda: models.torch_cnn(classes=10), workers=workers,
                                     rounds=3, final_rounds=6)
    gain = result.migration_gain()
    return {
        "dataset": repr(dataset),
        "batch": 32,
        "rungs": {
            r.label: {
                "needs": r.kind,
                "batch": r.batch_size,
                "median_step_s": r.step_time,
                "p25_step_s": r.steps.p25,
                "p75_step_s": r.steps.p75,
                "first_step_s": r.first_step,
                "data_wait_share": r.wait_share,
                "speedup_per_sample_over_eager": result.speedup(r.label),
            }
            for r in (*result.rungs, *result.extra)
        },
        "migration_gain": {"median": gain.median, "low": gain.low, "high": gain.high},
        "no_migration_gain": result.no_migration_gain(),
    }
