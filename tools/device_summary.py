"""Write OUT/summary.md after tools/device_check.sh: device, versions, minutes per notebook, headline figures, and
the migration decision measured on each assessed model (gain, interval, break-even speed-up, decision)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from course_utils import env

# Headline figures, found by key path in bench.json (benchmarks change; the patterns keep the summary useful).
HEADLINES = {
    "fused chain as a fraction of copy bandwidth": r"fusion\..*fraction_of_copy$",
    "bf16 matmul as a fraction of peak": r"precision\..*(bf16.*fraction|fraction.*bf16)",
    "AMP / bf16 speed-up": r"(ladder\.rungs\.\+ autocast.*over_previous|precision\.matmul\..*bf16/fp32 speed)",
    "DDP step times (s)": r"ddp\..*step.*(seconds|time|median)",
    "multi-process step times (s)": r"beyond\..*step.*(seconds|time|median)",
}


def flatten(value: object, prefix: str = "") -> dict[str, float]:
    """Every number in a nested JSON value, keyed by its dotted path."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flatten(item, f"{prefix}{key}.").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{prefix}{i}.").items()}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {prefix.rstrip("."): float(value)}
    return {}


def headlines(bench: dict) -> dict[str, str]:
    """Each headline's figures found in ``bench`` (bench.json's content), as 'key = value' text, or 'not recorded'."""
    numbers = flatten(bench)
    found = {title: {k: v for k, v in numbers.items() if re.search(pattern, k, re.I)}
             for title, pattern in HEADLINES.items()}
    return {title: ", ".join(f"{k} = {v:.3g}" for k, v in list(hits.items())[:8]) or "not recorded"
            for title, hits in found.items()}


def assessments(folder: Path) -> list[str]:
    """One Markdown table row per ``assess`` report under ``folder`` (OUT/assess/<model>/report.json)."""
    rows = []
    for path in sorted(folder.glob("*/report.json")):
        report = json.loads(path.read_text())
        gain, even = report["speedup"], report["break_even_speedup"]
        shown = even if isinstance(even, str) else f"{even:.3g}x"
        rows.append(f"| {path.parent.name} | {gain['median']:.3g}x ({gain['low']:.3g}x to {gain['high']:.3g}x, "
                    f"{report['processes']} processes) | {shown} | {report['decision']} | {report['device_name']} |")
    if not rows:
        return []
    return ["", "## The migration decision (assess)", "",
            "| model | gain: 95% interval across processes | break-even speed-up | decision | measured on |",
            "|---|---|---|---|---|", *rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=0.0)
    args = parser.parse_args()
    lines = ["# Device check", "", f"- device: {(args.out / 'device.txt').read_text().strip()}",
             f"- wall time: {args.seconds / 60:.1f} min"]
    lines += [f"- {k}: {v}" for k, v in env.report(devices=True).rows() if k in ("CPU", "torch", "jax", "tensorflow")]
    failed = args.out / "failed.txt"
    problems = [line for line in failed.read_text().splitlines() if line.strip()] if failed.exists() else []
    lines += ["- **failed or cut short**: " + "; ".join(problems)] if problems else ["- every step finished"]
    results = args.out / "build" / "summary.json"
    if results.exists():
        lines += ["", "| notebook | status | minutes |", "|---|---|---|"]
        lines += [f"| {r['notebook']} | {r['status']} | {r['minutes']:.1f} |" for r in json.loads(results.read_text())]
    bench = args.out / "bench.json"
    if bench.exists():
        lines += ["", "## Headline figures (from bench.json)"]
        lines += [f"- {title}: {shown}" for title, shown in headlines(json.loads(bench.read_text())).items()]
    lines += assessments(args.out / "assess")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
