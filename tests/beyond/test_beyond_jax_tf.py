"""Multi-process JAX and multi-worker TensorFlow helpers: parsing, comparisons, TF_CONFIG, one real JAX run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_utils.beyond import jaxmulti, tfmulti
from course_utils.distributed.launcher import LaunchResult

HLO = ("%all-reduce.7 = (f32[64]{0}, f32[64,32]{1,0}) all-reduce(%a, %b), channel_id=1, "
       "replica_groups=mesh['axis_0'=4,'axis_1'=1] {'axis_0'}, use_global_device_ids=true, to_apply=%r")


def _result(arrays, records=None) -> LaunchResult:
    return LaunchResult("w.py", 2, [], 1.0, [], records or {}, arrays)


def test_tf_config_json() -> None:
    config = json.loads(tfmulti.tf_config(["a:1", "b:2"], 1))
    assert config == {"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}
    assert json.loads(tfmulti.tf_config(("a:1", "b:2"), np.int64(0)))["task"]["index"] == 0
    shown = json.loads(tfmulti.tf_config(["127.0.0.1:<port0>", "127.0.0.1:<port1>"], 1))  # 06 prints placeholders
    assert shown["cluster"]["worker"][1] == "127.0.0.1:<port1>"


def test_tf_compare_workers_and_single() -> None:
    w = {"w0": np.ones(3, np.float32)}
    fake = _result({"multiworker": {0: w, 1: w}, "one_worker": {0: {"w0": np.ones(3, np.float32) + 1e-7}}})
    diff = tfmulti.compare(fake)
    assert diff["workers"] == 0.0 and 0 < diff["single"] < 1e-6


def test_jax_compare_and_allreduce_groups() -> None:
    leaves = [np.zeros(2, np.float32), np.ones(3, np.float32)]
    saved = {r: {f"p{i}": a for i, a in enumerate(leaves)} for r in (0, 1)}
    fake = _result({"jax": saved}, {0: [{"kind": "jax", "allreduces": [HLO]}]})
    assert jaxmulti.compare(fake, leaves) == {"processes": 0.0, "single": 0.0}
    (line,) = jaxmulti.allreduce_groups(fake)
    assert line.startswith("all-reduce of 2 arrays (f32[64], f32[64,32])") and "'axis_0'=4" in line


def test_allreduce_groups_refuse_lines_that_are_not_all_reduces() -> None:
    fake = _result({}, {0: [{"kind": "jax", "allreduces": ["%add.1 = f32[4] add(%a, %b)"]}]})
    with pytest.raises(ValueError, match="not an all-reduce"):
        jaxmulti.allreduce_groups(fake)


def test_allreduce_alone_in_rounds() -> None:
    rec = {"allreduce_operands": [10, 20, 1],
           "allreduce_alone": {"one float": [[1e-3]] * 3, "one array": [[2e-3]] * 3, "operands": [[6e-3, 6e-3]] * 3}}
    found = jaxmulti.alone(rec)
    assert set(found) == {"one float", "one array", "operands"} and found["operands"].median == pytest.approx(6e-3)
    assert len(found["operands"].rounds) == 3  # paired by round for cu.intervals.speedup
    with pytest.raises(ValueError, match="allreduce_alone"):
        jaxmulti.alone({})


def test_worker_reads_operand_sizes_from_the_hlo() -> None:
    import importlib.util
    from pathlib import Path

    import course_utils

    path = Path(course_utils.__file__).parent / "workers" / "jax_multiprocess.py"
    spec = importlib.util.spec_from_file_location("jax_multiprocess", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    line = HLO.replace("f32[64,32]{1,0})", "f32[64,32]{1,0}, f32[])")
    assert module.operand_sizes([line]) == [64, 2048, 1]
    assert module.operand_sizes([]) == []  # the worker raises on a step without an all-reduce


def test_tf_facts_split_the_wall_from_the_workers_clocks() -> None:
    records = {r: [{"kind": "timeline", "import_seconds": 3.0, "joined_seconds": 5.0 + r, "work_seconds": 2.0}]
               for r in (0, 1)}
    split = tfmulti.facts(LaunchResult("tf_multiworker.py", 2, [], 10.0, [], records))
    assert split == {"wall": 10.0, "import": 3.0, "joined": 6.0, "work": 2.0, "outside": 2.0}


def test_jax_facts_quote_the_record_and_gloo() -> None:
    rec = {"device_ids": [0, 1, 2, 3], "devices": 4, "allreduce_count": 1, "allreduce_operands": [10, 20, 1]}
    result = LaunchResult("w.py", 2, [], 1.0, [], {0: [{"kind": "jax", **rec}]}, {"jax": {0: {"p0": 0, "p1": 1}}})
    assert jaxmulti.facts(result) == {"device_ids": "0, 1, 2, 3", "devices": 4, "leaves": 2, "allreduces": 1,
                                      "operands": 3, "gloo_ranks": "an uncounted number of"}  # no rank lines logged


def test_gloo_ranks_read_from_gloo_lines() -> None:
    gloo = "is connected to 3 peer ranks. Expected number of connected peer ranks is : 3"
    pairs = ((0, 0), (0, 1), (1, 2), (1, 3), (1, 3))  # (process, gloo rank); a repeated line counts once
    lines = [f"[default{p}]:[Gloo] Rank {r} {gloo}" for p, r in pairs] + ["[default0]:unrelated"]
    assert jaxmulti.gloo_ranks(LaunchResult("w.py", 2, [], 1.0, lines)) == 4
    assert jaxmulti.gloo_ranks(LaunchResult("w.py", 2, [], 1.0, [])) == 0


@pytest.mark.integration
def test_real_two_process_jax_equals_one_device() -> None:
    pytest.importorskip("jax")
    result = jaxmulti.run(steps=3, rounds=2, per_round=2, echo=False, progress=False)
    rec = result.record("jax")
    assert (rec["processes"], rec["devices"]) == (2, 4) and rec["allreduces"]
    assert len(rec["compute_times"]) == 4 and rec["param_bytes"] > 0  # 2 rounds x 2 calls
    assert rec["allreduce_count"] >= 1 and jaxmulti.allreduce_groups(result)
    assert len(rec["allreduce_operands"]) == len(result.arrays["jax"][0]) + 1  # the gradients and the loss
    facts = jaxmulti.facts(result)
    assert (facts["devices"], facts["operands"], facts["allreduces"]) == (4, len(rec["allreduce_operands"]),
                                                                          rec["allreduce_count"])
    diff = jaxmulti.compare(result, jaxmulti.reference(steps=3))
    assert diff["processes"] == 0.0 and diff["single"] < 1e-5
