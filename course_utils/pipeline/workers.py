"""Worker hygiene for notebook 04: how DataLoader workers start from a notebook kernel, what must be
importable in them, what they cost, that none is left behind, and how many cores the model keeps.

Why never ``fork`` from a notebook: fork copies only the thread that calls it. Every other thread of the
kernel (TensorFlow's and JAX's thread pools, OpenMP, the prefetch thread) is gone in the child, but the locks
those threads held are copied in their held state, and nobody is left to release them: the child deadlocks
the first time it takes one (in malloc, in a thread pool, in the import lock). forkserver forks each worker
from a small single-threaded server instead; spawn starts a fresh interpreter.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import pickle
import subprocess
import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from course_utils import env, validate

PRELOAD = ("torch", "course_utils.pipeline")
MAX_CORES = 1024
UNPICKLE_CHECK = Path(__file__).resolve().parent.parent / "workers" / "unpickle_check.py"


def _preload(preload: Any) -> list[str]:
    if isinstance(preload, str) or not isinstance(preload, (list, tuple)):
        raise TypeError(f"preload must be a list or tuple of module names; got {type(preload).__name__} {preload!r}")
    missing = [name for name in preload if not _importable(validate.text("preload", name))]
    if missing:  # the server would start without them and every worker would pay the import after all
        raise ValueError(f"preload must name modules importable here; cannot import {', '.join(missing)}")
    return list(preload)


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package that is missing, or a relative name
        return False


def worker_context(preload: Sequence[str] = PRELOAD) -> Any:
    """The multiprocessing context for DataLoader workers started from a notebook: forkserver, else spawn.

    forkserver forks each worker from a small single-threaded server that has imported ``preload`` once,
    so a worker starts in milliseconds instead of re-importing torch as spawn does (see the module docstring
    for why fork itself is unsafe once threads run).
    """
    modules = _preload(preload)
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(modules)
        return context
    return multiprocessing.get_context("spawn")


def start_forkserver(preload: Sequence[str] = PRELOAD) -> float:
    """Start the forkserver and fork one trivial process from it; return the seconds (the one-off cost).

    The server imports ``preload`` before its first fork, so this is paid once per kernel; afterwards a
    worker starts with a fork. With spawn there is no server: every worker pays the imports itself.
    """
    context = worker_context(preload)
    start = time.perf_counter()
    process = context.Process(target=time.sleep, args=(0,), daemon=True)
    process.start()
    process.join(120)
    if process.is_alive():
        process.kill()
        raise TimeoutError("the forkserver did not start a trivial process within 120 s")
    return time.perf_counter() - start


def unpickles_in_fresh_process(obj: Any, timeout: float = 60.0) -> str:
    """Pickle ``obj`` here and unpickle it in a new Python process, as a spawn/forkserver worker does.

    The new process runs ``course_utils/workers/unpickle_check.py``. Returns "ok", or the name of the exception
    that stopped it: raised here when ``obj`` cannot be pickled at
    all (a lambda: PicklingError), or in the new process when it cannot be found there (a function defined in
    a notebook pickles as a reference to ``__main__``, which the worker cannot resolve: AttributeError), or
    "TimeoutExpired" after ``timeout`` seconds.
    """
    validate.number("timeout", timeout, low=0, high=600, low_open=True)
    try:
        payload = pickle.dumps(obj)
    except Exception as error:  # noqa: BLE001 - the answer is the kind of failure, as a worker would meet it
        return type(error).__name__
    try:
        result = subprocess.run([sys.executable, str(UNPICKLE_CHECK)], input=payload, capture_output=True,
                                timeout=timeout, cwd=os.getcwd())
    except subprocess.TimeoutExpired:
        return "TimeoutExpired"
    return result.stdout.decode().strip() or f"exit code {result.returncode}"


def _is_helper(process: Any) -> bool:
    try:
        cmdline = " ".join(process.cmdline())
    except Exception:  # noqa: BLE001 - gone, or not ours to read
        return True
    return "multiprocessing.forkserver" in cmdline or "multiprocessing.resource_tracker" in cmdline


def _pids(name: str, pids: Any) -> set[int]:
    if isinstance(pids, (str, bytes)) or not isinstance(pids, Iterable):
        raise TypeError(f"{name} must be a collection of process ids; got {type(pids).__name__} {pids!r}")
    return {validate.positive(name, p, integer=True) for p in pids}


def worker_processes(wait: float = 2.0, ignore: Iterable[int] = ()) -> list[int]:
    """PIDs of live worker processes started by this process (multiprocessing's own servers excluded).

    Polls for up to ``wait`` seconds, since a worker told to stop takes a moment to exit. An empty list
    after a loader is gone means no worker was leaked. ``ignore``: PIDs that were there before (for
    example a compiler's worker pool) and are not the loader's.
    """
    import psutil

    validate.number("wait", wait, low=0, high=600)
    ignored = _pids("ignore", ignore)
    me = psutil.Process()
    deadline = time.monotonic() + wait
    while True:
        helpers = {p.pid for p in me.children() if _is_helper(p)}
        found = []
        for p in me.children(recursive=True):
            try:
                alive = p.status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                continue
            if alive and p.pid not in helpers and p.pid not in ignored:
                found.append(p.pid)
        if not found or time.monotonic() >= deadline:
            return sorted(found)
        time.sleep(0.05)


def worker_memory(pids: Iterable[int] | None = None) -> dict[int, int]:
    """Private memory (USS, bytes) of each worker process: what it costs beyond the pages it shares.

    ``pids`` defaults to ``worker_processes(wait=0)``; processes that have exited are left out.
    """
    import psutil

    chosen = worker_processes(wait=0) if pids is None else sorted(_pids("pids", pids))
    found = {}
    for pid in chosen:
        try:
            found[pid] = int(psutil.Process(pid).memory_full_info().uss)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def worker_counts(cores: int | None = None) -> list[int]:
    """Worker counts worth measuring on a machine with ``cores`` cores: 0, 1, half, the cores free for data
    (``data_cores``), and one more than those, so that a count above the free cores is always measured."""
    cores = (os.cpu_count() or 1) if cores is None else validate.number("cores", cores, low=1, high=MAX_CORES,
                                                                        integer=True)
    free = data_cores(cores)
    return sorted({0, 1, max(1, cores // 2), free, free + 1})


OVERSUBSCRIBED_WARNING = r"This DataLoader will create \d+ worker processes in total"


@contextmanager
def oversubscribing() -> Iterator[None]:
    """Silence only PyTorch's "more workers than the suggested maximum" UserWarning, inside the block: for a
    sweep that puts more workers than cores on purpose, to measure what that costs. Every other warning shows."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=OVERSUBSCRIBED_WARNING, category=UserWarning)
        yield


def data_cores(cores: int | None = None) -> int:
    """Cores left for loader workers: all but one, whatever the accelerator.

    On a CPU-only machine that core computes the model (our stand-in accelerator); on a GPU it runs the
    training process itself: Python, kernel launches, the pin-memory thread. Starving it starves the device.
    """
    cores = (os.cpu_count() or 1) if cores is None else validate.number("cores", cores, low=1, high=MAX_CORES,
                                                                        integer=True)
    return max(1, cores - 1)


def limit_compute_threads(threads: int = 1) -> dict[str, int]:
    """On a CPU-only machine, give the model ``threads`` cores (its stand-in accelerator), the rest to the data.

    Sets torch's and TensorFlow's intra-op threads for the frameworks installed. JAX 0.10.2 has no such switch
    (its ``XLA_FLAGS`` thread flags are ignored: measured, a jit matmul still kept 2 cores busy), but XLA sizes
    its CPU thread pool from the CPU affinity seen when its backend starts: so JAX's backend is started here
    with this thread restricted to ``threads`` cores, then the affinity is restored (XLA's threads keep the
    restricted set). Call it before JAX starts (before ``cu.notebook.setup()``, which lists JAX's devices).
    On a GPU or TPU it does nothing: the model runs on the device there. Returns the threads set per framework.
    """
    validate.number("threads", threads, low=1, high=os.cpu_count() or 1, integer=True)
    if env.accelerator() != "cpu":
        return {}
    done: dict[str, int] = {}
    if env.available("jax") and hasattr(os, "sched_setaffinity"):  # Linux; elsewhere JAX keeps every core
        bridge = sys.modules.get("jax._src.xla_bridge")  # private, so looked up defensively
        if bridge is not None and getattr(bridge, "backends_are_initialized", lambda: False)():
            raise RuntimeError("limit_compute_threads() must run before JAX starts (before cu.notebook.setup())")
        done["jax"] = _start_jax_on(threads)
    if env.available("torch"):
        import torch

        torch.set_num_threads(threads)
        done["torch"] = torch.get_num_threads()
    if env.available("tensorflow"):
        tf = env.import_tensorflow()
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        done["tensorflow"] = tf.config.threading.get_intra_op_parallelism_threads()
    return done


def _start_jax_on(threads: int) -> int:
    """Start JAX's CPU backend while this thread may run on ``threads`` cores only; return how many it got."""
    import jax

    everything = os.sched_getaffinity(0)
    cores = set(sorted(everything)[:threads])
    os.sched_setaffinity(0, cores)  # this thread only: the threads XLA starts now inherit it
    try:
        jax.devices()
    finally:
        os.sched_setaffinity(0, everything)
    return len(cores)
