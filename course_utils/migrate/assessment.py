"""What ``assess`` found from the fresh processes' results: each mode's gain with its interval across processes (it
decides), compile cost, graph breaks, memory, parity, MFU, money, and a quiet machine (``RULE``)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from course_utils import declare, devices, display, intervals, validate
from course_utils.migrate import cost, decision, parity, readings, record
from course_utils.migrate.inputs import MEASURED, SEED, Inputs
from course_utils.migrate.ladder import MigrationGain, paired
from course_utils.migrate.parity import Fallback, Parity

CACHE_METHOD = ("on-disk caches: every process uses one TORCHINDUCTOR_CACHE_DIR, empty for the first process (cold "
                "compile); the later processes find its generated code and compiled kernels there (warm compile), as "
                "a job does on a machine that compiled the model before. The portable cache "
                "(torch.compiler.save_cache_artifacts) was not used: on a CPU a process that loads it still builds "
                "every C++ kernel again (its empty cache folder fills with as many compiled libraries as a cold one)")
LOAD_METHOD = ("os.getloadavg() at the start and the end of each measuring process, the CPU steal over its life "
               f"(/proc/stat), and the best of {readings.CALIBRATION_REPEATS} fp32 {readings.CALIBRATION_N}x"
               f"{readings.CALIBRATION_N} matmuls timed just before and just after its timed rounds, after "
               f"{readings.CALIBRATION_WARMUP_S:g} s of untimed ones")


def device_peak(device: str, device_name: str, amp: str | None,
                roof: Mapping[str, Any] | None) -> tuple[float | None, str]:
    """(peak FLOP/s, its source): on a CPU this run's matmul roof for the dtype that ran (``roof``, from the worker);
    on a GPU the data sheet's dense figure for that dtype (``devices.KNOWN``, labelled), or (None, why)."""
    if device == "cpu":
        if roof is None:
            return None, "no peak measured in this run"
        return roof["flops"], (f"measured in this run's first process for the dtype that ran: the best of "
                               f"{roof['repeats']} {roof['dtype']} {roof['n']}x{roof['n']} matmuls (torch.matmul, "
                               f"{roof['threads']} threads)")
    name = device_name.upper().replace("-", " ")
    for spec in devices.KNOWN.values():
        # fp32 convolutions run as TF32 by default (cudnn.allow_tf32): fp32's own peak would give an MFU above 100%
        dtype = amp or ("tfloat32" if "tfloat32" in spec.peaks else "float32")
        if spec.kind == "gpu" and re.search(spec.pattern, name) and dtype in spec.peaks:
            return spec.peaks[dtype], f"data sheet figure for {spec.name} ({dtype}, dense; {spec.source}), not measured"
    dtype = amp or "float32"
    return None, f"no {dtype} data sheet figure for {device_name!r} in devices.KNOWN"


@declare.checked
@dataclass(frozen=True)
class ModeResult:
    """One compile mode against eager: across processes, in each process, and what compiling it cost."""

    mode: str
    speedup: intervals.Speedup
    in_process: tuple[intervals.Speedup, ...]
    step_s: float
    compile_cold_s: float
    compile_warm_s: float | None
    graph_breaks: tuple[str, ...]
    recompiles: tuple[str, ...]
    graphs: int  # graphs Dynamo captured in the first process (its unique_graphs counter)
    peak_bytes: int | None
    parity: Parity
    per_process: tuple[float, ...] = ()  # eager median / compiled median, one per process: the interval's pairs
    call: str = ""  # the compile call measured, as the report names it
    wait_s: float | None = None  # of step_s, the median wait for the next batch (None: inputs cached)
    compiled_share: float | None = None  # of the first process's host step time, inside compiled graphs (CPU only)

    @property
    def nothing(self) -> str | None:
        """Why there is nothing to migrate (this mode compiled no graph), or None."""
        return parity.nothing_compiled(self.graphs, self.graph_breaks)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "call": self.call, "wait_s": self.wait_s,
                "speedup": {"median": self.speedup.ratio, **self.speedup.to_dict()},  # to_dict holds low and high
                "in_process": [s.to_dict() for s in self.in_process], "step_s": self.step_s,
                "compile_seconds": {"cold": self.compile_cold_s, "warm": self.compile_warm_s},
                "graph_breaks": list(self.graph_breaks), "recompiles": list(self.recompiles),
                "compiled_graphs": self.graphs, "nothing_to_migrate": self.nothing,
                "peak_bytes": self.peak_bytes, "parity": self.parity.to_dict(),
                "per_process": list(self.per_process), "compiled_share": self.compiled_share}


def median_or_none(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def median_bytes(values: Sequence[int | None]) -> int | None:
    """The median of byte counts, whole (an even count's median is the mean of the middle two)."""
    found = median_or_none(values)
    return None if found is None else round(found)


def wait(runs: Sequence[Mapping[str, Any]]) -> float | None:
    """The median over processes of a variant's per-step wait for data (None where the inputs were cached)."""
    return median_or_none([median_or_none(v.get("round_wait_s") or [None]) for v in runs])


def mode_results(results: Sequence[Mapping[str, Any]], modes: Sequence[str], amp: str | None,
                 calls: Mapping[str, str]) -> tuple[ModeResult, ...]:
    """Each mode's result from the processes' results (``results[0]`` cold); in-process intervals where all ran."""
    eager = [r["variants"]["eager"] for r in results]
    eager_medians = [statistics.median(v["round_step_s"]) for v in eager]
    out = []
    for mode in modes:
        runs = [r["variants"][mode] for r in results]
        medians = [statistics.median(v["round_step_s"]) for v in runs]
        gain = replace(intervals.speedup(eager_medians, medians), baseline="eager", candidate=calls[mode])
        compile_s = [max(0.0, v["first_s"] - m) for v, m in zip(runs, medians)]
        out.append(ModeResult(
            mode, gain, tuple(paired("eager", e["round_step_s"], mode, v["round_step_s"])
                              for e, v, r in zip(eager, runs, results) if not r.get("separate")),
            statistics.median(medians), compile_s[0], median_or_none(compile_s[1:]),
            tuple(sorted({b for v in runs for b in v["graph_breaks"]})),
            tuple(dict.fromkeys(x for v in runs[:1] for x in v["recompiles"])), int(runs[0]["graphs"]),
            median_bytes([v["peak_bytes"] for v in runs]), parity.of(results, mode, amp),
            tuple(e / c for e, c in zip(eager_medians, medians)), calls[mode], wait(runs),
            runs[0].get("compiled_share")))
    return tuple(out)


@dataclass(frozen=True)
class Pricing:
    """The money: inputs, the estimate at the measured gain, break-even speed-up, decision, the run length that pays."""

    inputs: Inputs
    estimate: cost.CostEstimate
    break_even: float
    decision: decision.Decision
    run_length: decision.RunLength
    span: tuple[float, float] | None = None  # break-even months over the gain's interval and the inputs' ranges

    @property
    def months_span(self) -> tuple[float, float]:
        """(soonest, latest) break-even: over the gain's interval, and the inputs' ranges where some are ranges."""
        return self.span or self.estimate.break_even_range

    def to_dict(self) -> dict[str, Any]:
        soon, late = self.months_span
        return {"inputs": self.inputs.to_dict(), "break_even_speedup": self.break_even,
                "break_even_months": {"median": self.estimate.break_even_months, "soonest": soon, "latest": late},
                "net": {"median": self.estimate.net(), "low": self.estimate.net("low"),
                        "high": self.estimate.net("high")},
                "run_length": self.run_length.to_dict(), **self.decision.to_dict()}


def price(inputs: Inputs, speedup: intervals.Speedup, *, eager_step_s: float, compile_cold_s: float,
          compile_warm_s: float | None, label: str, nothing: str | None = None, busy: str | None = None) -> Pricing:
    """Feed the measured ``speedup`` to the cost model at ``inputs``: the job from ``steps_per_job`` (or the seed's 72 h
    job) at the eager step, each job's compile cold (warm where the config says the cache persists). ``nothing`` (why
    nothing compiled) decides "nothing to migrate"; else ``busy`` "not decided"."""
    validate.instance("inputs", inputs, Inputs)
    steps = inputs.value("steps_per_job")
    if steps:
        job_hours = steps * eager_step_s / 3600
    else:
        job_hours = cost.SEED_JOB_HOURS
        inputs = inputs.with_value("steps_per_job", max(1, round(cost.SEED_JOB_HOURS * 3600 / eager_step_s)),
                                   f"{SEED}: a 72 h job at the {MEASURED} eager step")
    warm = inputs.value("compile_cache_persists") and compile_warm_s is not None
    compile_s = compile_warm_s if warm else compile_cold_s
    gain = MigrationGain.across_processes(speedup, label)
    estimate = decision.estimate_for(inputs, gain, job_hours=job_hours, compile_s_per_job=compile_s)
    be = decision.break_even_speedup(inputs, job_hours=job_hours, compile_s_per_job=compile_s)
    if nothing or busy:
        rule = decision.Decision(decision.NOTHING if nothing else decision.BUSY, speedup, be, reason=nothing or busy)
    else:
        rule = decision.decide(speedup, be)
    span = None
    if inputs.ranged:
        soon, late = (decision.estimate_for(ends, gain, job_hours=job_hours, compile_s_per_job=compile_s)
                      for ends in inputs.ends())
        span = (soon.break_even("high"), late.break_even("low"))
    return Pricing(inputs, estimate, be, rule,
                   decision.break_even_run(compile_cold_s, eager_step_s, speedup), span)


@declare.checked
@dataclass(frozen=True, repr=False)
class Assessment:
    """Everything one ``assess`` run measured and computed; ``modes[0]`` (the first mode asked for) decides."""

    model: str
    batches: str
    loss: str | None
    device: str
    device_name: str
    versions: Mapping[str, str]
    threads: int
    processes: int
    steps: int
    rounds: int
    amp: str | None
    optimizer: str
    eager_step_s: float
    eager_peak_bytes: int | None
    modes: tuple[ModeResult, ...]
    skipped: Mapping[str, str]
    flops_per_step: float
    peak_flops: float | None
    peak_source: str
    fallback: Fallback
    pricing: Pricing
    seconds: float
    command: str
    parameters: int = 0
    batch: str = ""
    cache: Mapping[str, Any] = field(default_factory=dict)
    started: str = ""  # UTC, ISO 8601
    host: Mapping[str, Any] = field(default_factory=dict)
    loads: tuple[Mapping[str, Any], ...] = ()  # per process: os.getloadavg() at its start and its end
    gate: Any = None  # gate.Gate against --baseline, or None
    amp_alone: intervals.Speedup | None = None  # eager + AMP over eager fp32 across processes (AMP runs only)
    compile_alone: intervals.Speedup | None = None  # compiled fp32 over eager fp32 (AMP runs only)
    batch_inputs: str = "end-to-end"  # each step drew from make_batches() as training does; "cached": fetched once
    eager_wait_s: float | None = None  # of eager_step_s, the median wait for the next batch
    ddp: Mapping[str, Any] | None = None  # --nproc-per-node > 1: ranks, backend, buckets, graphs, comm share (ddp.py)
    layout: Mapping[str, Any] = field(default_factory=dict)  # the variants in one process or each alone (``layout``)

    @property
    def deciding(self) -> ModeResult:
        return self.modes[0]

    @property
    def setup(self) -> str:
        """What each variant ran with: batch, loader, dtype, threads, device (the same for eager and compiled)."""
        inputs = ("inputs cached: batches fetched once and reused, compute only (--inputs=cached)"
                  if self.eager_wait_s is None else "end to end: each step drew its batch from make_batches() as "
                  f"training does ({display.format_time(self.eager_wait_s)} of the eager step waited for data)")
        return (f"batch {self.batch}, {inputs}, {self.amp or 'fp32'}, "
                f"{self.threads} intra-op thread{'s' if self.threads != 1 else ''}, {self.device_name}"
                + ("" if self.ddp is None else f", {self.ddp['ranks']} ranks in DDP over {self.ddp['backend']}"))

    @property
    def decision(self) -> decision.Decision:
        return self.pricing.decision

    def mfu(self, step_s: float) -> float | None:
        """Model FLOPs per second over the peak (None where no peak is known or no FLOP was counted)."""
        if self.peak_flops is None or self.flops_per_step <= 0:
            return None
        return self.flops_per_step / step_s / self.peak_flops

    def priced(self, inputs: Inputs) -> Assessment:
        """The same measurements priced at other ``inputs`` (e.g. the seed's own terms beside the lead's)."""
        mode = self.deciding
        return replace(self, pricing=price(inputs, mode.speedup, eager_step_s=self.eager_step_s,
                                           compile_cold_s=mode.compile_cold_s, compile_warm_s=mode.compile_warm_s,
                                           label=self.pricing.estimate.speedup.label, nothing=mode.nothing,
                                           busy=self.busy))

    @property
    def busy(self) -> str | None:
        """Why the machine was busy during the measurement (``RULE``), or None."""
        return busy(self.loads, self.host["logical_cores"])

    def to_dict(self) -> dict[str, Any]:
        mode = self.deciding
        return {
            "schema_version": record.SCHEMA_VERSION, "timestamp": self.started, "host": dict(self.host),
            "load": {"per_process": [dict(x) for x in self.loads], "method": LOAD_METHOD, "rule": RULE,
                     "busy": self.busy},
            "model": self.model, "batches": self.batches, "loss": self.loss or "cross-entropy (default)",
            "device": self.device, "device_name": self.device_name, "versions": dict(self.versions),
            "threads": self.threads, "processes": self.processes, "steps": self.steps, "rounds": self.rounds,
            "amp": self.amp or "off", "batch_inputs": self.batch_inputs, "eager_wait_s": self.eager_wait_s,
            "ddp": None if self.ddp is None else dict(self.ddp), "layout": dict(self.layout),
            "optimizer": self.optimizer, "parameters": self.parameters, "batch": self.batch,
            "speedup": {"median": mode.speedup.ratio, "low": mode.speedup.low, "high": mode.speedup.high,
                        "mode": mode.mode, "call": mode.call, "method": intervals.METHOD + " over per-process medians"},
            "decision": self.decision.text, "break_even_speedup": self.pricing.break_even,
            "fallback": self.fallback.to_dict(),  # parity, graph breaks, graphs, recompiles: under "modes"
            "compile_seconds": {"cold": mode.compile_cold_s, "warm": mode.compile_warm_s, "method": CACHE_METHOD},
            "peak_bytes": {"eager": self.eager_peak_bytes, **{m.mode: m.peak_bytes for m in self.modes}},
            "mfu": {"eager": self.mfu(self.eager_step_s), **{m.mode: self.mfu(m.step_s) for m in self.modes},
                    "flops_per_step": self.flops_per_step, "peak_flops": self.peak_flops,
                    "peak_source": self.peak_source},
            "modes": [m.to_dict() for m in self.modes], "skipped": dict(self.skipped),
            "inputs": self.pricing.inputs.to_dict(), "money": self.pricing.to_dict(),
            "eager_step_s": self.eager_step_s, "seconds": self.seconds, "command": self.command,
            "cache": dict(self.cache), "gate": None if self.gate is None else self.gate.to_dict(),
            "amp_alone": None if self.amp_alone is None else self.amp_alone.to_dict(),
            "compile_alone": None if self.compile_alone is None else self.compile_alone.to_dict(),
        }


STEAL = 0.05  # of the CPU time, taken by the hypervisor for other guests
CALIBRATION = 1.5  # the matmul after the process over the one before (or the inverse)
RULE = (f"busy when, in any measuring process, the 1-minute load average at its start or end exceeds the logical "
        f"cores, the CPU steal exceeds {STEAL:.0%}, or the calibration matmul timed after it differs from the one "
        f"timed before it by more than {CALIBRATION:g}x either way")


def busiest(loads: Sequence[Mapping[str, Any]]) -> float:
    """The highest 1-minute load average recorded (start or end of any process)."""
    return max(max(x["start"][0], x["end"][0]) for x in loads)


def drift(x: Mapping[str, Any]) -> float:
    """How many times one process's calibration matmul changed between its start and its end (1: not at all)."""
    c = x.get("calibration")
    return max(c["after"] / c["before"], c["before"] / c["after"]) if c else 1.0


def busy(loads: Sequence[Mapping[str, Any]], cores: int) -> str | None:
    """Why the machine was busy (``RULE``), or None when it was quiet."""
    top, steal = busiest(loads), max((x.get("steal") or 0.0 for x in loads), default=0.0)
    worst = max(range(len(loads)), key=lambda i: drift(loads[i]))
    why = [f"the 1-minute load average reached {top:.2f} with {cores} logical cores"] * (top > cores)
    why += [f"the CPU steal reached {steal:.0%}"] * (steal > STEAL)
    why += [f"process {worst + 1}'s calibration matmul changed {drift(loads[worst]):.2f}x between its start and "
            "its end (interference)"] * (drift(loads[worst]) > CALIBRATION)
    return "; ".join(why) or None


def described(loads: Sequence[Mapping[str, Any]], cores: int) -> str:
    """What the guard saw, for the report (computed from the records)."""
    steals = [x["steal"] for x in loads if x.get("steal") is not None]
    return (f"highest 1-minute load {busiest(loads):.2f} with {cores} logical cores; CPU steal "
            + (f"at most {max(steals):.1%}" if steals else "not available (no /proc/stat)")
            + f"; calibration matmul before/after each process within {max(drift(x) for x in loads):.2f}x")
