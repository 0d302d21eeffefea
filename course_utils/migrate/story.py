"""Every sentence notebook 07 tells after a verdict: each function takes the stored verdicts and the measurements
and returns ``display.prose``; none compares what a verdict already compared (it reads ``v.status`` and each
interval's ``outcome``). ``story_lead`` holds the checklist, the lead's page, the framework table and the summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from course_utils import display, intervals, validate
from course_utils.migrate.cost import months_text
from course_utils.migrate.ladder import NO_MIGRATION, Ladder, Rung
from course_utils.migrate.story_lead import checklist_story, frameworks_story, lead_page, summary_rows  # noqa: F401

if TYPE_CHECKING:
    from course_utils.migrate.assessment import Assessment

OUTCOME_WORDS = {intervals.FASTER: "won", intervals.SLOWER: "lost", intervals.WITHIN_NOISE: "no measurable change"}


def outcome(speedup: intervals.Speedup) -> str:
    """A rung's outcome in the ladder's words: 'won', 'lost' or 'no measurable change' (from the interval)."""
    return OUTCOME_WORDS[validate.instance("speedup", speedup, intervals.Speedup).outcome]


def outcomes(ladder: Ladder) -> dict[str, list[str]]:
    """The no-migration rungs by outcome, each as 'label 1.23x'."""
    validate.instance("ladder", ladder, Ladder)
    found: dict[str, list[str]] = {word: [] for word in OUTCOME_WORDS.values()}
    for label, kind, speedup in ladder.steps_taken():
        if kind == NO_MIGRATION:
            found[outcome(speedup)].append(f"{label} {speedup.ratio:.2f}x")
    return found


def _per_sample(rung: Rung) -> tuple[str, str]:
    return (display.format_time(rung.wait_time / rung.batch_size),
            display.format_time(rung.compute_time / rung.batch_size))


def rung_sentence(ladder: Ladder, label: str, cores: int) -> str:
    """What rung ``label`` did over the rung before it: its interval, its outcome, the wait and compute per sample;
    for a loss, the load average while it ran."""
    validate.instance("ladder", ladder, Ladder)
    validate.positive("cores", cores, integer=True)
    rung, before, found = ladder[label], ladder.before(label), ladder.interval(label)
    result = outcome(found)
    (w0, c0), (w1, c1) = _per_sample(before), _per_sample(rung)
    text = (f"*{label}*: {found} per sample, "
            + {"won": "a win", "lost": "**a loss**", "no measurable change": "no measurable change"}[result]
            + f"; per sample the wait went {w0} -> {w1} and the compute {c0} -> {c1}")
    if result == "lost" and rung.load is not None:
        text += f" (load average {rung.load:.1f} on {cores} cores while it ran)"
    if rung in ladder.dropped:
        text += "; not kept: compile is measured on the faster set-up before it"
    return text + "."


def ladder_story(ladder: Ladder, v_cheap: display.Verdict, v_order: display.Verdict, cores: int) -> display.Prose:
    """The rungs one by one, then compile first against compile last, then what comes first in a plan."""
    validate.instance("ladder", ladder, Ladder)
    for name, v in (("v_cheap", v_cheap), ("v_order", v_order)):
        validate.instance(name, v, display.Verdict)
    tried = [r for r in ladder.rungs[1:] if r.kind == NO_MIGRATION] + list(ladder.dropped)
    rungs = ["**Rung by rung.**", *(rung_sentence(ladder, r.label, cores) for r in tried)]
    first, last = ladder.interval("torch.compile on the baseline"), ladder.interval(ladder.migration_gain().label)
    bare = ladder.interval("torch.compile on the baseline", "compute")
    wait = f"the baseline waited for data {ladder.baseline.wait_share:.0%} of each step"
    if v_order.held:
        order = (f"**Compile, first and last.** Compile first, {first}, was credited with less than compile "
                 f"last, {last}: {wait}, which no compiler shortens; on the compute alone compile first gives {bare}.")
    else:
        order = (f"**Compile, first and last.** Compile first, {first}, was not credited with less than compile "
                 f"last, {last}, beyond the noise, although {wait}; on the compute alone compile first gives {bare}. "
                 "The credit depends on what else differs (batch, precision, the worker beside the model).")
    plan = ("The cheap rungs together gave more than compile on top of them: they come first in any plan."
            if v_cheap.held else "Compile gave at least as much as the cheap rungs together, or this run cannot "
            "rank them: the migration is worth costing, after the cheap rungs.")
    skipped = "Skipped here: " + "; ".join(ladder.skipped) + "." if ladder.skipped else ""
    return display.prose(*rungs, order + " " + plan, skipped)


def amp_story(ladder: Ladder, amp_label: str | None, v_amp: display.Verdict) -> display.Prose:
    """The seed's mixed-precision claim: not tested without bf16 units; else the interval and the peak memory."""
    validate.instance("ladder", ladder, Ladder)
    validate.instance("v_amp", v_amp, display.Verdict)
    if not v_amp.tested or amp_label is None:
        return display.prose("The autocast rung did not run on this CPU, so this run says nothing about the seed's "
                             "mixed-precision claim; the agreement check above still ran (emulated). On a GPU the "
                             "tensor cores decide it, and the seed's 30% is a GPU number.")
    before, rung = ladder.before(amp_label), ladder[amp_label]
    memory = ("" if before.peak_bytes is None or rung.peak_bytes is None else
              f" The step's peak memory went from {display.format_bytes(before.peak_bytes)} to "
              f"{display.format_bytes(rung.peak_bytes)} (process peak RSS on a CPU, the allocator's peak on a GPU).")
    claim = ("The seed's ~30% held here across the whole interval." if v_amp.held else
             "The seed's ~30% did not hold across the whole interval on this hardware.")
    return display.prose(f"Mixed precision: {rung_sentence(ladder, amp_label, 1)} {claim}{memory} Autocast is in "
                         "eager PyTorch today: it needs no migration.")


def models_story(cnn: Assessment, block: Assessment, v_models: display.Verdict) -> display.Prose:
    """What compile bought each model across fresh processes, what it cost, and the distance to the limit."""
    validate.instance("v_models", v_models, display.Verdict)
    a, b = cnn.deciding, block.deciding
    if v_models.held:
        head = (f"**The gain differs per model.** Across {cnn.processes} fresh processes compile bought the "
                f"transformer block {b.speedup} and the CNN {a.speedup}: the block's many small operations (layer "
                "norms, GELU, the attention's softmax) fuse, while the CNN's convolutions are library kernels "
                "either way.")
    else:
        head = (f"**The gain per model.** Across {cnn.processes} fresh processes compile bought the transformer block "
                f"{b.speedup} and the CNN {a.speedup}: the block's interval does not lie wholly above the CNN's, so "
                f"this run cannot rank them ({cnn.processes} processes give wide intervals; more would narrow them).")
    cost_text = (f"Each paid a cold compile of {display.format_time(a.compile_cold_s)} (CNN) and "
                 f"{display.format_time(b.compile_cold_s)} (block) in an empty cache, and "
                 + " and ".join("n/a" if m.compile_warm_s is None else display.format_time(m.compile_warm_s)
                                for m in (a, b))
                 + " warm, finding the first process's cache on disk. Parity: "
                 + ", ".join(f"{name} {'within' if m.parity.passed else '**beyond**'} tolerance "
                             f"({m.parity.largest:.0e} of {m.parity.tolerance:.0e})"
                             for name, m in (("CNN", a), ("block", b))) + ".")
    mfu = [x.mfu(x.deciding.step_s) for x in (cnn, block)]
    limit = ("MFU was not computed: " + cnn.peak_source + "." if None in mfu else
             f"Compiled, the CNN reached {mfu[0]:.1%} and the block {mfu[1]:.1%} MFU against "
             f"{display.format_flops(cnn.peak_flops)} ({cnn.peak_source}).")
    return display.prose(head, cost_text + " " + limit)


def money_story(priced: Mapping[str, Assessment], v_pays: display.Verdict) -> display.Prose:
    """The seed's own terms beside the lead's: break-even speed-ups, decisions, and what the verdict found."""
    validate.instance("v_pays", v_pays, display.Verdict)
    if not isinstance(priced, Mapping) or len(priced) != 2:
        raise TypeError("priced must map the seed's terms and the lead's inputs to their Assessment")
    (seed_name, seed), (lead_name, lead) = priced.items()
    even = (f"On {seed_name} (training share {seed.pricing.inputs.value('training_share'):.0%}, no upkeep) any gain "
            f"above {seed.pricing.break_even:.3g}x pays back within "
            f"{seed.pricing.inputs.value('horizon_months')} months; on {lead_name} the bar is "
            f"{lead.pricing.break_even:.3g}x: the share of the bill that is not training, the upkeep of the eager "
            "path and each job's cold compile raise it.")
    d = lead.decision
    if v_pays.held:
        verdict = (f"The CNN's gain, {lead.deciding.speedup}, lies above that bar: {d.outcome}. "
                   + story_months(lead))
    elif d.processes_needed is not None:
        verdict = (f"The CNN's gain, {lead.deciding.speedup}, holds that bar in its interval: {d.outcome}; about "
                   f"{d.processes_needed} processes in all would likely decide it. " + story_months(lead))
    else:
        verdict = (f"The CNN's gain, {lead.deciding.speedup}, does not lie above that bar: {d.outcome}. "
                   + story_months(lead))
    return display.prose(even, verdict + " A bill that grows by half every month, as the seed says, is a claim "
                         "to check with finance, not an input to trust.")


def story_months(a: Assessment) -> str:
    """'Break-even after x months (interval y to z).'"""
    soon, late = a.pricing.estimate.break_even_range
    return (f"Break-even after {months_text(a.pricing.estimate.break_even_months)} (interval {months_text(soon)} to "
            f"{months_text(late)}, computed).")
