"""An ``Assessment`` assembled from made-up worker results (the JSON ``workers/assess_worker.py`` writes), through
the same code ``assess`` uses, without starting a process: for the story and report tests."""

from __future__ import annotations

from course_utils import migrate
from course_utils.migrate import assessing, assessment, examples


def worker_result(index: int, eager_s: float, compiled_s: float, *, drift: float = 0.0, breaks=(), recompiles=(),
                  graphs: int = 1, fallback_error: str | None = "BackendCompilerFailed: forced",
                  fallback_shift: float = 0.0, load: float = 0.5, steal: float | None = 0.0,
                  calibration: tuple[float, float] = (0.004, 0.0041)) -> dict:
    """One process's result: 5 rounds around the given step times, 13 losses, the fallback in the first process."""
    wiggle = (1.0, 1.01, 0.99, 1.005, 0.995)
    losses = [2.3 - 0.01 * i for i in range(13)]
    result = {
        "index": index, "device": "cpu", "threads": 2, "cache": {"fx_hits": 2 * (index > 0), "fx_misses": 0},
        "random": [], "matched": None,
        "load": {"start": [load, 0.5, 0.5], "end": [load + 0.1, 0.5, 0.5], "steal": steal,
                 "calibration": {"before": calibration[0], "after": calibration[1]}},
        "variants": {
            "eager": {"first_s": eager_s * 3, "round_step_s": [eager_s * w for w in wiggle], "losses": losses,
                      "peak_bytes": 4 << 20, "graph_breaks": [], "recompiles": [], "graphs": 0},
            "default": {"first_s": 20.0 if index == 0 else 2.0,
                        "round_step_s": [compiled_s * w for w in reversed(wiggle)],
                        "losses": [x * (1 + drift) for x in losses], "peak_bytes": 3 << 20,
                        "graph_breaks": list(breaks), "recompiles": list(recompiles), "graphs": graphs}},
    }
    if index == 0:
        result["fallback"] = {"error": fallback_error, "losses": [x + fallback_shift for x in losses[:10]],
                              "steps": 10}
    return result


def fake(speedups=(1.30, 1.32, 1.28), *, inputs=None, device="cpu", device_name="Test CPU", peak=1e11,
         flops=1e9, **kwargs) -> assessment.Assessment:
    """An Assessment whose processes ran eager at 10 ms and compiled at 10 ms / each of ``speedups``."""
    results = [worker_result(i, 0.010, 0.010 / s, **kwargs) for i, s in enumerate(speedups)]
    results[0]["roof"] = {"flops": peak, "dtype": "float32", "n": 1024, "repeats": 8, "threads": 2}
    return assessing._assemble(
        results, mode_list=["default"], skipped={}, amp=None, inputs=inputs or migrate.read_config(None),
        calls=assessing.calls(["default"], fullgraph=False, blocks=""),
        probe=examples.Probe(flops, 1234, "((4, 8) float32, (4,) int64)", 2.3), device=device,
        device_name=device_name, processes=len(speedups), steps=10, rounds=5,
        names=("mypkg.models:make_model", "mypkg.data:make_batches", None), seconds=42.0,
        command="python -m course_utils.migrate assess --model mypkg.models:make_model ...",
        started="2026-01-01T00:00:00+00:00")
