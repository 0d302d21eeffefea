"""Bad calls against course_utils.distributed's public API: each raises TypeError/ValueError naming the argument."""

from __future__ import annotations

import pytest
from badinput import rejects

from course_utils import distributed as dist
from course_utils.timing import Measurement

SWEEP = {"rounds": 3, "repeats": 4, "max_bytes": 2**20}  # a notebook's sizes-table values
NAN, INF = float("nan"), float("inf")
MODEL = dist.comms.AllReduceModel(1e9, 1e-5)
PARTS = {name: Measurement(name, (1.0,), rounds=(1.0,)) for name, _ in dist.breakdown.CHAIN}

BAD_CALLS = [
    # launch: nothing starts, whatever the timeout or count
    ("timeout", lambda: dist.launch("fail_demo.py", 2, timeout=NAN)),
    ("timeout", lambda: dist.launch("fail_demo.py", 2, timeout=INF)),
    ("timeout", lambda: dist.launch("fail_demo.py", 2, timeout=-1)),
    ("timeout", lambda: dist.launch("fail_demo.py", 2, timeout=0)),
    ("timeout", lambda: dist.launch("fail_demo.py", 2, timeout="60")),
    ("nprocs", lambda: dist.launch("fail_demo.py", 0)),
    ("nprocs", lambda: dist.launch("fail_demo.py", 2.0)),
    ("nprocs", lambda: dist.launch("fail_demo.py", True)),
    ("nprocs", lambda: dist.launch("fail_demo.py", 10_000)),
    ("args", lambda: dist.launch("fail_demo.py", 2, args="--steps 3")),
    ("env", lambda: dist.launch("fail_demo.py", 2, env={"X": 1})),
    ("env", lambda: dist.launch("fail_demo.py", 2, env=["X=1"])),
    ("echo", lambda: dist.launch("fail_demo.py", 2, echo="yes")),
    ("on_line", lambda: dist.launch("fail_demo.py", 2, on_line="print")),
    ("script", lambda: dist.launch(None, 2)),
    ("script", lambda: dist.worker_path(3)),
    ("only", lambda: dist.worker_source("ddp_train.py", only=[])),
    ("only", lambda: dist.worker_source("ddp_train.py", only=["nope"])),
    ("port", lambda: dist.torchrun_command("w.py", 2, [], 0, "logs")),
    ("nprocs", lambda: dist.torchrun_command("w.py", -2, [], 29500, "logs")),
    # the ring model
    ("nbytes", lambda: dist.ring_allreduce_time(-1e6, 2, 1e9, 1e-6)),
    ("nbytes", lambda: dist.ring_allreduce_time(NAN, 2, 1e9, 1e-6)),
    ("nbytes", lambda: dist.ring_allreduce_time("1e6", 2, 1e9, 1e-6)),
    ("nbytes", lambda: dist.ring_allreduce_time(None, 2, 1e9, 1e-6)),
    ("n", lambda: dist.ring_allreduce_time(1e6, 0, 1e9, 1e-6)),
    ("n", lambda: dist.ring_allreduce_time(1e6, 2.5, 1e9, 1e-6)),
    ("n", lambda: dist.ring_allreduce_time(1e6, [], 1e9, 1e-6)),
    ("bandwidth", lambda: dist.ring_allreduce_time(1e6, 2, "x", 1e-6)),
    ("bandwidth", lambda: dist.ring_allreduce_time(1e6, 2, 0, 1e-6)),
    ("bandwidth", lambda: dist.ring_allreduce_time(1e6, 2, INF, 1e-6)),
    ("latency", lambda: dist.ring_allreduce_time(1e6, 2, 1e9, -1e-6)),
    ("latency", lambda: dist.ring_allreduce_time(1e6, 2, 1e9, NAN)),
    ("seconds", lambda: dist.comms.fit_allreduce([1e3, 1e6], [1e-4, 0.0], n=2)),
    ("seconds", lambda: dist.comms.fit_allreduce([1e3, 1e6], [1e-4, NAN], n=2)),
    ("nbytes", lambda: dist.comms.fit_allreduce([1e3, -1e6], [1e-4, 1e-3], n=2)),
    ("nbytes", lambda: dist.comms.fit_allreduce([1e3, 1e6], [1e-3], n=2)),
    ("nbytes", lambda: dist.comms.fit_allreduce([1e3, 1e3], [1e-4, 1e-3], n=2)),
    ("n", lambda: dist.comms.fit_allreduce([1e3, 1e6], [1e-4, 1e-3], n=1)),
    ("n", lambda: dist.comms.fit_allreduce([1e3, 1e6], [1e-4, 1e-3], n="2")),
    ("model", lambda: dist.score("model", [1e3], [1e-4], 2)),
    ("n", lambda: dist.score(MODEL, [1e3], [1e-4], 0)),
    ("bandwidth", lambda: dist.comms.AllReduceModel(-1e9, 1e-5)),
    ("latency", lambda: dist.comms.AllReduceModel(1e9, NAN)),
    ("stage", lambda: dist.zero_traffic(1e9, 8, 4)),
    ("nbytes", lambda: dist.zero_traffic(-1, 8, 0)),
    # ZeRO memory
    ("params", lambda: dist.memory_per_device(-1e9, 2)),
    ("params", lambda: dist.memory_per_device(NAN, 2)),
    ("params", lambda: dist.memory_per_device("7e9", 2)),
    ("n", lambda: dist.memory_per_device(1e9, "2")),
    ("n", lambda: dist.memory_per_device(1e9, 0)),
    ("n", lambda: dist.memory_per_device(1e9, 2.5)),
    ("stage", lambda: dist.memory_per_device(1e9, 2, 4)),
    ("stage", lambda: dist.memory_per_device(1e9, 2, True)),
    ("optimizer_bytes", lambda: dist.memory_per_device(1e9, 2, optimizer_bytes=-12)),
    ("device_bytes", lambda: dist.comms.largest_model(0, 8, 3)),
    # devices
    ("n", lambda: dist.simulate_devices(0)),
    ("n", lambda: dist.simulate_devices("4")),
    ("n", lambda: dist.simulate_devices(2.0)),
    ("n", lambda: dist.tf_logical_cpus(-1)),
    ("n", lambda: dist.tf_logical_cpus(True)),
    ("fn", lambda: dist.devices.time_threads("step", threads=[1])),
    ("threads", lambda: dist.devices.time_threads(print, threads=[])),
    ("threads", lambda: dist.devices.time_threads(print, threads=[0])),
    ("threads", lambda: dist.devices.time_threads(print, threads=[1.5])),
    ("workloads", lambda: dist.devices.mlp_threads_fresh([], [1])),
    ("workloads['tiny'][0]", lambda: dist.devices.mlp_threads_fresh({"tiny": (8, 32)}, [1])),
    ("workloads", lambda: dist.devices.mlp_threads_fresh({"tiny": (8, 32, 1)}, [1])),
    ("workloads['tiny'][0][1]", lambda: dist.devices.mlp_threads_fresh({"tiny": ([8, 0], 32)}, [1])),
    ("workloads['tiny'][1]", lambda: dist.devices.mlp_threads_fresh({"tiny": ([8, 4], 0)}, [1])),
    ("threads", lambda: dist.devices.mlp_threads_fresh({"tiny": ([8, 4], 32)}, [0])),
    ("env", lambda: dist.devices.mlp_threads_fresh({"tiny": ([8, 4], 32)}, [1], {"OMP_WAIT_POLICY": 1})),
    ("records", lambda: dist.comms.allreduce_sweep({"kind": "allreduce"})),
    ("q", lambda: dist.comms.allreduce_sweep([], q=101)),
    # worker side
    ("step", lambda: dist.worker.progress(-1, 3)),
    ("total", lambda: dist.worker.progress(1, 0)),
    ("name", lambda: dist.worker.save("a.b", x=[1])),
    ("arrays", lambda: dist.worker.save("weights")),
    ("record", lambda: dist.worker.emit()),
    # figures
    ("compute_seconds", lambda: dist.scaling_plot(4e6, -1, {"link": (1e10, 5e-6)})),
    ("links", lambda: dist.scaling_plot(4e6, 0.03, {})),
    ("links", lambda: dist.scaling_plot(4e6, 0.03, [(1e10, 5e-6)])),
    ("links['link']", lambda: dist.scaling_plot(4e6, 0.03, {"link": 1e10})),
    ("links['link'][0]", lambda: dist.scaling_plot(4e6, 0.03, {"link": (0.0, 5e-6)})),
    ("compute_seconds", lambda: dist.scaling_plot(4e6, 10**9, {"link": (1e10, 5e-6)})),
    ("compute_label", lambda: dist.scaling_plot(4e6, 0.03, {"link": (1e10, 5e-6)}, compute_label=None)),
    ("groups", lambda: dist.breakdown_plot([("m", {})])),
    ("groups['m']['a']", lambda: dist.breakdown_plot({"m": {"a": 1e-3}})),
    ("groups", lambda: dist.breakdown_plot({})),
    ("cost", lambda: dist.allreduce_fit_plot({}, None)),
    ("cost", lambda: dist.allreduce_fit_plot(MODEL)),
    ("rank_diff", lambda: dist.proof_plot({}, {})),
    ("rank_diff", lambda: dist.proof_plot({"step5": NAN}, {"step5": 0.0})),
    ("single_diff", lambda: dist.proof_plot({"step5": 0.0}, 5)),
    # the cost model, measured one way
    ("nprocs", lambda: dist.allreduce_cost(1, **SWEEP)),
    ("nprocs", lambda: dist.allreduce_cost(2.5, **SWEEP)),
    ("refresh", lambda: dist.allreduce_cost(2, refresh="yes", **SWEEP)),
    ("rounds", lambda: dist.allreduce_cost(2, rounds=10**6, repeats=4, max_bytes=2**20)),
    ("max_bytes", lambda: dist.allreduce_cost(2, rounds=3, repeats=4, max_bytes=2**40)),
    ("min_bytes", lambda: dist.comms.sweep_sizes(0, 2**20)),
    ("max_bytes", lambda: dist.comms.sweep_sizes(2**12, 2**40)),
    ("fits", lambda: dist.comms.combine([])),
    # records, breakdown
    ("record", lambda: dist.measurements([1.0])),
    ("label", lambda: dist.summed("", Measurement("m", (1.0,), rounds=(1.0,)))),
    ("parts", lambda: dist.summed("x")),
    ("parts", lambda: dist.chain([])),
    ("record", lambda: dist.accumulation_saving("accum")),
    ("k", lambda: dist.accumulation_saving({"k": 0})),
    ("timed", lambda: dist.chain_table([1, 2], {})),
    ("timed['m']", lambda: dist.chain_table({"m": 1.0}, {"m": {}})),
    ("timed['m']['single']", lambda: dist.chain_table({"m": {}}, {"m": {}})),
    ("links", lambda: dist.chain_table({"m": {}}, [1])),
    ("links['m']", lambda: dist.chain_table({"m": PARTS}, {})),
    ("links['m']['x']", lambda: dist.chain_table({"m": PARTS}, {"m": {"x": 1.0}})),
    ("cores", lambda: dist.threads_table({"m": {}}, {}, 0)),
    ("cores", lambda: dist.threads_table({"m": {}}, {}, 10**10)),
    ("threads", lambda: dist.threads_table([1, 2], {}, 4)),
    ("threads['m'][1]", lambda: dist.threads_table({"m": {1: 1.0}}, {}, 4)),
    ("fresh", lambda: dist.threads_table({"m": {}}, None, 4)),
    ("fresh['passive']['m']", lambda: dist.threads_table({"m": {}}, {"passive": {"m": 1.0}}, 4)),
    # devices: time limits and rounds
    ("min_time", lambda: dist.time_threads(print, threads=[1], min_time=NAN)),
    ("timeout", lambda: dist.time_threads(print, threads=[1], timeout=0)),
    ("rounds", lambda: dist.time_threads(print, threads=[1], rounds=0)),
    ("threads", lambda: dist.time_threads(print, threads="12")),
    ("timeout", lambda: dist.mlp_threads_fresh({"tiny": ([8, 4], 32)}, [1], timeout=INF)),
    # launcher
    ("error", lambda: dist.failures.leftover("failure")),
    ("pg_timeout", lambda: dist.launch("fail_demo.py", 2, pg_timeout=NAN)),
    ("timeout", lambda: dist.launch("fail_demo.py", 2, timeout=10**9)),
    ("timeout", lambda: dist.launcher.check_loopback(0)),
]


@pytest.mark.parametrize(("argument", "call"), BAD_CALLS, ids=[f"{i}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_call_is_refused_naming_the_argument(argument: str, call) -> None:
    rejects(call, argument)


def test_a_bad_timeout_starts_nothing(monkeypatch) -> None:
    import subprocess

    def forbidden(*args, **kwargs):
        raise AssertionError("launch started a process for a refused timeout")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    for timeout in (float("nan"), float("inf"), -5.0):
        with pytest.raises(ValueError, match="timeout"):
            dist.launch("fail_demo.py", 2, timeout=timeout)


def test_a_string_is_not_a_sequence_of_lines() -> None:
    rejects(lambda: dist.failures.learner_lines("[default0]:hello"), "output")
