"""Notebook 05's Going further sentences (re-exported by ``story``): the learning rate against the global batch,
batch normalisation under DDP, DDP compiled, a failing rank, and one process with every thread. Each reads the
stored verdicts and a ``Speedup``'s ``.outcome``; none decides anything itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from course_utils import display, intervals, validate
from course_utils.distributed.devices import ThreadRun


def _verdict(v: Any, *, testable_here: bool = True) -> display.Verdict:
    validate.instance("v", v, display.Verdict)
    if testable_here and not v.tested:
        raise ValueError("this prediction is measured on every runtime: its verdict cannot be 'not tested'")
    return v


def _outcome(s: intervals.Speedup, faster: str, slower: str, same: str) -> str:
    validate.instance("speedup", s, intervals.Speedup)
    return {intervals.FASTER: faster, intervals.SLOWER: slower, intervals.WITHIN_NOISE: same}[s.outcome]


def learning_rate(v: display.Verdict, held_out: Mapping[str, float]) -> display.Prose:
    """The linear scaling rule and warm-up, scored on held-out loss after the same samples."""
    _verdict(v)
    if len(held_out) != 4:
        raise ValueError("held_out must hold the four runs: small batch, unchanged lr, linear rule, with warm-up")
    small, unchanged, linear, warm = (validate.number("held_out", x, low=0) for x in held_out.values())
    told = (f"At 8x the batch the optimizer takes 8x fewer steps over the same samples: with the learning rate "
            f"unchanged the held-out loss ended at {unchanged:.3f} against {small:.3f}, fewer steps of the same size "
            f"covering less ground. The linear rule brought it to {linear:.3f}, and with warm-up to {warm:.3f}.")
    why = ("So when DDP multiplies the global batch, multiply the learning rate with it, and ramp it up over the "
           "first steps, while the weights are far from anything sensible and large steps overshoot." if v.held else
           f"The prediction failed: {v.why}. The rule is a starting point, not a law: it holds until the batch nears "
           "the task's critical batch size, beyond which larger batches stop paying; tune the learning rate at the "
           "batch you train with.")
    return display.prose(told + " " + why)


def batchnorm(v_plain: display.Verdict, v_sync: display.Verdict, ranks_apart: float) -> display.Prose:
    """BatchNorm under DDP: the ranks' own statistics, and what SyncBatchNorm does about them."""
    _verdict(v_plain)
    _verdict(v_sync, testable_here=False)
    ranks_apart = validate.non_negative("ranks_apart", ranks_apart)
    plain = (f"Without synchronisation each rank normalised with its own half's mean ({ranks_apart:.3f} apart at "
             "most): under DDP a model with BatchNorm trains on different statistics than on one device, the more "
             "so the smaller the per-device batch, and DDP broadcasts rank 0's running statistics at every forward "
             "(`broadcast_buffers`), so the saved model keeps rank 0's." if v_plain.held else
             f"The prediction failed: {v_plain.why}.")
    if not v_sync.tested:
        sync = ("The average of the ranks' means is the global batch's mean: that is what `SyncBatchNorm` all-reduces "
                "(with each rank's sum of squares for the variance). Use it where per-device batches are small; it "
                "adds one all-reduce per BatchNorm layer to every forward.")
    elif v_sync.held:
        sync = ("With `SyncBatchNorm` every rank normalised with the global batch's statistics, at the price of an "
                "all-reduce per BatchNorm layer in every forward: use it where per-device batches are small.")
    else:
        sync = f"With `SyncBatchNorm` the statistics were not the global batch's: {v_sync.why}."
    return display.prose(plain, sync)


def compiled_ddp(v: display.Verdict, record: Mapping[str, Any], gain: intervals.Speedup) -> display.Prose:
    """DDP under ``torch.compile``: the graphs DDPOptimizer compiled, and the step against eager DDP."""
    _verdict(v)
    validate.instance("record", record, Mapping)
    speed = (f"The first compiled call took {record['first_call']:.1f} s (compilation); afterwards the compiled "
             f"step ran {gain} over eager DDP, "
             + _outcome(gain, "faster", "slower", "no difference beyond the noise")
             + f" (backend `{record['backend']}`"
             + (", which generates no code: it shows the split, not a compiler's speed-up)."
                if record["backend"] == "aot_eager" else ")."))
    told = (f"DDPOptimizer compiled **{record['graphs']}** graphs for DDP's **{record['buckets']}** buckets, so each "
            "bucket's all-reduce can start as soon as its part of backward is done, as in eager DDP. The same call "
            f"on DDP around a bare `nn.Sequential` compiled {record['graphs_sequential']}: DDP's forward breaks the "
            "graph, and Dynamo does not start a new one inside torch's own modules. Wrap the layers in a module of "
            "your own, as `DeepMLP` does." if v.held else
            f"The prediction failed: {v.why}. `TORCH_LOGS=ddp_graphs` prints how DDPOptimizer split the graph.")
    return display.prose(told, speed)


def failure(v: display.Verdict, pg_timeout: float) -> display.Prose:
    """What the launcher did when a rank failed, and the process-group timeout it gives every rank."""
    _verdict(v)
    pg_timeout = validate.positive("pg_timeout", pg_timeout)
    told = ("`launch` named rank 1 and showed its traceback, read from the rank's own `stderr.log` (the console "
            "interleaves a rank's stdout and stderr), then stopped rank 0, which would otherwise have slept on: in a "
            "real job, waited in an all-reduce until the process group timed out." if v.held else
            f"The launcher blamed another rank, lost the exception or left processes behind ({v.why}): a bug to "
            "report.")
    timeout = (f"That timeout is torch's 30 minutes for gloo and 10 for NCCL unless you set it; `launch` sets it to "
               f"half its own timeout (here {pg_timeout:g} s), so a rank stuck in a collective fails with its own "
               "traceback before the launcher gives up on the job. Pressing Ctrl-C, even twice, ends every process "
               "too: a reaper process ends the job whatever the notebook does meanwhile.")
    return display.prose(told, timeout)


def threads(v: display.Verdict, runs: Mapping[str, Mapping[int, ThreadRun]],
            fresh: Mapping[str, Mapping[str, Mapping[int, ThreadRun]]],
            gains: Mapping[str, intervals.Speedup]) -> display.Prose:
    """One process with every thread against one thread, and what the fresh processes' wait policies showed."""
    _verdict(v)
    validate.non_empty("runs", runs)
    paragraphs = []  # one per model: each stays a readable length
    for name, by_count in runs.items():
        every = max(by_count)
        gain = gains[name]
        said = [f"**{name.capitalize()} model**: {every} threads over 1 thread {gain}, "
                + _outcome(gain, "faster", "**slower**", "no difference beyond the noise")
                + f"; {by_count[every].cores_busy:.2f} cores busy with every thread, "
                f"{by_count[1].cores_busy:.2f} with one."]
        policies = {policy: f[name][every] for policy, f in fresh.items() if name in f}
        if policies:
            said.append("In fresh processes: " + "; ".join(
                f"{policy} wait {display.format_time(r.measurement.median)} per step with {r.cores_busy:.2f} cores "
                f"busy ({display.format_time(r.cores_busy * r.measurement.median)} of CPU per step, computed)"
                for policy, r in policies.items()) + ".")
        paragraphs.append(" ".join(said))
    closing = ("Every thread did not make a step slower here." if v.held else
               "Where every thread was slower, the candidates: operators too small to split well (the threads meet "
               "at a barrier after each one, and a waiting OpenMP thread spins before it sleeps), or other processes "
               "taking the cores.")
    return display.prose(*paragraphs, closing + " One process per wait policy is a hint, not a result this run "
                         "can decide. A spinning thread holds a core another process (a second rank, a data worker) "
                         "could use: one reason the course gives each rank `OMP_NUM_THREADS = cores / processes`.")
