"""The machine's state during a run: a busy machine (load above the cores) decides nothing and says so; MFU's
peak on a CPU is the matmul roof measured in the run's first process for the dtype that ran (made-up results)."""

from __future__ import annotations

import json

from fake_assessment import fake

from course_utils import migrate
from course_utils.migrate import assessment, decision, report


def test_a_busy_machine_decides_nothing_and_says_so(tmp_path) -> None:
    cores = migrate.record.host()["logical_cores"]
    busy = fake((1.5, 1.6, 1.55), load=cores + 3.0)
    assert busy.decision.outcome == decision.BUSY and busy.decision.text.startswith(
        f"not decided: the machine was busy: the 1-minute load average reached {cores + 3.1:.2f}")
    told = report.findings_of(busy)
    assert told["decision"].sentence.startswith(  # the sentence names what broke the rule
        f"**No decision: the machine was busy:** the 1-minute load average reached {cores + 3.1:.2f}")
    report.write(busy, tmp_path)
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["decision"].startswith("not decided: the machine was busy") and saved["load"]["busy"]
    quiet = fake((1.5, 1.6, 1.55), load=min(0.5, cores / 2))
    assert quiet.decision.outcome == decision.MIGRATE
    assert report.findings_of(quiet)["quiet"].sentence.startswith("The machine was quiet:")
    nothing = fake((1.5, 1.6, 1.55), load=cores + 3.0, graphs=0)
    assert nothing.decision.outcome == decision.NOTHING  # nothing compiled says more than a busy machine


def test_interference_seen_by_the_calibration_probe_or_the_steal_refuses_to_decide(tmp_path) -> None:
    quiet = min(0.5, migrate.record.host()["logical_cores"] / 2)
    slowed = fake((1.5, 1.6, 1.55), load=quiet, calibration=(0.004, 0.009))  # another job started mid-process
    assert slowed.decision.outcome == decision.BUSY
    assert "process 1's calibration matmul changed 2.25x between its start and its end" in slowed.decision.reason
    stolen = fake((1.5, 1.6, 1.55), load=quiet, steal=0.2)
    assert stolen.decision.outcome == decision.BUSY and "CPU steal reached 20%" in stolen.decision.reason
    within = fake((1.5, 1.6, 1.55), load=quiet, calibration=(0.004, 0.0055), steal=None)  # 1.375x: inside 1.5x
    assert within.decision.outcome == decision.MIGRATE
    assert "CPU steal not available" in report.findings_of(within)["quiet"].sentence
    report.write(slowed, tmp_path)
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["load"]["per_process"][0]["calibration"]["after"] == 0.009 and "1.5x" in saved["load"]["rule"]



def test_the_peak_is_this_runs_roof_for_the_dtype_that_ran() -> None:
    roof = {"flops": 2e11, "dtype": "bfloat16", "n": 1024, "repeats": 8, "threads": 2}
    peak, source = assessment.device_peak("cpu", "Test CPU", "bfloat16", roof)
    assert peak == 2e11 and source.startswith("measured in this run's first process") and "bfloat16" in source
    assert assessment.device_peak("cpu", "Test CPU", None, None) == (None, "no peak measured in this run")
    found = fake(peak=1e11, flops=1e9)
    assert found.mfu(0.01) == 1e9 / 0.01 / 1e11 and "this run's first process" in found.peak_source


def test_a_gpu_peak_is_the_data_sheets_for_the_dtype_that_runs() -> None:
    peak, source = assessment.device_peak("cuda", "NVIDIA H100 PCIe", None, None)
    assert peak == 378e12 and "tfloat32" in source and "H100 PCIe" in source  # fp32 convolutions run as TF32
    assert assessment.device_peak("cuda", "NVIDIA H100 80GB HBM3", "bfloat16", None)[0] == 989.5e12  # the SXM part
    assert assessment.device_peak("cuda", "Tesla T4", None, None)[0] == 8.1e12  # no TF32 units: fp32's own
    assert assessment.device_peak("cuda", "Tesla T4", "bfloat16", None) == (
        None, "no bfloat16 data sheet figure for 'Tesla T4' in devices.KNOWN")


def test_an_mfu_above_100_percent_is_refused_with_the_reason() -> None:
    from course_utils.migrate import report

    assert report.mfu_text(None) == "n/a" and report.mfu_text(0.123) == "12.3%"
    assert report.mfu_text(1.04) == "refused (104% is above 100%: the peak is not what ran)"
