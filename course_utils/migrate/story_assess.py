"""Every sentence ``assess`` writes (report.md, report.html, the notebook's tables), each a function of the
measured ``Assessment``: the decision and what decided it, the device, the speed, the distance to the limit, the
compile cost, parity and the fallback, the money, and exploration against production."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from course_utils import display, intervals
from course_utils.migrate import cost, decision
from course_utils.migrate.cost import months_text

if TYPE_CHECKING:
    from course_utils.migrate.assessment import Assessment


def _x(value: float) -> str:
    return "never (no speed-up up to 1000x pays back)" if math.isinf(value) else f"{value:.3g}x"


def _steps(value: float) -> str:
    return "never (at this end nothing is saved per step)" if math.isinf(value) else f"{value:,.0f} steps"


def headline(a: Assessment) -> str:
    """'Decision: migrate' and the one comparison that decided it."""
    d, s = a.decision, a.deciding.speedup
    head = f"**Decision: {d.outcome}.**"
    gain = f"The speed-up of torch.compile(mode='{a.deciding.mode}') over eager on a training step of {a.model} is {s}"
    if d.outcome == decision.MIGRATE:
        return f"{head} {gain}; the whole interval lies above the break-even speed-up, {_x(d.break_even)}."
    if d.outcome == decision.DO_NOT_MIGRATE:
        if math.isinf(d.break_even):
            return (f"{head} {gain}; no speed-up pays the migration back within "
                    f"{a.pricing.inputs.value('horizon_months')} months at these inputs (the upkeep or the compile "
                    "each job pays eats every saving).")
        return f"{head} {gain}; the whole interval lies below the break-even speed-up, {_x(d.break_even)}."
    more = (f"about {d.processes_needed} processes in all ({d.more_processes} more) would likely decide it, if they "
            "keep this mean and spread" if d.processes_needed is not None else
            "more processes would likely not decide it: the measured gain sits on the break-even speed-up")
    return (f"{head} {gain}; the interval holds the break-even speed-up, {_x(d.break_even)}, so this measurement "
            f"cannot say on which side the gain lies: {more}.")


def blockers(a: Assessment) -> list[str]:
    """What must be fixed before any migration, whatever the speed says: parity and the fallback."""
    out = []
    for m in a.modes:
        if not m.parity.passed:
            out.append(f"parity failed for mode '{m.mode}': compiled losses differ from eager's by up to "
                       f"{m.parity.largest:.1e} relative (tolerance {m.parity.tolerance:.0e}) over {m.parity.steps} "
                       "steps from the same seed")
    f = a.fallback
    if f.error is None:
        out.append("the forced compile failure did not fail, so the fallback was never exercised")
    elif not f.passed:
        out.append(f"the fallback after a forced compile failure did not reproduce the run: {f.vs_eager:.1e} from "
                   f"eager (tolerance {1e-6:.0e}), {f.vs_compiled:.1e} from the compiled path (tolerance "
                   f"{f.tolerance:.0e})")
    return out


def device_sentence(a: Assessment) -> str:
    """Where the decision was measured, and what it does not cover."""
    where = f"Measured on {a.device_name} ({a.device}, {a.threads} intra-op threads) in {a.processes} fresh processes"
    if a.device == "cpu":
        return (f"{where}. A CPU stand-in decides nothing for a GPU fleet: run the same command on the machine "
                "you pay for.")
    return f"{where}: the decision holds for this GPU model and these versions; another GPU needs its own run."


def speed_sentence(a: Assessment) -> str:
    """The gain across processes, and the in-process spread kept apart."""
    m = a.deciding
    inside = ", ".join(f"{s.ratio:.3g}x ({s.low:.3g} to {s.high:.3g})" for s in m.in_process)
    return (f"Across processes: {m.speedup} ({intervals.METHOD}, one pair of per-process medians per process: "
            f"eager {display.format_time(a.eager_step_s)}, compiled {display.format_time(m.step_s)} per step). "
            f"Inside each process, over its {a.rounds} interleaved rounds: {inside}. Those describe "
            "one process only and do not decide anything.")


def mfu_sentence(a: Assessment) -> str:
    """Model FLOPs utilisation of eager and compiled, against the peak named with its source."""
    eager, compiled = a.mfu(a.eager_step_s), a.mfu(a.deciding.step_s)
    flops = f"{a.flops_per_step / 1e9:.3g} GFLOP per step (forward and backward, FlopCounterMode)"
    if eager is None or compiled is None:
        return f"MFU not computed: {a.peak_source}; the model does {flops}."
    return (f"MFU (model FLOP/s over the peak): eager {eager:.1%}, compiled {compiled:.1%}, with {flops} against "
            f"{display.format_flops(a.peak_flops)} ({a.peak_source}). What stays between the compiled MFU and 100% "
            "is what any compiler, kernel or batch change could still try to buy.")


def compile_sentence(a: Assessment) -> str:
    """Cold and warm compile per job, graph breaks and recompiles."""
    m = a.deciding
    warm = "not measured" if m.compile_warm_s is None else display.format_time(m.compile_warm_s)
    breaks = "no graph break" if not m.graph_breaks else f"{len(m.graph_breaks)} graph break(s): {m.graph_breaks[0]}"
    recompiles = "no recompile" if not m.recompiles else f"{len(m.recompiles)} recompile(s): {m.recompiles[0]}"
    return (f"Compile per job: cold {display.format_time(m.compile_cold_s)} (empty cache), warm {warm} (the "
            f"cache the first process left on disk). The compiler logged {breaks}, and {recompiles} (TORCH_LOGS "
            "graph_breaks and recompiles).")


def parity_sentence(a: Assessment) -> str:
    """Losses compiled against eager, and the forced-failure fallback."""
    m, f = a.deciding, a.fallback
    same = "within" if m.parity.passed else "**beyond**"
    if f.error is None:
        fb = "The forced compile failure did not fail: the fallback was not exercised."
    else:
        fb = (f"A forced compile failure ({f.error}) rolled back with torch.compiler.set_stance(\"force_eager\"): "
              f"over {f.steps} steps its losses differ from eager's by {f.vs_eager:.1e} and from the compiled path's "
              f"by {f.vs_compiled:.1e} relative, " + ("as they must." if f.passed else "**which fails the check**."))
    return (f"Parity over {m.parity.steps} steps from the same seed: compiled losses differ from eager's by at most "
            f"{m.parity.largest:.1e} relative (final step {m.parity.final:.1e}), {same} the tolerance "
            f"{m.parity.tolerance:.0e} ({'AMP ' + a.amp if a.amp else 'fp32'}). {fb}")


def money_sentence(a: Assessment) -> str:
    """Break-even months with their interval, and the break-even speed-up."""
    est, p = a.pricing.estimate, a.pricing
    soon, late = est.break_even_range
    when = ("does not pay back within ten years at the median gain" if math.isinf(est.break_even_months) else
            f"pays back after {months_text(est.break_even_months)} at the median gain")
    return (f"At these inputs the migration {when} (across the gain's interval: {months_text(soon)} to "
            f"{months_text(late)}); the break-even speed-up, the smallest gain that pays back within "
            f"{p.inputs.value('horizon_months')} months, is {_x(p.break_even)} (computed).")


def run_length_sentence(a: Assessment) -> str:
    """Exploration against production: the run length from which compiling pays in wall-clock time."""
    r, i = a.pricing.run_length, a.pricing.inputs
    steps_per_job, edits = i.value("steps_per_job"), i.value("edits_per_day")
    interval = f"interval {_steps(r.steps_low)} to {_steps(r.steps_high)}"
    if math.isinf(r.steps):
        return (f"At the median gain a compiled step saves no time, so compiling never pays for itself in wall-clock "
                f"time ({interval}): neither a production job of {steps_per_job:,} steps nor the runs after each of "
                f"{edits} edits a day would end sooner compiled.")
    job = (f"A production job of {steps_per_job:,} steps is " + ("longer" if steps_per_job > r.steps else "shorter")
           + " than that: " + ("compile it." if steps_per_job > r.steps else "at this gain it runs sooner eager."))
    return (f"Compiling pays for itself in wall-clock time after {_steps(r.steps)} ({interval}; "
            f"{display.format_time(r.compile_s)} of cold compile over the time a step saves). {job} While exploring, "
            f"each of {edits} edits a day compiles again: runs after an edit shorter than "
            f"{display.format_time(r.seconds())} are faster in eager (the seed's \"explore in eager, compile when "
            "mature\").")


def summary_table(a: Assessment) -> display.Table:
    """One row per figure a lead asks for."""
    m = a.deciding
    rows = [("decision", a.decision.outcome), ("gain across processes", str(m.speedup)),
            ("break-even speed-up (computed)", _x(a.pricing.break_even)),
            ("break-even months (computed)", f"{months_text(a.pricing.estimate.break_even_months)}"),
            ("compile per job, cold / warm", f"{display.format_time(m.compile_cold_s)} / " + (
                "n/a" if m.compile_warm_s is None else display.format_time(m.compile_warm_s))),
            ("graph breaks / recompiles", f"{len(m.graph_breaks)} / {len(m.recompiles)}"),
            ("parity", f"{'passed' if m.parity.passed else 'FAILED'} ({m.parity.largest:.1e} of "
                       f"{m.parity.tolerance:.0e})"),
            ("fallback after a forced failure", "passed" if a.fallback.passed else "FAILED"),
            ("peak memory of a step, eager / compiled",
             " / ".join("n/a" if b is None else display.format_bytes(b) for b in (a.eager_peak_bytes, m.peak_bytes))),
            ("MFU eager / compiled", " / ".join("n/a" if v is None else f"{v:.1%}"
                                                 for v in (a.mfu(a.eager_step_s), a.mfu(m.step_s))))]
    return display.table(["", a.model], rows, title=f"assess: {a.model} on {a.device_name}",
                         note=f"{a.processes} fresh processes x {a.steps} steps, {a.seconds:.0f} s")


def report_markdown(a: Assessment, figures: dict[str, str] | None = None) -> str:
    """report.md: the decision first, then what decided it, then the rest."""
    figures = figures or {}
    lines = [f"# Should we migrate {a.model}?", "", headline(a), ""]
    lines += [f"- **Blocker:** {b}" for b in blockers(a)] + ([""] if blockers(a) else [])
    lines += [device_sentence(a), ""]
    if "speedup" in figures:
        lines += [figures["speedup"], ""]
    lines += ["## Speed", "", speed_sentence(a), ""]
    lines += ["| mode | gain across processes | step | compile cold | compile warm |", "|---|---|---|---|---|"]
    for m in a.modes:
        lines.append(f"| {m.mode} | {m.speedup} | {display.format_time(m.step_s)} | "
                     f"{display.format_time(m.compile_cold_s)} | "
                     + ("n/a" if m.compile_warm_s is None else display.format_time(m.compile_warm_s)) + " |")
    lines += [f"| {mode} | skipped: {why} | | | |" for mode, why in a.skipped.items()]
    lines += ["", mfu_sentence(a), "", "## Compile cost, graph breaks, memory", "", compile_sentence(a), ""]
    lines += [f"- graph break: {b}" for b in a.deciding.graph_breaks[:10]]
    lines += [f"- recompile: {r}" for r in a.deciding.recompiles[:10]]
    lines += ["Peak memory of one steady step: eager "
              + ("n/a" if a.eager_peak_bytes is None else display.format_bytes(a.eager_peak_bytes)) + ", compiled "
              + ("n/a" if a.deciding.peak_bytes is None else display.format_bytes(a.deciding.peak_bytes))
              + (" (process peak RSS growth on a CPU)" if a.device == "cpu" else " (CUDA allocator peak)") + ".", ""]
    lines += ["## Parity and rollback", "", parity_sentence(a), ""]
    lines += ["## Money", "", money_sentence(a), ""]
    if "payback" in figures:
        lines += [figures["payback"], ""]
    lines += ["| input | value | source |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {source} |" for name, value, source in a.pricing.inputs.table().rows]
    lines += ["", "## Exploration or production", "", run_length_sentence(a), ""]
    lines += ["## How this was measured", "",
              f"{a.processes} fresh processes, each {a.steps} timed steps in {a.rounds} interleaved rounds after 3 "
              f"untimed steps, per variant; batches {a.batch}; optimizer {a.optimizer}; AMP {a.amp or 'off'}; "
              f"{a.parameters:,} parameters. Compile cache: {a.cache.get('method', '')}. Versions: "
              + ", ".join(f"{k} {v}" for k, v in a.versions.items()) + f". Took {a.seconds:.0f} s.", "",
              f"Repeat: `{a.command}`", ""]
    return "\n".join(lines)


def compare_table(named: Mapping[str, Assessment]) -> display.Table:
    """Several assessed models side by side: what compile bought across processes and what it cost."""
    if not isinstance(named, Mapping) or not named:
        raise TypeError(f"named must be a non-empty mapping of name -> Assessment; got {named!r}")
    rows = []
    for name, a in named.items():
        m = a.deciding
        mfu = " -> ".join("n/a" if v is None else f"{v:.1%}" for v in (a.mfu(a.eager_step_s), a.mfu(m.step_s)))
        rows.append((name, str(m.speedup), f"{display.format_time(a.eager_step_s)} -> {display.format_time(m.step_s)}",
                     f"{display.format_time(m.compile_cold_s)} / "
                     + ("n/a" if m.compile_warm_s is None else display.format_time(m.compile_warm_s)),
                     f"{len(m.graph_breaks)} / {len(m.recompiles)}",
                     f"{'ok' if m.parity.passed else 'FAILED'} ({m.parity.largest:.0e})", mfu))
    return display.table(["model", "compiled over eager, across fresh processes", "step, eager -> compiled",
                          "compile cold / warm", "graph breaks / recompiles", "parity", "MFU, eager -> compiled"],
                         rows, title="assess: the same measurement on two models",
                         note=f"Each row: {next(iter(named.values())).processes} fresh processes; "
                              f"{intervals.METHOD} over the per-process medians.")


def compare_pricing(named: Mapping[str, Assessment]) -> display.Table:
    """The same measured gain priced at several sets of inputs: break-even speed-up, decision, months."""
    if not isinstance(named, Mapping) or not named:
        raise TypeError(f"named must be a non-empty mapping of name -> Assessment; got {named!r}")
    rows = []
    for name, a in named.items():
        i, est = a.pricing.inputs, a.pricing.estimate
        soon, late = est.break_even_range
        rows.append((name, f"{i.value('training_share'):.0%} ({i['training_share'].source})",
                     f"{i.value('eager_upkeep'):,.0f} ({i['eager_upkeep'].source})", _x(a.pricing.break_even),
                     str(a.deciding.speedup), a.decision.outcome,
                     f"{months_text(est.break_even_months)} ({months_text(soon)} to {months_text(late)})"))
    return display.table(["inputs", "training share (source)", "eager upkeep a month (source)",
                          "break-even speed-up", "measured gain", "decision", "break-even (interval)"], rows,
                         title="One measured gain, priced on two sets of inputs (computed)")


def pricing_cases(a: Assessment, *, growth: float) -> display.Table:
    """The assessment's estimate on a flat bill, on a bill growing ``growth`` a month, and on reserved capacity."""
    est = a.pricing.estimate
    growing = f"on demand, bill {growth:+.0%} a month (the seed)"
    return cost.compare_estimates({"on demand, flat bill": est, growing: replace(est, spend_growth=growth),
                                   "reserved capacity (paid anyway)": replace(est, reserved=True)})
