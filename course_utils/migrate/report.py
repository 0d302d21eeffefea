"""``assess``'s report (report.json, .md, .html with plots embedded; ``reprice``) and notebook 07's tables: the
comparisons, the lead's page, the summary rows. Sentences quote numbers; findings decide."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from course_utils import declare, display, intervals
from course_utils import findings as core
from course_utils.declare import MaxItems, MinItems, NonEmpty, Range
from course_utils.findings import Finding, true
from course_utils.migrate import assessment, cost, ddp, findings, plots, record, story
from course_utils.migrate.assessment import LOAD_METHOD, Assessment, Pricing
from course_utils.migrate.checklist import Checklist
from course_utils.migrate.cost import months_text
from course_utils.migrate.decision import BUSY, NOT_DECIDED, NOTHING, Decision, gap, speed_text
from course_utils.migrate.inputs import Inputs, read_config
from course_utils.migrate.ladder import Ladder
from course_utils.migrate.parity import FALLBACK_RTOL

Named = Annotated[Mapping[declare.Text, Assessment], NonEmpty]
STYLE = ("body{font-family:system-ui,sans-serif;max-width:52em;margin:2em auto;line-height:1.45;color:#222}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}"
         "code{background:#f4f4f4}img{max-width:100%}")


def mfu_text(value: float | None) -> str:
    """An MFU as a percentage; above 100% it is refused, since the denominator was not the peak of what ran."""
    if value is None:
        return "n/a"
    return f"{value:.1%}" if value <= 1 else f"refused ({value:.0%} is above 100%: the peak is not what ran)"


def write(found: Assessment, folder: Path) -> dict[str, Path]:
    """Write the three files into ``folder`` (created; the HTML one self-contained, by markdown-it-py); their paths."""
    from markdown_it import MarkdownIt

    folder.mkdir(parents=True, exist_ok=True)
    speed = plots.png_base64(plots.assess_figure(found))
    payback = plots.png_base64(plots.payback(found.pricing.estimate,
                                             labels=[f"measured {found.deciding.speedup.ratio:.3g}x"]))
    figures = {"speedup": f"![speed-up per process, interval and break-even](data:image/png;base64,{speed})",
               "payback": f"![cumulative net per month](data:image/png;base64,{payback})"}
    paths = {"json": folder / "report.json", "md": folder / "report.md", "html": folder / "report.html"}
    record.write(paths["json"], found.to_dict())
    paths["md"].write_text(report_markdown(found))
    body = MarkdownIt("commonmark").enable("table").render(report_markdown(found, figures))
    paths["html"].write_text(html_page(f"assess: {found.model}", body))
    return paths


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page: ``title`` escaped, the report's style sheet, the rendered ``body``."""
    return (f"<!doctype html>\n<html lang='en'>\n<head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head>\n<body>\n{body}</body>\n</html>\n")


def _or_na(value: float | None, shown: Any = display.format_time) -> str:
    return "n/a" if value is None else shown(value)


def _steps(value: float) -> str:
    return "never (at this end nothing is saved per step)" if math.isinf(value) else f"{value:,.0f} steps"


@declare.checked
def findings_of(a: Assessment) -> dict[str, Finding]:
    """The decision, parity, the fallback and the run length, each scored on the assessment's numbers."""
    m, f, r, i = a.deciding, a.fallback, a.pricing.run_length, a.pricing.inputs
    steps = i.value("steps_per_job")
    explore = "any length (at the median gain a compiled step saves no time)" if math.isinf(r.steps) else \
        display.format_time(r.seconds())
    parity = [true(f"compiled losses of {x.call} within {x.parity.tolerance:.0e} of eager's over "
                   f"{x.parity.steps} steps from the same seed (largest difference {x.parity.largest:.1e} relative, "
                   f"final step {x.parity.final:.1e}; judged {x.parity.method})", x.parity.passed) for x in a.modes]
    compiled = findings.COMPILED.read(true(f"Dynamo compiled at least one graph ({m.graphs} counted in the first "
                                           "process)", m.graphs > 0), mode=m.call, reason=m.nothing or "")
    guard = assessment.described(a.loads, a.host["logical_cores"])
    quiet = findings.QUIET.read(true("every measuring process stayed within the rule", a.busy is None),
                                seen=guard, reason=a.busy or "")
    rule, told = a.decision, {NOTHING: compiled, BUSY: quiet}
    return {
        "decision": told[rule.outcome] if rule.outcome in told else decided(rule, i, m.call, a.model, a.setup),
        "compiled": compiled,
        "quiet": quiet,
        "parity": findings.PARITY.read(*parity, precision=f"AMP {a.amp}" if a.amp else "fp32"),
        "fallback": findings.FALLBACK.not_tested(
            "no graph was compiled, so the forced compile failure had nothing to fail on") if m.nothing
        else findings.FALLBACK.read(true("the forced compile failure raised", f.error is not None),
                          true(f"over {f.steps} steps the fallback's losses equal eager's within {FALLBACK_RTOL:.0e} "
                               f"({f.vs_eager:.1e}) and the compiled path's within {f.tolerance:.0e} "
                               f"({f.vs_compiled:.1e})", f.reproduced), error=f.error or "none raised"),
        "run": findings.RUN.read(true(f"A production job of {steps:,} steps outlasts the break-even run length, "
                                        f"{_steps(r.steps)} (interval {_steps(r.steps_low)} to {_steps(r.steps_high)}; "
                                        f"{display.format_time(r.compile_s)} of cold compile over the time a step "
                                        "saves, computed)", steps > r.steps),
                     seconds=explore)}


def decided(rule: Decision, inputs: Inputs, call: str, model: str, setup: str = "") -> Finding:
    """The decision's finding, for a rule that priced a speed-up (not 'nothing to migrate') of ``call`` on ``model``."""
    gain = f"The speed-up of {call} over eager on a training step of {model}" + (f" ({setup})" if setup else "")
    return findings.DECISION.read(rule.check(gain), horizon=inputs.value("horizon_months"),
                                  break_even=speed_text(rule.break_even), next_step=rule.next_step)


@declare.checked
def money_sentence(a: Assessment | Pricing) -> str:
    """Break-even months with their interval, and the break-even speed-up, of an assessment or a pricing (computed)."""
    pricing = a.pricing if isinstance(a, Assessment) else a
    est = pricing.estimate
    soon, late = pricing.months_span
    over = "the gain's interval and your inputs' ranges" if pricing.span else "the gain's interval"
    return (f"Break-even at the median gain: {months_text(est.break_even_months)} (across {over}: "
            f"{months_text(soon)} to {months_text(late)}); the break-even speed-up, the smallest gain that pays back "
            f"within {pricing.inputs.value('horizon_months')} months, is {speed_text(pricing.break_even)} "
            "(computed).")


def report_markdown(a: Assessment, figures: dict[str, str] | None = None) -> str:
    """report.md: the decision first, then what decided it, then the rest."""
    figures, found, m = figures or {}, findings_of(a), a.deciding
    lines = [f"# Should we migrate {a.model}?", "", found["decision"].sentence, ""]
    lines += [] if a.gate is None else [a.gate.finding().sentence, ""]
    lines += [f"- **Blocker:** {b}" for b in story.blockers(found["parity"], found["fallback"])] + [""]
    lines += [f"Measured on {a.device_name} ({a.device}, {a.threads} intra-op thread{'s' * (a.threads != 1)}) in "
              f"{a.processes} fresh processes: the decision holds for this device and these versions only (a CPU "
              "stand-in decides nothing for a GPU fleet; another GPU needs its own run).", ""]
    lines += ddp.paragraph(a.ddp)
    lines += [figures["speedup"], ""] if "speedup" in figures else []
    inside = ", ".join(f"{s.ratio:.3g}x ({s.low:.3g} to {s.high:.3g})" for s in m.in_process)
    lines += ["## Speed", "", f"Across processes: {m.speedup} ({intervals.METHOD}, one pair of per-process medians "
              f"per process: eager {display.format_time(a.eager_step_s)}, compiled {display.format_time(m.step_s)} "
              f"per step). Inside each process that held every variant, over its {a.rounds} interleaved rounds: "
              f"{inside}. Those describe one "
              f"process only and do not decide anything. {_inputs(a)}", ""]
    lines += ["| compile call | gain across processes | step | compile cold | compile warm |", "|---|---|---|---|---|"]
    lines += [f"| {x.call} | {x.speedup} | {display.format_time(x.step_s)} | {display.format_time(x.compile_cold_s)} "
              f"| {_or_na(x.compile_warm_s)} |" for x in a.modes]
    lines += [f"| {mode} | skipped: {why} | | | |" for mode, why in a.skipped.items()]
    lines += [] if a.amp_alone is None else [
        f"| eager + AMP over eager fp32 (no migration: autocast is in eager PyTorch) | {a.amp_alone} | "
        f"{display.format_time(a.eager_step_s)} | | |"]
    lines += [] if a.compile_alone is None else [
        f"| {a.compile_alone.candidate} over eager fp32 (what compile buys without AMP) | {a.compile_alone} | | | |"]
    mfu = " / ".join(mfu_text(v) for v in (a.mfu(a.eager_step_s), a.mfu(m.step_s)))
    peak = "no peak" if a.peak_flops is None else display.format_flops(a.peak_flops)
    lines += ["", f"MFU (model FLOP/s over the peak), eager / compiled: {mfu}, with {a.flops_per_step / 1e9:.3g} "
              f"GFLOP per step (forward and backward, FlopCounterMode) against {peak} ({a.peak_source}). What stays "
              "between the compiled MFU and 100% is what any compiler, kernel or batch change could still try to "
              "buy. The step timed is the whole training step (optimizer included): not comparable with "
              "forward-and-backward benchmark dashboards.",
              "", "## Compile cost, graph breaks, memory", "",
              f"Compile per job: cold {display.format_time(m.compile_cold_s)} (empty cache), warm "
              f"{_or_na(m.compile_warm_s)} (the cache the first process left on disk). {found['compiled'].sentence} "
              + ("" if m.compiled_share is None else f"Compiled graphs ran {m.compiled_share:.0%} of the step's host "
                 "time (the profiler, 3 steps of the first process); the rest is eager code, optimizer and data. ")
              + f"The compiler logged {len(m.graph_breaks)} graph break(s) and {len(m.recompiles)} recompile(s) "
              "(TORCH_LOGS graph_breaks and recompiles), the first ten of each listed here, each reason whole with "
              "the compiler's hints.", ""]
    lines += [f"- graph break: {b}".replace("\n", "\n  ") for b in m.graph_breaks[:10]]
    lines += [f"- recompile: {r}" for r in m.recompiles[:10]] + [""]
    memory = " (process peak RSS growth on a CPU)" if a.device == "cpu" else " (CUDA allocator peak)"
    eager_peak, peak = (_or_na(b, display.format_bytes) for b in (a.eager_peak_bytes, m.peak_bytes))
    lines += [f"Peak memory of one steady step: eager {eager_peak}, compiled {peak}"
              f"{memory}. {_layout(a)}", "", "## Parity and rollback", "",
              found["parity"].sentence + " " + found["fallback"].sentence, "", "## Money", "", money_sentence(a), ""]
    lines += [figures["payback"], ""] if "payback" in figures else []
    lines += ["| input | value | source |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {source} |" for name, value, source in a.pricing.inputs.table().rows]
    lines += ["", "## Exploration or production", "", found["run"].sentence, "", "## How this was measured", "",
              f"{a.processes} fresh processes, each {a.steps} timed steps in {a.rounds} interleaved rounds after 3 "
              f"untimed steps, per variant; batches {a.batch}; optimizer {a.optimizer}; AMP {a.amp or 'off'}; "
              f"{a.parameters:,} parameters.", "", found["quiet"].sentence.replace("**", ""), "",
              f"The guard read {LOAD_METHOD}; the rule: {assessment.RULE}.", "",
              f"Compile cache: {a.cache.get('method', '')}.", "",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in a.versions.items()) + f". Took {a.seconds:.0f} s.",
              "", f"Repeat: `{a.command}`", ""]
    return "\n".join(lines)


def _inputs(a: Assessment) -> str:
    """What the step times hold: the data wait apart from compute (end to end), or compute only (cached)."""
    if a.eager_wait_s is None:
        return ("Inputs cached (--inputs=cached): each round's batches were fetched once and reused, so these times "
                "are compute only; a loader's wait is not in them.")
    waits = ", ".join(f"{x.call} {_or_na(x.wait_s)}" for x in a.modes)
    return (f"End to end: each step drew its batch from make_batches() as a training loop does; of each step, the "
            f"wait for data was eager {_or_na(a.eager_wait_s)}, {waits}, the rest compute.")


def _layout(a: Assessment) -> str:
    """Which layout ran (``assessing.layout``): every variant in one process, or, after the first, each alone."""
    plan = a.layout or {"separate": False, "why": "no estimate was recorded", "variants": "the"}
    variants = plan["variants"]
    if not plan["separate"]:
        return (f"Layout: all {variants} variants lived in each fresh process at once (the rounds interleaved "
                f"inside it), since {plan['why']}. --separate runs each variant alone after the first process.")
    return (f"Layout: the first process held all {variants} variants; after it, each variant ran in a process of its "
            f"own ({a.processes - 1} x {variants} processes: same seed, same batches, paired by process index, so the "
            f"gain's interval is still across {a.processes} fresh processes, but their rounds are not interleaved), "
            f"since {plan['why']}.")


@declare.checked
def compare_table(named: Named) -> display.Table:
    """Several assessed models side by side: what compile bought across processes and what it cost."""
    rows, first = [], next(iter(named.values()))
    peak = "no peak" if first.peak_flops is None else display.format_flops(first.peak_flops)
    for name, a in named.items():
        m = a.deciding
        mfu = " -> ".join(mfu_text(v) for v in (a.mfu(a.eager_step_s), a.mfu(m.step_s)))
        rows.append((name, str(m.speedup), f"{display.format_time(a.eager_step_s)} -> {display.format_time(m.step_s)}",
                     f"{display.format_time(m.compile_cold_s)} / {_or_na(m.compile_warm_s)}",
                     f"{len(m.graph_breaks)} / {len(m.recompiles)}",
                     f"{'ok' if m.parity.passed else 'FAILED'} ({m.parity.largest:.0e})", mfu,
                     a.decision.outcome + (f"; computed: {a.decision.next_step}" if a.decision.outcome == NOT_DECIDED
                                           else "")))
    return display.table(["model", "compiled over eager, across fresh processes", "step, eager -> compiled",
                          "compile cold / warm", "graph breaks / recompiles", "parity", "MFU, eager -> compiled",
                          "decision at the seed's terms"],
                         rows, title="assess: the same measurement on two models",
                         note=f"Each row: {first.processes} fresh processes; {intervals.METHOD} over the per-process "
                              f"medians; set-up: {first.setup}. MFU against {peak} ({first.peak_source}). The "
                              "processes that would decide an undecided row are computed from its interval's width "
                              "and its distance to the break-even speed-up, not measured.")


GAINS_MARGIN = 1.25  # two figures of one set-up agree when their ratio lies wholly inside [1/1.25, 1.25]


def _rung_setup(setup: Mapping[str, Any]) -> str:
    amp = setup.get("amp")
    loader = f"{setup['workers']} loader worker(s)" if setup.get("workers") else "loader in the training process"
    return (f"batch {setup.get('batch')}, {loader}{', pinned' if setup.get('pin') else ''}, "
            f"{str(amp).split('.')[-1] if amp is not None else 'fp32'}, {setup.get('threads')} intra-op thread(s), "
            f"{setup.get('device')}")


@declare.checked
def compile_gains(ladder: Ladder, cnn: Assessment) -> display.Table:
    """Every gain compile bought the CNN on this page, each with its set-up and scope; the note reconciles them
    (``findings.GAINS``: the decision's figure against the ladder's figure without the loader's wait)."""
    label, last_label = "torch.compile on the baseline", ladder.migration_gain().label
    first, bare, last = ladder.interval(label), ladder.interval(label, "compute"), ladder.interval(last_label)
    base, kept = _rung_setup(ladder[label].setup), _rung_setup(ladder[last_label].setup)
    rows = [("compile first (ladder)", str(first), base, "paired rounds in this process"),
            ("compile first, compute alone (ladder)", str(bare), base + "; the loader's wait left out",
             "paired rounds in this process"),
            ("compile last (ladder, waterfall)", str(last), kept, "paired rounds in this process"),
            ("assess: the decision's figure", str(cnn.deciding.speedup), cnn.setup,
             f"across {cnn.processes} fresh processes")]
    check = core.same("the decision's gain over the ladder's compile first on the compute alone",
                          gap(cnn.deciding.speedup, bare), GAINS_MARGIN)
    told = findings.GAINS.read(check, assess=str(cnn.deciding.speedup), bare=str(bare), setup=cnn.setup,
                               bare_setup=base, first=str(first), last=str(last), kept=kept,
                               margin=f"{GAINS_MARGIN:g}x")
    return display.table(["figure", "compiled over eager", "set-up", "scope"], rows,
                         title="What compile bought the CNN, figure by figure", note=told.sentence.replace("**", ""))


@declare.checked
def compare_pricing(named: Named) -> display.Table:
    """The same measured gain priced at several sets of inputs: break-even speed-up, decision, months."""
    rows = []
    for name, a in named.items():
        i, est = a.pricing.inputs, a.pricing.estimate
        soon, late = est.break_even_range
        rows.append((name, f"{i.value('training_share'):.0%} ({i['training_share'].source})",
                     f"{i.value('eager_upkeep'):,.0f} ({i['eager_upkeep'].source})", speed_text(a.pricing.break_even),
                     str(a.deciding.speedup), a.decision.outcome,
                     f"{months_text(est.break_even_months)} ({months_text(soon)} to {months_text(late)})"))
    return display.table(["inputs", "training share (source)", "eager upkeep a month (source)",
                          "break-even speed-up", "measured gain", "decision", "break-even (interval)"], rows,
                         title="One measured gain, priced on two sets of inputs (computed)")


@declare.checked
def pricing_cases(a: Assessment, *, growth: Annotated[float, Range(-1, 10, low_open=True)]) -> display.Table:
    """The assessment's estimate on a flat bill, on a bill growing ``growth`` a month, and on reserved capacity."""
    est = a.pricing.estimate
    growing = f"on demand, bill {growth:+.0%} a month (the seed)"
    return cost.compare_estimates({"on demand, flat bill": est, growing: replace(est, spend_growth=growth),
                                   "reserved capacity (paid anyway)": replace(est, reserved=True)})


@declare.checked
def lead_page(priced: Annotated[Named, MinItems(2), MaxItems(2)], block: Assessment, ladder: Ladder, ready: Checklist,
              cores: Annotated[int, Range(1, 4096)]) -> display.Prose:
    """The page a lead reads: where it was measured, each model's gain and decision, both sets of inputs."""
    (seed_name, seed), (lead_name, lead) = priced.items()
    where = (f"**Measured on {lead.device_name}** ({lead.device}, {cores} cores; the fresh processes used "
             f"{lead.threads} thread{'s' * (lead.threads != 1)}), with torch {lead.versions.get('torch', '?')}: the "
             "decision holds for this "
             "device and these versions only. **A CPU stand-in decides nothing for a GPU fleet**: run the command of "
             "section 3 on the accelerator you pay for before deciding.")
    rows = ["| | this run | the seed claims |", "|---|---|---|",
            f"| no-migration rungs together (one process) | {ladder.no_migration_interval()} | \"is data loading "
            "multi-process, is AMP on?\" |",
            f"| compile, CNN, across fresh processes | {lead.deciding.speedup} | {1 / 0.7:.2f}x (30% less compute) |",
            f"| compile, transformer block, across fresh processes | {block.deciding.speedup} | |",
            f"| break-even speed-up, {seed_name} / {lead_name} | {speed_text(seed.pricing.break_even)} / "
            f"{speed_text(lead.pricing.break_even)} | |",
            f"| decision, CNN / block, {lead_name} | {lead.decision.outcome} / {block.decision.outcome} | migrate |",
            f"| break-even, CNN, {lead_name} | {months_text(lead.pricing.estimate.break_even_months)} | "
            "about 2 months |",
            f"| cold / warm compile per job, CNN | {display.format_time(lead.deciding.compile_cold_s)} / "
            f"{_or_na(lead.deciding.compile_warm_s)} | \"debugging is harder\" |",
            f"| launch checklist, CNN | {'ready' if ready.passed else 'not ready: ' + ', '.join(ready.failed)} | |"]
    return display.prose(where, "\n".join(rows), f"**Decisions on this machine, at the lead's inputs:** CNN: "
                         f"{lead.decision.outcome}; transformer block: {block.decision.outcome}. Measured in this run, "
                         "except the money, which is computed from it. The same decision for your model: `assess` on "
                         "the machine you pay for.")


@declare.checked
def saved_report(folder: str | Path) -> display.Prose:
    """The report.md that ``assess`` wrote into ``folder``, collapsed under its title, its headings bold (an output
    holds no sections): what a lead receives, shown beside the run (07; the website's sample)."""
    text = (Path(folder) / "report.md").read_text()
    title, _, body = text.partition("\n")
    body = re.sub(r"^#+ (.*)$", r"**\1**", body.strip(), flags=re.M)
    return display.Prose(f"<details><summary>report.md: {title.lstrip('# ')}</summary>\n\n{body}\n\n</details>")


@declare.checked
def summary_rows(ladder: Ladder, cnn: Assessment, block: Assessment, lead: Assessment) -> list[tuple[Any, ...]]:
    """The summary table's rows: this run's numbers, each with what it is."""
    gain = ladder.interval(ladder.migration_gain().label)
    rows: list[tuple[Any, ...]] = [
        (f"ladder: {r.label}", ladder.speedup(r.label), "x", f"per sample over eager fp32; {r.kind}")
        for r in ladder.rungs]
    rows += [(f"ladder: {r.label} (tried, not kept)", ladder.interval(r.label).ratio, "x",
              "per sample over the set-up before it") for r in ladder.dropped]
    rows += [("compile last, one process", gain.ratio, "x", gain.interval),
             ("compile, CNN, fresh processes", cnn.deciding.speedup.ratio, "x", cnn.deciding.speedup.interval),
             ("compile, transformer block, fresh processes", block.deciding.speedup.ratio, "x",
              block.deciding.speedup.interval),
             ("cold compile per job, CNN", cnn.deciding.compile_cold_s, "s", "empty Inductor cache"),
             ("break-even speed-up, the lead's inputs", lead.pricing.break_even, "x", "computed"),
             ("break-even, CNN, the lead's inputs", lead.pricing.estimate.break_even_months, "months",
              f"computed; decision: {lead.decision.outcome}")]
    return rows


MEASURED_INPUTS = ("optimizer", "learning_rate")  # they change what is measured, not its price


def reprice(report: str | Path, config: str | Path | None) -> tuple[dict[str, Any], Pricing]:
    """Price the saved report.json ``report`` at ``config`` (None: the seed's); rewrite it, return (record, pricing)."""
    saved = record.read("report", report)
    inputs = read_config(config)
    for name in MEASURED_INPUTS:
        if inputs.value(name) != saved["inputs"][name]["value"]:
            raise ValueError(f"config: {name} = {inputs.value(name)!r} differs from the measured run's "
                             f"{saved['inputs'][name]['value']!r}; it changes the measurement, so run assess again")
    mode = saved["modes"][0]
    speedup = record.speedup(mode)
    pricing = assessment.price(inputs, speedup, eager_step_s=saved["eager_step_s"],
                               compile_cold_s=mode["compile_seconds"]["cold"],
                               compile_warm_s=mode["compile_seconds"]["warm"],
                               label=f"{mode['call']} over eager, {saved['model']}",
                               nothing=mode["nothing_to_migrate"],
                               busy=assessment.busy(saved["load"]["per_process"], saved["host"]["logical_cores"]))
    saved.update({"decision": pricing.decision.text, "break_even_speedup": pricing.break_even,
                  "inputs": pricing.inputs.to_dict(), "money": pricing.to_dict(),
                  "priced": {"at": record.now(), "config": inputs.path, "measured_at": saved["timestamp"],
                             "note": "priced again without measuring; report.md and report.html show the measuring "
                                     "run's pricing"}})
    record.write(Path(report), saved)
    return saved, pricing


def repriced(saved: dict[str, Any], pricing: Pricing) -> str:
    """The repriced decision as the command prints it."""
    rule = pricing.decision
    if rule.outcome in (NOTHING, BUSY):
        return f"Decision: {rule.text}."
    return decided(rule, pricing.inputs, saved["modes"][0]["call"], saved["model"]).sentence.replace("**", "") + " " + \
        money_sentence(pricing)
