"""05's generated findings: each branch chosen from the numbers, and bad arguments named."""

from __future__ import annotations

import pytest

from course_utils.distributed import AllReduceModel, findings
from course_utils.distributed.devices import ThreadRun
from course_utils.timing import Measurement

FIT = AllReduceModel(bandwidth=1e9, latency=1e-4)  # 27 KiB on 2 ranks: 2e-4 + 2.8e-5 s
SWEEP = ([2**14, 2**16], [FIT.time(2**14, 2), FIT.time(2**16, 2)])


def m(*ms: float) -> Measurement:
    return Measurement.from_times("t", [v * 1e-3 for v in ms])


def test_remainder_within_the_step_noise() -> None:
    text = findings.remainder_finding(m(0.9, 1.0, 1.1), m(0.5, 0.5, 0.5), m(0.45, 0.45, 0.45), FIT, SWEEP, 27_688)
    assert "account for the step" in text


def test_remainder_beyond_the_noise_is_unexplained_time() -> None:
    text = findings.remainder_finding(m(2.0, 2.0, 2.1), m(0.5, 0.5, 0.5), m(0.2, 0.2, 0.2), FIT, SWEEP, 27_688)
    assert "neither its compute nor the all-reduce" in text and "not established" in text


def test_negative_remainder_checks_the_alone_measurement_against_the_sweep() -> None:
    slow = findings.remainder_finding(m(1.0, 1.0, 1.1), m(0.45, 0.45, 0.45), m(1.9, 1.9, 1.9), FIT, SWEEP, 27_688)
    assert "took longer than the whole DDP step" in slow and "suspect" in slow and "1.00x" in slow
    assert "16 KiB and 64 KiB" in slow
    fast_fit = AllReduceModel(bandwidth=1e9, latency=8e-4)  # prices the all-reduce near what was measured alone
    agrees = findings.remainder_finding(m(1.0, 1.0, 1.1), m(0.45, 0.45, 0.45), m(1.9, 1.9, 1.9), fast_fit, SWEEP,
                                        27_688)
    assert "the sweep agrees" in agrees and "suspect" not in agrees


def test_spinning_is_claimed_only_when_passive_saves_cpu_per_step() -> None:
    default = ThreadRun(2, m(0.24, 0.24, 0.25), 1.95, 1.0)
    passive_slow = ThreadRun(2, m(1.7, 1.77, 1.8), 0.83, 0.6)  # fewer busy cores, far more CPU per step
    text = findings.spin_finding(default, passive_slow)
    assert "not established" in text and "raised" in text and "spinning at" not in text
    passive_lean = ThreadRun(2, m(0.24, 0.24, 0.25), 1.0, 1.0)  # same step, half the CPU
    assert "that is spinning" in findings.spin_finding(default, passive_lean)
    assert findings.cpu_per_step(default)[0] == pytest.approx(1.95 * 0.24e-3)


def test_baselines_side_by_side() -> None:
    assert "apart beyond the quartiles" in findings.baseline_finding(m(0.19, 0.2, 0.22), m(0.35, 0.4, 0.43), "tiny")
    assert "within the noise" in findings.baseline_finding(m(0.19, 0.2, 0.26), m(0.18, 0.21, 0.3), "tiny")


def test_fresh_process_agreement() -> None:
    one, every = m(0.19, 0.2, 0.22), m(0.3, 0.36, 0.37)
    overlapping = m(0.18, 0.21, 0.3)
    assert not findings.fresh_agrees(one, every, overlapping)
    assert "did not agree" in findings.fresh_agreement(one, every, overlapping)
    assert findings.fresh_agrees(one, every, m(0.3, 0.31, 0.33))


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="step"):
        findings.remainder_finding(1.0, m(1), m(1), FIT, SWEEP, 10)
    with pytest.raises(TypeError, match="fit"):
        findings.remainder_finding(m(1), m(1), m(1), "fit", SWEEP, 10)
    with pytest.raises(ValueError, match="nbytes"):
        findings.remainder_finding(m(1), m(1), m(1), FIT, SWEEP, 0)
    with pytest.raises(TypeError, match="run"):
        findings.cpu_per_step(m(1))
    with pytest.raises(TypeError, match="fresh"):
        findings.fresh_agrees(m(1), m(1), None)
