"""Worker hygiene for notebook 04: DataLoader workers started without ``fork`` (which copies only the calling
thread, its locks held forever), what they cost, that none is left behind, and the cores they may use."""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import pickle
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from course_utils import calls, declare, env

PRELOAD = ("torch", "course_utils.pipeline")
MAX_CORES = 1024
Cores = Annotated[int, declare.Range(1, MAX_CORES)]
Preload = Annotated[Sequence[declare.Text], declare.Unique, declare.MaxItems(64)]
UNPICKLE_CHECK = Path(__file__).resolve().parent.parent / "workers" / "unpickle_check.py"


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package that is missing, or a relative name
        return False


@declare.checked
def worker_context(preload: Preload = PRELOAD) -> Any:
    """The multiprocessing context for DataLoader workers from a notebook: forkserver (its server imports
    ``preload`` once), else spawn."""
    missing = [name for name in preload if not _importable(name)]
    if missing:  # the server would start without them and every worker would pay the import after all
        raise ValueError(f"preload must name modules importable here; cannot import {', '.join(missing)}")
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return context


@declare.checked
def start_forkserver(preload: Preload = PRELOAD,
                     timeout: Annotated[float, declare.Range(1, calls.MAX_TIMEOUT)] | None = None) -> float:
    """Start the forkserver and fork one trivial process from it: the one-off cost per kernel, in seconds."""
    context = worker_context(preload)
    seconds = calls.default_timeout() if timeout is None else timeout
    start = time.perf_counter()
    process = context.Process(target=time.sleep, args=(0,), daemon=True)
    process.start()
    process.join(seconds)
    if process.is_alive():
        process.kill()
        raise TimeoutError(f"the forkserver did not start a trivial process within timeout={seconds:g} s")
    return time.perf_counter() - start


@declare.checked
def unpickles_in_fresh_process(obj: Any, timeout: calls.Timeout = None) -> str:
    """Pickle ``obj`` here and unpickle it in a new Python, as a spawn worker does: "ok", the exception's name, or
    "TimeoutExpired"."""
    try:
        payload = pickle.dumps(obj)
    except Exception as error:  # noqa: BLE001 - the answer is the kind of failure, as a worker would meet it
        return type(error).__name__
    try:
        result = subprocess.run([sys.executable, str(UNPICKLE_CHECK)], input=payload, capture_output=True,
                                timeout=calls.default_timeout() if timeout is None else timeout, cwd=os.getcwd())
    except subprocess.TimeoutExpired:
        return "TimeoutExpired"
    return result.stdout.decode().strip() or f"exit code {result.returncode}"


def _is_helper(process: Any) -> bool:
    try:
        cmdline = " ".join(process.cmdline())
    except Exception:  # noqa: BLE001 - gone, or not ours to read
        return True
    return "multiprocessing.forkserver" in cmdline or "multiprocessing.resource_tracker" in cmdline


@declare.checked
def worker_processes(wait: Annotated[float, declare.Range(0, 60)] = 2.0) -> list[int]:
    """PIDs of live processes this process started (multiprocessing's servers excluded), polled for up to
    ``wait`` seconds: empty once no worker was leaked."""
    import psutil

    me = psutil.Process()
    deadline = time.monotonic() + wait
    while True:
        helpers = {p.pid for p in me.children() if _is_helper(p)}
        found = []
        for p in me.children(recursive=True):
            try:
                if p.status() != psutil.STATUS_ZOMBIE and p.pid not in helpers:
                    found.append(p.pid)
            except psutil.NoSuchProcess:
                continue
        if not found or time.monotonic() >= deadline:
            return sorted(found)
        time.sleep(0.05)


@declare.checked
def worker_memory() -> dict[int, int]:
    """Private memory (USS, bytes) of each live worker process (``worker_processes(wait=0)``)."""
    import psutil

    found = {}
    for pid in worker_processes(wait=0):
        try:
            found[pid] = int(psutil.Process(pid).memory_full_info().uss)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@declare.checked
def data_cores(cores: Cores | None = None, ranks: Cores = 1) -> int:
    """Cores per training process left for its loader workers: (cores - ranks) / ranks, at least 1 (each training
    process keeps a core: on a GPU it runs Python and the kernel launches)."""
    cores = (os.cpu_count() or 1) if cores is None else cores
    if ranks > cores:
        raise ValueError(f"ranks must be at most cores ({cores}): each training process keeps a core; got {ranks}")
    return max(1, (cores - ranks) // ranks)


@declare.checked
def worker_counts(cores: Cores | None = None) -> list[int]:
    """Worker counts worth measuring: 0, 1, half the cores, the cores free for data and one more."""
    cores = (os.cpu_count() or 1) if cores is None else cores
    return sorted({0, 1, max(1, cores // 2), data_cores(cores), data_cores(cores) + 1})


@declare.checked
@contextmanager
def oversubscribing() -> Iterator[None]:
    """A block in which only PyTorch's "more workers than the suggested maximum" warning is silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"This DataLoader will create \d+ worker processes in total",
                                category=UserWarning)
        yield


@declare.checked
def limit_compute_threads(threads: Annotated[int, declare.Range(1, os.cpu_count() or 1)] = 1) -> dict[str, int]:
    """On a CPU-only machine, give the model ``threads`` cores (torch and TF intra-op threads; JAX's CPU backend
    started on that many cores); call it before JAX starts. Returns the threads set per framework."""
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
    """Start JAX's CPU backend while this thread may run on ``threads`` cores only (XLA's threads inherit it)."""
    import jax

    everything = os.sched_getaffinity(0)
    cores = set(sorted(everything)[:threads])
    os.sched_setaffinity(0, cores)
    try:
        jax.devices()
    finally:
        os.sched_setaffinity(0, everything)
    return len(cores)
