"""The sentences of notebook 06's "Going further" sections: what sharding costs in communication, two collectives
alone, and parameter sharding in JAX. Each is told from a stored verdict or from a ``cu.intervals.Speedup`` (its
``outcome`` says faster, slower or within the noise), never deciding again what they decided.
"""

from __future__ import annotations

from typing import Any

from course_utils import display, validate
from course_utils.beyond import jaxmulti
from course_utils.display import Prose, Verdict
from course_utils.intervals import FASTER, SLOWER, Speedup


def _speedup(name: str, s: Any) -> Speedup:
    return validate.instance(name, s, Speedup)


def traffic(v: Verdict, moved: dict[str, Any], calls: dict[str, dict[str, int]], busy: dict[str, float],
            model: dict[str, float], fsdp_speed: Speedup) -> Prose:
    """After the traffic verdict: gloo's reduce-scatter, FSDP2's time in collectives against the model, and its
    step's speed against DDP's (``fsdp_speed = cu.intervals.speedup(ddp_steps, fsdp2_steps)``)."""
    validate.instance("v", v, Verdict)
    _speedup("fsdp_speed", fsdp_speed)
    counted = (f"FSDP2 issued {calls['fsdp2'].get('allgather', 0)} all-gathers and "
               f"{calls['fsdp2'].get('reduce_scatter', 0)} reduce-scatters per step (one per layer and pass), DDP "
               f"{calls['ddp'].get('allreduce', 0)} all-reduce. ")
    bytes_ = (f"By the ring factors that is {moved['ring']:.2f}x DDP's bytes"
              + (", as predicted" if v.held else ", not the formula's 1.5x: the counts above differ from one "
                 "all-gather per layer and pass")
              + (f"; but gloo runs an all-reduce inside each reduce-scatter (rank 0's trace), so priced as what runs, "
                 f"FSDP2 moves {moved['gloo']:.2f}x. " if moved["inside"] else ". "))
    timed = (f"With a collective running, DDP spent {busy['ddp'] * 1e3:.2f} ms and FSDP2 {busy['fsdp2'] * 1e3:.2f} ms "
             f"of a step (profiled share x plain step), {busy['fsdp2'] / busy['ddp']:.1f}x; the fitted ring model "
             f"prices FSDP2's {model['calls']:.0f} collectives at {model['model']:.1f}x DDP's, latency included "
             + (f"(computed; {model['as gloo']:.1f}x as gloo runs them). " if moved["inside"] else "(computed). "))
    outcome = {SLOWER: "slower than DDP's", FASTER: "faster than DDP's"}.get(fsdp_speed.outcome,
                                                                            "within the noise of DDP's")
    step = (f"Whole steps: FSDP2's was {outcome}, at {fsdp_speed} DDP's speed. Sharding buys memory, not speed: "
            "use it when the state does not fit.")
    return display.prose(counted + bytes_, timed + step)


def reduce_scatter(v: Verdict, speed: Speedup, inside: bool, trace: list[str]) -> Prose:
    """After the reduce-scatter verdict: the measured ratio with its interval, and what gloo ran inside."""
    validate.instance("v", v, Verdict)
    _speedup("speed", speed)
    shown = " -> ".join(trace) or "no c10d or gloo operator"
    ran = (f"Rank 0's profiler during one reduce-scatter: {shown}. " + (
        "gloo runs an all-reduce inside its reduce-scatter, so it cannot cost half of one. " if inside else
        "No all-reduce runs inside it. "))
    said = (f"A reduce-scatter ran {speed} as fast as an all-reduce of the same buffer, as the ring model's 2x says. "
            if v.held else f"A reduce-scatter ran {speed} as fast as an all-reduce of the same buffer, not the ring "
            "model's 2x. ")
    return display.prose(ran + said + "A library's collective is not the textbook algorithm: time the ones your "
                         "training runs, on its library and network.")


def jax_operands(one_array: Speedup | None, record: dict[str, Any] | None) -> Prose | None:
    """The step's operands in one all-reduce against the same bytes as one array (``one_array =
    cu.intervals.speedup(operands, one_array)``, ``record``: the JAX run's record); None without JAX."""
    if one_array is None:
        return None
    _speedup("one_array", one_array)
    validate.instance("record", record, dict)
    per_operand, operands = jaxmulti.per_operand(record), len(record["allreduce_operands"])
    if one_array.outcome == FASTER:
        return display.prose(
            f"In JAX, the step's bytes as one array ran {one_array} as fast as the step's {operands} operands in one "
            f"all-reduce. XLA:CPU's all-reduce pays per operand, about {per_operand * 1e3:.2f} ms for each beyond the "
            "first (computed from the medians), so merging the arrays into one call did not save their cost; the "
            "ring model, priced per call, has no such term.")
    return display.prose(
        f"In JAX, the step's bytes as one array ran {one_array} as fast as the step's {operands} operands in one "
        f"all-reduce: {'the single array was slower' if one_array.outcome == SLOWER else 'within the noise'}, so a "
        "cost per operand is not established by this run.")


def jax_sharding(v: Verdict, found: dict[str, Any] | None) -> Prose | None:
    """After the JAX sharding verdict: arguments against temporaries, and how XLA reduced the gradients."""
    if not validate.instance("v", v, Verdict).tested:
        return None
    validate.instance("found", found, dict)
    rep, sh = found["replicated"], found["sharded"]
    reduce = ("reduce-scatters" if sh["collectives"]["reduce-scatter"] else
              "all-reduces (XLA's CPU backend formed no reduce-scatter here)")
    first = ("" if v.held else "The sharding did not shrink the arguments to about 1/N, or no all-gather appeared. ")
    return display.prose(
        first + f"The sharded step's arguments are {sh['argument_bytes'] / rep['argument_bytes']:.2f}x the replicated "
        f"ones, its temporaries {sh['temp_bytes'] / max(rep['temp_bytes'], 1):.2f}x: the gathered weights live there "
        f"for the step. Gradients are reduced with {reduce}.")
