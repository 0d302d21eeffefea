"""Every sentence notebook 04 tells about its run: one function per paragraph, each reading the stored verdict
(``v.status``) and the intervals' outcomes (``Speedup.outcome``) it is given, never deciding again what they
decided. Sections 1-4 (the loop, the trace, DataLoader workers) are here; the frameworks, the before/after
comparison and the seed's claim are in ``story_frameworks`` and re-exported.

A function whose section did not run here (its verdict "not tested": a framework missing) returns None: the
verdict already said so once, and the notebook shows nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from course_utils import display, intervals, timing, validate
from course_utils.pipeline.compare import ms
from course_utils.pipeline.loop import Timeline
from course_utils.pipeline.stall import Stalls
from course_utils.pipeline.story_frameworks import (
    LONGER,
    OUTCOME,
    before_after,
    grain,
    jax_prefetch,
    seed,
    tf_prefetch,
    tf_slow_path,
)

__all__ = ["before_after", "busy_share", "cores_rule", "grain", "jax_prefetch", "persistent", "queue_depth",
           "sample_cost", "seed", "start_methods", "tf_prefetch", "tf_slow_path", "trace_stall", "workers_compute",
           "workers_sweep"]

TRACED_NOTE = "a few steps each: whether a worker pays is decided in section 4, with an interval over rounds"


def _verdict(v: object) -> display.Verdict:
    return validate.instance("v", v, display.Verdict)


def _timeline(name: str, run: object) -> Timeline:
    return validate.instance(name, run, Timeline)


def _speedup(name: str, s: object) -> intervals.Speedup:
    return validate.instance(name, s, intervals.Speedup)


def _tested(v: object) -> None:
    if not _verdict(v).tested:
        raise ValueError(f"v must be a tested verdict (held or failed) for this paragraph; got {v.status!r}")


def sample_cost(v: display.Verdict, cost: Mapping[str, timing.Measurement], per_batch: intervals.Speedup,
                batch: int) -> display.Prose:
    """Section 1: what one sample, its decoding and one batch cost, and whether a batch is the sum of its samples."""
    _tested(v)
    validate.instance("cost", cost, Mapping)
    one, decode, whole = (validate.instance("cost", cost[k], timing.Measurement)
                          for k in ("one sample", "decode only", "one batch"))
    _speedup("per_batch", per_batch)
    batch = validate.number("batch", batch, low=1, integer=True)
    said = (f"Decode + augment of one sample took {ms(one.median)} of CPU time, decoding alone {ms(decode.median)}, "
            f"and a batch of {batch} {ms(whole.median)} (medians): a batch took {per_batch} one sample's time.")
    if v.held:
        return display.prose(said + f" The cost is per sample: a batch costs {batch} samples' CPU time before the "
                                    "model sees a single number. Whether that matters depends on how long the step "
                                    "computes: the next section measures both, step by step.")
    return display.prose(said + f" That interval lies outside {0.75 * batch:.0f}-{1.25 * batch:.0f} samples: a batch "
                                "is not simply the sum of its samples here. What else it costs (stacking the samples "
                                "into one array, Python's per-sample calls) is not measured apart in this run.")


def busy_share(v: display.Verdict, run: Timeline, batch: timing.Measurement) -> display.Prose:
    """Section 2: the wait and compute of the loop without workers, and what its busy share means."""
    _tested(v)
    _timeline("run", run)
    validate.instance("batch", batch, timing.Measurement)
    said = (f"Each step waited {ms(run.wait_time)} for its batch and computed for {ms(run.compute_time)} (means): "
            f"the accelerator was busy **{run.utilisation:.0%}** of the time.")
    if v.held:
        said += (" Nothing overlaps, so wait and compute add up, and the batch measured alone in section 1 "
                 f"({ms(batch.median)}) predicts the busy share within 10 points.")
    else:
        said += (f" The loop's wait is not the {ms(batch.median)} that the batch took alone (section 1): what the "
                 "DataLoader adds or saves (fetching samples one by one, collating NumPy into a torch tensor) is not "
                 "measured apart in this run.")
    return display.prose(said + " Grey in the timeline is time the accelerator had nothing to do.")


def trace_stall(v: display.Verdict, stalls: Sequence[Stalls], run: Timeline) -> display.Prose:
    """Section 3: the stall read from the trace alone, before and after one worker."""
    _tested(v)
    if isinstance(stalls, (str, bytes)) or not isinstance(stalls, Sequence) or len(stalls) != 2:
        raise TypeError("stalls must be the (without worker, with one worker) pair of Stalls")
    before, after = (validate.instance("stalls", s, Stalls) for s in stalls)
    _timeline("run", run)
    gap, gap1 = (sum(s.gaps) / len(s.gaps) for s in (before, after))
    said = (f"From the trace alone, the training thread sat idle {ms(gap)} between steps (mean; longest "
            f"{ms(max(before.gaps))}) and was busy {before.busy_share:.0%} of the time; `run_loop` had measured a "
            f"wait of {ms(run.wait_time)}.")
    if v.held:
        said += (" The two readings agree within 50%: a trace is enough to find a data stall in a job you did not "
                 "instrument.")
    else:
        said += (" They differ by more than 50%. The profiler adds overhead to every traced op (a candidate, not "
                 "measured apart here): compare gaps within one trace, not across tools.")
    return display.prose(said, f"The trace with one worker had gaps of {ms(gap1)} on average (busy "
                               f"{after.busy_share:.0%}), from {TRACED_NOTE}. Drop the saved `.json` files on "
                               "https://ui.perfetto.dev to browse them.")


def start_methods(v: display.Verdict, spawned: Timeline, forked: Timeline, server: float) -> display.Prose:
    """Section 4: what starting a worker costs with spawn and with forkserver."""
    _tested(v)
    _timeline("spawned", spawned)
    _timeline("forked", forked)
    server = validate.non_negative("server", server)
    said = (f"The first batch arrived {spawned.startups[0]:.2f} s after `iter()` with spawn and "
            f"{ms(forked.startups[0])} with forkserver, whose server had started once, in section 3, in "
            f"{server:.2f} s.")
    if v.held:
        return display.prose(said + " Spawn pays the imports (torch, the dataset's module) in every worker at every "
                                    "loader start; forkserver pays them once and then forks. `persistent_workers` "
                                    "(below) pays even the fork only once.")
    return display.prose(said + " The ratio stayed under 5x: the forkserver's first batch includes making that batch, "
                                "which spawn pays too, so the imports are a smaller share of spawn's start here.")


def _listed(found: Mapping[int, intervals.Speedup], words: Mapping[str, str]) -> str:
    return "; ".join(f"{n} worker{'s' * (n != 1)} {_speedup('speedups', s)}, {words[s.outcome]}"
                     for n, s in found.items())


def workers_sweep(v: display.Verdict, base: Timeline, gains: Mapping[int, intervals.Speedup],
                  beyond: Mapping[int, intervals.Speedup], free: int) -> display.Prose:
    """Section 4: each worker count's step against the in-process loader, and the free-core prediction."""
    _tested(v)
    _timeline("base", base)
    validate.instance("gains", gains, Mapping)
    validate.instance("beyond", beyond, Mapping)
    free = validate.number("free", free, low=1, integer=True)
    said = (f"Against the in-process loader (median step {ms(base.part().median)}), the steady step ran: "
            f"{_listed(gains, OUTCOME)}.")
    if v.held:
        said += (f" No count above the {free} free core(s) beat the best count within them beyond the noise: past "
                 "the free cores, a worker waits for a core, not for work.")
    else:
        faster = {n: s for n, s in beyond.items() if s.outcome == intervals.FASTER}
        said += (f" Yet {_listed(faster, OUTCOME)} against the best count within the {free} free core(s): the free "
                 "cores are a budget we set, the OS schedules each process where it likes. Why it paid here is not "
                 "established by this run (the data is in memory: no disk wait for extra workers to hide).")
    return display.prose(said)


def workers_compute(compute: Mapping[int, intervals.Speedup], cores: int) -> display.Prose:
    """Section 4: the model's own compute beside each worker count, against its compute without workers."""
    validate.instance("compute", compute, Mapping)
    validate.non_empty("compute", compute)
    cores = validate.number("cores", cores, low=1, integer=True)
    outcomes = {_speedup("compute", s).outcome for s in compute.values()}
    said = ("The model's own compute per step, against its compute without workers (above 1x: shorter): "
            f"{_listed(compute, LONGER)}.")
    if intervals.SLOWER in outcomes:
        said += (f" Every worker shares this machine's {cores} cores with the model, so a worker's gain in wait is "
                 "paid partly in compute; which shared resource (core time, caches, memory bandwidth) slowed the "
                 "step is not established by this run.")
    elif outcomes == {intervals.WITHIN_NOISE}:
        said += " The workers cost the model no compute that this run's noise could show: every interval contains 1."
    else:
        said += " The compute ran shorter beside some workers; why is not established by this run."
    return display.prose(said)


def queue_depth(v: display.Verdict, step: intervals.Speedup, compute: intervals.Speedup, workers: int,
                in_flight: int, steps: int) -> display.Prose:
    """Section 4: prefetch_factor=8 against 2, with the same workers."""
    _tested(v)
    _speedup("step", step)
    _speedup("compute", compute)
    workers, in_flight, steps = (validate.number(n, x, low=1, integer=True) for n, x in
                                 (("workers", workers), ("in_flight", in_flight), ("steps", steps)))
    said = (f"With `prefetch_factor=8`, {workers} worker{'s' * (workers != 1)} may hold {in_flight} batches of the "
            f"{steps} per epoch. Against depth 2 the steady step ran {step}: {OUTCOME[step.outcome]}; the model's "
            f"compute {compute}: {LONGER[compute.outcome]}.")
    if v.held:
        said += (" A deeper queue absorbs jitter; it cannot make batches faster than the workers make them. It is "
                 "worth its memory where batch times vary (network storage, images of varying size).")
    else:
        said += (" The deeper queue ran faster beyond the noise, with batches that all cost the same (synthetic, in "
                 "memory): why is not established by this run.")
    return display.prose(said)


def persistent(restart: intervals.Speedup, plain: Timeline, kept: Timeline, worker_mib: float) -> display.Prose:
    """Section 4: what persistent_workers saves at each later epoch, and what an idle worker holds."""
    _speedup("restart", restart)
    _timeline("plain", plain)
    _timeline("kept", kept)
    worker_mib = validate.non_negative("worker_mib", worker_mib)
    listed = [", ".join(f"{s * 1e3:.0f}" for s in t.startups[1:]) for t in (plain, kept)]
    return display.prose(
        f"Without `persistent_workers` a loader starts its workers again at every epoch: the later rounds' first "
        f"batches arrived after {listed[0]} ms; with them the workers stay and each epoch only waits for its first "
        f"batch: {listed[1]} ms. Persistent workers started those epochs {restart}: {OUTCOME[restart.outcome]}. "
        f"The price: an idle persistent worker held {worker_mib:.0f} MiB of private memory (USS, measured) between "
        "epochs.")


def cores_rule(free: int, cores: int, worker_mib: float, most: int, batch_bytes: int, gpu: bool) -> display.Prose:
    """Section 7: what workers cost besides time, and the rule of thumb for a GPU machine."""
    free, cores, most = (validate.number(n, x, low=1, integer=True) for n, x in
                         (("free", free), ("cores", cores), ("most", most)))
    worker_mib = validate.non_negative("worker_mib", worker_mib)
    batch_bytes = validate.number("batch_bytes", batch_bytes, low=1, integer=True)
    validate.instance("gpu", gpu, bool)
    in_flight = most * 2 * batch_bytes / 2**20
    said = (f"{free} of {cores} core(s) were free for workers. Threads add the GIL (JAX's prefetch thread); processes "
            f"add memory: one idle worker held {worker_mib:.0f} MiB of private memory (measured), and {most} workers "
            f"keep {in_flight:.1f} MiB of batches in flight (computed: workers x `prefetch_factor` 2 x batch bytes). "
            "On a GPU machine the model no longer needs a CPU core to compute, but the training process still needs "
            "one (Python, kernel launches, the pin-memory thread), so the rule of thumb becomes *at most cores - 1 "
            "workers*: a rule ")
    return display.prose(said + ("that this run's sweep measured on this GPU machine." if gpu else
                                 "not measured here, since this machine has no GPU."))
