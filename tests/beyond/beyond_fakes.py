"""Launch results shaped like notebook 06's workers', for the tests of course_utils.beyond."""

from __future__ import annotations

import numpy as np

from course_utils.distributed.launcher import LaunchResult

P = 1000


def fake(uneven: bool = False, trace: tuple[str, ...] = ("c10d::_reduce_scatter_base_",)) -> LaunchResult:
    """Records shaped like fsdp_train.py's: 16/12/8 B per parameter, steps of 1, 2 and 3 ms in 3 rounds."""
    held = {"ddp": {"params": 4 * P, "grads": 4 * P, "optimizer": 8 * P},
            "zero1": {"params": 4 * P, "grads": 4 * P, "optimizer": 4 * P},
            "fsdp2": {"params": 2 * P, "grads": 2 * P, "optimizer": 4 * P}}
    calls = {"ddp": {"allreduce": 1}, "zero1": {"allreduce": 1, "broadcast": 2},
             "fsdp2": {"allgather": 4, "reduce_scatter": 2}}
    nbytes = {"ddp": {"allreduce": 4 * P}, "zero1": {"allreduce": 4 * P, "broadcast": 4 * P},
              "fsdp2": {"allgather": 8 * P, "reduce_scatter": 4 * P}}
    comm = {"ddp": {"busy": 2e-4, "step": 1e-3, "events": {"gloo:all_reduce": 1.0}},
            "zero1": {"busy": 3e-4, "step": 2e-3, "events": {"gloo:all_reduce": 1.0, "gloo:broadcast": 2.0}},
            "fsdp2": {"busy": 6e-4, "step": 3e-3, "events": {"gloo:all_gather": 4.0, "gloo:all_reduce": 2.0}}}
    records = {r: [{"kind": k, "world": 2, "params": P, "held": held[k], "calls": calls[k], "comm_bytes": nbytes[k],
                    "round_times": [[0.001 * (i + 1)] * 2, [0.001 * (i + 1) * 1.01] * 2, [0.001 * (i + 1)] * 2],
                    "comm_seconds": comm[k], "default_bucket_bytes": 4 * P,
                    "phase_times": {"zero_grad": [1e-5] * 3, "forward_backward": [5e-4] * 3,
                                    "optimizer_step": [1e-4] * 3}} for i, k in enumerate(held)]
               + [{"kind": "compute", "round_times": [[5e-4, 5e-4], [5e-4], [5e-4]]},
                  {"kind": "collectives", "nbytes": 4 * P, "reduce_scatter_trace": list(trace),
                   "round_times": {"allreduce": [[2e-4], [2.1e-4]], "allgather": [[1e-4], [1e-4]],
                                   "reducescatter": [[1e-4], [1.05e-4]]}}] for r in (0, 1)}
    if uneven:
        records[1][2]["held"] = {"params": 2 * P, "grads": 2 * P, "optimizer": 2 * P}
    w = np.arange(P, dtype=np.float32)
    arrays = {k: {0: {"weights": w}, 1: {"weights": w}} for k in held}
    return LaunchResult("fsdp_train.py", 2, [], 1.0, [], records, arrays)
