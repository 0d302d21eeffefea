"""What keeps the chain below its roof, measured like for like, and why one eager chain is slower than another.

- ``chain_limits``: at the chain's own size, in alternating rounds, a copy of its bytes, eager ``tanh`` alone,
  the compiled chain with and without its ``tanh`` into reused buffers (notebook 02's test, at notebook 00's
  size), and the compiled chain into a fresh output;
- ``cache_roof_text``: the compiled chain against the copy bandwidth of the cache level its working set fits in;
- ``eager_gap``: torch eager against the fastest other eager framework on the same chain: its ``tanh`` alone,
  its fresh pages per call (page faults, and what they cost on fresh pages), the same chain on one thread, and
  the time budget those leave.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from course_utils import display, env, models, timing, validate
from course_utils.measuring.allocator import on_fresh_pages, outputs_worth, tensor_bytes
from course_utils.measuring.hierarchy import HierarchySweep
from course_utils.measuring.kernels import torch_library
from course_utils.measuring.speedups import variant_name

PAGE = 4096
FUSED = "compiled chain, reused buffer"
POLY = "compiled chain without tanh, reused buffer"
FRESH = "compiled chain, fresh output"


def chain_limits(x: Any, bias: Any, fused: Mapping[str, Callable[[Any, Any], Any]],
                 fresh: Callable[[Any, Any], Any] | None = None, *, rounds: int = 4,
                 min_time: float = 0.8) -> dict[str, timing.Measurement]:
    """torch ``copy_`` and ``tanh`` of ``x`` into a preallocated output (eager), each of ``fused`` (name ->
    compiled ``f(x, bias)`` writing into a reused buffer) and ``fresh`` (the compiled chain returning a new
    output, as ``FRESH``), timed on the same tensors in ``rounds`` alternating rounds (``interleaved``)."""
    import torch

    validate.instance("x", x, torch.Tensor)
    validate.non_empty("fused", fused)
    out = torch.empty_like(x)
    calls: dict[str, Callable[[], Any]] = {"copy": lambda: out.copy_(x), "tanh": lambda: torch.tanh(x, out=out)}
    kernels = {name: validate.function(f"fused[{name!r}]", fn) for name, fn in fused.items()}
    if fresh is not None:
        kernels[FRESH] = validate.function("fresh", fresh)
    for name, fn in kernels.items():
        calls[name] = lambda f=fn: f(x, bias)
    return timing.interleaved(calls, rounds=rounds, min_time=min_time)


def cache_roof_text(moved: float, seconds: float, sweep: HierarchySweep, roof: float,
                    copy: timing.Measurement | None = None) -> str:
    """One sentence: a kernel moving ``moved`` bytes per call in ``seconds`` against the copy bandwidth the
    hierarchy ``sweep`` measured at that working set (the cache level it fits in), and against the memory roof
    drawn (``roof``, bytes/s: the best in-place probe, measured once at the start), which is its roof only when the
    working set outgrows the caches; ``copy`` (a copy of the same bytes, timed beside the kernel) is set beside
    the sweep's rate at that working set."""
    moved, seconds = validate.positive("moved", moved), validate.positive("seconds", seconds)
    validate.instance("sweep", sweep, HierarchySweep)
    roof = validate.positive("roof", roof)
    rate, level, here = moved / seconds, sweep.level_of(int(moved)), sweep.rate_at(int(moved))
    text = (f"The compiled chain (fresh output) moves {display.format_bytes(moved)} per call (input and output) at "
            f"{display.format_rate(rate)}: {display.percent(rate / here)} of the copy bandwidth the hierarchy sweep "
            f"measured at that working set ({display.format_rate(here)}; ")
    if level == "DRAM":
        text += "main memory, where the memory roof applies). "
    else:
        text += (f"a working set that fits in {level}). Against the memory roof drawn (the best in-place probe, "
                 f"measured once at the start: {display.format_rate(roof)}) it would read "
                 f"{display.percent(rate / roof)}, but at this size its arrays do not come from main memory. ")
    if copy is None:
        return text
    copied = moved / validate.instance("copy", copy, timing.Measurement).median
    both = ("main-memory rates" if level == "DRAM" else
            f"{level} rates (the working set fits in the {display.format_bytes(sweep.caches[level])} {level})")
    return text + (f"The like-for-like copy below moves the same bytes at {display.format_rate(copied)}, "
                   f"{copied / here:.2f}x the sweep's rate there: "
                   + ("close to it. " if 1 / 1.3 <= copied / here <= 1.3 else
                      f"both are {both}, timed at different moments on different arrays; which of the two makes the "
                      "difference is not established by this run. "))


def _spread(m: timing.Measurement) -> float:
    return m.p75 / m.p25 if m.p25 > 0 else math.inf


def chain_limits_text(costs: Mapping[str, timing.Measurement], fresh: timing.Measurement,
                      fresh_faults: float = math.nan) -> str:
    """What the ``chain_limits`` measurements say, both ways: is tanh what keeps the fused chain off its
    memory roof (as notebook 02 finds), and does the fresh output cost anything at this size (``fresh_faults``:
    the fresh-output chain's page faults per call, in outputs' worth, where measured)?"""
    for key in ("copy", "tanh", FUSED, POLY):
        if key not in costs:
            raise ValueError(f"costs must hold {key!r} (chain_limits measures it)")
    validate.instance("fresh", fresh, timing.Measurement)
    t = {k: m.median for k, m in costs.items()}
    tanh_cost, poly_copy, fresh_cost = t[FUSED] / t[POLY], t[POLY] / t["copy"], fresh.median / t[FUSED]
    fmt = display.format_time
    text = (f"Like for like, on the same tensors and into reused buffers: a copy of the chain's bytes takes "
            f"{fmt(t['copy'])}; the compiled chain {fmt(t[FUSED])} ({fmt(fresh.median)} with its fresh output, "
            f"{fresh_cost:.2f}x); the same chain without its tanh {fmt(t[POLY])}. ")
    if tanh_cost >= 1.3:
        text += (f"Taking tanh out makes the fused chain **{tanh_cost:.1f}x** faster, and the polynomial left runs at "
                 f"{poly_copy:.1f}x a copy's time: the chain is **not** memory-bound here, Inductor's tanh (the one in "
                 "the loop torch.compile generated: tens of vector instructions per element) sets the pace, as "
                 "notebook 02 finds with the same test on a larger array, where it also compares XLA's tanh. ")
    else:
        text += (f"Taking tanh out changes the fused chain's time by only {tanh_cost:.2f}x: here its tanh fits under "
                 f"its bytes, and the polynomial runs at {poly_copy:.1f}x a copy's time"
                 + (", on the memory roof. " if poly_copy < 1.3 else ", so what remains is neither tanh nor bytes "
                    "but the loop's other arithmetic or its threads" + (f" ({_load_words()}: a thread that waits for "
                    "the scheduler holds up the whole loop)" if _load_words() else "") + ". ")
                 + "Notebook 02 runs the same test on a larger array and scores it against the vector units' own "
                 "roof. ")
    faults = "" if math.isnan(fresh_faults) else f" ({fresh_faults:.1f} outputs' worth of page faults per call)"
    paged = fresh_faults >= 0.5  # nan (not measured) counts as no faults
    if fresh_cost >= 1.3:
        text += (f"The fresh output costs {fresh_cost:.1f}x the reused buffer's time{faults}: page faults on new "
                 "memory (notebook 02 measures that trap). " if math.isnan(fresh_faults) or paged else
                 f"The fresh output took {fresh_cost:.1f}x the reused buffer's time with only {fresh_faults:.1f} "
                 "outputs' worth of page faults per call, so not the pages; what else it pays is not established by "
                 f"this run (quartiles of the fresh one: {fmt(fresh.p25)} to {fmt(fresh.p75)}"
                 f"{'; ' + _load_words() if _load_words() else ''}). ")
    elif not timing.apart(fresh, costs[FUSED]):
        text += (f"The fresh output{faults} and the reused buffer are within the noise of each other (quartiles "
                 f"{fmt(fresh.p25)} to {fmt(fresh.p75)} and {fmt(costs[FUSED].p25)} to {fmt(costs[FUSED].p75)})"
                 + (": the allocator hands back the block the previous call freed. " if not paged else
                    ": next to the tanh the faults are a small share of the call. "))
    elif fresh_cost < 1:
        text += (f"The fresh output ran **faster** than the reused buffer ({1 / fresh_cost:.2f}x, quartile ranges "
                 f"apart){faults}, which no page fault explains: the reused-buffer version is another compiled graph "
                 "(`out.copy_(chain(x, bias))`, Inductor writing into `out`), and why it is slower is not "
                 "established by this run. ")
    else:
        text += (f"The fresh output costs {fresh_cost:.2f}x the reused buffer's time (quartile ranges apart){faults}"
                 + (": the page faults of its new memory. " if paged else
                    ", with too few page faults to explain it: not established by this run. "))
    eager = t["tanh"] / t["copy"]
    text += (f"Eager `torch.tanh` alone (ATen's own kernel, not the loop Inductor writes) takes {fmt(t['tanh'])}, "
             f"{eager:.2f}x the copy. ")
    odd = [name for name, r in (("the polynomial", poly_copy), ("eager tanh", eager)) if r < 0.7]
    if odd:
        copy, load = costs["copy"], _load_words()
        text += (f"{' and '.join(odd).capitalize()} ran well under the copy's time on the same bytes, which a "
                 "kernel that reads and writes them cannot beat by that much: the copy was slowed while it was "
                 f"timed (its quartiles: {fmt(copy.p25)} to {fmt(copy.p75)}{'; ' + load if load else ''}), so the "
                 "ratios to it are too small. ")
    return text


def _load_words() -> str:
    """'load average 3.1 on 2 cores' when the machine is busier than its cores, else ''."""
    cores = os.cpu_count() or 1
    if not hasattr(os, "getloadavg") or os.getloadavg()[0] <= cores:
        return ""
    return f"load average {os.getloadavg()[0]:.1f} on {cores} cores"


def _load_clause() -> str:
    return f" ({_load_words()})" if _load_words() else ""


def _tanh(framework: str) -> Callable[[Any], Any]:
    if framework == "torch":
        import torch

        return torch.tanh
    if framework == "jax":
        import jax.numpy as jnp

        return jnp.tanh
    return env.import_tensorflow().tanh


@dataclass(frozen=True)
class EagerGap:
    """torch eager against the fastest other eager framework on the chain, the suspects measured apart, and the
    time budget they leave."""

    fast: str
    chain: Mapping[str, timing.Measurement]  # the chain's eager times (notebook section 3)
    tanh: Mapping[str, timing.Measurement]  # tanh alone, fresh output, like the chain's
    faults: Mapping[str, float]  # page faults per call of the eager chain, in outputs' worth
    one_thread: timing.Measurement  # torch's eager chain with torch.set_num_threads(1)
    threads: int
    torch_library: str = ""  # the library torch was built with (kernels.torch_library)
    fresh: timing.Measurement | None = None  # torch's eager chain on fresh pages (malloc_trim before each call)
    fresh_faults: float = math.nan  # its page faults per call, in outputs' worth
    earlier_faults: Mapping[str, float] = field(default_factory=dict)  # the same counts from section 3's table

    @property
    def fault_cost(self) -> float:
        """Seconds one output's worth of page faults costs torch's chain (computed from the chain on fresh pages
        against the chain as timed); nan where the two did not differ by half an output's worth."""
        extra = self.fresh_faults - self.faults["torch"]
        if self.fresh is None or not extra >= 0.5:
            return math.nan
        return max(self.fresh.median - self.chain["torch"].median, 0.0) / extra

    def text(self) -> str:
        """The measured numbers, then either why there is no gap, or the gap's time budget with what is left."""
        fmt, fast = display.format_time, self.fast
        a, b = self.chain["torch"].median, self.chain[fast].median
        ta, tb = self.tanh["torch"].median, self.tanh[fast].median
        t1 = self.one_thread.median
        text = (f"torch eager took {fmt(a)} on the chain, {variant_name(fast, False)} {fmt(b)} ({a / b:.1f}x). "
                "Measured "
                f"apart: tanh alone {fmt(ta)} in torch, {fmt(tb)} in {fast}; fresh pages per call of the chain "
                f"{self.faults['torch']:.1f} outputs' worth in torch, {self.faults[fast]:.1f} in {fast}"
                f"{self._recount()}; torch's chain on one thread {fmt(t1)} (on {self.threads}: {fmt(a)}). ")
        if self.fresh is not None:
            text += (f"With the memory each call freed handed back to the OS first (`malloc_trim`, as an allocator "
                     f"that trims does), torch's chain took {fmt(self.fresh.median)} with "
                     f"{self.fresh_faults:.1f} outputs' worth of page faults per call"
                     + (f": one output's worth of faults costs it {fmt(self.fault_cost)} (computed from the two). "
                        if not math.isnan(self.fault_cost) else ". "))
        if a <= b:
            return text + (f"torch eager was the faster of the two in this run: there is no gap to explain (on one "
                           f"thread it took {t1 / a:.1f}x its time: its threads paid off)." if t1 > a else
                           "torch eager was the faster of the two in this run: there is no gap to explain.")
        if a <= 1.5 * b:
            return text + "Within 1.5x: at this size the two eager runtimes cost about the same."
        return text + self._budget(a, b, ta, tb, t1)

    def _recount(self) -> str:
        """Where section 3's table counted other fault numbers for the same chains: both, and that they differ."""
        before = {fw: self.earlier_faults.get(fw) for fw in ("torch", self.fast)}
        if any(v is None or math.isnan(v) for v in before.values()) or all(
                abs(before[fw] - self.faults[fw]) < 0.2 for fw in before):
            return ""
        return (f" (the table above counted {before['torch']:.1f} and {before[self.fast]:.1f} on other calls of the "
                "same chains, at another moment; why the counts move between calls is not established by this run)")

    def _budget(self, a: float, b: float, ta: float, tb: float, t1: float) -> str:
        fmt, fast, gap = display.format_time, self.fast, a - b
        parts = {"tanh": max(ta - tb, 0.0)}
        names = {"tanh": f"tanh (torch's {ta / tb:.1f}x {fast}'s: the two run different tanh kernels)"}
        extra = self.faults["torch"] - self.faults[fast]
        if extra >= 0.5 and not math.isnan(self.fault_cost):
            parts["page faults"] = extra * self.fault_cost
            names["page faults"] = (f"page faults ({extra:.1f} outputs' worth more per call, as counted here, at the "
                                    "cost measured above)")
        total = sum(parts.values())
        left = gap - total
        text = (f"Time budget of the {fmt(gap)} gap (computed from these measurements): "
                + "; ".join(f"{names[k]} {fmt(t)} ({t / gap:.0%})" for k, t in parts.items()))
        if extra >= 0.5 and math.isnan(self.fault_cost):
            text += f"; torch's {extra:.1f} more outputs' worth of page faults, whose cost this run did not measure"
        if left > 0.1 * gap:
            text += (f"; left unexplained {fmt(left)} ({left / gap:.0%}): what that is, is not established by this "
                     "run")
        elif left >= -0.1 * gap:
            text += f"; together {fmt(total)} ({total / gap:.0%}): the gap is accounted for"
        else:
            text += self._overshoot(parts, gap, total)
        if t1 < a / 1.3:
            ops = models.GELU_CHAIN_OPS
            text += (f". On one thread the chain ran {a / t1:.1f}x faster ({fmt(t1 / ops)} per op against "
                     f"{fmt(a / ops)} on {self.threads}): each op hands its work to {self.threads} threads and waits "
                     f"for all of them{_load_clause()}; that measurement overlaps the budget's parts, so it is not "
                     "added to them")
        return text + "."

    def _overshoot(self, parts: Mapping[str, float], gap: float, total: float) -> str:
        """The budget's parts add up to more than the gap: say so, and name the part most likely overestimated."""
        top = max(parts, key=lambda k: parts[k])
        why = {"page faults": "its cost per output's worth comes from the chain run with `malloc_trim` before every "
                              "call, which adds the trim's own time and has the OS hand over (and zero) every page "
                              "anew, so it may overstate what the faults of the chain as timed cost",
               "tanh": "it was timed alone, outside the chain"}
        alone = ": more than the whole gap on its own" if parts[top] > gap else ""
        overlap = (" (the tanh timed alone also writes a fresh output, whose faults the fault part may count again)"
                   if len(parts) > 1 else "")
        return (f"; together {display.format_time(total)} ({total / gap:.0%} of the gap): more than the gap, so "
                f"the parts do not account for it. Either they overlap{overlap}, or a part is overestimated: the "
                f"largest, {top} ({parts[top] / gap:.0%} of the gap{alone}): {why[top]}; or torch is faster than "
                f"{self.fast} in the chain's other ops, which offsets them (not timed apart). Which of these it is, "
                "is not established by this run")


def eager_gap(inputs: Mapping[str, tuple], eager: Mapping[str, timing.Measurement],
              chain: Callable[[str], Callable[..., Any]],
              earlier_faults: Mapping[str, float] | None = None) -> EagerGap | None:
    """Measure ``EagerGap`` for torch against the fastest other eager framework of ``eager``; None when torch is
    the only framework. ``chain(framework)`` returns the eager chain (``models.chain_for``); ``earlier_faults``
    (framework -> outputs' worth) are the fault counts an earlier table showed, set beside the ones taken here."""
    import torch

    validate.non_empty("eager", eager)
    validate.function("chain", chain)
    others = [fw for fw in eager if fw != "torch"]
    if "torch" not in eager or not others:
        return None
    fast = min(others, key=lambda fw: eager[fw].median)
    tanh, faults = {}, {}
    for fw in ("torch", fast):
        x = inputs[fw][0]
        tanh[fw] = timing.benchmark(_tanh(fw), x, label=f"{fw} tanh")
        faults[fw] = outputs_worth(chain(fw), *inputs[fw], output_bytes=tensor_bytes(x))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one = timing.benchmark(chain("torch"), *inputs["torch"], label="torch eager, one thread")
    finally:
        torch.set_num_threads(threads)
    trimmed = on_fresh_pages(chain("torch"))
    fresh, fresh_faults = None, math.nan
    if trimmed is not None and inputs["torch"][0].device.type == "cpu":
        fresh = timing.benchmark(trimmed, *inputs["torch"], label="torch eager, fresh pages")
        fresh_faults = outputs_worth(trimmed, *inputs["torch"], output_bytes=tensor_bytes(inputs["torch"][0]))
    earlier = {fw: validate.non_negative(f"earlier_faults[{fw!r}]", v)
               for fw, v in (earlier_faults or {}).items() if not (isinstance(v, float) and math.isnan(v))}
    return EagerGap(fast, dict(eager), tanh, faults, one, threads, torch_library().library, fresh, fresh_faults,
                    earlier)
