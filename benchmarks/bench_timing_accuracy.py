"""Does course_utils.timing.benchmark agree with torch.utils.benchmark, and at what cost?

For torch workloads from about a microsecond to about 100 ms, both harnesses time the same call in the same
run with the same minimum run time. Recorded: each median, their ratio (target within 5%), and each
harness's overhead, i.e. wall time spent outside the timed calls (warm-up, calibration, bookkeeping).
"""

from __future__ import annotations

import time

MIN_TIME = 0.5
ROUNDS = 3  # the harnesses alternate, and the median of the rounds is kept, so slow drift hits both alike


def _workloads():
    import torch

    torch.manual_seed(0)
    tiny, small, medium = torch.ones(1), torch.randn(10_000), torch.randn(1_000_000)
    m256, m1024, m2048 = (torch.randn(n, n) for n in (256, 1024, 2048))
    big = torch.randn(2560, 2560)
    return {
        "add, 1 element (dispatch only)": (torch.add, (tiny, tiny)),
        "sin 1e4": (torch.sin, (small,)),
        "sin 1e6": (torch.sin, (medium,)),
        "matmul 256": (torch.mm, (m256, m256)),
        "matmul 1024": (torch.mm, (m1024, m1024)),
        "matmul 2048": (torch.mm, (m2048, m2048)),
        "three chained matmuls, n=2560": (lambda a: torch.mm(torch.mm(torch.mm(a, a), a), a), (big,)),
    }


def _settle(fn, args, seconds: float = 0.5) -> None:
    """Run the workload untimed for a while: some (fresh 4 MB outputs: the allocator adapting its
    thresholds) take a fraction of a second to reach their steady state, which would favour the second harness."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        fn(*args)


def _ours(fn, args):
    from course_utils import timing

    start = time.perf_counter()
    m = timing.benchmark(fn, *args, min_time=MIN_TIME)
    wall = time.perf_counter() - start
    timed = sum(m.times) * m.number
    return m.median, wall - timed


def _torch(fn, args):
    import torch
    from torch.utils import benchmark as tb

    start = time.perf_counter()
    # Timer runs with num_threads=1 unless told otherwise: give it the threads our harness runs with.
    timer = tb.Timer(stmt="fn(*args)", globals={"fn": fn, "args": args}, num_threads=torch.get_num_threads())
    m = timer.blocked_autorange(min_run_time=MIN_TIME)
    wall = time.perf_counter() - start
    return m.median, wall - sum(m.raw_times)


def run() -> dict:
    """Median ratio and overhead per workload; the two harnesses alternate to share the machine's state."""
    import statistics

    import torch

    rows = {}
    for name, (fn, args) in _workloads().items():
        _settle(fn, args)
        rounds = []
        for i in range(ROUNDS):  # alternate who goes first, so a drifting machine favours neither
            if i % 2:
                torch_result = _torch(fn, args)
                rounds.append((_ours(fn, args), torch_result))
            else:
                rounds.append((_ours(fn, args), _torch(fn, args)))
        ours_median, ours_overhead = (statistics.median(r[0][i] for r in rounds) for i in (0, 1))
        torch_median, torch_overhead = (statistics.median(r[1][i] for r in rounds) for i in (0, 1))
        rows[name] = {
            "ours_median_s": ours_median,
            "torch_median_s": torch_median,
            "median_ratio": ours_median / torch_median,
            "ours_overhead_s": ours_overhead,
            "torch_overhead_s": torch_overhead,
        }
    ratios = [r["median_ratio"] for r in rows.values()]
    return {
        "torch_threads": torch.get_num_threads(),
        "min_run_time_s": MIN_TIME,
        "workloads": rows,
        "worst_median_deviation": max(abs(r - 1) for r in ratios),
        "within_5_percent": sum(abs(r - 1) <= 0.05 for r in ratios),
        "count": len(ratios),
        "overhead_not_higher": sum(r["ours_overhead_s"] <= r["torch_overhead_s"] for r in rows.values()),
    }
