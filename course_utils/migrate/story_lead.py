"""Notebook 07's closing prose: the checklist's reading, the page for the lead, the framework table's sentences
(Going further) and the summary table's rows. Each function reads stored verdicts and measurements."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from course_utils import display, validate
from course_utils.migrate.checklist import Checklist
from course_utils.migrate.cost import months_text
from course_utils.migrate.frameworks import FrameworkTable
from course_utils.migrate.ladder import Ladder

if TYPE_CHECKING:
    from course_utils.migrate.assessment import Assessment


def checklist_story(ready: Checklist, ladder: Ladder, cnn: Assessment) -> display.Prose:
    """What the checklist found, and which 'utilisation' it read (busy share, not MFU)."""
    validate.instance("ready", ready, Checklist)
    validate.instance("ladder", ladder, Ladder)
    busy = 1 - ladder["+ torch.compile"].wait_share
    mfu = cnn.mfu(cnn.deciding.step_s)
    which = (f"Its utilisation is the **busy share** of the compiled step, {busy:.0%} (the time not spent waiting for "
             "data, read from the ladder's timeline), which is most likely what the seed's \"80%+ utilisation\" "
             "means (a GPU's busy time); it is a different quantity from MFU, the model's FLOP/s over the peak, "
             + ("not computed here." if mfu is None else f"{mfu:.1%} for the compiled CNN in `assess`."))
    if ready.passed:
        head = "Every check passed: the MVP bar, the break-even speed-up, lies below the whole interval."
    else:
        failed = " and ".join(f"'{name}'" for name in ready.failed)
        head = f"Not ready: {failed} failed (the table gives the evidence)."
    return display.prose(head + " " + which)


def lead_page(priced: Mapping[str, Assessment], block: Assessment, ladder: Ladder, ready: Checklist,
              cores: int) -> display.Prose:
    """The page a lead reads: where it was measured, each model's gain and decision, both sets of inputs."""
    validate.instance("ladder", ladder, Ladder)
    validate.instance("ready", ready, Checklist)
    validate.positive("cores", cores, integer=True)
    (seed_name, seed), (lead_name, lead) = priced.items()
    where = (f"**Measured on {lead.device_name}** ({lead.device}, {cores} cores; the fresh processes used "
             f"{lead.threads} threads), with torch {lead.versions.get('torch', '?')}. "
             + ("**A CPU stand-in decides nothing for a GPU fleet**: run the command of section 3 on the accelerator "
                "you pay for before deciding." if lead.device == "cpu" else
                "The decision holds for this GPU model and these versions."))
    cheap = ladder.no_migration_interval()
    rows = ["| | this run | the seed claims |", "|---|---|---|",
            f"| no-migration rungs together (one process) | {cheap} | \"is data loading multi-process, is AMP on?\" |",
            f"| compile, CNN, across fresh processes | {lead.deciding.speedup} | {1 / 0.7:.2f}x (30% less compute) |",
            f"| compile, transformer block, across fresh processes | {block.deciding.speedup} | |",
            f"| break-even speed-up, {seed_name} / {lead_name} | {seed.pricing.break_even:.3g}x / "
            f"{lead.pricing.break_even:.3g}x | |",
            f"| decision, CNN / block, {lead_name} | {lead.decision.outcome} / {block.decision.outcome} | migrate |",
            f"| break-even, CNN, {lead_name} | {months_text(lead.pricing.estimate.break_even_months)} | "
            "about 2 months |",
            f"| cold / warm compile per job, CNN | {display.format_time(lead.deciding.compile_cold_s)} / "
            + ("n/a" if lead.deciding.compile_warm_s is None else display.format_time(lead.deciding.compile_warm_s))
            + " | \"debugging is harder\" |",
            f"| launch checklist, CNN | {'ready' if ready.passed else 'not ready: ' + ', '.join(ready.failed)} | |"]
    found = "; ".join(f"{name}: {lead.decision.outcome if name == 'CNN' else block.decision.outcome}"
                      for name in ("CNN", "transformer block"))
    return display.prose(where, "\n".join(rows), f"**Decisions on this machine, at the lead's inputs:** {found}. "
                         "Measured in this run, except the money, which is computed from it. The same decision "
                         "for your model: `assess` on the machine you pay for.")


def frameworks_story(frameworks: FrameworkTable, v_jax: display.Verdict) -> display.Prose:
    """The ranking on the common baseline, split into library/runtime and compilation, and the seed's JAX claim."""
    validate.instance("frameworks", frameworks, FrameworkTable)
    validate.instance("v_jax", v_jax, display.Verdict)
    ranking = " > ".join(f"{validate.framework_title(r.framework)} {frameworks.vs_baseline(r.framework):.2f}x"
                         for r in sorted(frameworks.rows, key=lambda r: -frameworks.vs_baseline(r.framework)))
    own = "; ".join(f"{validate.framework_title(r.framework)} {frameworks.interval(r.framework)}: "
                    f"{frameworks.interval(r.framework).outcome}" for r in frameworks.rows)
    claim = {"held": "The seed's \"JAX is fastest\" held here, for this small CNN on this CPU.",
             "failed": "The seed's \"JAX is fastest\" did not hold here, for this small CNN on this CPU; TPUs and "
                       "other models were not tested by this run.",
             "not tested": "Without JAX, the seed's \"JAX is fastest\" is not tested here."}[v_jax.status]
    return display.prose(f"Compiled steps over PyTorch eager (ratio of medians): {ranking}. Each compiler against its "
                         f"own eager step: {own}. `torch.compile` of the model compiles forward and backward and "
                         "leaves the optimizer step eager; `jax.jit` and `tf.function(jit_compile=True)` compile the "
                         "whole step, and each framework brings its own convolution kernels. " + claim)


def summary_rows(ladder: Ladder, cnn: Assessment, block: Assessment, lead: Assessment) -> list[tuple[Any, ...]]:
    """The summary table's rows: this run's numbers, each with what it is."""
    validate.instance("ladder", ladder, Ladder)
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
