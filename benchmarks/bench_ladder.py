"""The PyTorch optimisation ladder of notebook 06 at the default (laptop) size: step time per rung.

Records, per rung, the median step time with its quartiles, the first step (compile) and the share of the
step spent waiting for data, plus each rung's speed-up over the eager fp32 baseline.
"""

from __future__ import annotations

import os


def run() -> dict:
    from course_utils import ladder, models, pipeline

    dataset = pipeline.SyntheticImages(1024, size=32, classes=10, work=8)
    workers = min(2, os.cpu_count() or 1)
    result, _ = ladder.torch_ladder(dataset, 64, lambda: models.torch_cnn(classes=10), workers=workers, epochs=2)
    return {
        "dataset": repr(dataset),
        "batch": 64,
        "rungs": {
            r.label: {
                "median_step_s": r.step_time,
                "p25_step_s": r.steps.p25,
                "p75_step_s": r.steps.p75,
                "first_step_s": r.first_step,
                "data_wait_share": r.wait_share,
                "speedup_over_eager": result.speedup(r.label),
            }
            for r in result.rungs
        },
    }
