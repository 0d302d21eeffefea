"""Multi-process JAX and multi-worker TensorFlow helpers: parsing, comparisons, TF_CONFIG, one real JAX run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_utils.distributed import LaunchResult, jaxmulti, tfmulti

HLO = ("%all-reduce.7 = (f32[64]{0}, f32[64,32]{1,0}) all-reduce(%a, %b), channel_id=1, "
       "replica_groups=mesh['axis_0'=4,'axis_1'=1] {'axis_0'}, use_global_device_ids=true, to_apply=%r")


def _result(arrays, records=None) -> LaunchResult:
    return LaunchResult("w.py", 2, [], 1.0, [], records or {}, arrays)


def test_tf_config_json() -> None:
    config = json.loads(tfmulti.tf_config(["a:1", "b:2"], 1))
    assert config == {"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}


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


def test_gloo_ranks_read_from_gloo_lines() -> None:
    gloo = "is connected to 3 peer ranks. Expected number of connected peer ranks is : 3"
    pairs = ((0, 0), (0, 1), (1, 2), (1, 3), (1, 3))  # (process, gloo rank); a repeated line counts once
    lines = [f"[default{p}]:[Gloo] Rank {r} {gloo}" for p, r in pairs] + ["[default0]:unrelated"]
    assert jaxmulti.gloo_ranks(LaunchResult("w.py", 2, [], 1.0, lines)) == 4
    assert jaxmulti.gloo_ranks(LaunchResult("w.py", 2, [], 1.0, [])) == 0


@pytest.mark.integration
def test_real_two_process_jax_equals_one_device() -> None:
    pytest.importorskip("jax")
    result = jaxmulti.run(steps=3, repeats=2, echo=False, progress=False)
    rec = result.record("jax")
    assert (rec["processes"], rec["devices"]) == (2, 4) and rec["allreduces"]
    assert len(rec["compute_times"]) == 2 and rec["param_bytes"] > 0
    diff = jaxmulti.compare(result, jaxmulti.reference(steps=3))
    assert diff["processes"] == 0.0 and diff["single"] < 1e-5
