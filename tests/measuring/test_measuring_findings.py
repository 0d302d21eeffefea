"""Notebook 00's findings as the notebook composes them (checks built from its measurements, facts it quotes), and
the eager-gap table that replaced its story: the core decides each outcome, the sentence tells that outcome."""

from __future__ import annotations

from course_utils import display, findings, intervals, timing
from course_utils.measuring import findings as f00
from course_utils.measuring.workloads import EagerGap

MAX = display.MAX_PARAGRAPH_WORDS


def _s(ratio: float, low: float, high: float) -> intervals.Speedup:
    return intervals.Speedup("a", "b", ratio, low, high, 6, "rounds")


def _m(seconds: float, rounds: tuple[float, ...] | None = None) -> timing.Measurement:
    rounds = rounds or (seconds * 0.99, seconds, seconds * 1.01, seconds)
    return timing.Measurement("m", (seconds * 0.99, seconds, seconds * 1.01), rounds=rounds)


def _short(v: findings.Finding) -> str:
    prose = v.prose()
    assert prose.longest_paragraph <= MAX, prose.text
    return prose.text


def _dispatch(jax: intervals.Speedup, torch: intervals.Speedup) -> findings.Finding:
    return f00.DISPATCH.score(findings.above("jax: ready over return", jax, 3),
                              findings.same("torch: ready over return", torch, 1.1))


def test_dispatch_scores_the_early_call_above_3x_and_the_computing_call_within_10_percent() -> None:
    held = _dispatch(_s(28.6, 25.0, 31.0), _s(1.0, 0.99, 1.02))
    assert held.held and "under a third" in _short(held)
    late = _dispatch(_s(28.6, 25.0, 31.0), _s(1.3, 1.2, 1.4))  # the CPU call left work past its return
    assert late.outcome == findings.ABOVE and _short(late).startswith("torch: ready over return: the clock at ready")
    wide = _dispatch(_s(28.6, 25.0, 31.0), _s(1.05, 0.95, 1.2))  # straddles the 10% margin: never "held"
    assert wide.outcome == findings.UNDECIDED and "torch: ready over return" in _short(wide)
    short = _dispatch(_s(1.5, 1.3, 1.7), _s(1.0, 0.99, 1.02))
    assert short.outcome == findings.BELOW and _short(short).startswith("jax: ready over return")
    absent = f00.DISPATCH.not_tested("no JAX here")
    assert absent.status == display.NOT_TESTED and _short(absent).startswith("no JAX here: every call")


def test_first_call_names_what_fell_short_and_the_cache_state() -> None:
    def score(first: float, own: intervals.Speedup) -> findings.Finding:
        return f00.FIRST_CALL.score(findings.above("torch first over steady", first, 3),
                                    findings.faster("torch.compile over torch eager", own), cache="cold")
    assert score(200.0, _s(3.0, 2.8, 3.2)).held
    slow = score(200.0, _s(0.8, 0.7, 0.9))
    assert slow.outcome == findings.BELOW and "Below the prediction: torch.compile over torch eager." in _short(slow)
    assert "cache on disk: cold" in _short(slow)
    assert score(2.0, _s(3.0, 2.8, 3.2)).failed
    assert score(200.0, _s(1.0, 0.8, 1.2)).undecided


def test_sweep_and_roofline_and_memory_tell_each_failed_direction() -> None:
    sweep = f00.SWEEP.score(findings.true("torch eager bent inside the sweep", False),
                            findings.above("jax.jit log slope at the top", 0.4, 0.7, unit=""))
    text = _short(sweep)
    assert sweep.outcome == findings.FAILED and "never reached twice its floor" in text and "under 0.7" in text
    facts = {"rate": "90 GFLOP/s", "probe": "120 GFLOP/s", "roof": "jax matmul", "roof_rate": "200 GFLOP/s"}
    roof = f00.ROOFLINE.score(findings.below("add", _s(1.1, 1.0, 1.2), 1.5),
                              findings.above("matmul share", 0.75, 0.5, unit="%"), **facts)
    assert roof.held and "ran at 90 GFLOP/s" in _short(roof) and "75%" in str(roof)
    where = {"basis": "past the sweep's last cliff, between 64 MiB and 256 MiB, a 2x fall", "reported": "480 MiB",
             "probe_set": "512 MiB"}
    memory = f00.MEMORY.score(findings.true("the probes' working set lies in main memory", True),
                              findings.within("roof over plateau", 1.6, 1 / 1.3, 1.3), plateau="20 GB/s",
                              probe_rate="30 GB/s", earlier="33 GB/s", drift="1.10", **where)
    assert memory.outcome == findings.ABOVE and "more than 1.3x above" in _short(memory)
    assert "(1.10x)" in memory.sentence and "between 64 MiB and 256 MiB" in memory.sentence
    assert "480 MiB, a second fact" in memory.sentence
    short = f00.MEMORY.score(findings.true("the probes' working set lies in main memory", False),
                             findings.within("roof over plateau", 1.0, 1 / 1.3, 1.3), plateau="20 GB/s",
                             probe_rate="30 GB/s", earlier="33 GB/s", drift="1.10", **where)
    assert short.failed and "lies short of main memory, which the sweep places at the working sets past" in \
        short.sentence
    assert "OS reports" in f00.MEMORY.not_tested("one point", basis="no cliff", reported="32 MiB").sentence


def _gap(chain: tuple[float, float], tanh: tuple[float, float], faults: tuple[float, float],
         threads: dict[int, timing.Measurement] | None = None) -> EagerGap:
    return EagerGap("torch", "tensorflow", {"torch": _m(chain[0]), "tensorflow": _m(chain[1])},
                    {"torch": _m(tanh[0]), "tensorflow": _m(tanh[1])},
                    {"torch": faults[0], "tensorflow": faults[1]}, 1e-3, threads)


def test_the_eager_gap_table_shows_the_budget_and_words_each_interval() -> None:
    text = repr(_gap((5e-3, 2e-3), (1e-3, 2e-4), (0.0, 0.0), {1: _m(2e-3), 2: _m(5e-3)}))
    assert "tensorflow over torch 2.5" in text and "faster beyond the noise" in text
    assert "800 µs" in text and "27% of the gap" in text and "1 thread over 2 threads" in text
    over = repr(_gap((3e-3, 2e-3), (2e-3, 2e-4), (1.0, 0.0)))
    assert "-1.8 ms" in over and "1 thread over" not in over
    assert "no gap to share" in repr(_gap((2e-3, 2e-3), (1e-3, 2e-4), (0.0, 0.0)))
