"""Data parallelism for real: launch torchrun from a notebook, simulate devices, and model all-reduce cost.

- ``launch(script, nprocs, timeout)`` runs the real ``torchrun`` on 127.0.0.1 as a subprocess, streams the
  ranks' output into the cell, collects what the workers ``emit``/``save``, raises ``LaunchError`` with the
  failing rank's traceback, and always kills every process it started (error, timeout, Ctrl-C included).
- ``simulate_devices(n)`` gives JAX ``n`` CPU devices (before JAX starts); ``tf_logical_cpus(n)`` does the
  same for TensorFlow.
- The ring all-reduce cost model ``T = 2(N-1)·latency + 2(N-1)/N · bytes / bandwidth``, fitted to measured
  times, and the memory per device of ZeRO/FSDP-style sharding.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

WORKERS = Path(__file__).resolve().parent / "workers"
_OUT_ENV, _ID_ENV = "COURSE_DIST_OUT", "COURSE_LAUNCH_ID"
_RANK_LINE = re.compile(r"^\[[A-Za-z_]*?(\d+)\]:(?:\[rank\d+\]: ?)?(.*)$")  # "[default0]:", torch adds "[rank0]: "
_PROGRESS = re.compile(r"^@@progress (\d+) (\d+)\s*$")


# ---------------------------------------------------------------------------------------------------------
# Worker side: what a script started by launch() calls


def rank() -> int:
    """This worker's global rank (0 outside torchrun)."""
    return int(os.environ.get("RANK", "0"))


def emit(**record: Any) -> None:
    """Record one JSON-ready dict for the notebook (``LaunchResult.records[rank]``); printed outside launch()."""
    line = json.dumps(record)
    target = os.environ.get(_OUT_ENV)
    if target is None:
        print(line, flush=True)
        return
    with open(Path(target) / f"rank{rank()}.jsonl", "a") as f:
        f.write(line + "\n")


def save(name: str, **arrays: Any) -> None:
    """Save NumPy arrays for the notebook (``LaunchResult.arrays[name][rank]``)."""
    target = Path(os.environ.get(_OUT_ENV, "."))
    np.savez(target / f"{name}.rank{rank()}.npz", **{k: np.asarray(v) for k, v in arrays.items()})


def progress(step: int, total: int) -> None:
    """Advance the notebook's progress bar (call it from rank 0)."""
    print(f"@@progress {int(step)} {int(total)}", flush=True)


# ---------------------------------------------------------------------------------------------------------
# Notebook side: launch


class LaunchError(RuntimeError):
    """A rank failed: ``rank``, ``exitcode``, the rank's ``traceback`` and the whole ``output``."""

    def __init__(self, message: str, *, rank: int | None = None, exitcode: int | None = None,
                 traceback: str = "", output: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.rank, self.exitcode, self.traceback, self.output = rank, exitcode, traceback, list(output)


class LaunchTimeout(LaunchError, TimeoutError):
    """The job ran past ``timeout`` seconds; every process was killed."""


@dataclass
class LaunchResult:
    """What a finished launch left: per-rank ``records`` (emit), ``arrays`` (save), the output and timings."""

    script: str
    nprocs: int
    command: list[str]
    seconds: float
    output: list[str]
    records: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    arrays: dict[str, dict[int, dict[str, np.ndarray]]] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)

    def record(self, kind: str, rank: int = 0) -> dict[str, Any]:
        """The last record of rank ``rank`` whose "kind" is ``kind``."""
        found = [r for r in self.records.get(rank, []) if r.get("kind") == kind]
        if not found:
            raise KeyError(f"rank {rank} emitted no record with kind={kind!r}")
        return found[-1]

    def __repr__(self) -> str:
        counts = ", ".join(f"rank {r}: {len(v)}" for r, v in sorted(self.records.items()))
        return (f"LaunchResult({self.script} x {self.nprocs} processes, {self.seconds:.1f} s wall, "
                f"records [{counts}], arrays {sorted(self.arrays)})")


def worker_path(script: str | os.PathLike) -> Path:
    """A worker script: a path that exists, or the name of one in ``course_utils/workers``."""
    path = Path(script)
    if path.is_file():
        return path.resolve()
    if (WORKERS / path.name).is_file():
        return WORKERS / path.name
    known = sorted(p.name for p in WORKERS.glob("*.py") if not p.name.startswith("_"))
    raise FileNotFoundError(f"script must be an existing file or one of {known}; got {str(script)!r}")


def show_worker(script: str) -> Any:
    """The worker's source, syntax-highlighted in a notebook (IPython ``Code``)."""
    from IPython.display import Code

    return Code(worker_path(script).read_text(), language="python")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_command(script: Path, nprocs: int, args: Sequence[str], port: int, log_dir: Path) -> list[str]:
    """The torchrun command line: one node, loopback rendezvous, no restarts, ranks' output teed with a prefix."""
    exe = Path(sys.executable).with_name("torchrun")
    launcher = [str(exe)] if exe.exists() else [sys.executable, "-m", "torch.distributed.run"]
    return [*launcher, "--nnodes=1", f"--nproc-per-node={nprocs}", "--master-addr=127.0.0.1",
            f"--master-port={port}", "--max-restarts=0", "--monitor-interval=0.1", "--tee=3",
            f"--log-dir={log_dir}", str(script), *map(str, args)]


def launch(script: str | os.PathLike, nprocs: int = 2, timeout: float = 120.0, args: Sequence[Any] = (), *,
           env: dict[str, str] | None = None, echo: bool = True, progress: bool = True,
           on_line: Callable[[int | None, str], None] | None = None) -> LaunchResult:
    """Run ``torchrun --nproc-per-node=nprocs script *args`` on 127.0.0.1 and return what the ranks recorded.

    Output lines of rank r are printed as ``[rank r] ...`` (``echo``); ``progress(step, total)`` calls in the
    workers drive a progress bar. A failing rank raises ``LaunchError`` with its traceback; past ``timeout``
    seconds ``LaunchTimeout``. Whatever happens, every process of the job is gone when this returns.
    """
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"nprocs must be a positive int; got {nprocs!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds; got {timeout!r}")
    path = worker_path(script)
    launch_id = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="course_launch_") as tmp:
        out = Path(tmp)
        (out / "logs").mkdir()
        command = torchrun_command(path, nprocs, [str(a) for a in args], free_port(), out / "logs")
        child_env = {**os.environ, "PYTHONUNBUFFERED": "1", _OUT_ENV: str(out), _ID_ENV: launch_id,
                     "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // nprocs)), **(env or {})}
        lines: list[str] = []
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=child_env, start_new_session=True, bufsize=1)
        tracked: dict[int, Any] = {}
        bar = None
        lines_q: queue.Queue[str | None] = queue.Queue()
        pump = threading.Thread(target=_pump, args=(proc.stdout, lines_q), daemon=True)
        pump.start()
        try:
            done, next_scan = False, 0.0
            while not done:
                if time.perf_counter() > next_scan:
                    _track(proc.pid, tracked)
                    next_scan = time.perf_counter() + 0.2
                if time.perf_counter() - start > timeout:
                    raise LaunchTimeout(
                        f"{path.name} x {nprocs} did not finish within {timeout:g} s; all its processes were "
                        f"killed. Last output:\n" + "\n".join(lines[-10:]), output=lines)
                try:
                    line = lines_q.get(timeout=0.1)
                except queue.Empty:
                    continue
                if line is None:
                    done = True
                    continue
                line = line.rstrip("\n")
                lines.append(line)
                match = _RANK_LINE.match(line)
                rank_, text = (int(match.group(1)), match.group(2)) if match else (None, line)
                tick = _PROGRESS.match(text)
                if tick:
                    bar = _advance(bar, int(tick.group(1)), int(tick.group(2)), path.name, nprocs, progress)
                    continue
                if on_line is not None:
                    on_line(rank_, text)
                if echo and rank_ is not None:
                    print(f"[rank {rank_}] {text}", flush=True)
            returncode = proc.wait()
            seconds = time.perf_counter() - start
            if returncode != 0:
                raise _failure(path.name, nprocs, returncode, lines)
            return LaunchResult(path.name, nprocs, command, seconds, lines, *_collect(out), pids=sorted(tracked))
        finally:
            if bar is not None:
                bar.close()
            _kill(proc, tracked, launch_id)
            pump.join(timeout=5)  # the pipe reaches EOF once every process holding it is gone
            if not pump.is_alive() and proc.stdout is not None:
                proc.stdout.close()


def _pump(stream: Any, lines_q: queue.Queue) -> None:
    for line in stream:
        lines_q.put(line)
    lines_q.put(None)


def _advance(bar: Any, step: int, total: int, name: str, nprocs: int, enabled: bool) -> Any:
    if not enabled:
        return None
    if bar is None:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=f"{name} x {nprocs}", unit="step", leave=False)
    bar.n = min(step, total)
    bar.refresh()
    return bar


def _track(pid: int, tracked: dict[int, Any]) -> None:
    import psutil

    try:
        root = psutil.Process(pid)
        for p in [root, *root.children(recursive=True)]:
            tracked.setdefault(p.pid, p)
    except psutil.Error:
        pass


def _kill(proc: subprocess.Popen, tracked: dict[int, Any], launch_id: str) -> None:
    """Terminate torchrun, its workers (own sessions) and anything that carries this launch's id; then KILL."""
    import psutil

    _track(proc.pid, tracked)
    victims = {p for p in tracked.values() if _alive(p)}
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get(_ID_ENV) == launch_id:
                victims.add(p)
        except psutil.Error:
            continue
    for p in list(victims):
        try:
            victims.update(p.children(recursive=True))
        except psutil.Error:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in victims:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass
        _, victims = psutil.wait_procs(victims, timeout=3)
        if not victims:
            break
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _alive(p: Any) -> bool:
    import psutil

    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _failure(name: str, nprocs: int, returncode: int, lines: list[str]) -> LaunchError:
    per_rank: dict[int, list[str]] = {}
    for line in lines:
        match = _RANK_LINE.match(line)
        if match:
            per_rank.setdefault(int(match.group(1)), []).append(match.group(2))
    root = "\n".join(lines)
    cause = root.split("Root Cause", 1)[1] if "Root Cause" in root else ""
    found_rank = re.search(r"rank\s*:\s*(\d+)", cause)
    found_code = re.search(r"exitcode\s*:\s*(-?\d+)", cause)
    failing = int(found_rank.group(1)) if found_rank else None
    if failing is None or not any("Traceback" in t for t in per_rank.get(failing, [])):
        with_tb = [r for r, ts in sorted(per_rank.items()) if any("Traceback" in t for t in ts)]
        failing = with_tb[0] if with_tb else failing
    tb = ""
    if failing is not None:
        own = per_rank.get(failing, [])
        starts = [i for i, t in enumerate(own) if t.startswith("Traceback (most recent call last)")]
        tb = "\n".join(own[starts[-1]:]) if starts else "\n".join(own[-15:])
    code = int(found_code.group(1)) if found_code else returncode
    who = f"rank {failing}" if failing is not None else "a rank (which one torchrun did not say)"
    message = f"{name} x {nprocs}: {who} failed with exit code {code}; every process was stopped."
    if tb:
        message += f"\n--- traceback of rank {failing} ---\n{tb}"
    return LaunchError(message, rank=failing, exitcode=code, traceback=tb, output=lines)


def _collect(out: Path) -> tuple[dict[int, list[dict[str, Any]]], dict[str, dict[int, dict[str, np.ndarray]]]]:
    records: dict[int, list[dict[str, Any]]] = {}
    for f in sorted(out.glob("rank*.jsonl")):
        records[int(f.stem[4:])] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    arrays: dict[str, dict[int, dict[str, np.ndarray]]] = {}
    for f in sorted(out.glob("*.rank*.npz")):
        name, rank_ = f.name[: -len(".npz")].rsplit(".rank", 1)
        with np.load(f) as data:
            arrays.setdefault(name, {})[int(rank_)] = {k: data[k] for k in data.files}
    return records, arrays


# ---------------------------------------------------------------------------------------------------------
# Simulated devices


def simulate_devices(n: int) -> int:
    """Give JAX ``n`` CPU devices (XLA_FLAGS); call before ``import jax``. Returns ``n``.

    Afterwards is too late for XLA's CPU client: if JAX already runs with fewer devices, a clear
    ``RuntimeError`` says to restart the kernel. On GPU/TPU runtimes the real devices are used as well.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    flag = f"--xla_force_host_platform_device_count={n}"
    old = os.environ.get("XLA_FLAGS", "")
    kept = re.sub(r"--xla_force_host_platform_device_count=\S+", "", old).split()
    os.environ["XLA_FLAGS"] = " ".join([*kept, flag])
    if "jax" in sys.modules:
        have = len(sys.modules["jax"].devices("cpu"))
        if have < n:
            raise RuntimeError(
                f"JAX was already imported and started with {have} CPU device(s), so simulate_devices({n}) comes "
                f"too late: restart the kernel and call cu.distributed.simulate_devices({n}) before `import jax`.")
    return n


def tf_logical_cpus(n: int) -> list[Any]:
    """Split TensorFlow's CPU into ``n`` logical devices (before TF's runtime starts); returns them."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    from course_utils import env

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


# ---------------------------------------------------------------------------------------------------------
# Cost models


def ring_allreduce_time(nbytes: Any, n: Any, bandwidth: float, latency: float) -> Any:
    """Seconds for a ring all-reduce of ``nbytes`` over ``n`` devices: 2(n-1)·latency + 2(n-1)/n·bytes/bandwidth."""
    nbytes, n = np.asarray(nbytes, dtype=float), np.asarray(n, dtype=float)
    if np.any(n < 1):
        raise ValueError(f"n must be >= 1; got {n!r}")
    if bandwidth <= 0 or latency < 0:
        raise ValueError(f"bandwidth must be > 0 and latency >= 0; got {bandwidth!r}, {latency!r}")
    out = 2 * (n - 1) * latency + 2 * (n - 1) / n * nbytes / bandwidth
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class AllReduceModel:
    """A fitted ring model: ``bandwidth`` (bytes/s per link) and ``latency`` (s per ring step)."""

    bandwidth: float
    latency: float
    fitted_on: int = 2

    def time(self, nbytes: Any, n: Any) -> Any:
        """Predicted seconds for ``nbytes`` over ``n`` devices."""
        return ring_allreduce_time(nbytes, n, self.bandwidth, self.latency)

    def __repr__(self) -> str:
        return (f"AllReduceModel(bandwidth={self.bandwidth / 1e9:.3g} GB/s, latency={self.latency * 1e6:.3g} us, "
                f"fitted on {self.fitted_on} processes)")


def fit_allreduce(nbytes: Sequence[float], seconds: Sequence[float], n: int) -> AllReduceModel:
    """Least-squares fit (relative errors) of the ring model to all-reduce times measured on ``n`` processes."""
    b, t = np.asarray(nbytes, dtype=float), np.asarray(seconds, dtype=float)
    if b.shape != t.shape or b.size < 2:
        raise ValueError(f"nbytes and seconds must have the same length >= 2; got {b.size} and {t.size}")
    if n < 2:
        raise ValueError(f"n must be >= 2 (one process does not communicate); got {n!r}")
    if np.any(t <= 0) or np.any(b < 0):
        raise ValueError("seconds must be > 0 and nbytes >= 0")
    design = np.stack([np.full_like(b, 2 * (n - 1)), 2 * (n - 1) / n * b], axis=1) / t[:, None]
    (latency, inv_bw), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if latency < 0:  # the data says "no latency": refit the bandwidth alone
        latency = 0.0
        inv_bw = float(np.linalg.lstsq(design[:, 1:], np.ones_like(t), rcond=None)[0][0])
    if inv_bw <= 0:
        raise ValueError("the times do not grow with the message size: no bandwidth can be fitted")
    return AllReduceModel(bandwidth=1.0 / inv_bw, latency=float(latency), fitted_on=n)


def memory_per_device(params: float, n: int, stage: int = 0, *, weight_bytes: int = 2, grad_bytes: int = 2,
                      optimizer_bytes: int = 12) -> float:
    """Bytes per device for weights + gradients + optimizer state under ZeRO ``stage`` 0-3 (3 = FSDP).

    Defaults: mixed-precision Adam (bf16 weights and grads, fp32 master weights + two moments = 12 bytes).
    Activations are not included: they depend on the batch, not on the sharding.
    """
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"stage must be one of 0, 1, 2, 3; got {stage!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1; got {n!r}")
    opt = optimizer_bytes / (n if stage >= 1 else 1)
    grad = grad_bytes / (n if stage >= 2 else 1)
    weight = weight_bytes / (n if stage >= 3 else 1)
    return float(params * (opt + grad + weight))


# ---------------------------------------------------------------------------------------------------------
# Figures


def diagram() -> Any:
    """Data parallelism in one picture: replicate the model, shard the batch, all-reduce the gradients, step."""
    from course_utils import plotting

    fig, (ax,) = plotting.figure(width=9.0, height=3.6)
    ax.set_axis_off()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.2)
    colors = [plotting.PALETTE[0], plotting.PALETTE[1]]
    box = {"boxstyle": "round,pad=0.3", "facecolor": "white"}
    ax.text(0.9, 2.1, "global batch\n(B samples)", ha="center", va="center", bbox={**box, "edgecolor": "#333"})
    for i, y in enumerate((3.2, 1.0)):
        c = colors[i]
        ax.annotate("", (2.3, y), (1.6, 2.1), arrowprops={"arrowstyle": "->", "color": c})
        ax.text(3.0, y, f"shard {i}\nB/2 samples", ha="center", va="center", bbox={**box, "edgecolor": c})
        ax.text(5.0, y, f"device {i}\nsame weights W\nforward + backward", ha="center", va="center",
                bbox={**box, "edgecolor": c})
        ax.annotate("", (4.1, y), (3.7, y), arrowprops={"arrowstyle": "->", "color": c})
        ax.text(8.9, y, "W ← W − lr·ḡ\n(identical on\nevery device)", ha="center", va="center",
                bbox={**box, "edgecolor": c})
        ax.annotate("", (6.5, 2.1 + (0.5 if i == 0 else -0.5)), (6.0, y), arrowprops={"arrowstyle": "->", "color": c})
        ax.annotate("", (8.1, y), (7.6, 2.1 + (0.5 if i == 0 else -0.5)), arrowprops={"arrowstyle": "->", "color": c})
    ax.text(7.05, 2.1, "all-reduce\nḡ = mean(g₀, g₁)", ha="center", va="center",
            bbox={**box, "edgecolor": "#009E73", "facecolor": "#e8f6f1"})
    ax.set_title("Data parallelism: replicate, shard the batch, all-reduce the gradients, step")
    return fig


def scaling_plot(model: AllReduceModel, nbytes: float, compute_seconds: float,
                 bandwidths: dict[str, tuple[float, float]], devices: Sequence[int] = (2, 8, 64, 512)) -> Any:
    """Predicted all-reduce time (left) and scaling efficiency (right) against device count, per link type.

    ``bandwidths`` maps a label to (bytes/s, latency s); the fitted ``model`` is drawn as "this machine".
    Efficiency assumes no overlap: compute / (compute + all-reduce), the worst case.
    """
    from course_utils import plotting

    fig, (left, right) = plotting.figure(2, width=10.0, height=3.8)
    n = np.asarray(devices, dtype=float)
    links = {f"this machine (fit): {model.bandwidth / 1e9:.2g} GB/s": (model.bandwidth, model.latency),
             **bandwidths}
    for i, (label, (bw, lat)) in enumerate(links.items()):
        t = ring_allreduce_time(nbytes, n, bw, lat)
        color = plotting.PALETTE[i % len(plotting.PALETTE)]
        left.plot(n, t * 1e3, marker="o", color=color, label=label)
        right.plot(n, compute_seconds / (compute_seconds + t), marker="o", color=color, label=label)
    left.axhline(compute_seconds * 1e3, color="#333333", linestyle="--", linewidth=1, label="compute per step")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(devices), [str(d) for d in devices])
        ax.set_xlabel("devices N")
    left.set_yscale("log")
    left.set_ylabel("all-reduce time (ms)")
    left.set_title(f"Ring all-reduce of {nbytes / 1e6:.3g} MB")
    right.set_ylabel("scaling efficiency (no overlap)")
    right.set_ylim(0, 1.05)
    right.set_title("compute / (compute + all-reduce)")
    left.legend(fontsize=8)
    return fig


def measurement(label: str, times: Sequence[float]) -> Any:
    """A ``cu.timing.Measurement`` from per-step seconds that a worker emitted (for the course's plots)."""
    from course_utils.timing import Measurement

    return Measurement(label=label, times=tuple(float(t) for t in times), number=1, total=float(sum(times)))


def breakdown_plot(groups: dict[str, dict[str, tuple[float, float]]],
                   *, title: str = "Where a step's time goes") -> Any:
    """One panel per group (e.g. model): stacked bars of compute and exposed communication (seconds) per label."""
    from course_utils import plotting

    rows_max = max(len(g) for g in groups.values())
    fig, axes = plotting.figure(len(groups), width=5.0 * len(groups), height=1.2 + 0.55 * rows_max)
    for ax, (group, rows) in zip(axes, groups.items()):
        names = list(rows)
        compute = np.array([rows[n][0] for n in names]) * 1e3
        comm = np.array([rows[n][1] for n in names]) * 1e3
        ax.barh(names, compute, color=plotting.PALETTE[0], label="compute (forward + backward + update)")
        ax.barh(names, comm, left=compute, color=plotting.PALETTE[1], label="communication not hidden by compute")
        for y, (c, m) in enumerate(zip(compute, comm)):
            share = m / (c + m) if c + m > 0 else 0.0
            ax.text(c + m, y, f" {c + m:.3g} ms ({share:.0%} comm)", va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, float((compute + comm).max()) * 1.6)
        ax.set_xlabel("time per step (ms, median)")
        ax.set_title(group)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2)
    fig.suptitle(title)
    return fig


def allreduce_fit_plot(nbytes: Sequence[float], seconds: Sequence[float], model: AllReduceModel) -> Any:
    """Measured all-reduce medians against message size, with the fitted ring model's line."""
    from course_utils import plotting

    fig, (ax,) = plotting.figure(width=6.4, height=3.8)
    b = np.asarray(nbytes, dtype=float)
    ax.scatter(b, np.asarray(seconds) * 1e3, color=plotting.PALETTE[1], zorder=3, label="measured")
    grid = np.logspace(np.log10(b.min()), np.log10(b.max()), 100)
    ax.plot(grid, model.time(grid, model.fitted_on) * 1e3, color="#222222",
            label=f"ring model: {model.latency * 1e6:.3g} µs/step, {model.bandwidth / 1e9:.3g} GB/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("all-reduce time (ms)")
    ax.set_title(f"All-reduce on {model.fitted_on} processes: latency, then bandwidth")
    ax.legend()
    return fig
