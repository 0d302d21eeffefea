"""The rows of notebook 00's summary table: this run's numbers, each with its unit and its baseline or source."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from course_utils import declare, intervals, machine, timing
from course_utils.declare import NonEmpty
from course_utils.measuring.speedups import ChainRuns, amdahl, variant_name


@declare.checked
def summary_rows(trap: Annotated[Mapping[str, tuple[timing.Measurement, timing.Measurement]], NonEmpty],
                 runs: ChainRuns, figures: machine.MachineFigures, adds: Mapping[str, timing.Measurement],
                 cache: Literal["warm", "cold", "unknown"],
                 fresh_best: intervals.Speedup) -> list[tuple[str, float, str, str]]:
    """(quantity, value, unit, note) rows for ``cu.notebook.summary_table``; ``fresh_best`` is the best-vs-best
    speed-up across fresh processes (``cu.fresh.replicate``), the headline."""
    rows = [(f"{fw}: matmul, time until ready / until return", intervals.speedup(ready, returned).ratio, "x",
             "1.0: computed before returning; more: returned early") for fw, (returned, ready) in trap.items()]
    for fw in runs.frameworks:
        first = runs.time("compiled", fw).first_call or 0.0
        rows.append((f"{variant_name(fw, True)} first call", first, "s",
                     f"reported apart; torch.compile cache {cache}" if fw == "torch" else "reported apart"))
    rows += [(f"chain: {variant_name(fw, True)} over {variant_name(fw, False)}", runs.own(fw).ratio, "x",
              "baseline: own eager; geometric mean, interval in section 3") for fw in runs.frameworks]
    rows.append(("chain: best compiled over best eager", fresh_best.ratio, "x",
                 f"with tanh; geometric mean, {fresh_best.interval}; in this process {runs.best_vs_best().ratio:.3g}x"))
    if runs.has_polynomial:
        rows.append(("chain without tanh: best compiled over best eager", runs.best_vs_best(tanh=False).ratio, "x",
                     "compilation alone, each compiler's tanh left out; in this process"))
    rows.append(("step speed-up if the chain is 30% of it", amdahl([0.3, 0.7], [fresh_best.ratio, 1.0]), "x",
                 "computed (Amdahl); the seed claims 1.43x (30% less compute)"))
    if "4 elements" in adds:
        rows.append(("per-call overhead, torch add on 4 elements", adds["4 elements"].median * 1e6, "µs", ""))
    rows.append(("memory roof", figures.bandwidth / 1e9, "GB/s", f"{figures.bandwidth_probe}; machine figure"))
    rows.append(("compute roof", figures.peak_flops / 1e9, "GFLOP/s", f"{figures.flops_probe}; machine figure"))
    rows += [(f"{fw}: best bandwidth probe / matmul probe", m.bandwidth / 1e9, "GB/s",
              f"matmul {m.peak_flops / 1e9:.0f} GFLOP/s") for fw, m in figures.roofs.items()]
    rows.append(("page faults of a fresh output", figures.fault_seconds(2**20) * 1e6, "µs per MiB", "machine figure"))
    rows += [(f"{fw}: one compiled call's fixed cost", c * 1e6, "µs", "machine figure")
             for fw, c in figures.call_cost.items()]
    return rows
