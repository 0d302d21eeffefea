"""Notebook 05's generated sentences that weigh several measurements at once, with a branch for each outcome.

``remainder_finding``: what is left of the DDP step once its compute and an all-reduce measured alone are taken
away, judged against the step's quartile range and, when the all-reduce alone outlasts the step, against the
same job's all-reduce sweep (the ring model fitted on it, computed). ``cpu_per_step`` and ``spin_finding``: what
``OMP_WAIT_POLICY=passive`` changed, judged on CPU seconds per step (cores busy x step), not on rates.
``baseline_finding`` and ``fresh_agreement``: the 1-thread whole-batch step measured in the kernel against the
one measured inside the torchrun job, and whether a fresh process reproduced the kernel's thread result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils import display, timing, validate
from course_utils.distributed.comms import AllReduceModel, score
from course_utils.distributed.devices import ThreadRun


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _range(m: timing.Measurement) -> str:
    """'median (p25-p75)' of a measurement, formatted by ``display.format_time``."""
    return f"{display.format_time(m.median)} ({display.format_time(m.p25)} to {display.format_time(m.p75)})"


def remainder_finding(step: timing.Measurement, compute: timing.Measurement, allreduce: timing.Measurement,
                      fit: AllReduceModel, sweep: tuple[Any, Any], nbytes: float) -> str:
    """The step minus its compute minus one all-reduce alone (medians), judged against the step's quartile range;
    a negative rest is checked against the ring model ``fit`` of the same job's ``sweep`` (bytes, median seconds)."""
    for name, m in (("step", step), ("compute", compute), ("allreduce", allreduce)):
        validate.instance(name, m, timing.Measurement)
    validate.instance("fit", fit, AllReduceModel)
    nbytes = validate.positive("nbytes", nbytes)
    rest, iqr = step.median - compute.median - allreduce.median, step.iqr
    said = f"leaving {_ms(rest)} of the step (medians) "
    if abs(rest) <= iqr:
        return said + (f"that is within the step's own quartile range ({_ms(iqr)} wide): compute plus one "
                       "all-reduce account for the step, within this run's noise. ")
    if rest > 0:
        return said + (f"that exceeds the step's quartile range ({_ms(iqr)} wide): time in the DDP step that neither "
                       "its compute nor the all-reduce alone contains. Candidates are waiting for the slower rank, DDP "
                       "copying gradients into its bucket, a rank waiting for a core; which one is not established "
                       "by this run. ")
    sizes, seconds = (np.asarray(v, dtype=float) for v in sweep)
    model = float(fit.time(nbytes, 2))
    near = [int(np.argmin(np.where(sizes <= nbytes, nbytes - sizes, np.inf))),
            int(np.argmin(np.where(sizes >= nbytes, sizes - nbytes, np.inf)))]
    near = sorted(set(near))
    fits = score(fit, sizes[near], seconds[near], 2)
    at = " and ".join(display.format_bytes(sizes[i]) for i in near)
    off = allreduce.median / model
    said += (f"below zero by more than the step's quartile range ({_ms(iqr)} wide): the all-reduce measured alone "
             f"({_ms(allreduce.median)}) took longer than the whole DDP step ({_ms(step.median)}), which contains "
             f"one. The ring model fitted on this job's all-reduce sweep (section 5), whose medians at {at}, the "
             f"sweep's sizes around {display.format_bytes(nbytes)}, are {' and '.join(f'{r:.2f}x' for r in fits)} "
             f"the model, prices this all-reduce at {_ms(model)} (computed): the alone-measurement is {off:.1f}x that")
    if not 0.5 <= off <= 2:
        return said + (", disagreeing with the sweep as well as with the step. So this alone-measurement is "
                       "suspect, and what made it slow is not established by this run. ")
    return said + (", within the factor 2 the sweep holds: the sweep agrees with it, so the step ran faster than "
                   "the all-reduce it contains; how is not established by this run. ")


def cpu_per_step(run: ThreadRun) -> tuple[float, float, float]:
    """(median, p25, p75) CPU seconds per step, computed: the run's cores busy times its step time quartiles."""
    validate.instance("run", run, ThreadRun)
    m = run.measurement
    return run.cores_busy * m.median, run.cores_busy * m.p25, run.cores_busy * m.p75


def spin_finding(default: ThreadRun, passive: ThreadRun) -> str:
    """What ``OMP_WAIT_POLICY=passive`` changed in a fresh process: step time and CPU seconds per step, each
    judged by its quartile range; spinning is claimed only if passive used less CPU per step beyond them."""
    d, p = cpu_per_step(default), cpu_per_step(passive)
    dm, pm = default.measurement, passive.measurement
    said = (f"In fresh processes with {default.threads} threads: default policy {display.format_time(dm.median)} "
            f"per step with {default.cores_busy:.2f} cores busy, `OMP_WAIT_POLICY=passive` "
            f"{display.format_time(pm.median)} with {passive.cores_busy:.2f}; that is "
            f"{display.format_time(d[0])} against {display.format_time(p[0])} of CPU time per step (cores busy x "
            "median step, computed). ")
    times = ("within the noise of each other" if not timing.apart(dm, pm) else
             "faster with passive, beyond the quartiles" if pm.median < dm.median else
             "slower with passive, beyond the quartiles (a candidate: a sleeping thread takes time to wake; not "
             "measured here)")
    if p[2] < d[1]:  # passive's quartile range of CPU per step lies below the default's
        return said + (f"Passive took {display.format_time(d[0] - p[0])} less CPU per step, beyond the quartiles: "
                       "CPU time the default's threads spent waiting at a barrier instead of sleeping, that is "
                       f"spinning. The step times were {times}. ")
    more = p[1] > d[2]
    return said + ("Passive did not lower the CPU time per step beyond the quartiles"
                   + (" (it raised it: a slower step at fewer busy cores still costs more CPU)" if more else "")
                   + ", so spinning is not established by this run: fewer busy cores per wall second alone say "
                   f"only that the step took longer. The step times were {times}. ")


def baseline_finding(kernel: timing.Measurement, job: timing.Measurement, name: str) -> str:
    """The 1-thread whole-batch step timed in this kernel against the same step timed by rank 0 in the torchrun job
    (the baseline of section 3's speed-ups), judged by their quartile ranges."""
    validate.instance("kernel", kernel, timing.Measurement)
    validate.instance("job", job, timing.Measurement)
    validate.text("name", name)
    said = (f"{name}: 1 thread, whole batch, {_range(kernel)} in this kernel against {_range(job)} by rank 0 in the "
            "torchrun job")
    if not timing.apart(kernel, job):
        return said + ", within the noise of each other"
    return said + (f", {job.median / kernel.median:.2f}x apart beyond the quartiles (why the same step differs between "
                   "the two processes is not established by this run)")


def _side(m: timing.Measurement, one: timing.Measurement) -> str:
    """Where ``m`` lies against the 1-thread step ``one``, judged by their quartile ranges."""
    if not timing.apart(m, one):
        return "within the noise of"
    return "slower than" if m.median > one.median else "faster than"


def fresh_agrees(one: timing.Measurement, every: timing.Measurement, fresh: timing.Measurement) -> bool:
    """True when a fresh process's every-thread step ``fresh`` lies on the same side of the kernel's 1-thread step
    ``one`` as the kernel's every-thread step ``every`` (slower, faster, or within the noise)."""
    for name, m in (("one", one), ("every", every), ("fresh", fresh)):
        validate.instance(name, m, timing.Measurement)
    return _side(every, one) == _side(fresh, one)


def fresh_agreement(one: timing.Measurement, every: timing.Measurement, fresh: timing.Measurement) -> str:
    """Whether a fresh process's every-thread step ``fresh`` reproduced the kernel's comparison of ``every``
    threads against ``one`` thread (the kernel's 1-thread step is the only 1-thread time there is)."""
    agrees = fresh_agrees(one, every, fresh)
    return (f"in this kernel every thread was {_side(every, one)} 1 thread; in a fresh process every thread took "
            f"{_range(fresh)}, {_side(fresh, one)} the kernel's 1-thread {_range(one)}: the fresh process "
            + ("agreed" if agrees else "did not agree, so the kernel's result is not established beyond this kernel"))
