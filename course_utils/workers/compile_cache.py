"""One job's compile, cold then warm from portable artifacts (``python compile_cache.py save|load|local ARTIFACTS``),
each run with its own ``TORCHINDUCTOR_CACHE_DIR``; prints one JSON line (times, sizes, FX-graph cache hits)."""

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from course_utils import compiled, graphs

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("save", "load", "local"))
    parser.add_argument("artifacts", type=Path, help="the file the artifacts are written to (save) or read from (load)")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--width", type=int, default=32)
    args = parser.parse_args()
    found = {"mode": args.mode}
    cache = Path(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or Path(tempfile.gettempdir()) / "torchinductor_default")

    if args.mode == "load":
        start = time.perf_counter()
        torch.compiler.load_cache_artifacts(args.artifacts.read_bytes())  # fills this process's caches
        found["load_s"] = time.perf_counter() - start

    model = torch.compile(graphs.stack(args.depth, args.width))  # the job's model, compiled as in the notebook
    x = torch.randn(64, args.width)
    before, found["libraries_before"] = compiled.inductor_cache_counts(), len(list(cache.rglob("*.so")))
    start = time.perf_counter()
    with torch.no_grad():
        model(x)  # the first call compiles (cold) or assembles the compiled code from the loaded cache (warm)
    found["first_call_s"] = time.perf_counter() - start
    found |= compiled.inductor_cache_counts(since=before)
    found["libraries_after"] = len(list(cache.rglob("*.so")))

    if args.mode == "save":
        saved = torch.compiler.save_cache_artifacts()  # (bytes, CacheInfo), or None if nothing was cached
        if saved is None:
            raise SystemExit("torch.compiler.save_cache_artifacts() returned nothing: were the caches switched off?")
        args.artifacts.write_bytes(saved[0])
    found["artifact_bytes"] = args.artifacts.stat().st_size
    print(json.dumps(found))
