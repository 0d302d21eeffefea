"""The sentences of notebook 04 about TensorFlow, JAX and Grain, the before/after comparison and the seed's claim
(re-exported by ``story``). Each reads the stored verdict and the intervals; a section that did not run here (its
verdict "not tested") gets None: the verdict said so once.
"""

from __future__ import annotations

from collections.abc import Mapping

from course_utils import display, intervals, validate
from course_utils.pipeline.compare import ms, speedup
from course_utils.pipeline.loop import Timeline

OUTCOME = {intervals.FASTER: "faster", intervals.SLOWER: "slower", intervals.WITHIN_NOISE: "within the noise"}
LONGER = {intervals.FASTER: "shorter", intervals.SLOWER: "longer", intervals.WITHIN_NOISE: "within the noise"}


def _verdict(v: object) -> display.Verdict:
    return validate.instance("v", v, display.Verdict)


def _runs(runs: object, count: int) -> list[Timeline]:
    """The first ``count`` loops of ``runs`` (a mapping label -> Timeline, in the order the notebook built it)."""
    validate.instance("runs", runs, Mapping)
    found = [validate.instance("runs", t, Timeline) for t in runs.values()]  # type: ignore[attr-defined]
    if len(found) < count:
        raise ValueError(f"runs must hold at least {count} loops; got {len(found)}")
    return found[:count]


def tf_prefetch(v: display.Verdict, runs: Mapping[str, Timeline]) -> display.Prose | None:
    """Section 5: parallel map + prefetch against the same TF-ops pipeline without them (``runs``: before, after)."""
    if not _verdict(v).tested:
        return None
    before, after = _runs(runs, 2)
    step, compute = speedup(before, after), speedup(before, after, "compute")
    said = (f"Parallel `map` + `prefetch` took the steady wait from {ms(before.wait_time)} to {ms(after.wait_time)} "
            f"per step (means) and the busy share from {before.utilisation:.0%} to {after.utilisation:.0%}; the step "
            f"ran {step}: {OUTCOME[step.outcome]}.")
    if v.held:
        said += (" tf.data's C++ threads made the next batch while the step computed, without the GIL: the wait fell "
                 "to less than half.")
    else:
        said += (" The wait did not fall to less than half beyond the noise. A step lasts at least max(compute, data):"
                 " where making a batch on the one core left takes longer than the step computes, the rest of the wait "
                 "cannot be hidden (a candidate: this run did not measure the batch alone in TF).")
    return display.prose(said + f" The model's compute beside tf.data's threads: {compute}: "
                                f"{LONGER[compute.outcome]}.")


def jax_prefetch(v: display.Verdict, runs: Mapping[str, Timeline]) -> display.Prose | None:
    """Section 6: the prefetch thread against the loop alone (``runs``: the loop alone, then the thread)."""
    if not _verdict(v).tested:
        return None
    alone, ahead = _runs(runs, 2)
    compute = speedup(alone, ahead, "compute")
    said = (f"Without the thread JAX waited {ms(alone.wait_time)} per step (busy {alone.utilisation:.0%}); with it "
            f"{ms(ahead.wait_time)} (busy {ahead.utilisation:.0%}). The step's compute beside the thread, against "
            f"the loop alone: {compute}: {LONGER[compute.outcome]}.")
    if v.held:
        said += (" Within this run's noise the step came down to its floor and not below it: the thread made the "
                 "next batch while XLA computed, since a compiled JAX computation releases the GIL.")
    else:
        said += (" A step below the floor means the loop alone waited or computed longer than the same work beside "
                 "the thread; above 1.2x of it, the thread and the step slowed each other (the verdict above says "
                 "which). Why is not established by this run (candidates: the cores and the GIL they share).")
    return display.prose(said)


def grain(v: display.Verdict, runs: Mapping[str, Timeline], workers: int) -> display.Prose | None:
    """Section 6: Grain's worker process(es) against the loop alone (``runs``: the loop alone, the thread, Grain)."""
    if not _verdict(v).tested:
        return None
    alone, _, fed = _runs(runs, 3)
    workers = validate.number("workers", workers, low=1, integer=True)
    gain, compute = speedup(alone, fed), speedup(alone, fed, "compute")
    said = (f"Grain's {workers} worker process{'es' * (workers != 1)} called the same `data[i]` as the DataLoader; "
            f"against the loop alone the JAX step ran {gain}: {OUTCOME[gain.outcome]}, busy {fed.utilisation:.0%}; "
            f"its compute {compute}: {LONGER[compute.outcome]}. The process started once: the first batch arrived "
            f"{fed.startups[0]:.2f} s after `iter()` (a spawned process imports Grain and the dataset's module).")
    if v.held:
        said += (" A process escapes the GIL and overlaps the step, as a DataLoader worker does; Grain adds an "
                 "iterator whose position can be saved and restored with a checkpoint.")
    else:
        said += (" The process did not make the step faster beyond the noise; why is not established by this run "
                 "(candidates: each batch's copy between processes, and the cores the worker shares with the model).")
    return display.prose(said)


def before_after(pairs: Mapping[str, tuple[Timeline, Timeline]]) -> display.Prose:
    """Section 7: one paragraph per framework, before against its own after, then how to judge a fix."""
    validate.instance("pairs", pairs, Mapping)
    validate.non_empty("pairs", pairs)
    paragraphs = []
    for framework, pair in pairs.items():
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"pairs[{framework!r}] must be a (before, after) pair of Timelines")
        a, b = pair
        step, compute = speedup(a, b), speedup(a, b, "compute")
        paragraphs.append(
            f"**{validate.text('pairs', framework)}**: median step {ms(a.part().median)} → {ms(b.part().median)}, "
            f"{step} against its own baseline: {OUTCOME[step.outcome]}. Busy {a.utilisation:.0%} → "
            f"{b.utilisation:.0%}; compute per step {compute}: {LONGER[compute.outcome]}.")
    return display.prose(*paragraphs, "The busy share rewards a step that computes longer: judge a pipeline fix by "
                                      "its step time, and read the busy share next to the compute.")


def seed(v: display.Verdict, narrow: Timeline, wide: Timeline, hidden: int, wide_hidden: int) -> display.Prose:
    """Section 7: why the seed's 40-60% is not testable here, from the same loader feeding two model widths."""
    if _verdict(v).tested:
        raise ValueError("v must be the 'not tested' verdict of the seed's claim")
    for name, run in (("narrow", narrow), ("wide", wide)):
        validate.instance(name, run, Timeline)
    hidden, wide_hidden = (validate.number(n, x, low=1, integer=True) for n, x in
                           (("hidden", hidden), ("wide_hidden", wide_hidden)))
    return display.prose(
        f"With width {hidden} the loop was busy {narrow.utilisation:.0%} of the time; with width {wide_hidden}, the "
        f"same loader, {wide.utilisation:.0%} (compute per step {ms(narrow.compute_time)} → {ms(wide.compute_time)}). "
        "A busy share is set by the ratio of model to data work, which this notebook chose; the seed's 40-60% speaks "
        "of real jobs' accelerators. What transfers to your job is the method: measure the wait and the compute of "
        "your own step, then remove the wait.")


def tf_slow_path(v: display.Verdict, runs: Mapping[str, Timeline]) -> display.Prose | None:
    """Going further: NumPy through ``tf.numpy_function`` against the same code called directly and TF ops
    (``runs``: NumPy directly, numpy_function, TF ops vectorised; data only)."""
    if not _verdict(v).tested:
        return None
    direct, crossing, ops = _runs(runs, 3)
    slow, fast = speedup(direct, crossing, "wait"), speedup(direct, ops, "wait")
    said = (f"Through `tf.numpy_function` a batch took {ms(crossing.part('wait').median)} against "
            f"{ms(direct.part('wait').median)} for the same NumPy code called directly: {slow}, "
            f"{OUTCOME[slow.outcome]}. In TF ops, a whole batch per `map` call, {ms(ops.part('wait').median)}: "
            f"{fast}, {OUTCOME[fast.outcome]}.")
    if v.held:
        said += (" Every `numpy_function` call leaves TF's C++ runtime for Python under the GIL and converts tensors "
                 "to arrays and back, so parallel `map` calls cannot overlap it; in TF ops the work stays in C++.")
    else:
        said += (" The ranking did not hold (the verdict says which way each pipeline went), and why is not "
                 "established by this run: the crossings themselves are a few per sample. What holds either way: "
                 "every `numpy_function` call takes the GIL, so parallel `map` calls cannot overlap them, while TF "
                 "ops can.")
    return display.prose(said)
