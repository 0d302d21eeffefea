"""The notebook side of a launch: the real ``torchrun`` on 127.0.0.1 under a reaper, one node or several, the ranks'
lines streamed into the cell, their records collected, no process left behind (error, timeout, Ctrl-C, dead kernel)."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import psutil

from course_utils import calls, declare, devices, display, validate
from course_utils.distributed import failures, worker
from course_utils.distributed.worker import WORKERS, worker_path

LOOPBACK = "127.0.0.1"
_MAX_PROCS = 256
_MAX_SECONDS = 24 * 3600.0  # a launch longer than a day is a typo
REAPER_GRACE = 3.0  # seconds between the reaper's SIGTERM and its SIGKILL


@dataclass(repr=False)
class LaunchResult(display.Tabled):
    """What a finished launch left: per-rank ``records`` (emit), ``arrays`` (save), torchrun's raw ``output``."""

    script: str
    nprocs: int
    command: list[str]
    seconds: float
    output: list[str]
    records: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    arrays: dict[str, dict[int, dict[str, np.ndarray]]] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)

    @property
    def lines(self) -> list[tuple[int, str]]:
        """The ranks' own non-empty lines, without torchrun's prefixes and the progress-bar lines."""
        return failures.learner_lines(self.output)

    def record(self, kind: str, rank: int = 0) -> dict[str, Any]:
        """The last record of rank ``rank`` whose "kind" is ``kind``."""
        validate.text("kind", kind)
        rank = validate.choice("rank", rank, sorted(self.records)) if self.records else rank
        found = [r for r in self.records.get(rank, []) if r.get("kind") == kind]
        if not found:
            kinds = sorted({r.get("kind") for r in self.records.get(rank, [])}, key=str)
            raise KeyError(f"rank {rank} emitted no record with kind={kind!r}; it emitted {kinds}")
        return found[-1]

    def table(self) -> display.Table:
        """One row per rank: how many records and arrays it left."""
        ranks = sorted(set(self.records) | {r for per in self.arrays.values() for r in per})
        rows = [(str(r), str(len(self.records.get(r, []))),
                 ", ".join(n for n, per in sorted(self.arrays.items()) if r in per) or "-") for r in ranks]
        return display.Table(("rank", "records", "arrays saved"), tuple(rows),
                             title=f"{self.script} x {self.nprocs} processes: {self.seconds:.1f} s wall "
                                   "(torchrun start-up included)")


_Args = Sequence[str | int | float | os.PathLike]  # a worker's arguments, as torchrun passes them
_Seconds = Annotated[float, declare.Range(0, _MAX_SECONDS, low_open=True)]
OnLine = Callable[[int | None, str], None] | None  # the learner's callable, given each (rank, text) line
# the sizes of a launched job, declared once for 05's and 06's launches
Steps, Batch = Annotated[int, declare.Range(1, 10_000)], Annotated[int, declare.Range(1, 2**16)]
Rounds, PerRound = Annotated[int, declare.Range(2, 100)], Annotated[int, declare.Range(1, 1000)]
Ranks, JobTimeout = Annotated[int, declare.Range(2, 64)], Annotated[float, declare.Range(1, 3600)]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


@declare.checked
def check_loopback(timeout: Annotated[float, declare.Range(0, 60, low_open=True)] = 2.0) -> None:
    """Raise ``LoopbackError`` unless a TCP connection to 127.0.0.1 opens within ``timeout`` seconds: with the
    loopback interface down a port still binds but nothing connects, and a launch would wait for its timeout."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind((LOOPBACK, 0))
            server.listen(1)
            with socket.create_connection(server.getsockname(), timeout=timeout):
                pass
    except OSError as exc:
        raise failures.LoopbackError(
            f"this machine's loopback address {LOOPBACK} does not accept connections ({exc}): the loopback "
            "interface looks down, and torchrun's rendezvous and gloo run over it, so nothing was started. "
            "Bring it up (as root: `ip link set lo up`) or run the notebook where it is up.") from exc


def loopback_env() -> dict[str, str]:
    """Environment that keeps gloo and NCCL on the loopback interface (else gloo resolves this machine's host name)."""
    names = [name for name, addrs in psutil.net_if_addrs().items()
             if any(a.family == socket.AF_INET and a.address == LOOPBACK for a in addrs)]
    return {"GLOO_SOCKET_IFNAME": names[0], "NCCL_SOCKET_IFNAME": names[0]} if names else {}


def torchrun_exe() -> list[str]:
    """This Python's torchrun (its module where the script is not installed)."""
    exe = Path(sys.executable).with_name("torchrun")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "torch.distributed.run"]


def collecting(log_dir: str | os.PathLike) -> list[str]:
    """The torchrun options that collect the ranks' output: teed with a prefix, kept in ``log_dir``."""
    return [f"--local-addr={LOOPBACK}", "--monitor-interval=0.1", "--tee=3", f"--log-dir={log_dir}"]


@declare.checked
def torchrun_command(script: str | os.PathLike, nprocs: Annotated[int, declare.Range(1, _MAX_PROCS)], args: _Args,
                     port: Annotated[int, declare.Range(1, 65535)], log_dir: str | os.PathLike) -> list[str]:
    """The torchrun command line: one node on 127.0.0.1, no restarts, ranks' output teed with a prefix."""
    return [*torchrun_exe(), "--nnodes=1", f"--nproc-per-node={nprocs}", f"--master-addr={LOOPBACK}",
            f"--master-port={port}", "--max-restarts=0", *collecting(log_dir), str(script), *map(str, args)]


@declare.checked
def pg_timeout_for(timeout: _Seconds) -> float:
    """The process-group timeout ``launch`` gives its ranks by default: half the launch's ``timeout``, at least 10 s."""
    return max(10.0, timeout / 2)


def ranks_on_cpu(nprocs: int, env: Mapping[str, str]) -> dict[str, str]:
    """``CUDA_VISIBLE_DEVICES=""`` when this runtime's GPUs are fewer than the ranks (a Colab T4 for 2 ranks): NCCL
    needs a GPU per rank, so every rank runs on the CPU over gloo and says so; nothing when ``env`` decides."""
    device = devices.current().device
    if device.kind != "gpu" or device.count >= nprocs or "CUDA_VISIBLE_DEVICES" in env:
        return {}
    print(f"{nprocs} ranks on {device.count} GPU ({device.name}): every rank runs on the CPU over gloo "
          "(NCCL needs a GPU per rank; a 2x T4 runtime runs them on the GPUs)", flush=True)
    return {"CUDA_VISIBLE_DEVICES": ""}


@declare.checked
def launch(script: str | os.PathLike, nprocs: Annotated[int, declare.Range(1, _MAX_PROCS)] = 2,
           timeout: _Seconds = 120.0, args: _Args = (), *, env: Mapping[str, str] | None = None, echo: bool = True,
           progress: bool = False, on_line: OnLine = None,
           pg_timeout: Annotated[float, declare.Range(1, _MAX_SECONDS)] | None = None) -> LaunchResult:
    """Run ``torchrun --nproc-per-node=nprocs script *args`` on 127.0.0.1, rank r's lines echoed as ``[rank r] ...``
    and given to ``on_line(rank, text)``; return what the ranks recorded. Raises ``LaunchError`` or its subclasses."""
    path = worker_path(script)
    pg_timeout = pg_timeout_for(timeout) if pg_timeout is None else pg_timeout
    extra = {worker.PG_TIMEOUT_ENV: f"{pg_timeout:g}", **ranks_on_cpu(nprocs, env or {}), **(env or {})}
    result, _, _ = run_jobs(lambda out: [torchrun_command(path, nprocs, args, free_port(), out / "logs0")], extra,
                            path.name, nprocs, timeout, echo=echo, progress=progress, on_line=on_line)
    return result


def run_jobs(commands: Callable[[Path], list[list[str]]], env: Mapping[str, str], name: str, nprocs: int,
             timeout: float, *, echo: bool, progress: bool, on_line: OnLine,
             node_ranks: dict[int, set[int]] | None = None) -> tuple[LaunchResult, list[list[str]], list[list[str]]]:
    """Run the torchrun lines ``commands(out)`` (node ``n`` logs into ``out/logs{n}``) side by side, each under its
    reaper; return the result, each node's lines and the lines run (``node_ranks[n]``: node ``n``'s global ranks)."""
    check_loopback()
    launch_id = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="course_launch_") as tmp:
        out = Path(tmp)
        runnable = commands(out)
        child_env = {**os.environ, "PYTHONUNBUFFERED": "1", worker.OUT_ENV: str(out), worker.ID_ENV: launch_id,
                     "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // nprocs)), **loopback_env(), **env}
        jobs: list[LaunchJob] = []
        try:
            for n, command in enumerate(runnable):
                (out / f"logs{n}").mkdir()
                jobs.append(LaunchJob(command, child_env, launch_id))
            per_node = _stream(jobs, timeout, name, nprocs, echo, progress, on_line, out, node_ranks)
            records, arrays = collect_outputs(out)
            return LaunchResult(name, nprocs, runnable[0], time.perf_counter() - jobs[0].start,
                                [line for node in per_node for line in node], records, arrays,
                                sorted({pid for job in jobs for pid in job.tracked})), per_node, runnable
        except failures.LaunchError as error:
            error.processes = [p for job in jobs for p in job.tracked.values()]  # what the launch saw: ``leftover``
            raise
        finally:
            for job in jobs:
                job.close()


class LaunchJob:
    """One torchrun process tree under its reaper: output pumped through a queue, processes tracked, and a
    ``close`` that ends them all whatever the learner presses meanwhile."""

    def __init__(self, command: list[str], env: dict[str, str], launch_id: str) -> None:
        self.launch_id, self.tracked, self.command = launch_id, {}, list(command)
        self.start = time.perf_counter()
        reaper = [sys.executable, str(WORKERS / "launch_reaper.py"), "--grace", f"{REAPER_GRACE:g}", "--", *command]
        self.proc = subprocess.Popen(reaper, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, start_new_session=True, bufsize=1)
        self.lines_q: queue.Queue[str | None] = queue.Queue()
        self.pump = threading.Thread(target=_pump, args=(self.proc.stdout, self.lines_q), daemon=True)
        self.pump.start()

    def close(self) -> None:
        """End every process of the job and wait until they are gone. A Ctrl-C meanwhile is held, and raised
        once everything is gone (unless an exception, such as the first Ctrl-C, is already on its way out)."""
        with failures.HeldInterrupts() as held:
            self._stop()
            self.pump.join(timeout=5)  # the pipe reaches EOF once every process holding it is gone
            if not self.pump.is_alive() and self.proc.stdout is not None:
                self.proc.stdout.close()
        if held.pressed and sys.exc_info()[0] is None:
            raise KeyboardInterrupt

    def _stop(self) -> None:
        """Tell the reaper to stop the job and wait for it; if the reaper itself is gone or stuck, kill the tree."""
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.close()
        except (OSError, ValueError):  # the reaper has already exited (the job ended): nothing to tell it
            pass
        try:
            self.proc.wait(timeout=REAPER_GRACE + 30)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.returncode is None or not sys.platform.startswith("linux"):
            failures.kill_tree(self.proc, self.tracked, self.launch_id)  # last resort, or no subreaper on this system


def _pump(stream: Any, lines_q: queue.Queue) -> None:
    for line in stream:
        lines_q.put(line)
    lines_q.put(None)


def _stream(jobs: list[LaunchJob], timeout: float, name: str, nprocs: int, echo: bool, progress: bool,
            on_line: OnLine, out: Path, node_ranks: dict[int, set[int]] | None) -> list[list[str]]:
    """Pump every node's output until all reapers exit; raise at the first node that fails or at the timeout."""
    per_node: list[list[str]] = [[] for _ in jobs]
    arrival: list[str] = []
    running, bar, next_scan, start = set(range(len(jobs))), None, 0.0, jobs[0].start
    nodes = f" on {len(jobs)} nodes" if len(jobs) > 1 else f" x {nprocs}"
    try:
        while running:
            now = time.perf_counter()
            if now > next_scan:
                for n, job in enumerate(jobs):
                    failures.track_processes(job.proc.pid, job.tracked)
                    if node_ranks is not None:
                        node_ranks[n].update(failures.ranks(job.tracked))
                next_scan = now + 0.2
            if now - start > timeout:
                shown = [f"[rank {r}] {t}" for r, t in failures.learner_lines(arrival)[-10:]]
                raise failures.LaunchTimeout(f"{name}{nodes} did not finish within {timeout:g} s; all its processes "
                                             "were killed. Last lines of the ranks:\n"
                                             + "\n".join(shown or ["(no rank printed anything)"]), output=arrival)
            idle = True
            for n in sorted(running):
                while not jobs[n].lines_q.empty():
                    line, idle = jobs[n].lines_q.get(), False
                    if line is None:
                        jobs[n].proc.wait()
                        running.discard(n)
                        if jobs[n].proc.returncode != 0:
                            who = f"{name} (node {n} failed first)" if len(jobs) > 1 else name
                            code = jobs[n].proc.returncode
                            raise failures.launch_failure(who, nprocs, code, arrival, out / f"logs{n}")
                        break
                    per_node[n].append(line.rstrip("\n"))
                    arrival.append(line.rstrip("\n"))
                    bar = show_line(arrival[-1], bar, name, nprocs, echo=echo, progress=progress, on_line=on_line,
                                    seconds=max(1.0, timeout - (time.perf_counter() - start)),
                                    where=f"node {n} " if len(jobs) > 1 else "")
            if idle:
                time.sleep(0.05)
    finally:
        if bar is not None:
            bar.close()
    return per_node


def show_line(line: str, bar: Any, name: str, nprocs: int, *, echo: bool, progress: bool,
              on_line: Callable[[int | None, str], None] | None, seconds: float, where: str = "") -> Any:
    """One line of torchrun's output: a progress tick moves the bar (returned), any other line goes to ``on_line``
    (for at most ``seconds``, then the launch stops naming it) and is echoed."""
    match = failures.RANK_LINE.match(line)
    rank_, text = (int(match.group(1)), match.group(2)) if match else (None, line)
    tick = failures.PROGRESS_LINE.match(text)
    if tick and not progress:
        return None
    if tick:  # one bar per launch, created on the first report
        if bar is None:
            from tqdm.auto import tqdm

            bar = tqdm(total=int(tick.group(2)), desc=f"{name} x {nprocs}", unit="phase", leave=False)
        bar.n = min(int(tick.group(1)), bar.total)
        bar.refresh()
        return bar
    if on_line is not None:  # the learner's callable: it may not hold the launch past its timeout
        with calls.time_limit(seconds, calls.describe(on_line)):
            on_line(rank_, text)
    if echo and rank_ is not None and text.strip():
        print(f"[{where}rank {rank_}] {text}", flush=True)
    return bar


def collect_outputs(out: Path) -> tuple[dict[int, list[dict[str, Any]]], dict[str, dict[int, dict[str, np.ndarray]]]]:
    """The records each rank emitted and the arrays each rank saved, read from a launch's output folder."""
    records: dict[int, list[dict[str, Any]]] = {}
    for f in sorted(out.glob("rank*.jsonl")):
        records[int(f.stem[4:])] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    arrays: dict[str, dict[int, dict[str, np.ndarray]]] = {}
    for f in sorted(out.glob("*.rank*.npz")):
        name, rank_ = f.name[: -len(".npz")].rsplit(".rank", 1)
        with np.load(f) as data:
            arrays.setdefault(name, {})[int(rank_)] = {k: data[k] for k in data.files}
    return records, arrays
