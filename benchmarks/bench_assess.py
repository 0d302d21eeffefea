"""``assess`` on the course CNN: 5 fresh processes x 50 steps (issue 29 asks for under 5 minutes on 2 cores at ci
size). Records the wall time, the load average around it, the gain with its interval across processes, the
break-even speed-up and the decision. On a CPU the size is ci unless COURSE_SIZE says otherwise; on a GPU, the
active size."""

from __future__ import annotations

import os
import tempfile


def run() -> dict:
    import time

    from course_utils import env, migrate

    before = os.environ.get("COURSE_SIZE")
    if before is None and env.accelerator() == "cpu":
        os.environ["COURSE_SIZE"] = "ci"
    try:
        size = env.size_name()
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bench-assess-") as tmp:
            found = migrate.assess(migrate.examples.cnn, migrate.examples.cnn_batches, processes=5, steps=50,
                                   out=os.path.join(tmp, "cnn"), progress=False)
        seconds = time.perf_counter() - start
    finally:
        if before is None:
            os.environ.pop("COURSE_SIZE", None)
    mode = found.deciding
    return {
        "model": "course CNN", "size": size, "processes": 5, "steps": 50,
        "assess_seconds": seconds, "load_average_before": load,
        "load_average_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "speedup": {"median": mode.speedup.ratio, "low": mode.speedup.low, "high": mode.speedup.high},
        "break_even_speedup": found.pricing.break_even, "decision": found.decision.outcome,
        "compile_seconds": {"cold": mode.compile_cold_s, "warm": mode.compile_warm_s},
    }
