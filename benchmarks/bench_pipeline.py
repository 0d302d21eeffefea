"""Input pipeline: utilisation and steady step time before/after, per framework, plus worker start-up costs.

Before: batches made in the training loop. After: DataLoader workers (torch), tf.data in TF ops with parallel map +
prefetch (TensorFlow; the per-sample numpy_function pipeline is recorded beside it), a prefetching thread (JAX).
Every NumPy-made variant must yield the same batches (checked here too). The speed observations the unit tests
no longer make ("prefetch hides the wait") live here: ``utilisation_gain`` per framework.
Run alone: ``python benchmarks/run_all.py --only pipeline``.
"""

from __future__ import annotations

import multiprocessing
import os

from course_utils import pipeline
from course_utils.pipeline.dataset import fingerprint

STEPS, BATCH, SIZE, HIDDEN = 32, 32, 64, 512


def _torch(data: pipeline.SyntheticImages, step) -> dict:
    from torch.utils.data import DataLoader

    context = pipeline.worker_context()
    forkserver = pipeline.start_forkserver()
    runs = {}
    for workers in pipeline.worker_counts():
        kwargs = {"num_workers": workers, "multiprocessing_context": context} if workers else {}
        runs[workers] = pipeline.run_loop(DataLoader(data, batch_size=BATCH, **kwargs), step,
                                          label=f"torch {workers} workers")
    spawn = pipeline.run_loop(DataLoader(data, batch_size=BATCH, num_workers=1,
                                         multiprocessing_context=multiprocessing.get_context("spawn")),
                              step, label="torch 1 worker spawn")
    best = min(runs, key=lambda w: runs[w].step_time)
    return {
        "before": runs[0], "after": runs[best],
        "extra": {
            "best_num_workers": best,
            "step_time_per_workers": {str(w): t.step_time for w, t in runs.items()},
            "utilisation_per_workers": {str(w): t.utilisation for w, t in runs.items()},
            "forkserver_start_seconds": forkserver,
            "forkserver_worker_startup_seconds": runs[1].startups[0],
            "spawn_worker_startup_seconds": spawn.startups[0],
            "leftover_workers": len(pipeline.worker_processes()),
        },
        "checked": [*runs.values(), spawn],
    }


def _tensorflow(data: pipeline.SyntheticImages, step) -> dict:
    """Before: TF ops, batch before map, nothing overlapped (tf.data's default rewrites off). After: + parallel map
    + prefetch. Beside them, the per-sample ``tf.numpy_function`` pipeline (tf.data's slow path) for its own cost."""
    import tensorflow as tf

    records = tf.data.Dataset.from_tensor_slices(data.records())
    decode_augment = pipeline.tf_decode_augment(data)
    no_rewrites = tf.data.Options()
    no_rewrites.experimental_optimization.apply_default_optimizations = False
    batched = records.batch(BATCH, drop_remainder=True)
    before = pipeline.run_loop(batched.map(decode_augment).with_options(no_rewrites), step,
                               label="tensorflow TF ops, vectorised")
    after = pipeline.run_loop(batched.map(decode_augment, num_parallel_calls=tf.data.AUTOTUNE)
                              .prefetch(tf.data.AUTOTUNE).with_options(no_rewrites), step,
                              label="tensorflow TF ops, vectorised + map(AUTOTUNE) + prefetch")
    numpy_function = pipeline.run_loop(pipeline.numpy_function_pipeline(data, BATCH), step,
                                       label="tensorflow numpy_function per sample")
    return {"before": before, "after": after,
            "extra": {"numpy_function_wait_seconds": numpy_function.wait_time,
                      "tf_ops_wait_seconds": before.wait_time},
            "checked": [numpy_function]}


def _jax(data: pipeline.SyntheticImages, step) -> dict:
    source = pipeline.NumpyBatches(data, BATCH)
    before = pipeline.run_loop(pipeline.InLoop(source), step, label="jax device_put in loop")
    after = pipeline.run_loop(pipeline.Prefetch(source, size=2), step, label="jax Prefetch(2)")
    return {"before": before, "after": after, "extra": {}, "checked": [before, after]}


def run() -> dict:
    """Utilisation and step time before/after for each installed framework (seconds, fractions)."""
    import numpy as np

    try:  # no-op on GPU/TPU; on CPU the model gets one core, data the rest
        limited = pipeline.limit_compute_threads(1)
    except RuntimeError:  # JAX was started by an earlier benchmark in this process: its threads stay as they are
        limited = {}
    data = pipeline.SyntheticImages(STEPS * BATCH, size=SIZE, work=4, seed=0)
    reference = [fingerprint(b) for b in pipeline.NumpyBatches(data, BATCH)]
    first = data.batch(range(BATCH))
    result: dict = {"cores": os.cpu_count(), "batch": BATCH, "steps": STEPS, "image_size": SIZE, "hidden": HIDDEN,
                    "compute_threads": limited, "sample_seconds": None}
    import time

    start = time.perf_counter()
    for i in range(64):
        data[i]
    result["sample_seconds"] = (time.perf_counter() - start) / 64
    runners = {"torch": _torch, "tensorflow": _tensorflow, "jax": _jax}
    steps, _ = pipeline.warm_steps((data.features, HIDDEN, data.classes), first)
    for framework, step in steps.items():
        out = runners[framework](data, step)
        identical = all(list(t.fingerprints) == reference for t in out["checked"])
        before, after = out["before"], out["after"]
        result[framework] = {
            "before": _summary(before), "after": _summary(after),
            "utilisation_before": before.utilisation, "utilisation_after": after.utilisation,
            "speedup": before.step_time / after.step_time, "identical_data": identical, **out["extra"],
        }
    result["utilisation_gain"] = {fw: result[fw]["utilisation_after"] - result[fw]["utilisation_before"]
                                  for fw in runners if fw in result}
    return json_ready(result, np)


def _summary(t: pipeline.Timeline) -> dict:
    return {"label": t.label, "steps": len(t.starts), "wait_seconds": t.wait_time, "compute_seconds": t.compute_time,
            "step_seconds": t.step_time, "utilisation": t.utilisation, "startups": list(t.startups)}


def json_ready(value, np):
    """Plain Python numbers all the way down."""
    if isinstance(value, dict):
        return {str(k): json_ready(v, np) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v, np) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
