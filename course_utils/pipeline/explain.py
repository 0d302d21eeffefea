"""The explanations of notebook 04 that depend on which way the numbers fell: each function turns this run's
measurements into the sentence that fits them, in every branch (held or failed, apart or within the noise).
"""

from __future__ import annotations

from collections.abc import Mapping

from course_utils import timing, validate
from course_utils.pipeline.compare import change, grew, median, ms, skewed, spread
from course_utils.pipeline.loop import Timeline, apart
from course_utils.pipeline.stall import Stalls

SEED_RANGE = (0.4, 0.6)  # the seed article's "typical" busy share of eager training
AS_LONG = 1.25  # two times are "about as long" as each other when neither is more than 25% above the other


def _timeline(name: str, value: object) -> Timeline:
    return validate.instance(name, value, Timeline)


def _measurement(name: str, value: object) -> timing.Measurement:
    return validate.instance(name, value, timing.Measurement)


def wait_vs_batch(run: Timeline, batch: timing.Measurement) -> str:
    """Compare the loop's wait per step with the batch measured alone: equal within the noise, or by how much not."""
    _timeline("run", run)
    _measurement("batch", batch)
    wait = run.part("wait")
    said = (f"The loop's wait per steady step, median {median(run, 'wait')}, against {ms(batch.median)} "
            f"(quartiles {spread(batch)}) for the same batch made outside the loop in section 1")
    if not timing.apart(wait, batch):
        return said + ": within the noise of each other, so the wait is the data time."
    return (said + f": {wait.median / batch.median - 1:+.0%}, beyond the quartiles. What the difference is made "
            "of is not established by this run (candidates: the DataLoader's own work, fetching the samples and "
            "collating NumPy arrays into a torch tensor, and the load on the machine).")


def compute_vs_wait(run: Timeline) -> str:
    """'compute took 1.6x the wait (23.4 vs 14.5 ms per step, means)', or 'about as long as' within 25%."""
    _timeline("run", run)
    c, w = run.compute_time, run.wait_time
    numbers = f"{ms(c)} of compute against {ms(w)} of wait per step, means"
    if w <= 0:
        return f"where the loop never waited ({numbers})"
    if 1 / AS_LONG <= c / w <= AS_LONG:
        return f"where compute and wait take about as long ({numbers})"
    if c > w:
        return f"where compute takes {c / w:.1f}x the wait ({numbers})"
    return f"where the wait takes {w / c:.1f}x the compute ({numbers})"


def trace_worker(batch: timing.Measurement, before: Stalls, after: Stalls, load: str) -> str:
    """Whether one worker keeps up with the traced step (computed), how the traced step itself changed, and that
    the gap left is not explained by this run."""
    _measurement("batch", batch)
    validate.instance("before", before, Stalls)
    validate.instance("after", after, Stalls)
    validate.text("load", load)
    step_before, step_after = (timing.Measurement.from_times(s.label, s.steps) for s in (before, after))
    margin = step_after.median / batch.median
    text = (f"One worker needs about {ms(batch.median)} per batch (section 1) while a traced step with it computed "
            f"{ms(step_after.median)} (median), ")
    if margin < 1:
        text += "so a single worker cannot keep up (section 4 adds workers). "
    elif margin < 1.2:
        text += f"so one worker only just keeps up ({margin:.2f}x, computed: step / batch time). "
    else:
        text += f"so one worker keeps up with a {margin:.1f}x margin (computed: step / batch time). "
    text += (f"The traced step computed {ms(step_before.median)} (quartiles {spread(step_before)}) without the "
             f"worker and {ms(step_after.median)} ({spread(step_after)}) with it: ")
    if timing.apart(step_before, step_after):
        text += ("longer beside the worker, beyond the quartiles. " if step_after.median > step_before.median else
                 "shorter beside the worker, beyond the quartiles. ")
    else:
        text += "within the noise of each other. "
    gap = sum(after.gaps) / len(after.gaps)
    return text + (f"What the {ms(gap)} left between steps is made of is not established by this run (candidates: "
                   f"the batch's trip from the worker through shared memory and unpickling, and the machine's load, "
                   f"{load}). ")


def share(u: float) -> str:
    """A busy share as a percentage; with two decimals where whole percents would land on the seed range's edge
    (39.96% is outside 40-60%, and must not print as 40%)."""
    u = validate.fraction("u", u)
    return f"{u:.2%}" if round(u * 100) in {round(edge * 100) for edge in SEED_RANGE} else f"{u:.0%}"


def seed_text(befores: Mapping[str, float], held: bool, narrow: float, wide: float) -> str:
    """Which 'before' loops landed inside the seed's 40-60% and the compute/wait ratio each busy share means."""
    validate.instance("befores", befores, Mapping)
    validate.non_empty("befores", befores)
    validate.instance("held", held, bool)
    low, high = SEED_RANGE

    def row(name: str) -> str:
        u = validate.fraction("befores", befores[name])
        ratio = f"{u / (1 - u):.2f}x" if u < 1 else "no wait"
        return f"{name} {share(u)} ({ratio})"

    inside = [n for n, u in befores.items() if low <= u <= high]
    outside = [n for n in befores if n not in inside]
    text = (f"{len(inside)} of the {len(befores)} loops landed inside the seed's {low * 100:.0f}-{high:.0%}. A busy "
            f"share u means compute / wait = u / (1 - u) (computed), so that range is compute taking "
            f"{low / (1 - low):.2f}-{high / (1 - high):.2f}x the wait. Inside: "
            + (", ".join(row(n) for n in inside) or "none") + "; outside: " + (", ".join(row(n) for n in outside)
                                                                            or "none") + ". ")
    text += ("The count matches the seed's 'typical', but it follows from each loop's ratio of model to data work, "
             "which this notebook picked: " if held else "That does not refute the seed's 'typical' either: ")
    return text + (f"section 2 moved the same torch loop from {narrow:.0%} to {wide:.0%} by making the model four "
                   "times wider. A busy share is a property of one job's ratio of model to data work; measure yours.")


def tf_ranking(parts: Mapping[str, timing.Measurement], *, slow: str, reference: str,
               fastest: str) -> tuple[bool, str, str]:
    """(held, numbers, why) for the prediction "``slow`` takes longer than ``reference`` and ``fastest`` is the
    fastest of ``parts``", each comparison judged by the quartiles: overlapping quartiles are a tie, not a rank."""
    validate.instance("parts", parts, Mapping)
    for m in parts.values():
        _measurement("parts", m)
    for argument, name in (("slow", slow), ("reference", reference), ("fastest", fastest)):
        validate.choice(argument, name, list(parts))
    numbers = ", ".join(f"{n} {ms(m.median)} ({spread(m)})" for n, m in parts.items()) + " per batch (medians, " \
        "quartiles)"
    top = parts[fastest]
    slower = timing.apart(parts[slow], parts[reference]) and parts[slow].median > parts[reference].median
    ties = [n for n, m in parts.items() if n != fastest and not timing.apart(m, top)]
    beaten = [n for n, m in parts.items() if n != fastest and timing.apart(m, top) and m.median < top.median]
    why = []
    if not slower:
        why.append(f"{slow} was " + ("within the noise of" if not timing.apart(parts[slow], parts[reference]) else
                                     "faster than") + f" {reference}")
    if ties:
        why.append(f"{fastest} tied with {', '.join(ties)} (quartiles overlap): a tie, not a ranking")
    if beaten:
        why.append(f"{', '.join(beaten)} beat {fastest} beyond the quartiles")
    return slower and not ties and not beaten, numbers, "; ".join(why)


def spawn_compute(spawned: Timeline, forked: Timeline, again: Timeline, load: str) -> str:
    """The model's compute per step beside a spawn and a forkserver worker, and whether a second spawn run, made
    after the forkserver one, says the difference follows the start method or the moment."""
    for name, run in (("spawned", spawned), ("forked", forked), ("again", again)):
        _timeline(name, run)
    validate.text("load", load)
    text = ("The start method should change only how the worker starts; the model's compute per step: spawn "
            f"{median(spawned, 'compute')}, forkserver {median(forked, 'compute')}, and spawn again, run right "
            f"after forkserver, {median(again, 'compute')}. ")
    if not apart(spawned, forked, "compute"):
        return text + ("The first two runs' quartile ranges overlap, so this run shows no effect of the start method "
                       "on the steady compute; where they differ is the start-up.")
    ratio = spawned.part("compute").median / forked.part("compute").median
    text += f"The first spawn run computed {ratio:.1f}x forkserver's median, beyond the quartiles"
    if apart(again, forked, "compute") and (grew(forked, again) == grew(forked, spawned)):
        return text + (", and the second spawn run differs the same way: in this run the difference follows the "
                       "start method; how a worker's start method changes the training process's own compute is not "
                       "established by this run.")
    return text + (f", but the second spawn run did not repeat it ({change(forked, again)}): the difference followed "
                   f"the moment, not the start method; what slowed that run is not established by this run (the "
                   f"machine is shared: {load} now).")


def jax_why(alone: Timeline, prefetch: Timeline, bound: float) -> str:
    """Why the JAX step stayed above max(compute, data): the numbers of the step, its wait and its compute."""
    _timeline("alone", alone)
    _timeline("prefetch", prefetch)
    bound = validate.positive("bound", bound)
    text = (f"the step stayed {ms(prefetch.step_time - bound)} above the bound: wait {ms(prefetch.wait_time)}, "
            f"compute {ms(alone.compute_time)} → {ms(prefetch.compute_time)} per step (means)")
    if prefetch.compute_time > alone.compute_time:
        return text + ("; what slowed the compute is not established by this run (candidates: the cores, caches and "
                       "GIL that the thread shares with the step)")
    return text + ("; the thread delivered batches more slowly than the step took them, and why is not established by "
                   "this run (candidates: the cores and the GIL that the thread shares with the step)")


def jax_prefetch(alone: Timeline, prefetch: Timeline, *, held: bool, bound: float, cores: int) -> str:
    """What section 6's JAX runs say about the compute beside a prefetch thread, consistent with the verdict."""
    _timeline("alone", alone)
    _timeline("prefetch", prefetch)
    validate.instance("held", held, bool)
    bound = validate.positive("bound", bound)
    cores = validate.positive("cores", cores, integer=True)
    text = (f"Without the thread JAX waited {ms(alone.wait_time)} per step (busy {alone.utilisation:.0%}); with it "
            f"{ms(prefetch.wait_time)} (busy {prefetch.utilisation:.0%}). Compute per step, "
            f"{change(alone, prefetch, 'compute')}; in means {ms(alone.compute_time)} → {ms(prefetch.compute_time)}. ")
    if not held:
        text += (f"The step, {ms(prefetch.step_time)} (mean), was {ms(prefetch.step_time - bound)} "
                 f"({prefetch.step_time / bound - 1:.0%}) above max(compute, data) = {ms(bound)} measured without "
                 "the thread; the prediction allowed 20%. ")
    if grew(alone, prefetch, "compute"):
        text += (f"The compute grew beyond the quartiles: the data thread runs beside the step on the same {cores} "
                 "cores, caches and memory bandwidth, and shares the GIL, which the step needs to dispatch. Which of "
                 "these weighs more is not established here; exercise 04.2 feeds the step from a worker *process*, "
                 "which shares the cores but not the GIL.")
    elif held and not apart(alone, prefetch, "compute"):
        text += ("The compute stayed within the noise, so the thread overlapped with the step without a slowdown "
                 "this run can show (XLA releases the GIL while it computes).")
    elif held:
        text += "The compute fell beyond the quartiles: the thread cost the step nothing this run can show."
    elif prefetch.compute_time > alone.compute_time and (skewed(alone, "compute") or skewed(prefetch, "compute")):
        text += ("The typical step's compute did not grow beyond the quartiles while the mean did: a few slow "
                 "steps, whose cause is not established by this run, carry the excess.")
    else:
        text += (f"The compute did not grow beyond the quartiles; the step is the wait left plus the compute, "
                 f"{ms(prefetch.wait_time)} + {ms(prefetch.compute_time)} (means).")
    return text + " One thread is one core's worth of decoding at best."

