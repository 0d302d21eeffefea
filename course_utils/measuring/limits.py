"""Why one eager runtime is slower than another on the same chain: the two suspects that differ (each library's
``tanh``, and the fresh memory each output gets, costed with the machine's page-fault figure) measured apart, and
what they leave of the gap named as unexplained, not guessed."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from course_utils import calls, declare, display, findings, intervals, machine, timing
from course_utils.declare import NonNegativeFloat, Range
from course_utils.measuring.speedups import EAGER, ChainRuns
from course_utils.measuring.workloads import PAGE, array_ops, outputs_worth, tensor_bytes


def _on_threads(count: int, fn: Callable[..., Any], args: tuple) -> Any:
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return fn(*args)


@declare.checked
@dataclass(frozen=True, repr=False)
class EagerGap(display.Tabled):
    """The slowest eager runtime's chain against the fastest's (one interleaved call), each one's ``tanh`` alone,
    page faults per call in outputs' worth, the machine's cost of one output's worth, torch's threads when slow."""

    slow: declare.Text
    fast: declare.Text
    chain: Mapping[str, timing.Measurement]
    tanh: Mapping[str, timing.Measurement]
    faults: Mapping[str, float]
    fault_seconds: NonNegativeFloat
    threads: Mapping[int, timing.Measurement] | None = None  # torch's eager chain per thread count, when torch is slow

    @property
    def spread(self) -> intervals.Speedup:
        """The slow chain's time over the fast one's (baseline: the slow runtime), with its interval."""
        return intervals.speedup(self.chain[self.slow], self.chain[self.fast])

    @property
    def tanh_spread(self) -> intervals.Speedup:
        """The slow runtime's tanh time over the fast one's, with its interval."""
        return intervals.speedup(self.tanh[self.slow], self.tanh[self.fast])

    @property
    def one_thread(self) -> intervals.Speedup | None:
        """torch's eager chain on its default threads over the same chain on one thread (above 1: one thread is
        faster), timed in the same rounds; None when torch is not the slow runtime or runs one thread."""
        if not self.threads or len(self.threads) < 2:
            return None
        many = max(self.threads)
        return intervals.speedup(self.threads[many], self.threads[min(self.threads)])

    @property
    def gap(self) -> float:
        """Seconds per call between the two eager chains (medians)."""
        return self.chain[self.slow].median - self.chain[self.fast].median

    @property
    def parts(self) -> dict[str, float]:
        """Seconds of the gap each suspect accounts for (computed): the tanh difference, and the extra page faults
        at the machine's cost per output's worth (0 when the slow chain faulted no more)."""
        extra = self.faults[self.slow] - self.faults[self.fast]
        faults = extra * self.fault_seconds if math.isfinite(extra) and extra > 0 else 0.0
        return {"tanh": max(self.tanh[self.slow].median - self.tanh[self.fast].median, 0.0), "page faults": faults}

    @property
    def left(self) -> float:
        """Seconds of the gap the suspects leave (negative when they add up to more than the gap)."""
        return self.gap - sum(self.parts.values())

    def table(self) -> display.Table:
        """The two eager chains, the suspects measured apart, and the gap's budget (computed), one row each."""
        fmt, slow, fast = display.format_time, self.slow, self.fast
        share = (lambda t: f"{t / self.gap:.0%} of the gap") if self.gap > 0 else (lambda t: "no gap to share")
        rows = [("eager chain", fmt(self.chain[slow].median), fmt(self.chain[fast].median),
                 str(findings.faster(f"{fast} over {slow}", self.spread))),
                ("tanh alone", fmt(self.tanh[slow].median), fmt(self.tanh[fast].median),
                 str(findings.faster(f"{fast} over {slow}", self.tanh_spread))),
                ("page faults per call, outputs' worth", f"{self.faults[slow]:.1f}", f"{self.faults[fast]:.1f}",
                 f"{fmt(self.fault_seconds)} per output's worth (machine figure)")]
        rows += [(f"gap's part: {name} (computed)", fmt(t), "", share(t)) for name, t in self.parts.items()]
        rows.append(("gap left unexplained (computed)", ("-" if self.left < 0 else "") + fmt(abs(self.left)), "",
                     share(self.left)))
        if self.one_thread is not None and self.threads is not None:
            many = max(self.threads)
            rows.append((f"torch eager chain on 1 thread, then {many}", fmt(self.threads[1].median),
                         fmt(self.threads[many].median),
                         str(findings.faster(f"1 thread over {many} threads", self.one_thread))))
        return display.table(["measured", slow, fast, "compared"], rows,
                             title=f"{slow}'s eager chain (the longer median) against {fast}'s: the suspects "
                                   "measured apart",
                             note="the two chains, the two tanh and the threads each timed in alternating rounds; "
                                  "a negative remainder: the parts, timed apart from the chain, overlap")


@declare.checked
def eager_gap(inputs: Mapping[str, tuple], runs: ChainRuns, eager: Mapping[str, Callable[..., Any]],
              figures: machine.MachineFigures, *, rounds: Annotated[int, Range(2, 20)] = 6,
              min_time: Annotated[float, Range(0, 10, low_open=True)] = 0.4,
              timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> EagerGap | None:
    """``EagerGap`` between the slowest and the fastest eager chain of ``runs`` (``eager``: the learner's chains,
    framework -> f(x, bias)); None with one framework. A slow torch is also timed on one thread, same rounds."""
    if runs.eager_spread() is None:
        return None
    found = runs.runs[EAGER]
    slow, fast = max(found, key=lambda fw: found[fw].median), runs.best(EAGER)
    tanhs = {fw: array_ops(fw).tanh for fw in (slow, fast)}
    timed_calls = {f"{fw} tanh": (lambda f=tanhs[fw], x=inputs[fw][0]: f(x)) for fw in (slow, fast)}
    import torch

    default = torch.get_num_threads()
    counts = [1, default] if slow == "torch" and default > 1 else []
    for count in counts:
        timed_calls[f"torch chain, {count} threads"] = (lambda c=count, f=eager["torch"], a=inputs["torch"]:
                                                        _on_threads(c, f, a))
    try:
        with calls.time_limit(timeout, f"eager[{slow!r}] ({calls.describe(eager[slow])})"):
            timed = timing.interleaved(timed_calls, rounds=rounds, min_time=min_time)
            torch.set_num_threads(default)
            faults = {fw: outputs_worth(eager[fw], *inputs[fw], output_bytes=tensor_bytes(inputs[fw][0]))
                      for fw in (slow, fast)}
    finally:
        torch.set_num_threads(default)
    tanh = {fw: timed[f"{fw} tanh"] for fw in (slow, fast)}
    threads = {count: timed[f"torch chain, {count} threads"] for count in counts} or None
    per_output = figures.fault_seconds(PAGE * math.ceil(tensor_bytes(inputs[slow][0]) / PAGE))
    return EagerGap(slow, fast, {fw: found[fw] for fw in (slow, fast)}, tanh, faults, per_output, threads)
