"""Time torch.compile's first call of the gelu chain in a fresh process and print it as JSON.

Run twice against the same TORCHINDUCTOR_CACHE_DIR, it shows what a warm compile cache saves: the first
run compiles from scratch (cold), the second finds the generated code on disk (warm).
Usage: python compile_cache_probe.py ELEMENTS
"""

import json
import sys
import time

import torch

from course_utils import models

if __name__ == "__main__":
    elements = int(sys.argv[1])
    x, bias = torch.randn(elements), torch.tensor(0.1)
    chain = torch.compile(models.chain_for("torch"))
    start = time.perf_counter()
    chain(x, bias)
    first_call = time.perf_counter() - start
    print(json.dumps({"first_call_s": first_call}))
