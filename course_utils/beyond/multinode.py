"""Several torchrun "nodes" on one machine: one launcher process per node, joined by a c10d rendezvous.

On a cluster every machine runs the same ``torchrun --nnodes=N --rdzv-backend=c10d --rdzv-endpoint=<node0>:<port>``
command; here ``launch_nodes`` starts those N launcher processes side by side on 127.0.0.1, each with its own
``--nproc-per-node`` workers. As with ``launch``: the ranks' lines stream into the cell (``[node n rank r]``),
what the workers ``emit``/``save`` is collected, a failing rank raises ``LaunchError`` naming it with its
traceback, and every process of every node is gone when the call returns (success, error, timeout, Ctrl-C).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_utils import data, display, models, validate
from course_utils.distributed import failures, launcher, worker

PREFIX_TEMPLATE = "[${role_name}${rank}]:"  # torchrun's line prefix with the GLOBAL rank (default: local rank)
_MAX_NODES = 16


def node_command(script: str | os.PathLike, *, nnodes: int, node_rank: int, nproc_per_node: int, port: int,
                 log_dir: str | os.PathLike, args: Sequence[Any] = (), job_id: str = "course",
                 max_restarts: int = 0, host: str = launcher.LOOPBACK) -> list[str]:
    """The torchrun command one node runs: c10d rendezvous at ``host:port``, loopback addresses only."""
    nnodes = validate.number("nnodes", nnodes, low=1, high=_MAX_NODES, integer=True)
    node_rank = validate.number("node_rank", node_rank, low=0, high=nnodes - 1, integer=True)
    nproc_per_node = validate.number("nproc_per_node", nproc_per_node, low=1, high=64, integer=True)
    port = validate.number("port", port, low=1, high=65535, integer=True)
    max_restarts = validate.number("max_restarts", max_restarts, low=0, high=10, integer=True)
    validate.instance("args", args, (list, tuple))
    validate.text("job_id", job_id)
    validate.text("host", host)
    path = launcher.worker_path(script)
    exe = Path(sys.executable).with_name("torchrun")
    torchrun = [str(exe)] if exe.exists() else [sys.executable, "-m", "torch.distributed.run"]
    return [*torchrun, f"--nnodes={nnodes}", f"--nproc-per-node={nproc_per_node}", f"--node-rank={node_rank}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint={host}:{port}", f"--rdzv-id={job_id}",
            f"--local-addr={launcher.LOOPBACK}", f"--max-restarts={max_restarts}", "--monitor-interval=0.1",
            "--tee=3", f"--log-dir={log_dir}", str(path), *map(str, args)]


@dataclass(repr=False)
class NodesResult(launcher.LaunchResult):
    """A finished multi-node launch: ``LaunchResult`` plus one command and one output list per node.

    ``node_ranks[n]``: the global ranks node ``n`` ran (its worker processes' ``RANK``, its output's rank prefixes).
    """

    commands: list[list[str]] = field(default_factory=list)
    node_output: list[list[str]] = field(default_factory=list)
    node_ranks: dict[int, list[int]] = field(default_factory=dict)

    def table(self) -> display.Table:
        base = super().table()
        nodes = len(self.commands)
        return display.Table(base.header, base.rows, title=f"{self.script}: {nodes} torchrun nodes x "
                             f"{self.nprocs // max(nodes, 1)} processes, {self.seconds:.1f} s wall "
                             "(start-up and rendezvous included)")


def launch_nodes(script: str | os.PathLike, nnodes: int = 2, nproc_per_node: int = 1, timeout: float = 120.0,
                 args: Sequence[Any] = (), *, max_restarts: int = 0, env: dict[str, str] | None = None,
                 echo: bool = True, progress: bool = True,
                 on_line: Callable[[int | None, str], None] | None = None) -> NodesResult:
    """Run ``nnodes`` torchrun launchers (``node_command``) for ``script`` and return what all ranks recorded.

    ``max_restarts`` > 0 lets torchrun restart the whole group after a worker dies (elastic training).
    """
    path = launcher.worker_path(script)
    nnodes = validate.number("nnodes", nnodes, low=1, high=_MAX_NODES, integer=True)
    nproc_per_node = validate.number("nproc_per_node", nproc_per_node, low=1, high=64, integer=True)
    timeout = validate.positive("timeout", timeout)
    extra = launcher.launch_options(args, env, echo=echo, progress=progress, on_line=on_line)
    total = nnodes * nproc_per_node
    launch_id = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="course_nodes_") as tmp:
        out, port = Path(tmp), launcher.free_port()
        commands = [node_command(path, nnodes=nnodes, node_rank=n, nproc_per_node=nproc_per_node, port=port,
                                 log_dir=out / f"logs{n}", args=[str(a) for a in args], job_id=launch_id[:8],
                                 max_restarts=max_restarts) for n in range(nnodes)]
        child_env = {**os.environ, "PYTHONUNBUFFERED": "1", worker.OUT_ENV: str(out), worker.ID_ENV: launch_id,
                     "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // total)),
                     "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": PREFIX_TEMPLATE, **launcher.loopback_env(),
                     **_shared_gpu_env(total), **extra}
        jobs: list[Any] = []
        try:
            for command in commands:
                jobs.append(launcher.LaunchJob(command, child_env, launch_id))
            node_ranks: dict[int, set[int]] = {n: set() for n in range(nnodes)}
            per_node = _stream(jobs, timeout, path.name, total, echo, progress, on_line, node_ranks, out)
            for n, node_lines in enumerate(per_node):  # a rank that ended between two scans still printed
                node_ranks[n].update(int(m.group(1)) for m in map(failures.RANK_LINE.match, node_lines) if m)
            seconds = time.perf_counter() - jobs[0].start
            lines = [line for node in per_node for line in node]
            records, arrays = launcher.collect_outputs(out)
            pids = sorted({pid for job in jobs for pid in job.tracked})
            return NodesResult(path.name, total, commands[0], seconds, lines, records, arrays, pids,
                               commands=commands, node_output=per_node,
                               node_ranks={n: sorted(r) for n, r in node_ranks.items()})
        finally:
            for job in jobs:
                job.close()


def _shared_gpu_env(total: int) -> dict[str, str]:
    """Hide the GPUs when this machine has fewer than one per rank of all its "nodes" together.

    Each node's ``LOCAL_WORLD_SIZE`` counts only its own ranks, so on a 1-GPU machine two 1-rank nodes would
    both bind GPU 0 and NCCL would refuse the duplicate GPU; without GPUs the workers fall back to gloo.
    """
    import torch

    return {"CUDA_VISIBLE_DEVICES": ""} if 0 < torch.cuda.device_count() < total else {}


def _stream(jobs: list[Any], timeout: float, name: str, total: int, echo: bool, progress: bool,
            on_line: Callable[[int | None, str], None] | None, node_ranks: dict[int, set[int]],
            out: Path) -> list[list[str]]:
    """Pump every node's output until all launchers exit; raise at the first node that fails or at timeout.

    ``node_ranks[n]`` collects the global ranks (``RANK`` of the worker processes) that node ``n`` started, as
    far as the scans every 0.2 s saw them; ``out / f"logs{n}"`` is node ``n``'s torchrun log folder.
    """
    per_node: list[list[str]] = [[] for _ in jobs]
    arrival: list[str] = []
    running, bar, next_scan = set(range(len(jobs))), None, 0.0
    start = jobs[0].start
    try:
        while running:
            now = time.perf_counter()
            if now > next_scan:
                for n, job in enumerate(jobs):
                    launcher.track_processes(job.proc.pid, job.tracked)
                    node_ranks[n].update(_ranks(job.tracked))
                next_scan = now + 0.2
            if now - start > timeout:
                shown = [f"[rank {r}] {t}" for r, t in failures.learner_lines(arrival)[-10:]] or ["(no rank printed)"]
                raise failures.LaunchTimeout(f"{name} on {len(jobs)} nodes did not finish within {timeout:g} s; all "
                                            "processes of all nodes were killed. Last lines of the ranks:\n"
                                            + "\n".join(shown), output=arrival)
            idle = True
            for n in sorted(running):
                while True:
                    try:
                        line = jobs[n].lines_q.get_nowait()
                    except Exception:  # queue.Empty
                        break
                    idle = False
                    if line is None:
                        jobs[n].proc.wait()
                        running.discard(n)
                        if jobs[n].proc.returncode != 0:
                            raise failures.launch_failure(f"{name} (node {n} failed first)", total,
                                                          jobs[n].proc.returncode, arrival, out / f"logs{n}")
                        break
                    line = line.rstrip("\n")
                    per_node[n].append(line)
                    arrival.append(line)
                    bar = _show(line, n, bar, name, total, echo, progress, on_line)
            if idle:
                time.sleep(0.05)
    finally:
        if bar is not None:
            bar.close()
    return per_node


def _show(line: str, node: int, bar: Any, name: str, total: int, echo: bool, progress: bool,
          on_line: Callable[[int | None, str], None] | None) -> Any:
    match = failures.RANK_LINE.match(line)
    rank_, text = (int(match.group(1)), match.group(2)) if match else (None, line)
    tick = failures.PROGRESS_LINE.match(text)
    if tick:
        return launcher.advance_progress(bar, int(tick.group(1)), int(tick.group(2)), name, total, progress)
    if on_line is not None:
        on_line(rank_, text)
    if echo and rank_ is not None and text.strip():
        print(f"[node {node} rank {rank_}] {text}", flush=True)
    return bar


def _ranks(tracked: dict[int, Any]) -> set[int]:
    """The RANK environment variable of the worker processes among ``tracked`` (psutil processes)."""
    found = set()
    for p in tracked.values():
        try:
            value = p.environ().get("RANK")
        except Exception:  # psutil.Error: gone or not ours
            continue
        if value is not None and value.isdigit():
            found.add(int(value))
    return found


# ---------------------------------------------------------------------------------------------------------
# What the notebook checks and shows


def ddp_reference(steps: int = 20, batch: int = 64, every: int = 5, lr: float = 0.1) -> dict[str, Any]:
    """One process, whole batches: the weights ``ddp_train.py``'s proof phase must reproduce, per checkpoint."""
    import torch

    steps = validate.positive("steps", steps, integer=True)
    batch = validate.positive("batch", batch, integer=True)
    every = validate.positive("every", every, integer=True)
    lr = validate.positive("lr", lr)
    x_all, y_all = data.classification(steps * batch, seed=0)
    model = models.torch_mlp()
    step = models.torch_sgd_step(model, lr=lr)
    snapshots = {}
    for s in range(steps):
        step((torch.from_numpy(x_all[s * batch:(s + 1) * batch]), torch.from_numpy(y_all[s * batch:(s + 1) * batch])))
        if (s + 1) % every == 0:
            snapshots[f"step{s + 1}"] = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
    return snapshots


def proof_diffs(result: launcher.LaunchResult, reference: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Max |difference| per checkpoint: every rank vs rank 0 ("ranks") and rank 0 vs ``reference`` ("single")."""
    import numpy as np

    validate.instance("result", result, launcher.LaunchResult)
    validate.non_empty("reference", reference)
    proof = result.arrays.get("proof")
    if not proof:
        raise ValueError("result holds no 'proof' arrays: launch ddp_train.py with the proof phase")
    ranks = {c: max(float(np.max(np.abs(proof[r][c] - proof[0][c]))) for r in proof) for c in reference}
    single = {c: float(np.max(np.abs(proof[0][c] - reference[c]))) for c in reference}
    return {"ranks": ranks, "single": single}


def time_split(result: Any) -> dict[str, float]:
    """Where a ``ddp_train.py`` launch's wall time went (seconds): "wall", "phases" (rank 0's phases, measured by
    the worker), "startup" (the slowest rank's process start to joined group: imports and rendezvous, measured),
    "outside" (wall minus phases, computed: torchrun's start, the ranks' start-up, shut-down)."""
    validate.instance("result", result, launcher.LaunchResult)
    phases = float(sum(result.record("phases", 0)["seconds"].values()))
    startup = max(float(result.record("startup", r)["seconds"]) for r in sorted(result.records))
    return {"wall": float(result.seconds), "phases": phases, "startup": startup,
            "outside": float(result.seconds) - phases}


def cluster_commands(host: str = "node0.example", nnodes: int = 2, nproc_per_node: int = 8) -> str:
    """The commands for a real cluster of ``nnodes`` machines (text): torchrun, jax.distributed, TF_CONFIG."""
    validate.text("host", host)
    nnodes = validate.number("nnodes", nnodes, low=2, high=4096, integer=True)
    nproc_per_node = validate.number("nproc_per_node", nproc_per_node, low=1, high=64, integer=True)
    if nnodes <= 4:  # the JSON written out; the shell splices in $NODE_INDEX between the single-quoted parts
        workers = ", ".join(f'"node{i}.example:12345"' for i in range(nnodes))
        tf_line = (f'export TF_CONFIG=\'{{"cluster": {{"worker": [{workers}]}}, "task": {{"type": "worker", '
                   f'"index": \'"$NODE_INDEX"\'}}}}\'')
    else:  # too many hosts to write out: let Python build the same JSON
        tf_line = ("export TF_CONFIG=\"$(python -c 'import json, os; print(json.dumps({\"cluster\": {\"worker\": "
                   f'[f\"node{{i}}.example:12345\" for i in range({nnodes})]}}, \"task\": {{\"type\": \"worker\", '
                   '\"index\": int(os.environ[\"NODE_INDEX\"])}}))\')\"')
    return "\n".join([
        f"export NODE_INDEX=0   # this machine's index, 0 to {nnodes - 1} (0 on {host}): set it on every machine",
        "",
        "# PyTorch: the SAME line on every machine (c10d elects the store host; ranks come from the rendezvous)",
        "export NCCL_SOCKET_IFNAME=eth0 GLOO_SOCKET_IFNAME=eth0   # the NIC that reaches the other nodes",
        f"torchrun --nnodes={nnodes} --nproc-per-node={nproc_per_node} --rdzv-backend=c10d \\",
        f"         --rdzv-endpoint={host}:29400 --rdzv-id=job42 --max-restarts=3 course_utils/workers/ddp_train.py",
        "",
        "# JAX: one process per machine (all its accelerators) or per GPU, before any other JAX call",
        f'jax.distributed.initialize(coordinator_address="{host}:1234", num_processes={nnodes},',
        '                           process_id=int(os.environ["NODE_INDEX"]))',
        f"#   or one process per GPU: num_processes={nnodes * nproc_per_node}, process_id = NODE_INDEX x "
        f"{nproc_per_node} + LOCAL_RANK, local_device_ids=[LOCAL_RANK]",
        "#   (on Cloud TPU pods and SLURM, jax.distributed.initialize() with no arguments finds all three itself)",
        "",
        "# TensorFlow: each machine sets its own TF_CONFIG (same cluster, its own index), then builds the strategy",
        tf_line,
        "strategy = tf.distribute.MultiWorkerMirroredStrategy()",
    ])


def hang_checklist() -> display.Table:
    """What to check first when a multi-node job hangs at start-up or mid-run, in order."""
    rows = (
        ("1", "Can every node reach the endpoint?", "nc -zv node0.example 29400 from each node; firewalls"),
        ("2", "Same --nnodes, --rdzv-id, endpoint, script, versions?", "a node with other flags waits forever"),
        ("3", "Right network interface?", "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME; NCCL_DEBUG=INFO shows the NIC"),
        ("4", "Which rank is missing?", "TORCH_DISTRIBUTED_DEBUG=DETAIL; py-spy dump --pid on the stuck rank"),
        ("5", "Mismatched collectives?", "a rank skipped or added an all-reduce (data-dependent branch, uneven data)"),
        ("6", "Set a timeout", "init_process_group(timeout=...), TORCH_NCCL_ASYNC_ERROR_HANDLING=1: fail, don't hang"),
    )
    return display.Table(("#", "check", "how"), rows, title="A multi-node job hangs: check in this order")
