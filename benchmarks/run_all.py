"""Run every benchmarks/bench_*.py and write their results, with a machine fingerprint, to one JSON file.

Each benchmark module exposes ``run() -> dict`` (JSON-ready numbers). Benchmarks record speed; tests never
assert it (machines are noisy). Run one alone with ``python benchmarks/run_all.py --only timing_accuracy``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import sys
import time
import traceback
from pathlib import Path

from course_utils import env

HERE = Path(__file__).resolve().parent


def fingerprint() -> dict:
    """What produced these numbers: date, machine and versions."""
    report = env.report(devices=False)
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"), **dict(report.rows())}


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=HERE.parent / "build" / "bench.json")
    parser.add_argument("--only", action="append", default=[], help="benchmark name without bench_ (repeatable)")
    args = parser.parse_args()
    paths = sorted(HERE.glob("bench_*.py"))
    if args.only:
        paths = [p for p in paths if p.stem.removeprefix("bench_") in args.only]
    results: dict = json.loads(args.out.read_text()) if args.out.exists() else {}
    results["machine"] = fingerprint()
    failed = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for path in paths:
        name = path.stem.removeprefix("bench_")
        print(f"benchmark {name} ...", flush=True)
        start = time.perf_counter()
        try:
            results[name] = _load(path).run()
        except Exception as exc:  # one failing benchmark must not cost the others' numbers
            failed.append(name)
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            traceback.print_exc()
        results[name]["wall_seconds"] = time.perf_counter() - start
        print(json.dumps(results[name], indent=2), flush=True)
        args.out.write_text(json.dumps(results, indent=2))  # after each one: a timeout keeps what was done
    print(f"wrote {args.out}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    if failed:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
