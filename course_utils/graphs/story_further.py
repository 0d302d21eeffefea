"""The sentences of notebook 01's "Going further" section, told from its stored verdicts and measurements (the main
path's are in ``story``, which re-exports these so the notebook reaches all of them as ``cu.graphs.story.<name>``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from course_utils import display, intervals, timing, validate
from course_utils.compile_report import CompileReport
from course_utils.graphs.breakeven import OverheadModel
from course_utils.graphs.dynamic import REUSED, Variant
from course_utils.graphs.harness import OTHER, SWEEP, Harness
from course_utils.graphs.steptrace import StepTrace
from course_utils.graphs.traced import TracedCalls
from course_utils.graphs.wording import OUTCOME, rounded

_fmt = display.format_time


def _verdict(v: Any) -> display.Verdict:
    return validate.instance("v", v, display.Verdict)


def dynamic(v: display.Verdict, found: Mapping[str, Variant], speeds: Mapping[str, intervals.Speedup],
            first_size: int) -> display.Prose:
    """After the shape-generic verdict: each variant against the static graph, and what the reused function did."""
    v = _verdict(v)
    validate.instance("found", found, Mapping)
    validate.instance("speeds", speeds, Mapping)
    validate.non_empty("speeds", speeds)
    first_size = validate.number("first_size", first_size, low=1, high=2**40, integer=True)
    each = [f"`{k}` {OUTCOME[s.outcome]} (its speed over the static graph: {rounded(s)})" for k, s in speeds.items()
            if k != REUSED]
    text = "Per call at 16 elements, against the static graph: " + "; ".join(each) + ". "
    text += ("Both shape-generic forms cost time on every call (sizes passed in and checked; a candidate this run "
             "does not time apart): use them where shapes really vary (section 5), not by default." if v.held else
             "Not slower beyond the noise for every form: here the symbolic size costs less than the run's spread.")
    paragraphs = [text]
    if REUSED in found and REUSED in speeds:
        r, s = found[REUSED], speeds[REUSED]
        paragraphs.append(f"Section 2's function, first called at {first_size:,} elements and reused here, compiled "
                          f"{r.graphs} new graph(s) for this length and ran {OUTCOME[s.outcome]} ({rounded(s)}): after "
                          "a length changes, the default compiles a shape-generic graph, so a reused compiled function "
                          "is no static baseline.")
    return display.prose(*paragraphs)


def op_count_bound(v: display.Verdict, models: Sequence[OverheadModel]) -> display.Prose:
    """After the op-count verdict: why the ratio of two fixed costs, not the op count, caps the speed-up."""
    v = _verdict(v)
    validate.non_empty("models", models)
    costs = "; ".join(f"{m.framework}: an eager op costs {m.eager_per_op / m.compiled_per_call:.2g}x a compiled call"
                      for m in models)
    if v.held:
        return display.prose(f"The op-count bound held in this run ({costs}). The overhead model, not the bound, is "
                             "the general rule: where an eager op costs more than a compiled call, the compiled chain "
                             "wins by more than the op count.")
    return display.prose(f"The op-count bound failed ({costs}): the ratio of the two fixed costs, not the op count, "
                         "caps the small-size speed-up.")


def traced(v: display.Verdict, found: Sequence[TracedCalls], models: Sequence[OverheadModel]) -> display.Prose:
    """After the trace verdict: what the timeline shows, and the model fed with the traced dispatch counts."""
    v = _verdict(v)
    validate.non_empty("found", found)
    validate.non_empty("models", models)
    first = found[0]
    text = (f"The {first.framework} eager timeline shows {first.eager_per_call:g} short op bars per call, separated by "
            "gaps in which Python and the dispatcher work; the compiled trace shows one region per call. ")
    if v.held:
        text += "The traces count exactly the graph's ops: section 4's model charged the dispatches that happened."
    else:
        by_fw = {m.framework: m for m in models}
        fed = []
        for t in found:
            m = by_fw.get(t.framework)
            if m is not None and t.compiled_per_call:
                computed = t.eager_per_call * m.eager_per_op / (t.compiled_per_call * m.compiled_per_call)
                fed.append(f"{t.framework} {computed:.2g}x")
        text += ("The traces count other dispatches than the graph's ops (see the table); fed with them, the model "
                 f"computes {', '.join(fed) or 'nothing (no compiled dispatch counted)'}.")
    return display.prose(text, "What a trace cannot show is the compiled call's own fixed cost: that is the run's "
                         "call-cost figure.")


def harnesses(v: display.Verdict, found: Mapping[str, Harness], factors: Mapping[str, intervals.Speedup],
              size: int) -> display.Prose:
    """After the harness verdict: the two speed-ups, each factor with its interval, and the largest one."""
    v = _verdict(v)
    validate.instance("found", found, Mapping)
    validate.instance("factors", factors, Mapping)
    validate.non_empty("factors", factors)
    size = validate.number("size", size, low=1, high=2**40, integer=True)
    text = (f"At {size:,} elements, notebook 00's harness gives {rounded(found[OTHER].speedup)} and this sweep's "
            f"{rounded(found[SWEEP].speedup)}. Each factor measured apart, as the time without it over the time with "
            "it (below 1x it costs time): "
            + "; ".join(f"{name}: {rounded(s)}, {OUTCOME[s.outcome]}" for name, s in factors.items()) + ".")
    if v.held:
        return display.prose(text, "Within 1.5x: the two harnesses measure the same thing. Compare ratios from one "
                             "run, never times from two.")
    real = {name: s for name, s in factors.items() if s.outcome != intervals.WITHIN_NOISE}
    if not real:
        why = "None of the factors is beyond the noise, so what separates the two speed-ups is not established here."
    else:
        name = max(real, key=lambda k: abs(math.log(real[k].ratio)))
        why = f"The largest factor beyond the noise: {name} ({rounded(real[name])})."
    return display.prose(text, why + " Compare ratios from one run, never times from two.")


def prints(v: display.Verdict, breaks: int, frameworks: Sequence[str]) -> display.Prose:
    """After the print verdict: what to use instead of ``print`` in each framework present."""
    v = _verdict(v)
    breaks = validate.number("breaks", breaks, low=0, high=10**6, integer=True)
    validate.instance("frameworks", frameworks, (list, tuple))
    tools = {"jax": "in JAX use `jax.debug.print` (or `jax.debug.breakpoint`)",
             "tensorflow": "in TensorFlow `tf.print`"}
    traced_ = [tools[fw] for fw in frameworks if fw in tools]
    text = (f"In PyTorch a `print` of a tensor keeps working, with real values on every call, because Dynamo leaves "
            f"it out of the graph: it cost {breaks} graph break(s) here; `torch.compile(fullgraph=True)` turns such "
            "surprises into errors, and `TORCH_LOGS=graph_breaks` lists every break with its reason.")
    if traced_:
        text += (" Under tracing, " + "; ".join(traced_) + ": a Python `print` there shows *what is traced* (shapes "
                 "and dtypes), once per trace, which is itself useful for catching retracing.")
    lead = "" if v.held else f"Not as predicted: {v.why}. "
    return display.prose(lead + text)


def tlparse(v: display.Verdict, report: CompileReport | None) -> display.Prose:
    """After the tlparse verdict (or its 'not tested here'): where the report is, and how to make one for a job."""
    v = _verdict(v)
    how = ("On a real job, run the training script with `TORCH_TRACE=/tmp/trace python train.py`, then "
           "`tlparse /tmp/trace/*.log -o report --no-browser`: the recompile and graph-break reasons are the first "
           "things to read when a compiled model is slower than expected.")
    if not v.tested or report is None:
        return display.prose(how)
    validate.instance("report", report, CompileReport)
    return display.prose(f"The report's index page is `{report.folder / 'index.html'}` (open it in any browser, "
                         "offline); the job it ran is beside it, in `job.py`. " + how)


def _parts(parts: Mapping[str, tuple[timing.Measurement, timing.Measurement]], s: intervals.Speedup) -> str:
    """The step's parts, each with its interval, and their medians added up against the whole steps."""
    each = {name: intervals.speedup(e, c) for name, (e, c) in parts.items()}
    eager_sum = sum(e.median for e, _ in parts.values())
    compiled_sum = sum(c.median for _, c in parts.values())
    return ("Part by part, eager time over compiled: " + "; ".join(f"{name} {rounded(x)}, {OUTCOME[x.outcome]}"
                                                                   for name, x in each.items())
            + f". Added up, the parts' medians take {_fmt(compiled_sum)} compiled and {_fmt(eager_sum)} eager; the "
            f"whole step's speed-up was {rounded(s)}. Timed alone, each part pays its own call.")


def _trace(st: StepTrace, step: tuple[timing.Measurement, timing.Measurement], s: intervals.Speedup,
           eager_per_op: float, compiled_per_call: float) -> tuple[str, str]:
    """The step accounted from the trace and the two fixed costs, each product labelled computed: the eager side,
    then the compiled side."""
    eager, compiled = step
    dispatch = st.eager_ops * eager_per_op
    eager_text = (f"Profiled ({st.steps} steps each; a step spans {_fmt(st.span('eager'))} eager and "
                  f"{_fmt(st.span('compiled'))} compiled under the profiler, against {_fmt(eager.median)} and "
                  f"{_fmt(compiled.median)} timed without it), the eager step dispatched {st.eager_ops:g} ops: at "
                  f"section 4's eager op cost, {_fmt(eager_per_op)}, that is {_fmt(dispatch)} (computed), "
                  f"{dispatch / eager.median:.0%} of the timed eager step.")
    if not st.graph_calls:
        return eager_text, "The compiled trace names no call of generated code (this PyTorch labels it otherwise)."
    ops, seconds = st.outside
    calls_cost = st.graph_calls * compiled_per_call
    text = (f"The compiled step called {st.graph_calls:g} compiled graphs and dispatched {ops:g} ops outside them "
            f"({_fmt(seconds)} in the trace); the graphs' own code took {_fmt(st.graph_time)} per step, the wrappers "
            f"around them (guards, runtime wrappers, the autograd function) {_fmt(st.wrapper_time)}. The run's "
            f"call-cost figure times {st.graph_calls:g} calls is {_fmt(calls_cost)} (computed)")
    if s.outcome != intervals.SLOWER:
        return eager_text, text + "."
    slower = compiled.median - eager.median
    share = ("a fixed cost of that size accounts for at least half of it." if calls_cost >= slower / 2 else
             f"{calls_cost / slower:.0%} of it; the wrappers' time under the profiler includes the profiler's own "
             "cost, so the rest is not established by this run.")
    return eager_text, text + f", against the {_fmt(slower)} by which the compiled step is slower: " + share


def step_time(parts: Mapping[str, tuple[timing.Measurement, timing.Measurement]], s: intervals.Speedup,
              st: StepTrace, step: tuple[timing.Measurement, timing.Measurement], *, eager_per_op: float,
              compiled_per_call: float) -> display.Prose:
    """Where PyTorch's compiled step spends its time: the parts timed apart, then the profiler's account."""
    validate.instance("parts", parts, Mapping)
    validate.non_empty("parts", parts)
    validate.instance("s", s, intervals.Speedup)
    validate.instance("st", st, StepTrace)
    validate.instance("step", step, tuple)
    validate.positive("eager_per_op", eager_per_op)
    validate.positive("compiled_per_call", compiled_per_call)
    return display.prose(_parts(parts, s), *_trace(st, step, s, eager_per_op, compiled_per_call))
