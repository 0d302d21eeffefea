"""Devices for the lessons: the JAX mesh (real accelerators or simulated host CPU devices), TensorFlow's logical CPUs
and torch's threads (``time_threads``); JAX and TF fix their devices at start-up: ask before the first computation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from course_utils import calls, data, declare, devices, env, models, timing
from course_utils.distributed.worker import WORKERS

_MAX_DEVICES = 256


@declare.checked
def simulate_devices(n: Annotated[int, declare.Range(1, _MAX_DEVICES)]) -> int:
    """Give JAX ``n`` CPU devices (``jax_num_cpu_devices``, accepted until its backend starts; later, a
    ``RuntimeError`` says to restart); returns ``n``, or 0 without JAX. Accelerators stay JAX's default devices."""
    if not env.available("jax"):
        return 0
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as exc:  # the backend already started
        have = len(jax.devices("cpu"))
        if have < n:
            raise RuntimeError(
                f"JAX already started with {have} CPU device(s), so simulate_devices({n}) comes too late: restart "
                f"the kernel and call cu.distributed.simulate_devices({n}) before the first JAX computation."
            ) from exc
    return n


@declare.checked
def sharding_devices(plan: devices.Plan) -> list[Any]:
    """The JAX devices a sharding section uses: the accelerators where the runtime has several, else
    ``plan.mesh_devices`` simulated host CPU devices (one T4 or TPU v5e-1 would give a mesh with no collective)."""
    import jax

    found = jax.devices("cpu") if plan.simulated else jax.devices()
    if len(found) < 2:
        raise RuntimeError(f"JAX has {len(found)} {'CPU ' if plan.simulated else ''}device(s) for the mesh: call "
                           f"cu.distributed.simulate_devices({plan.mesh_devices}) before the first JAX computation "
                           "(restart the kernel)")
    return found[:plan.mesh_devices]


@declare.checked
def mesh_facts(plan: devices.Plan, cores: Annotated[int, declare.Range(1, 4096)]) -> dict[str, Any]:
    """What the JAX finding quotes about its mesh: its devices, and whether their times can mean speed."""
    n = plan.mesh_devices
    where = (f"The {n} simulated devices are threads sharing this machine's {cores} cores: the times show "
             "correctness and the compiled collective, not speed." if plan.simulated else
             f"The {n} devices are this runtime's own {plan.device.kind.upper()}s, so the times are theirs.")
    return {"where": where}


@declare.checked
def sharding_note(plan: devices.Plan) -> str:
    """One line for the set-up cell: which devices the sharding sections run on, and where several real ones are."""
    if not plan.simulated:
        return f"JAX sharding: {plan.mesh_devices} {plan.device.kind.upper()} devices of this runtime"
    why = plan.skip("several devices") or (f"this {plan.device.kind.upper()} runtime has no second accelerator: "
                                           f"the sharding sections run on {plan.mesh_devices} simulated host "
                                           "devices (Kaggle's TPU v5e-8 or 2x T4 have several)")
    return f"JAX sharding: {why}"


@declare.checked
def tf_logical_cpus(n: Annotated[int, declare.Range(1, _MAX_DEVICES)]) -> list[Any]:
    """Split TensorFlow's CPU into ``n`` logical devices (before TF's runtime starts); returns them ([] without TF)."""
    if not env.available("tensorflow"):
        return []
    tf = env.import_tensorflow()
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
    except RuntimeError as exc:
        have = len(tf.config.list_logical_devices("CPU"))
        if have < n:
            raise RuntimeError(f"TensorFlow's runtime already started with {have} CPU device(s): restart the kernel "
                               f"and call tf_logical_cpus({n}) before any TensorFlow computation.") from exc
    return tf.config.list_logical_devices("CPU")


@dataclass(frozen=True)
class ThreadRun:
    """One thread count's benchmark; ``cores_busy``: the process's CPU seconds per wall second meanwhile (every
    thread of it); ``caller_busy``: the same for the calling thread alone (the rest is other threads' time)."""

    threads: int
    measurement: timing.Measurement
    cores_busy: float
    caller_busy: float = float("nan")


_Threads = Annotated[Sequence[Annotated[int, declare.Range(1, _MAX_DEVICES)]], declare.NonEmpty]


@declare.checked
def time_threads(fn: Callable[..., Any], *args: Any, threads: _Threads,
                 min_time: Annotated[float, declare.Range(1e-3, 60)] = 0.2,
                 rounds: Annotated[int, declare.Range(1, 100)] = 4,
                 timeout: calls.Timeout = calls.DEFAULT_TIMEOUT) -> dict[int, ThreadRun]:
    """``fn(*args)`` under ``torch.set_num_threads(n)`` per ``n`` of ``threads``, in turns over ``rounds`` rounds, with
    the process's CPU seconds per wall second (``cores_busy``, spinning threads count) and the caller's alone."""
    counts = list(threads)
    import torch

    before = torch.get_num_threads()
    parts: dict[int, list[timing.Measurement]] = {n: [] for n in counts}
    busy = {n: [0.0, 0.0, 0.0] for n in counts}  # process CPU, calling thread's CPU, wall seconds
    try:
        with calls.time_limit(timeout, calls.describe(fn)):
            for r in range(rounds):
                for n in counts[r % len(counts):] + counts[:r % len(counts)]:
                    torch.set_num_threads(n)
                    cpu, mine, wall = time.process_time(), time.thread_time(), time.perf_counter()
                    parts[n].append(timing.benchmark(fn, *args, min_time=min_time / rounds, min_repeats=3,
                                                     label=f"{n} thread{'s' if n > 1 else ''}"))
                    for i, spent in enumerate((time.process_time() - cpu, time.thread_time() - mine,
                                               time.perf_counter() - wall)):
                        busy[n][i] += spent
    finally:
        torch.set_num_threads(before)
    return {n: ThreadRun(n, timing.Measurement(label=ms[0].label, times=tuple(t for m in ms for t in m.times),
                                               number=ms[0].number, rounds=tuple(m.median for m in ms)),
                         busy[n][0] / busy[n][2], busy[n][1] / busy[n][2]) for n, ms in parts.items()}


def mlp_threads_report(workloads: dict[str, list], threads: list[int], min_time: float) -> dict[str, Any]:
    """What ``workers/threads_probe.py`` runs in the fresh process of ``mlp_threads_fresh``: each MLP step under
    ``time_threads``, as plain numbers."""
    import torch

    report = {}
    for name, (sizes, batch) in workloads.items():
        x, y = data.classification(batch, features=sizes[0], classes=sizes[-1], seed=2)
        step = models.torch_sgd_step(models.torch_mlp(tuple(sizes)), lr=0.1)
        runs = time_threads(step, (torch.from_numpy(x), torch.from_numpy(y)), threads=threads, min_time=min_time)
        report[name] = {str(n): {"times": list(r.measurement.times), "number": r.measurement.number,
                                 "cores_busy": r.cores_busy, "caller_busy": r.caller_busy} for n, r in runs.items()}
    return report


_Layers = Annotated[Sequence[Annotated[int, declare.Range(1, 2**16)]], declare.NonEmpty]


@declare.checked
def mlp_threads_fresh(workloads: Annotated[Mapping[str, tuple[_Layers, Annotated[int, declare.Range(1, 2**20)]]],
                                           declare.NonEmpty],
                      threads: _Threads, env: Mapping[str, str] | None = None, *,
                      min_time: Annotated[float, declare.Range(1e-3, 60)] = 0.2,
                      timeout: Annotated[float, declare.Range(1, 3600)] = 300.0) -> dict[str, dict[int, ThreadRun]]:
    """``time_threads`` of the course MLP's step per workload (name -> (layer sizes, batch)) in one fresh process with
    ``env`` added: for settings read once at start-up (``OMP_WAIT_POLICY``). Returns {name: {threads: ThreadRun}}."""
    request = {"workloads": {name: [list(sizes), batch] for name, (sizes, batch) in workloads.items()},
               "min_time": min_time, "threads": list(threads)}
    done = subprocess.run([sys.executable, str(WORKERS / "threads_probe.py")], input=json.dumps(request), text=True,
                          capture_output=True, timeout=timeout, env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise RuntimeError(f"the fresh process failed (exit code {done.returncode}): {done.stderr.strip()[-800:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: {int(n): ThreadRun(int(n), timing.Measurement(f"{name}, {n} thread(s), fresh process",
                                                                tuple(r["times"]), number=r["number"]),
                                     r["cores_busy"], r["caller_busy"]) for n, r in runs.items()}
            for name, runs in report.items()}
