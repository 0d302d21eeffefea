"""What does compiling the recurring workload cost, and what does it save, in each framework?

For the gelu chain (``course_utils.models.chain_for``) at a few sizes, per framework: warm-up (the
compiled function's first call, trace + compile), steady-state time per call eager
and compiled, the speed-up, and the break-even number of calls (``course_utils.graphs.breakeven.break_even_calls``).
PyTorch's first compile in a process also loads Inductor; it is recorded separately as ``torch_first_compile``.
Whole training steps are benchmarked rung by rung in ``bench_ladder``.
"""

from __future__ import annotations

import math
import time

import numpy as np

MIN_TIME = 0.3
CHAIN_SIZES = (2**8, 2**16, 2**20)


def _pair(eager_fn, compiled_fn, args) -> dict:
    from course_utils import graphs, timing

    compiled = timing.benchmark(compiled_fn, *args, min_time=MIN_TIME)  # first: its first call is the compile
    eager = timing.benchmark(eager_fn, *args, min_time=MIN_TIME)
    return {
        "warmup_s": compiled.first_call,
        "eager_s": eager.median,
        "compiled_s": compiled.median,
        "speedup": eager.median / compiled.median,
        "break_even_calls": None if math.isinf(n := graphs.breakeven.break_even_calls(
            first_call=compiled.first_call, per_call=compiled.median, eager_per_call=eager.median,
            eager_first_call=eager.first_call)) else n,  # None: never
    }


def run() -> dict:
    """Warm-up, steady-state speed-up and break-even calls per framework, for each gelu chain size."""
    import torch

    from course_utils import env, graphs, interop, models

    results: dict = {}
    start = time.perf_counter()
    warm = torch.compile(lambda x: x * 2.0 + 1.0)
    warm(torch.ones(8))
    results["torch_first_compile_s"] = time.perf_counter() - start
    for framework in env.installed_frameworks():
        chain = models.chain_for(framework)
        per_size = {}
        for n in CHAIN_SIZES:
            rng = np.random.default_rng(n)
            args = interop.to_framework(framework, *rng.standard_normal((2, n), dtype=np.float32))
            # a fresh wrapper per size, so that every warm-up is a real compilation
            per_size[str(n)] = _pair(chain, interop.compile_default(framework, graphs.fresh_function(chain)), args)
        results[framework] = {"gelu_chain": per_size}
    return results


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
