"""Every sentence notebook 01 tells after a verdict, told from the stored verdict and this run's measurements.

One function per paragraph (or per group of paragraphs that belong to one verdict), each returning
``display.Prose``. They read ``v.status`` / ``v.held`` and each ``Speedup``'s ``outcome`` and never recompute the
comparison a verdict made. A prediction that was not tested here is said once, by its verdict; its story then
says what the section measures where it can run. The "Going further" stories are in ``story_further``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from course_utils import display, intervals, timing, validate
from course_utils.graphs.breakeven import OverheadModel
from course_utils.graphs.breakeven import break_even as _break_even
from course_utils.graphs.cache import COLD, LOCAL, PORTABLE, CacheTimes
from course_utils.graphs.fallback import CompileDecision
from course_utils.graphs.recompiles import GraphBreaks
from course_utils.graphs.wording import OUTCOME as _OUTCOME
from course_utils.graphs.wording import rounded
from course_utils.graphs.wording import share as _share

_fmt = display.format_time


def _verdict(v: Any) -> display.Verdict:
    return validate.instance("v", v, display.Verdict)


def same_ops(v: display.Verdict, op_counts: Mapping[str, int]) -> display.Prose:
    """After section 1's verdict: what the equal op counts let a compiler do, or where the counts differ."""
    v = _verdict(v)
    validate.instance("op_counts", op_counts, Mapping)
    validate.non_empty("op_counts", op_counts)
    if not v.held:
        return display.prose(f"The counts differ ({dict(op_counts)}): the frameworks lower the same Python "
                             "differently (a constant folded in one and kept in another); the table above names each "
                             "op, so compare them one by one.")
    n = next(iter(op_counts.values()))
    bookkeeping = (" TensorFlow also lists `Placeholder`, `Const` and `Identity` nodes, which are bookkeeping."
                   if "tensorflow" in op_counts else "")
    return display.prose(
        f"All graphs here hold **{n} compute ops** (the cube `h*h*h` is two multiplications, each constant factor one "
        f"more).{bookkeeping} What the compiler sees that eager execution cannot is the *whole* list at once: all "
        f"{n} ops are elementwise over one shape, so it can fuse them into one loop and skip {n - 1} intermediate "
        "tensors.")


def break_even(size: int, eager: Mapping[str, timing.Measurement], compiled: Mapping[str, timing.Measurement],
               speed: Mapping[str, intervals.Speedup]) -> display.Prose:
    """After section 2's verdict: per framework, the first call, the steady state and the break-even, as far as
    the interval on the speed-up supports one."""
    validate.number("size", size, low=1, high=2**40, integer=True)
    for name, found in (("eager", eager), ("compiled", compiled), ("speed", speed)):
        validate.instance(name, found, Mapping)
        validate.non_empty(name, found)
    paragraphs = [f"At {size:,} elements, eager and compiled timed in alternating rounds:"]
    for fw, s in speed.items():
        e, c = eager[fw], compiled[fw]
        text = (f"**{fw}**: first compiled call {_fmt(c.first_call or 0.0)}, then {_fmt(c.median)} per call against "
                f"{_fmt(e.median)} eager, compiled {rounded(s)}: ")
        calls = _break_even(e, c)
        if s.outcome == intervals.WITHIN_NOISE:
            text += "within the noise of eager, so this run gives no break-even."
        elif s.outcome == intervals.SLOWER:
            text += "slower per call, so compiling never pays off at this size."
        elif math.isinf(calls):
            text += ("faster over the paired rounds, but its median per call is not below eager's, so the "
                     "break-even is not established.")
        else:
            text += (f"compiling pays off after **{calls:,.0f} call{'s' * (calls != 1)}** (eager's own first call: "
                     f"{_fmt(e.first_call or e.median)})"
                     + (" (JAX's eager first call compiles each primitive the first time it runs)." if fw == "jax"
                        else "."))
        paragraphs.append(text)
    return display.prose(*paragraphs)


def compile_cache(v: display.Verdict, cache: CacheTimes) -> display.Prose:
    """After the cache verdict: what a warm hit still runs, each warm process against the cold one, and what
    the portable artifacts did not carry where its process still built libraries."""
    v = _verdict(v)
    validate.instance("cache", cache, CacheTimes)
    cold, portable, local = cache.runs[COLD], cache.runs[PORTABLE], cache.runs[LOCAL]
    mechanism = ("On a warm hit of Inductor's FX-graph cache (and of AOTAutograd's before it), lowering and code "
                 "generation are skipped. What still runs: Dynamo tracing the bytecode, building the guards, "
                 "computing the cache keys, and loading the cached artifact (on a CPU, one compiled library per "
                 "kernel, if the folder has it).")
    local_text = (f"The local process reused the cold run's folder: its first call took {_fmt(local.seconds)}, "
                  f"{_share(local.seconds, cold.seconds)} of the cold {_fmt(cold.seconds)}, building "
                  f"{local.libraries_built} libraries.")
    if portable.libraries_built:
        portable_text = (f"The portable process loaded the artifacts ({_fmt(portable.load_seconds)}) into an empty "
                         f"folder, hit the FX-graph cache, and still built {portable.libraries_built} compiled "
                         f"libraries in its first call (the cold one {cold.libraries_built}; "
                         f"{portable.libraries_before} were there before it): the artifacts carry the generated code, "
                         "not the libraries the C++ "
                         f"compiler makes from it, so it paid {_share(portable.seconds, cold.seconds)} of the cold "
                         "compile. PyTorch's caching recipe lists Triton's kernels among the artifacts: on a GPU, "
                         "this cell shows whether they spare the compile.")
    else:
        portable_text = (f"The portable process loaded the artifacts ({_fmt(portable.load_seconds)}) into an empty "
                         f"folder and built no library: its first call took {_fmt(portable.seconds)}, "
                         f"{_share(portable.seconds, cold.seconds)} of the cold one.")
    advice = ("For a job: keep `TORCHINDUCTOR_CACHE_DIR` on a persistent volume, and monitor compile time; notebook "
              "07's cost model takes these seconds from `cu.graphs.compile_cache_times`."
              + ("" if v.held else " One process each: repeat them before a budget rests on them."))
    return display.prose(mechanism, local_text, portable_text, advice)


def regional(v: display.Verdict, compile_s: Mapping[str, float], step_vs_whole: Mapping[str, intervals.Speedup],
             depth: int) -> display.Prose:
    """After the regional verdict: each form's compile time against the whole model's, and its step against the
    whole model's step, told from the interval's outcome."""
    v = _verdict(v)
    validate.instance("compile_s", compile_s, Mapping)
    validate.instance("step_vs_whole", step_vs_whole, Mapping)
    depth = validate.number("depth", depth, low=1, high=10**4, integer=True)
    whole = validate.positive("compile_s['whole model']", compile_s.get("whole model", float("nan")))
    text = (f"Compiling the whole {depth}-block model took {_fmt(whole)}; "
            + ", ".join(f"`{k}` {_fmt(compile_s[k])} ({_share(compile_s[k], whole)})" for k in step_vs_whole)
            + " (one compile each, caches off).")
    steps = []
    for name, s in step_vs_whole.items():
        if s.outcome == intervals.SLOWER:
            why = (f": each block is its own compiled call with Python between them, {depth} fixed costs where the "
                   "whole model pays one (a candidate this run does not time apart)" if name == "block.compile()"
                   else ": why is not established by this run")
            steps.append(f"`{name}` ran its step slower than the whole model (its speed over the whole model: "
                         f"{rounded(s)}){why}.")
        elif s.outcome == intervals.FASTER:
            steps.append(f"`{name}` ran its step faster than the whole model ({rounded(s)}); why is not "
                         "established by this run.")
        else:
            steps.append(f"`{name}`'s step was within the noise of the whole model's ({rounded(s)}).")
    close = ("Compile the repeated block where compile time dominates (a large model, many short jobs or restarts), "
             "and check the step time, as here." if v.held else
             "Not as predicted here: weigh the compile time saved against the step time, measured on your model.")
    return display.prose(text, " ".join(steps), close)


def overhead(v: display.Verdict, models: Sequence[OverheadModel], how: str) -> display.Prose:
    """After the overhead verdict: the two costs fed to the model, the compiled chain's own call against the
    run's figure, and, where the model missed, which cost is further off."""
    v = _verdict(v)
    validate.non_empty("models", models)
    for m in models:
        validate.instance("models", m, OverheadModel)
    validate.text("how", how)
    costs = ("The two costs: " + "; ".join(f"{m.framework} eager op (the chain's mix) {_fmt(m.eager_per_op)}, "
                                           f"compiled call {_fmt(m.compiled_per_call)}" for m in models)
             + f". The compiled call is the run's figure: {how}")
    beside = ("Like for like (a compiled call on 16 elements), measured at another moment: the compiled chain's own "
              "call took " + "; ".join(f"{m.framework} {_fmt(m.chain_call)}, {m.chain_call / m.compiled_per_call:.2g}x "
                                       "the figure" for m in models) + ".")
    if v.held:
        return display.prose(costs, beside, "Within 2x everywhere: at this size a compiled chain costs about one "
                                            "call, an eager chain n_ops dispatches.")
    missed = []
    for m in models:
        if m.within(2):
            continue
        op = m.measured * m.chain_call / m.n_ops  # the eager chain's average op at this size
        eager_off, compiled_off = op / m.eager_per_op, m.chain_call / m.compiled_per_call
        worse = "eager op" if abs(math.log(eager_off)) >= abs(math.log(compiled_off)) else "compiled call"
        missed.append(f"{m.framework}: its eager chain's ops averaged {_fmt(op)}, {eager_off:.2g}x the op mix, and its "
                      f"compiled chain call {compiled_off:.2g}x the figure, so the {worse} cost is further off")
    return display.prose(costs, beside, "Where the model missed by more than 2x: " + "; ".join(missed) + ". The "
                         "model's inputs must be the costs of the calls actually made; the profiler trace in Going "
                         "further counts them.")


def cuda_graphs(v: display.Verdict, s: intervals.Speedup | None) -> display.Prose:
    """After the reduce-overhead verdict (or its 'not tested here' on a runtime without a CUDA GPU)."""
    v = _verdict(v)
    if not v.tested:
        return display.prose('On a CUDA GPU, this cell compiles the chain with `mode="reduce-overhead"` and times its '
                             "CUDA-graph replay against the default compile, in alternating rounds.")
    validate.instance("s", s, intervals.Speedup)
    if v.held:
        return display.prose(f"Replayed as a CUDA graph, the chain ran {rounded(s)} the default compile's speed: one "
                             "graph launch replaces the launches of its kernels. The graph is recorded on the first "
                             "calls and replays fixed shapes and addresses: a new shape records another graph.")
    return display.prose(f"The CUDA-graph replay was {_OUTCOME[s.outcome]} against the default compile "
                         f"({rounded(s)}). A candidate: the chain is one fused kernel, so there is one launch to save; "
                         "this run does not time launches apart.")


def recompiles(v: display.Verdict, counts: Mapping[str, Mapping[str, int]], retrace_warnings: int) -> display.Prose:
    """After the recompilation verdict: each framework's counts in words (a framework not installed says nothing)."""
    v = _verdict(v)
    validate.instance("counts", counts, Mapping)
    retrace_warnings = validate.number("retrace_warnings", retrace_warnings, low=0, high=10**6, integer=True)
    parts = []
    if "torch" in counts:
        t = counts["torch"]
        parts.append(f"PyTorch compiled {t['dynamic=False']} times with static shapes and "
                     f"{t['default (automatic dynamic)']} by default: the recompile log above shows the size guard "
                     "failing once, after which Dynamo compiles one shape-generic graph (`mark_dynamic` does so up "
                     f"front: {t['mark_dynamic(x, 0)']}).")
    if "jax" in counts:
        j = counts["jax"]
        padded = next(k for k in j if k.startswith("padded"))
        parts.append(f"JAX traced {j['jax.jit']} times; {padded} cut that to {j[padded]}, at the price of computing "
                     "on zeros (slice or mask them away).")
    if "tensorflow" in counts:
        f = counts["tensorflow"]
        parts.append(f"TensorFlow retraced {f['tf.function']} times and logged {retrace_warnings} retracing "
                     f"warning(s) (the one shown above), {f['reduce_retracing=True']} with `reduce_retracing=True` and "
                     f"{f['input_signature [None]']} with a `None` length in the signature.")
    lead = "" if v.held else f"Not as predicted: {v.why}. "
    return display.prose(lead + " ".join(parts) + " In training, the usual culprit is an epoch's last, smaller "
                         "batch: drop it or pad it.")


def control_flow(v: display.Verdict, breaks: GraphBreaks, clip_diff: float, frameworks: Sequence[str],
                 ) -> display.Prose:
    """After the control-flow verdict: what each framework did with the Python ``if``, and the refactoring."""
    v = _verdict(v)
    validate.instance("breaks", breaks, GraphBreaks)
    clip_diff = validate.non_negative("clip_diff", clip_diff)
    validate.instance("frameworks", frameworks, (list, tuple))
    reason = breaks.reasons[0] if breaks.reasons else "none given"
    text = (f"PyTorch produced {breaks.graph_count} graph(s) with {breaks.break_count} break(s) (reason: `{reason}`) "
            "and ran the `if` in Python between them, equal to eager on both branches (max abs diff "
            f"{clip_diff:.1e}, asserted above), but giving the compiler smaller pieces and a trip through Python on "
            "every call.")
    others = {"jax": "JAX refuses to guess a traced value's truth", "tensorflow": "TensorFlow's AutoGraph rewrote the "
              "`if` without a word"}
    text += "".join(f" {others[fw]}." for fw in frameworks if fw in others)
    lead = "" if v.held else f"Not as predicted: {v.why}. "
    return display.prose(lead + text, "The seed articles list data-dependent control flow as a migration pitfall and "
                         "advise refactoring it first; the `where`/`cond` forms above are that refactoring, each "
                         "checked against eager on inputs that take both branches.")


def fallbacks(v: display.Verdict, decisions: Mapping[tuple[str, str], CompileDecision]) -> display.Prose:
    """After the compile-or-fall-back verdict: how many were kept, and the silent error the comparison caught."""
    v = _verdict(v)
    validate.instance("decisions", decisions, Mapping)
    validate.non_empty("decisions", decisions)
    back = [f"{fw} {name}" for (fw, name), d in decisions.items() if not d.compiled]
    text = (f"{len(decisions) - len(back)} of {len(decisions)} functions were kept compiled; {len(back)} fell back to "
            f"eager ({', '.join(back) or 'none'}), each with a reason a log line can carry.")
    running = decisions.get(("jax", "running sum in a Python list"))
    if running is None:
        caught = ("Without JAX, the running-sum case (a Python list read once at trace time) is skipped; the "
                  "comparison with eager is what catches such silent errors.")
    elif running.compiled:
        caught = ("The running-sum case (a Python list read once at trace time) was kept: on this sample the compiled "
                  "result matched eager, so the comparison did not catch it. Check on more than one input.")
    else:
        caught = (f"The running-sum case is the dangerous one: it compiles without complaint and returns a wrong "
                  f"number, because the list was read once at trace time ({running.reason}). Only the comparison "
                  "with eager catches it: check every compiled result against eager.")
    lead = "" if v.held else f"Not as predicted: {v.why}. "
    return display.prose(lead + text, caught)


def training_step(v: display.Verdict, times: Mapping[str, tuple[timing.Measurement, timing.Measurement]],
                  speed: Mapping[str, intervals.Speedup], batch: int) -> display.Prose:
    """After the training-step verdict: each framework's step, eager and compiled, with its interval's outcome."""
    v = _verdict(v)
    validate.instance("times", times, Mapping)
    validate.instance("speed", speed, Mapping)
    validate.non_empty("speed", speed)
    batch = validate.number("batch", batch, low=1, high=2**31, integer=True)
    lines = [f"**{fw}** {_fmt(times[fw][0].median)} eager, {_fmt(times[fw][1].median)} compiled: {rounded(s)}, "
             f"{_OUTCOME[s.outcome]}" for fw, s in speed.items()]
    text = f"One step on a batch of {batch}: " + "; ".join(lines) + ". The first compiled step (the table's last " \
        "column) is the compile."
    if "jax" in speed:
        text += (" JAX's eager baseline is ordinary op-by-op dispatch of the same update; `jax.disable_jit()` would "
                 "also un-jit jnp's own internals and flatter the compiled step.")
    close = ("Every compiled step beat its eager twin." if v.held else
             "Where a compiled step did not win, Going further times PyTorch's step part by part and profiles it.")
    return display.prose(text, close)


def seed_claim(v: display.Verdict, s: intervals.Speedup) -> display.Prose:
    """After the seed's 30% claim is scored on PyTorch's training step."""
    v = _verdict(v)
    validate.instance("s", s, intervals.Speedup)
    if v.held:
        claim = f"On this model torch.compile saved at least 30% of the step: {rounded(s)}, above the 1.43x it needs."
    elif s.outcome == intervals.FASTER:
        claim = (f"torch.compile was faster ({rounded(s)}), but the interval does not lie above the 1.43x that a 30% "
                 "saving needs: the seed's figure is not shown on this model.")
    elif s.outcome == intervals.SLOWER:
        claim = (f"torch.compile's step was slower than eager ({rounded(s)}): the seed's 30% is not shown, and Going "
                 "further looks at where the compiled step's time went.")
    else:
        claim = f"torch.compile's step was within the noise of eager ({rounded(s)}): the seed's 30% is not shown."
    return display.prose(claim, "Each framework's speed-up over its own eager mode is a different number; a saving "
                         "counts only after the compile is paid back. Measure on your own model before budgeting a "
                         "migration (notebook 07).")


from course_utils.graphs.story_further import (  # noqa: E402  (the Going further stories, one namespace)
    dynamic,
    harnesses,
    op_count_bound,
    prints,
    step_time,
    tlparse,
    traced,
)

__all__ = ["break_even", "compile_cache", "control_flow", "cuda_graphs", "dynamic", "fallbacks", "harnesses",
           "op_count_bound", "overhead", "prints", "recompiles", "regional", "rounded", "same_ops", "seed_claim",
           "step_time", "tlparse", "traced", "training_step"]
