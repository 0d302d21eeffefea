"""One fresh process of ``cu.fresh.replicate``: ``python fresh_worker.py package.module:function '{json kwargs}'`` calls
the target once; its prints go to stderr, stdout carries ``@@fresh {"seconds": ..., "setup": ...}``."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import platform
import sys
from collections.abc import Mapping
from typing import Any

from course_utils.fresh import MARK


def setup() -> dict[str, Any]:
    """This process's set-up: its pid, Python, the CPUs it may run on, and torch's version, threads and device."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    found: dict[str, Any] = {"pid": os.getpid(), "python": platform.python_version(), "cpus": cpus}
    torch = sys.modules.get("torch")
    if torch is not None:
        cuda = torch.cuda.is_initialized()
        found |= {"torch": torch.__version__, "threads": torch.get_num_threads(),
                  "device": f"cuda ({torch.cuda.get_device_name()})" if cuda else "cpu"}
    return found


if __name__ == "__main__":
    path, keywords = sys.argv[1], json.loads(sys.argv[2])
    module_name, _, name = path.partition(":")
    target = getattr(importlib.import_module(module_name), name)  # the target's module, named at run time
    with contextlib.redirect_stdout(sys.stderr):
        seconds = target(**keywords)
    if not isinstance(seconds, Mapping):
        raise SystemExit(f"{path} returned {type(seconds).__name__}; it must return {{label: seconds}}")
    print(MARK, json.dumps({"seconds": {str(k): float(v) for k, v in seconds.items()}, "setup": setup()}), flush=True)
