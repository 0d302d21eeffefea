"""``python -m course_utils.migrate assess price report.json --config costs.toml``: a saved report's decision and money
priced again at other inputs without measuring (what was measured stays; report.json is rewritten, ``priced`` says
when and from which config). The optimizer and learning rate change the measurement, so they must not change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from course_utils.migrate import assessment, load, record, report
from course_utils.migrate.decision import BUSY, NOTHING
from course_utils.migrate.inputs import read_config

MEASURED_INPUTS = ("optimizer", "learning_rate")  # they change what is measured, not its price


def price(report: str | Path, config: str | Path | None) -> tuple[dict[str, Any], assessment.Pricing]:
    """Price the saved ``report`` (a report.json path) at ``config`` (a costs TOML, None: the seed's figures);
    rewrite it and return (the new record, the pricing)."""
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
                               busy=load.busy(saved["load"]["per_process"], saved["host"]["logical_cores"]))
    saved.update({"decision": pricing.decision.text, "break_even_speedup": pricing.break_even,
                  "inputs": pricing.inputs.to_dict(), "money": pricing.to_dict(),
                  "priced": {"at": record.now(), "config": inputs.path, "measured_at": saved["timestamp"],
                             "note": "priced again without measuring; report.md and report.html show the measuring "
                                     "run's pricing"}})
    record.write(Path(report), saved)
    return saved, pricing


def sentence(saved: dict[str, Any], pricing: assessment.Pricing) -> str:
    """The repriced decision as the command prints it."""
    rule = pricing.decision
    if rule.outcome in (NOTHING, BUSY):
        return f"Decision: {rule.text}."
    gain = f"The speed-up of {saved['modes'][0]['call']} over eager on a training step of {saved['model']}"
    return report.decided(rule, pricing.inputs, gain).sentence.replace("**", "") + " " + \
        report.pricing_sentence(pricing)
