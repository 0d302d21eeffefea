"""Notebook 05's sentences: each function tells one paragraph (or a few) from the stored verdicts and the
measurements, and returns ``display.Prose``. A story never decides anything the verdict decided: it reads
``v.status`` and a ``Speedup``'s ``.outcome``. The main path's stories are here; Going further's are in
``story_further`` (re-exported below, so the notebook reaches every one as ``cu.distributed.story.<name>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from course_utils import display, intervals, timing, validate
from course_utils.distributed import comms
from course_utils.distributed.story_further import (  # noqa: F401  (re-exported for the notebook)
    batchnorm,
    compiled_ddp,
    failure,
    learning_rate,
    threads,
)


def _verdict(v: Any, *, testable_here: bool = True) -> display.Verdict:
    validate.instance("v", v, display.Verdict)
    if testable_here and not v.tested:
        raise ValueError("this prediction is measured on every runtime: its verdict cannot be 'not tested'")
    return v


def _speedup(name: str, s: Any) -> intervals.Speedup:
    return validate.instance(name, s, intervals.Speedup)


def outcome(s: intervals.Speedup, faster: str, slower: str, same: str) -> str:
    """The phrase that matches the interval's outcome (faster, slower, within the noise)."""
    return {intervals.FASTER: faster, intervals.SLOWER: slower, intervals.WITHIN_NOISE: same}[s.outcome]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def proof(v: display.Verdict, rank_diff: Mapping[str, float], single_diff: Mapping[str, float],
          run: Any) -> display.Prose:
    """The proof's outcome, and where the launch's wall time went (its start-up against its phases)."""
    _verdict(v)
    validate.non_empty("rank_diff", rank_diff)
    validate.non_empty("single_diff", single_diff)
    phases = float(sum(run.record("phases")["seconds"].values()))
    startup = float(run.record("startup")["seconds"])
    steps = len(single_diff) * 5
    if v.held:
        told = (f"After {steps} steps the two ranks hold **bit-identical** weights, and rank 0 differs from one "
                f"process on the whole batch by at most **{max(single_diff.values()):.1e}**: float32 rounding, since "
                "the mean over 64 samples is summed as two halves of 32, then averaged.")
    else:
        told = (f"The ranks differ by {max(rank_diff.values()):.1e} and DDP differs from one process by "
                f"{max(single_diff.values()):.1e}: DDP did not compute large-batch SGD in this run. Look at the "
                "worker before trusting any number below.")
    launch = (f"The launch took **{run.seconds:.1f} s** of wall time, of which the phases ran {phases:.1f} s: "
              f"**{display.percent(1 - phases / run.seconds)}** was start-up and shut-down (torchrun, Python and torch "
              f"imports, rendezvous; a rank needed {startup:.1f} s from its start to joining the group). That is why "
              "the course launches once for all phases.")
    return display.prose(told, launch)


def _rest(name: str, parts: Mapping[str, timing.Measurement], rest: intervals.Speedup) -> str:
    """The step against its compute plus its all-reduce, each timed alone (interval over paired rounds)."""
    left = parts["ddp"].median - parts["compute"].median - parts["allreduce"].median
    return outcome(
        rest,
        f"The step outlasts compute plus all-reduce by {_ms(left)} (step over the parts {rest}): time neither "
        "measurement contains. Candidates: a rank waiting at the all-reduce for its partner, DDP copying gradients "
        "into its bucket (section 4 measures both for the tiny model).",
        f"Compute plus the all-reduce, timed apart, outlast the step itself (step over the parts {rest}): inside "
        "the step DDP starts a bucket's all-reduce while backward still runs (overlap), or the alone-measurements "
        "carry waits the step does not; which, this run does not establish.",
        f"Compute plus the all-reduce account for the step within the noise (step over the parts {rest}).")


def breakdown(v: display.Verdict, timed: Mapping[str, Mapping[str, timing.Measurement]],
              comm: Mapping[str, intervals.Speedup], rest: Mapping[str, intervals.Speedup],
              speedup: Mapping[str, intervals.Speedup]) -> display.Prose:
    """Each model's DDP step split into compute, the all-reduce and the rest; then two ranks against one process."""
    _verdict(v)
    validate.non_empty("timed", timed)
    said = []
    for name, parts in timed.items():
        step, c = parts["ddp"].median, _speedup(f"comm[{name!r}]", comm[name])
        said.append(f"**{name.capitalize()} model**: a DDP step takes **{_ms(step)}** (median); its compute alone "
                    f"{_ms(parts['compute'].median)}, an all-reduce of its gradient alone "
                    f"{_ms(parts['allreduce'].median)} ({display.percent(parts['allreduce'].median / step)} of the "
                    f"step; compute over all-reduce {c}, "
                    + outcome(c, "the all-reduce shorter", "the all-reduce longer", "no difference beyond the noise")
                    + "). " + _rest(name, parts, _speedup(f"rest[{name!r}]", rest[name])))
    verdict = ("As predicted, a fixed latency weighs most where there is little to compute: the tiny model's "
               "all-reduce outlasts its compute, the wide model's does not." if v.held else
               f"The prediction failed: {v.why}.")
    ranks = "; ".join(f"the {name} step {_speedup(f'speedup[{name!r}]', s)}, "
                      + outcome(s, "faster", "**slower**", "no difference beyond the noise")
                      for name, s in speedup.items())
    against = (f"{verdict} Against one process on the whole batch (one thread, timed by rank 0 inside the job), two "
               f"ranks ran {ranks}. Where two ranks are slower, that is the seed's warning measured: more devices, "
               "and more time per step.")
    return display.prose(*said, against)


def chain(v: display.Verdict, links: Mapping[str, Mapping[str, intervals.Speedup]], cores: int) -> display.Prose:
    """Section 1's prediction scored: which of rank 0's suspects added time beyond the noise, per model."""
    _verdict(v)
    validate.non_empty("links", links)
    cores = validate.positive("cores", cores, integer=True)
    said = []
    for name, steps in links.items():
        added = [f"{what} ({1 / s.ratio:.2f}x, interval {1 / s.high:.2f}-{1 / s.low:.2f}x)"
                 for what, s in steps.items() if s.slower]
        saved = [f"{what} ({1 / s.ratio:.2f}x)" for what, s in steps.items() if s.faster]
        said.append(f"**{name.capitalize()} model**: " + ("; ".join(saved) + " took time off. " if saved else "")
                    + ("Time was added by " + "; ".join(added) + "." if added else
                       "No link added time beyond the noise."))
    closing = ("So computing half the batch took at most two thirds of the whole-batch time: for these models the "
               "all-reduce is the visible new cost." if v.held else
               "So half the batch did not take half the time. A small model's step is a few dozen operator calls, "
               "each with a fixed cost (Python, dispatch, autograd, the optimizer loop) that does not shrink with "
               f"the rows; DDP adds its bookkeeping, and the partner process shares this machine's {cores} cores. "
               "Measure one rank's compute; do not assume it is 1/N.")
    return display.prose(" ".join(said), closing)


def buckets(v: display.Verdict, caps: list[float], counts: list[int], fastest: float,
            vs_ends: Mapping[float, intervals.Speedup]) -> display.Prose:
    """The bucket caps: how many all-reduces each made, and whether an optimum in between stood out."""
    _verdict(v)
    validate.non_empty("caps", caps)
    if len(caps) != len(counts):
        raise ValueError(f"caps and counts must have the same length; got {len(caps)} and {len(counts)}")
    ends = "; ".join(f"{fastest:g} MB over {cap:g} MB {_speedup('vs_ends', s)}, "
                     + outcome(s, "faster", "slower", "within the noise") for cap, s in vs_ends.items())
    said = (f"With a {caps[0]:g} MB cap DDP issued **{counts[0]}** all-reduces per step, with {caps[-1]:g} MB "
            f"**{counts[-1]}**. The fastest median was at {fastest:g} MB" + (f" ({ends})." if ends else "."))
    why = ("An optimum in between stood out: early buckets overlap backward, and few enough of them keep the "
           "per-call latency down." if v.held else
           "No optimum in between stood out from the noise here. On a CPU every gloo call costs a fixed latency "
           "and competes with backward for the same cores; on GPUs NCCL overlaps communication with backward on "
           "its own streams. Tune buckets on the hardware you train on.")
    return display.prose(said + " " + why)


def accumulation(v_accum: display.Verdict, v_saving: display.Verdict, gain: intervals.Speedup,
                 saving: Mapping[str, Any]) -> display.Prose:
    """What ``no_sync`` saved, and what the saving is made of beyond the all-reduces it removed."""
    _verdict(v_accum)
    _verdict(v_saving)
    _speedup("gain", gain)
    k, parts = saving["k"], saving["parts"]
    first = (f"Syncing every micro-batch took **{_ms(parts['every'].median)}** per update, `no_sync` "
             f"**{_ms(parts['no_sync'].median)}**: `no_sync` {gain}, "
             + outcome(gain, "faster", "slower", "no difference beyond the noise")
             + f", with {k - 1} of {k} all-reduces gone and the gradient unchanged. "
             + ("So the seed's suggestion holds, on a condition: it pays where communication is a large share of "
                f"the step, and the optimizer then steps {k} times less often." if v_accum.held else
                f"The prediction failed: {v_accum.why}."))
    times = saving["saved"] / saving["back_to_back"]
    second = (f"The saving, {_ms(saving['saved'])} per update, is {times:.1f} times what the {k - 1} removed "
              f"all-reduces cost back to back ({_ms(saving['back_to_back'])}). "
              + ("The cost model's view, fewer all-reduces and nothing else, accounts for it." if v_saving.held else
                 "So the cost model's view, fewer all-reduces and nothing else, does not account for it."))
    third = (f"A sync in the training loop cost {_ms(saving['per_sync'])} (computed: syncing every micro-batch minus "
             f"no communication, over {k}); a synced micro-batch spent {_ms(saving['inside'])} inside its all-reduce "
             f"call (a timing hook), and the same all-reduce back to back takes {_ms(saving['one'])}. Inside the call "
             "a rank waits for its partner to finish its own backward (the two ranks share the cores): time no "
             "back-to-back measurement contains. DDP's own work around the call (hooks, copying the gradient into "
             "its bucket and back) is the other candidate, not measured apart.")
    return display.prose(first, second, third)


def cost_model(v: display.Verdict, cost: comms.AllReduceCost, ratio: Any, job_allreduce: timing.Measurement,
               predicted: tuple[float, float, float]) -> display.Prose:
    """The fitted all-reduce model with its intervals, scored on its own sweep and on the training job's all-reduce."""
    _verdict(v)
    validate.instance("cost", cost, comms.AllReduceCost)
    validate.instance("job_allreduce", job_allreduce, timing.Measurement)
    ratio = np.asarray(ratio, dtype=float)
    lat_lo, lat_hi = cost.latency_interval
    fitted = (f"Fitted on each of {len(cost.per_round)} rounds: **α = {cost.model.latency * 1e6:.1f} µs** per ring "
              f"step (95% interval {lat_lo * 1e6:.1f} to {lat_hi * 1e6:.1f} µs) and **β = "
              f"{display.format_rate(cost.model.bandwidth)}** ({cost.bandwidth_text}): gloo, TCP over the loopback "
              "interface. The sweep's medians are "
              f"{ratio.min():.2f}-{ratio.max():.2f}x the model; the wide gradient's all-reduce, timed inside the "
              f"training job, took {_ms(job_allreduce.median)} against {_ms(predicted[0])} computed (interval "
              f"{_ms(predicted[1])} to {_ms(predicted[2])}).")
    read = ("A two-parameter model holds this machine's all-reduce within a factor of 2, in the sweep it was fitted "
            "on and in a job it was not. " if v.held else
            "The model misses by more than 2x somewhere: gloo changes algorithm with the message size, and a job's "
            "all-reduce competes with its ranks' compute; which of the two, this run does not establish. ")
    return display.prose(fitted, read + f"Source: the {cost.how}. A later notebook of this run that calls "
                         "`cu.distributed.allreduce_cost` reads these same figures instead of measuring again.")


def links(nbytes: float, compute_seconds: float, link_specs: Mapping[str, tuple[float, float]]) -> display.Prose:
    """The computed all-reduce of ``nbytes`` over typical links at 8, 64 and 512 devices: a table and its reading."""
    nbytes = validate.positive("nbytes", nbytes)
    compute_seconds = validate.positive("compute_seconds", compute_seconds)
    validate.non_empty("link_specs", link_specs)
    rows = "\n".join(f"| {name} | " + " | ".join(f"{comms.ring_allreduce_time(nbytes, n, bw, lat) * 1e3:.2f} ms"
                                                 for n in (8, 64, 512)) + " |"
                     for name, (bw, lat) in link_specs.items())
    return display.prose(
        f"Computed all-reduce of the wide model's {nbytes / 1e6:.1f} MB gradient, against the assumed "
        f"{compute_seconds * 1e3:.0f} ms of compute per step:",
        f"| link | 8 devices | 64 devices | 512 devices |\n|---|---|---|---|\n{rows}",
        "The bandwidth term hardly grows with N; the latency term grows linearly, so small messages on many devices "
        "are latency-bound. Where the all-reduce exceeds the compute, adding devices at a fixed per-device batch "
        "mostly adds waiting, unless the all-reduce overlaps backward (buckets) or the per-device batch grows: the "
        "seed's pitfall, in arithmetic.")


def jax_steps(v: display.Verdict, times: Mapping[str, timing.Measurement] | None, devices: int,
              cores: int) -> display.Prose:
    """The JAX section: what the shardings did, and the sharded steps' time against one device."""
    _verdict(v, testable_here=False)
    if not v.tested:
        return display.prose("Sections 2 to 5 carry the same lesson in PyTorch; the JAX programs above run unchanged "
                             "wherever JAX is installed.")
    validate.non_empty("times", times)
    told = ("The batch's type carries its sharding (`@data`), the weights' does not: they stay replicated, because "
            "XLA summed the per-device gradients with the all-reduce that DDP's hooks perform, inserted from the "
            "shardings alone; the `shard_map` step, whose `psum` you write yourself, computes the same update."
            if v.held else f"The prediction failed: {v.why}.")
    one = times["one device"]
    timed = "; ".join(f"{name} over one device {intervals.speedup(one, m)}" for name, m in times.items()
                      if m is not one)
    return display.prose(told, f"Timed in alternating rounds: {timed}. The {devices} simulated devices are threads "
                         f"sharing this machine's {cores} cores, so this shows correctness and the compiled "
                         "collective, not speed.")


def mirrored(v: display.Verdict, times: Mapping[str, timing.Measurement] | None, cores: int) -> display.Prose:
    """The TensorFlow section: the weights' equality, and an epoch's time with and without the strategy."""
    _verdict(v, testable_here=False)
    if not v.tested:
        return display.prose("Sections 2 to 6 carry the same lesson in PyTorch and JAX.")
    validate.non_empty("times", times)
    plain, one, two = times.values()
    machinery, replica = intervals.speedup(one, plain), intervals.speedup(two, one)
    told = ("Same weights with and without the strategy: the replicas' averaged gradient is the whole batch's."
            if v.held else f"The prediction failed: {v.why}.")
    return display.prose(
        told + f" Against one replica of the strategy, an epoch without a strategy ran {machinery}: "
        + outcome(machinery, "faster, so the strategy's own machinery (distributed datasets, per-replica functions) "
                  "costs that much", "slower", "the same within the noise")
        + f". Against two replicas, one replica ran {replica}: "
        + outcome(replica, "faster, so the second replica adds cost of its own", "slower",
                  "the same within the noise")
        + f". Two logical devices on one CPU add no computing power: both replicas compute on the same {cores} "
        "cores. On a Cloud TPU VM with TensorFlow the same code runs with `TPUStrategy`; not run in this course.")
