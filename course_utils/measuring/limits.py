"""What keeps the chain below its roof, measured like for like, and why one eager chain is slower than another.

- ``chain_limits``: at the chain's own size and all into reused buffers, a copy of its bytes, eager ``tanh``
  alone, and the compiled chain with and without its ``tanh`` (notebook 02's test, at notebook 00's size);
- ``eager_gap``: torch eager against the fastest other eager framework on the same chain: its ``tanh`` alone,
  its fresh pages per call (page faults), and the same chain on one thread.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from course_utils import display, env, memory, models, timing, validate
from course_utils.measuring.kernels import torch_library
from course_utils.measuring.speedups import variant_name

PAGE = 4096
FUSED = "compiled chain, reused buffer"
POLY = "compiled chain without tanh, reused buffer"


def chain_limits(x: Any, bias: Any, fused: Mapping[str, Callable[[Any, Any], Any]]) -> dict[str, timing.Measurement]:
    """torch ``copy_`` and ``tanh`` of ``x`` into a preallocated output (eager), and each of ``fused``
    (name -> compiled ``f(x, bias)`` writing into a reused buffer), timed on the same tensors."""
    import torch

    validate.instance("x", x, torch.Tensor)
    validate.non_empty("fused", fused)
    out = torch.empty_like(x)
    found = {"copy": timing.benchmark(out.copy_, x, label="copy_ into out"),
             "tanh": timing.benchmark(torch.tanh, x, out=out, label="tanh into out")}
    for name, fn in fused.items():
        found[name] = timing.benchmark(validate.function(f"fused[{name!r}]", fn), x, bias, label=name)
    return found


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
                 f"{poly_copy:.1f}x a copy's time: the chain is **not** memory-bound here, its tanh (tens of vector "
                 "instructions per element) sets the pace, as notebook 02 finds with the same test on a larger array. ")
    else:
        text += (f"Taking tanh out changes the fused chain's time by only {tanh_cost:.2f}x: here its tanh fits under "
                 f"its bytes, and the polynomial runs at {poly_copy:.1f}x a copy's time"
                 + (", on the memory roof. " if poly_copy < 1.3 else ", so what remains is neither tanh nor bytes "
                    "but the loop's other arithmetic or its threads" + (f" ({_load_words()}: a thread that waits for "
                    "the scheduler holds up the whole loop)" if _load_words() else "") + ". ")
                 + "Notebook 02 runs the same test on a larger array and scores it against the vector units' own "
                 "roof. ")
    faults = "" if math.isnan(fresh_faults) else f" ({fresh_faults:.1f} outputs' worth of page faults per call)"
    if fresh_cost < 1.3 and not fresh_faults >= 0.5:  # nan (not measured) counts as no faults
        text += (f"The fresh output costs little at this size{faults}: the allocator hands back the block the "
                 "previous call freed. ")
    elif fresh_cost < 1.3:
        text += (f"The fresh output costs little at this size although it pays {fresh_faults:.1f} outputs' worth "
                 "of page faults per call: next to the tanh they are a small share of the call. ")
    elif math.isnan(fresh_faults) or fresh_faults >= 0.5:
        text += (f"The fresh output costs {fresh_cost:.1f}x the reused buffer's time{faults}: page faults on new "
                 "memory (notebook 02 measures that trap). ")
    else:
        text += (f"The fresh output took {fresh_cost:.1f}x the reused buffer's time with only "
                 f"{fresh_faults:.1f} outputs' worth of page faults per call, so not "
                 f"the pages: the two were timed at different moments (quartiles of the fresh one: "
                 f"{fmt(fresh.p25)} to {fmt(fresh.p75)}{'; ' + _load_words() if _load_words() else ''}). ")
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
    """torch eager against the fastest other eager framework on the chain, and three suspects measured apart."""

    fast: str
    chain: Mapping[str, timing.Measurement]  # the chain's eager times (notebook section 3)
    tanh: Mapping[str, timing.Measurement]  # tanh alone, fresh output, like the chain's
    faults: Mapping[str, float]  # page faults per call of the eager chain, in outputs' worth
    one_thread: timing.Measurement  # torch's eager chain with torch.set_num_threads(1)
    threads: int
    torch_library: str = ""  # the library torch was built with (kernels.torch_library)

    def text(self) -> str:
        """Two or three sentences with the measured numbers; each cause is named only where it was measured."""
        fmt, fast = display.format_time, self.fast
        a, b = self.chain["torch"].median, self.chain[fast].median
        ta, tb = self.tanh["torch"].median, self.tanh[fast].median
        t1 = self.one_thread.median
        text = (f"torch eager took {fmt(a)} on the chain, {variant_name(fast, False)} {fmt(b)} ({a / b:.1f}x). "
                "Measured "
                f"apart: tanh alone {fmt(ta)} in torch, {fmt(tb)} in {fast}; fresh pages per call of the chain "
                f"{self.faults['torch']:.1f} outputs' worth in torch, {self.faults[fast]:.1f} in {fast}; torch's "
                f"chain on one thread {fmt(t1)} (on {self.threads}: {fmt(a)}). ")
        if a <= b:
            return text + (f"torch eager was the faster of the two in this run: there is no gap to explain (on one "
                           f"thread it took {t1 / a:.1f}x its time: its threads paid off)." if t1 > a else
                           "torch eager was the faster of the two in this run: there is no gap to explain.")
        if a <= 1.5 * b:
            return text + "Within 1.5x: at this size the two eager runtimes cost about the same."
        causes = []
        if ta - tb >= 0.25 * (a - b):
            mkl = "MKL" in self.torch_library
            causes.append(f"torch's tanh, {ta / tb:.1f}x {fast}'s, is {(ta - tb) / (a - b):.0%} of the gap: the two "
                          "frameworks run different tanh kernels"
                          + (" (PyTorch built with MKL, as this one is, hands an eager tanh to MKL's vector-math "
                             "library" + ("; on an AMD CPU, MKL is known to choose slower code paths)"
                                          if "AMD" in env.cpu_model() else ")") if mkl else ""))
        if t1 < a / 1.3:
            ops = models.GELU_CHAIN_OPS
            causes.append(f"on one thread the chain ran {a / t1:.1f}x faster, {fmt(t1 / ops)} per op against "
                          f"{fmt(a / ops)} on {self.threads}: each op hands its work to {self.threads} threads and "
                          "waits for all of them, and on busy cores a thread that lost its core waits for the "
                          f"scheduler to give it back{_load_clause()}")
        if self.faults["torch"] >= self.faults[fast] + 1:
            causes.append(f"torch's ops write fresh memory, {self.faults['torch']:.1f} outputs' worth of page "
                          f"faults per call against {self.faults[fast]:.1f}: {fast}'s allocator hands its blocks back "
                          "to the next op (notebook 02 measures what a page fault costs)")
        if not causes:
            return text + ("None of the three accounts for the gap by itself: it is the sum of eleven smaller "
                           "per-op costs (notebook 01 measures them).")
        return text + "Where the gap comes from: " + "; ".join(causes) + "."


def eager_gap(inputs: Mapping[str, tuple], eager: Mapping[str, timing.Measurement],
              chain: Callable[[str], Callable[..., Any]]) -> EagerGap | None:
    """Measure ``EagerGap`` for torch against the fastest other eager framework of ``eager``; None when torch is
    the only framework. ``chain(framework)`` returns the eager chain (``models.chain_for``)."""
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
        pages = max(1, math.ceil(int(math.prod(x.shape)) * 4 / PAGE))
        faults[fw] = memory.page_faults(chain(fw), *inputs[fw]) / pages
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one = timing.benchmark(chain("torch"), *inputs["torch"], label="torch eager, one thread")
    finally:
        torch.set_num_threads(threads)

    return EagerGap(fast, dict(eager), tanh, faults, one, threads, torch_library().library)
