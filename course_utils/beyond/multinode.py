"""Several torchrun "nodes" on one machine, joined by a c10d rendezvous: the learner's own lines (``run_nodes``) or
those ``node_command`` writes (``launch_nodes``); the proof's reference, and the lines for a real cluster."""

from __future__ import annotations

import os
import shlex
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from course_utils import data, declare, display, models, timing, validate
from course_utils.distributed import failures, launcher

PREFIX_TEMPLATE = "[${role_name}${rank}]:"  # torchrun's line prefix with the GLOBAL rank (default: local rank)
_MAX_NODES = 16
HOST = r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]"  # a name, an IPv4, a [v6]
HOST_MEANING = "a host name or IP address (letters, digits, '.' and '-'; IPv6 in brackets)"
_PLUMBING = ("--tee", "--log-dir", "--local-addr", "--monitor-interval", "--redirects")  # set by run_nodes


@declare.checked
def node_command(script: str | os.PathLike, *, nnodes: Annotated[int, declare.Range(1, _MAX_NODES)],
                 node_rank: Annotated[int, declare.Range(0, _MAX_NODES - 1)],
                 nproc_per_node: Annotated[int, declare.Range(1, 64)], port: Annotated[int, declare.Range(1, 65535)],
                 args: launcher._Args = (), job_id: declare.Text = "course",
                 max_restarts: Annotated[int, declare.Range(0, 10)] = 0,
                 host: Annotated[str, declare.Matches(HOST, HOST_MEANING)] = launcher.LOOPBACK) -> list[str]:
    """The torchrun command one node runs, as a learner types it: c10d rendezvous at ``host:port``."""
    validate.number("node_rank", node_rank, high=nnodes - 1)
    path = launcher.worker_path(script)
    return ["torchrun", f"--nnodes={nnodes}", f"--nproc-per-node={nproc_per_node}", f"--node-rank={node_rank}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint={host}:{port}", f"--rdzv-id={job_id}",
            f"--max-restarts={max_restarts}", str(path), *map(str, args)]


@dataclass(frozen=True)
class NodeCommand:
    """One node's torchrun line, read: its ``--key=value`` options, the worker script and the script's arguments."""

    options: dict[str, str]
    script: Path
    args: tuple[str, ...]

    @property
    def nnodes(self) -> int:
        return int(self.options["--nnodes"])

    @property
    def nproc_per_node(self) -> int:
        return int(self.options.get("--nproc-per-node", "1"))

    def runnable(self, log_dir: Path) -> list[str]:
        """The line as run here: this Python's torchrun, plus the options that collect the ranks' output."""
        options = [f"{k}={v}" for k, v in {"--max-restarts": "0", **self.options}.items()]
        return [*launcher.torchrun_exe(), *options, *launcher.collecting(log_dir), str(self.script), *self.args]


def read_command(command: str | Sequence[str]) -> NodeCommand:
    """Read one torchrun line (a string or its tokens), ``torchrun --key=value ... script.py [args]``: the first token
    without ``--`` is the script (a path or a file of ``course_utils/workers``). Raises ValueError on anything else."""
    if isinstance(command, str):
        tokens = shlex.split(command)
    elif isinstance(command, (list, tuple)) and all(isinstance(t, str) for t in command):
        tokens = list(command)
    else:
        raise TypeError(f"command must be a string or a list of strings; got {command!r:.80}")
    if not tokens or Path(tokens[0]).name != "torchrun":
        raise ValueError(f"command must start with 'torchrun'; got {' '.join(tokens)[:80]!r}")
    options: dict[str, str] = {}
    at = next((i for i, token in enumerate(tokens[1:], start=1) if not token.startswith("--")), None)
    if at is None:
        raise ValueError(f"command names no worker script: {' '.join(tokens)[:80]!r}")
    for token in tokens[1:at]:
        key, eq, value = token.partition("=")
        if not eq:
            raise ValueError(f"command: write torchrun options as --key=value; got {token!r}")
        if key in _PLUMBING:
            raise ValueError(f"command: {key} is set by run_nodes to collect the ranks' output; leave it out")
        options[key.replace("_", "-")] = value
    script = launcher.worker_path(tokens[at])
    if options.get("--rdzv-backend") != "c10d" or "--rdzv-endpoint" not in options:
        raise ValueError("command: a multi-node job needs --rdzv-backend=c10d and --rdzv-endpoint=<host>:<port>")
    if not options.get("--nnodes", "").isdigit():
        raise ValueError("command: --nnodes=<number of machines> is missing")
    validate.number("command (--nnodes)", int(options["--nnodes"]), low=1, high=_MAX_NODES)
    per_node = options.get("--nproc-per-node", "1")
    if not per_node.isdigit():
        raise ValueError(f"command: --nproc-per-node must be a number of processes here; got {per_node!r}")
    validate.number("command (--nproc-per-node)", int(per_node), low=1, high=64)
    return NodeCommand(options, script, tuple(tokens[at + 1:]))


@dataclass(repr=False)
class NodesResult(launcher.LaunchResult):
    """A finished multi-node launch: ``LaunchResult`` plus per node its command, output and global ranks
    (``node_ranks``, from its processes' ``RANK`` and its output's prefixes)."""

    commands: list[list[str]] = field(default_factory=list)
    node_output: list[list[str]] = field(default_factory=list)
    node_ranks: dict[int, list[int]] = field(default_factory=dict)

    def table(self) -> display.Table:
        base = super().table()
        nodes = len(self.commands)
        return display.Table(base.header, base.rows, title=f"{self.script}: {nodes} torchrun nodes x "
                             f"{self.nprocs // max(nodes, 1)} processes, {self.seconds:.1f} s wall "
                             "(start-up and rendezvous included)")


@declare.checked
def run_nodes(commands: Annotated[Sequence[str | Sequence[str]], declare.NonEmpty, declare.MaxItems(_MAX_NODES)],
              timeout: Annotated[float, declare.Range(1, 24 * 3600)] = 120.0, *,
              env: Mapping[str, str] | None = None, echo: bool = True, progress: bool = False,
              on_line: launcher.OnLine = None) -> NodesResult:
    """Run one torchrun line per node side by side (they agree on ``--nnodes``, the endpoint on 127.0.0.1, the id and
    the script); return what all ranks recorded. ``--max-restarts`` > 0 restarts the group after a worker dies."""
    extra = dict(env or {})
    nodes = [read_command(c) for c in commands]
    first = nodes[0]
    for key in ("--nnodes", "--rdzv-endpoint", "--rdzv-id", "--nproc-per-node"):
        if len({n.options.get(key) for n in nodes}) > 1:
            raise ValueError(f"commands: every node must give the same {key}; got "
                             f"{[n.options.get(key) for n in nodes]}")
    if first.nnodes != len(nodes) or len({(n.script, n.args) for n in nodes}) > 1:
        raise ValueError(f"commands: {len(nodes)} lines must run the same script with --nnodes={len(nodes)}")
    if not first.options["--rdzv-endpoint"].startswith(f"{launcher.LOOPBACK}:"):
        raise ValueError(f"commands: on this machine the endpoint is {launcher.LOOPBACK}:<port>; got "
                         f"{first.options['--rdzv-endpoint']!r}")
    total, name = len(nodes) * first.nproc_per_node, first.script.name
    env = {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": PREFIX_TEMPLATE, **launcher.ranks_on_cpu(total, extra), **extra}
    node_ranks: dict[int, set[int]] = {n: set() for n in range(len(nodes))}
    result, per_node, runnable = launcher.run_jobs(
        lambda out: [node.runnable(out / f"logs{n}") for n, node in enumerate(nodes)], env, name, total, timeout,
        echo=echo, progress=progress, on_line=on_line, node_ranks=node_ranks)
    for n, node_lines in enumerate(per_node):  # a rank that ended between two scans still printed
        node_ranks[n].update(int(m.group(1)) for m in map(failures.RANK_LINE.match, node_lines) if m)
    return NodesResult(**vars(result), commands=runnable, node_output=per_node,
                       node_ranks={n: sorted(r) for n, r in node_ranks.items()})


@declare.checked
def launch_nodes(script: str | os.PathLike, nnodes: Annotated[int, declare.Range(1, _MAX_NODES)] = 2,
                 nproc_per_node: Annotated[int, declare.Range(1, 64)] = 1,
                 timeout: Annotated[float, declare.Range(1, 24 * 3600)] = 120.0, args: launcher._Args = (), *,
                 max_restarts: Annotated[int, declare.Range(0, 10)] = 0, env: Mapping[str, str] | None = None,
                 echo: bool = True, progress: bool = False, on_line: launcher.OnLine = None) -> NodesResult:
    """``run_nodes`` with the lines ``node_command`` writes for ``script``: ``nnodes`` nodes on a free port."""
    port, job_id = launcher.free_port(), uuid.uuid4().hex[:8]
    commands = [node_command(script, nnodes=nnodes, node_rank=n, nproc_per_node=nproc_per_node, port=port,
                             args=args, job_id=job_id, max_restarts=max_restarts) for n in range(nnodes)]
    return run_nodes(commands, timeout, env=env, echo=echo, progress=progress, on_line=on_line)


# ---------------------------------------------------------------------------------------------------------
# What the notebook checks and shows


@declare.checked
def ddp_reference(steps: launcher.Steps = 20, batch: launcher.Batch = 64, every: launcher.Steps = 5,
                  lr: Annotated[float, declare.Range(1e-6, 10)] = 0.1, *, seed: int = 0,
                  momentum: Annotated[float, declare.Range(0, 1, high_open=True)] = 0.0) -> dict[str, Any]:
    """One process, whole batches: the weights ``ddp_train.py``'s proof phase must reproduce, per checkpoint."""
    import torch

    validate.number("every", every, high=steps)
    x_all, y_all = data.classification(steps * batch, seed=seed)
    model = models.torch_mlp()
    step = models.torch_sgd_step(model, lr=lr, momentum=momentum)
    snapshots = {}
    for s in range(steps):
        step((torch.from_numpy(x_all[s * batch:(s + 1) * batch]), torch.from_numpy(y_all[s * batch:(s + 1) * batch])))
        if (s + 1) % every == 0:
            snapshots[f"step{s + 1}"] = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
    return snapshots


@declare.checked
def proof_diffs(result: launcher.LaunchResult,
                reference: Annotated[Mapping[str, Any], declare.NonEmpty]) -> dict[str, dict[str, float]]:
    """Max |difference| per checkpoint: every rank vs rank 0 ("ranks") and rank 0 vs ``reference`` ("single")."""
    import numpy as np

    proof = result.arrays.get("proof")
    if not proof:
        raise ValueError("result holds no 'proof' arrays: launch ddp_train.py with the proof phase")
    ranks = {c: max(float(np.max(np.abs(proof[r][c] - proof[0][c]))) for r in proof) for c in reference}
    single = {c: float(np.max(np.abs(proof[0][c] - reference[c]))) for c in reference}
    return {"ranks": ranks, "single": single}


@declare.checked
def facts(result: NodesResult) -> dict[str, Any]:
    """Each node's ranks, the ``backend``, and where the wall went (to 0.1 s): rank 0's "phases", the slowest rank's
    "startup" (start to joined group), and "outside" (torchrun, the ranks' start-up, exit)."""
    ranks = {node: ", ".join(map(str, result.node_ranks.get(node, []))) or "none" for node in (0, 1)}
    phases = float(sum(result.record("phases", 0)["seconds"].values()))
    startup = max(float(result.record("startup", r)["seconds"]) for r in sorted(result.records))
    split = timing.time_split(result.seconds, {"phases": phases, "startup": startup}, inside=phases)
    return {"node0": ranks[0], "node1": ranks[1], "backend": backend(result),
            **{k: round(v, 1) for k, v in split.items()}}


@declare.checked
def backend(result: launcher.LaunchResult) -> str:
    """The backend ``ddp_train.py``'s rank 0 said it joined with ("gloo" or "nccl"), from its own line."""
    for rank_, text in result.lines:
        if rank_ == 0 and text.startswith("backend "):
            return text.split()[1]
    raise ValueError("result holds no 'backend ...' line of rank 0: pass a launch of ddp_train.py")


@declare.checked
def cluster_commands(host: Annotated[str, declare.Matches(HOST, HOST_MEANING)] = "node0.example",
                     nnodes: Annotated[int, declare.Range(2, 4096)] = 2,
                     nproc_per_node: Annotated[int, declare.Range(1, 64)] = 8) -> str:
    """The commands for a real cluster of ``nnodes`` machines (text): torchrun, jax.distributed, TF_CONFIG."""
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
        ("6", "How long until a stuck collective fails?",
         "init_process_group(timeout=timedelta(minutes=5)); the default waits 10 min (NCCL) or 30 min (gloo). On "
         "timeout NCCL tears the process down already: TORCH_NCCL_ASYNC_ERROR_HANDLING defaults to 3 in torch 2.13 "
         "(torchrun sets 1 unless you set it), so leave it alone"),
        ("7", "What did each rank run last?",
         "set TORCH_NCCL_DUMP_ON_TIMEOUT=1: on a timeout every rank then dumps the flight recorder, its last "
         "collectives (kept by default: TORCH_FR_BUFFER_SIZE, 2000 entries in torch 2.13; file prefix: "
         "TORCH_FR_DUMP_TEMP_FILE); torchfrtrace <folder> names the rank and collective that diverged"),
    )
    return display.Table(("#", "check", "how"), rows, title="A multi-node job hangs: check in this order")
