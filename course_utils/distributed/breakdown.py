"""What a data-parallel step's time is made of (numbers; ``findings`` words them): the workers' records as Measurements,
the chain from one process to the DDP step one suspect at a time, what ``no_sync`` saved, the step per thread count."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from course_utils import declare, display, intervals, timing, validate
from course_utils.distributed.devices import ThreadRun

# rank 0's step, one suspect added at a time: (variant, what it adds to the variant before it)
CHAIN = (("single", "whole batch, plain model (baseline)"), ("single_half", "halving the batch"),
         ("solo_ddp", "DDP's bookkeeping, no partner (no_sync)"),
         ("compute", "the partner rank computing beside it (no_sync)"), ("ddp", "the all-reduce (the DDP step)"))


@declare.checked
def chain(parts: Mapping[str, timing.Measurement]) -> dict[str, intervals.Speedup]:
    """{what a link adds: the variant before it over the variant with it} for each link of ``CHAIN`` (above 1: the
    addition made the step faster), each a 95% interval over the paired rounds."""
    missing = [name for name, _ in CHAIN if name not in parts]
    if missing:
        raise ValueError(f"parts lacks {missing}: pass the timing record's measurements (cu.distributed.measurements)")
    return {what: intervals.speedup(parts[before], parts[name])
            for (before, _), (name, what) in zip(CHAIN, CHAIN[1:])}


@declare.checked
def chain_table(timed: Annotated[Mapping[str, Mapping[str, timing.Measurement]], declare.NonEmpty],
                links: Mapping[str, Mapping[str, intervals.Speedup]]) -> display.Table:
    """Rank 0's step per model (median and quartiles), and each link's factor with its interval: the geometric mean
    of the per-round ratios (what ``cu.intervals.speedup`` estimates), named so, not the printed medians' ratio."""
    for model, parts in timed.items():
        for name, _ in CHAIN:
            validate.instance(f"timed[{model!r}][{name!r}]", parts.get(name), timing.Measurement)
        validate.instance(f"links[{model!r}]", links.get(model), Mapping)
    rows = []
    for name, label in CHAIN:
        row = [label]
        for model, parts in timed.items():
            m = parts[name]
            row.append(f"{m.median * 1e3:.2f} ms ({m.p25 * 1e3:.2f}-{m.p75 * 1e3:.2f})")
            link = links[model].get(label)
            row.append("-" if link is None else f"{1 / link.ratio:.2f}x ({1 / link.high:.2f}-{1 / link.low:.2f})")
        rows.append(row)
    rounds = {link.n for per in links.values() for link in per.values()}
    header = ["rank 0's step"]
    for model in timed:
        header += [f"{model}: median (quartiles)", f"{model}: x the step above, geometric mean of per-round ratios "
                   "(95% interval)"]
    return display.table(header, rows, title="One suspect at a time: rank 0's step, 1 thread per process (measured)",
                         note="Rows 1-3: rank 0 alone while the other rank waits; rows 4-5: both ranks at once. "
                              "Each factor: the geometric mean over "
                              f"{'/'.join(map(str, sorted(rounds))) or 'the'} paired rounds, in this process, of this "
                              "row's time over the row above's; it need not equal the ratio of the printed medians.")


def accumulation_saving(record: Mapping[str, Any]) -> dict[str, Any]:
    """What ``no_sync`` saved per optimizer step (``saved``) against the K - 1 all-reduces it removed, back to back
    (``back_to_back``, ``one``); one sync in the loop (``per_sync``); inside one all-reduce (``inside``); ``table``."""
    validate.instance("record", record, Mapping)
    k = validate.number("k", record.get("k"), low=2, high=10**4, integer=True)
    parts = measurements(record)
    for name in ("every", "no_sync", "local", "allreduces"):
        if name not in parts:
            raise ValueError(f"record lacks {name!r}: it is not ddp_train.py's accum_timing record")
    inside_calls = record.get("inside_allreduce")
    if isinstance(inside_calls, (str, bytes)) or not isinstance(inside_calls, (list, tuple)) or not inside_calls:
        raise ValueError("record lacks 'inside_allreduce', the per-call times of the hooked loop")
    inside = float(np.median([validate.non_negative("inside_allreduce", t) for t in inside_calls]))
    saved = float(np.median(np.subtract(parts["every"].rounds, parts["no_sync"].rounds)))
    per_sync = float(np.median(np.subtract(parts["every"].rounds, parts["local"].rounds))) / k
    back = parts["allreduces"].median
    ms = "{:.3f} ms".format
    rows = [("syncing every micro-batch", ms(parts["every"].median * 1e3), "measured"),
            ("no_sync, one all-reduce", ms(parts["no_sync"].median * 1e3), "measured"),
            ("no communication at all (every micro-batch under no_sync)", ms(parts["local"].median * 1e3), "measured"),
            ("saved per optimizer step (row 1 - row 2)", ms(saved * 1e3), "measured, median over rounds"),
            (f"{k - 1} all-reduces of the gradient, back to back", ms(back * 1e3), "measured"),
            ("one sync in the loop ((row 1 - row 3) / K)", ms(per_sync * 1e3), "computed, median over rounds"),
            ("inside one all-reduce call, in the loop", ms(inside * 1e3),
             "measured by a timing hook, partner's lateness included"),
            ("one all-reduce, back to back (row 5 / (K - 1))", ms(back / (k - 1) * 1e3), "computed")]
    return {"k": k, "saved": saved, "back_to_back": back, "inside": inside, "per_sync": per_sync,
            "one": back / (k - 1), "parts": parts,
            "table": display.table([f"per optimizer step of {k} micro-batches", "time", "how"], rows,
                                   title="What no_sync saved, and what the removed all-reduces cost")}


_Runs = Mapping[str, Mapping[int, ThreadRun]]  # model -> {threads: ThreadRun}, as ``time_threads`` returns


@declare.checked
def threads_table(threads: Annotated[_Runs, declare.NonEmpty], fresh: Mapping[str, _Runs],
                  cores: Annotated[int, declare.Range(1, 4096)]) -> display.Table:
    """The whole-batch step per model and thread count, in this kernel and in fresh processes per wait policy."""
    fmt = display.format_time
    rows = [(n, "this kernel", r.threads, r) for n, t in threads.items() for r in t.values()]
    rows += [(n, f"fresh process, {policy} wait", r.threads, r) for policy, f in fresh.items()
             for n, t in f.items() for r in t.values()]
    return display.table(["model", "where", "threads", "median", "quartiles", "cores busy", "of which the caller"],
                         [(n, where, k, fmt(r.measurement.median), f"{fmt(r.measurement.p25)} to "
                           f"{fmt(r.measurement.p75)}", f"{r.cores_busy:.2f}", f"{r.caller_busy:.2f}")
                          for n, where, k, r in rows],
                         title=f"The whole-batch step ({cores} cores)",
                         note="cores busy: the process's CPU seconds per wall second, every thread; the calling "
                              "thread's alone beside it.")


@declare.checked
def measurements(record: Mapping[str, Any]) -> dict[str, timing.Measurement]:
    """{variant: Measurement} for every variant of a worker's record that has per-round medians ("rounds")."""
    rounds = record.get("rounds")
    if not isinstance(rounds, Mapping) or not rounds:
        raise ValueError(f"record {record.get('kind')!r} holds no per-round medians ('rounds'): it was not timed "
                         "with worker.timed_rounds")
    found = {}
    for name, per_round in rounds.items():
        times = record.get(name, per_round)
        if isinstance(times, (str, bytes)) or not isinstance(times, (list, tuple)):
            raise ValueError(f"record {record.get('kind')!r}: {name!r} must be a list of seconds; got {times!r:.60}")
        found[name] = timing.Measurement(label=name, times=tuple(float(t) for t in times),
                                         rounds=tuple(float(t) for t in per_round))
    return found


@declare.checked
def summed(label: declare.Text, *parts: timing.Measurement) -> timing.Measurement:
    """The round-by-round sum of ``parts`` (each with the same number of rounds), as one Measurement whose times
    are those sums: e.g. a step's compute plus its all-reduce, timed apart, to set against the step."""
    counts = {len(m.rounds) for m in parts}
    if len(counts) != 1 or 0 in counts:
        raise ValueError(f"parts must all have the same number (>= 1) of rounds; got {sorted(counts)}")
    totals = tuple(sum(values) for values in zip(*(m.rounds for m in parts)))
    return timing.Measurement(label=label, times=totals, rounds=totals)


_Seconds = Annotated[float, declare.Positive]


@declare.checked
def from_rounds(label: declare.Text,
                per_round: Annotated[Sequence[Annotated[Sequence[_Seconds], declare.NonEmpty]], declare.MinItems(2)],
                ) -> timing.Measurement:
    """A Measurement from a worker's times in rounds (at least 2 non-empty lists of seconds), medians per round kept."""
    flat = tuple(float(t) for times in per_round for t in times)
    return timing.Measurement(label=label, times=flat, number=1, total=sum(flat),
                              rounds=tuple(float(np.median(times)) for times in per_round))
