"""Simulated devices on one CPU: several JAX CPU devices, several TensorFlow logical CPUs; and the CPU threads
of one PyTorch process (``time_threads``: the same step with 1 and with more threads, and how many cores it
kept busy).

Both frameworks fix their device list when their runtime starts, so these calls must come before the first
JAX computation (``jax.config.update("jax_num_cpu_devices", n)`` works right after ``import jax``) or the first
TensorFlow operation. A framework that is not installed (or blocked by ``COURSE_BLOCK``) gives no devices.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from course_utils import env, timing, validate

_MAX_DEVICES = 256


def simulate_devices(n: int) -> int:
    """Give JAX ``n`` CPU devices; returns ``n``, or 0 when JAX is not installed here.

    Uses ``jax.config.update("jax_num_cpu_devices", n)``, which JAX accepts until its backend starts. Later
    is too late for XLA's CPU client: if JAX already runs with fewer devices, a clear ``RuntimeError`` says to
    restart the kernel. On GPU/TPU runtimes the accelerators stay JAX's default devices.
    """
    n = validate.number("n", n, low=1, high=_MAX_DEVICES, integer=True)
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


def tf_logical_cpus(n: int) -> list[Any]:
    """Split TensorFlow's CPU into ``n`` logical devices (before TF's runtime starts); returns them ([] without TF)."""
    n = validate.number("n", n, low=1, high=_MAX_DEVICES, integer=True)
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
    """One thread count's benchmark, and ``cores_busy``: the process's CPU seconds per wall second meanwhile."""

    threads: int
    measurement: timing.Measurement
    cores_busy: float


def time_threads(fn: Callable[..., Any], *args: Any, threads: Sequence[int],
                 min_time: float = 0.2) -> dict[int, ThreadRun]:
    """``fn(*args)`` benchmarked under ``torch.set_num_threads(n)`` for each ``n`` of ``threads``; returns
    {n: ThreadRun}. ``cores_busy`` (CPU time of all the process's threads / wall time) tells computing from
    waiting: n threads that compute keep about n cores busy, threads that wait for each other keep fewer.
    The thread count in force before the call is restored."""
    validate.function("fn", fn)
    validate.non_empty("threads", threads)
    counts = [validate.number("threads", n, low=1, high=_MAX_DEVICES, integer=True) for n in threads]
    import torch

    before = torch.get_num_threads()
    runs = {}
    try:
        for n in counts:
            torch.set_num_threads(n)
            cpu, wall = time.process_time(), time.perf_counter()
            m = timing.benchmark(fn, *args, min_time=min_time, label=f"{n} thread{'s' if n > 1 else ''}")
            runs[n] = ThreadRun(n, m, (time.process_time() - cpu) / (time.perf_counter() - wall))
    finally:
        torch.set_num_threads(before)
    return runs
