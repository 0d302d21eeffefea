"""The PyTorch optimisation ladder of notebook 07 at the default (laptop) size: time per sample per rung.

As in the notebook, the model computes on one thread (on a CPU) and the loader gets every other core
(``pipeline.data_cores``). Records, per rung, whether it needs the migration, the median step time with its
quartiles and its compute part, the first step (the compile-first rung's is a cold compile) and the share of
the step spent waiting for data, each rung's per-sample speed-up over the eager fp32 baseline, and what the
migration alone buys (compile on top of the no-migration wins) with its band.
"""

from __future__ import annotations


def run() -> dict:
    import torch

    from course_utils import migrate, models, pipeline
    from course_utils.migrate import torch_rungs

    dataset = pipeline.SyntheticImages(1024, size=64, classes=10, work=2)
    workers = pipeline.data_cores()
    device = torch.device("cpu")
    amp_dtype = migrate.autocast_dtype(device)
    setups = {"eager fp32": dict(batch=32, workers=0, pin=False, amp=None)}  # the rungs as notebook 07 writes them
    rung = setups[migrate.workers_label(workers)] = dict(setups["eager fp32"], workers=workers)
    if amp_dtype is not None:
        rung = setups[f"+ autocast {str(amp_dtype).split('.')[-1]}"] = dict(rung, amp=amp_dtype)
    setups["+ batch 64"] = dict(rung, batch=64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result, _ = migrate.torch_ladder(
            setups, lambda s: torch_rungs.make_loader(dataset, s["batch"], s["workers"], s["pin"]),
            lambda m, s: torch_rungs.train_step(m, s["amp"]), lambda: models.torch_cnn(classes=10),
            compiler=lambda m: torch.compile(m, dynamic=False), skipped=migrate.skipped_rungs(device, amp_dtype),
            rounds=4, final_rounds=6)
    finally:
        torch.set_num_threads(threads)
    gain = result.migration_gain()
    return {
        "dataset": repr(dataset),
        "batch": 32,
        "loader_workers": workers,
        "cold_compile_s": result["torch.compile on the baseline"].compile_s,
        "rungs": {
            r.label: {
                "needs": r.kind,
                "batch": r.batch_size,
                "median_step_s": r.step_time,
                "median_compute_s": r.compute_time,
                "p25_step_s": r.steps.p25,
                "p75_step_s": r.steps.p75,
                "first_step_s": r.first_step,
                "data_wait_share": r.wait_share,
                "speedup_per_sample_over_eager": result.speedup(r.label),
                **({} if r is result.baseline else
                   {"speedup_per_sample_over_previous": result.interval(r.label).ratio,
                    "interval_over_previous": [result.interval(r.label).low, result.interval(r.label).high],
                    "note": r.note}),
            }
            for r in (*result.rungs, *result.extra)
        },
        "migration_gain": {"median": gain.median, "low": gain.low, "high": gain.high},
        "no_migration_gain": result.no_migration_gain(),
    }
