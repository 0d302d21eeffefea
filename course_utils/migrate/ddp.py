"""``assess --nproc-per-node N`` (and ``--nnodes``): each fresh process a torchrun job, every variant in DDP, and a
variant under ``no_sync()`` for the all-reduce's share (``comm_share``); node 0 reports."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_utils import intervals, validate
from course_utils.distributed import launcher

NO_SYNC = "eager DDP, no all-reduce"  # the variant that measures what the all-reduce costs


@dataclass(frozen=True)
class Ranks:
    """This process's place in the job: rank, world size, backend, device (world 1: no process group), local rank."""

    rank: int
    world: int
    backend: str | None
    device: str
    local: int = 0


def join(device: str) -> Ranks:
    """Join torchrun's process group when ``WORLD_SIZE`` > 1 (a GPU per rank: NCCL; else gloo on the CPU)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return Ranks(0, 1, None, device)
    import torch
    import torch.distributed as dist

    local = int(os.environ["LOCAL_RANK"])
    on_gpus = device == "cuda" and torch.cuda.device_count() >= int(os.environ.get("LOCAL_WORLD_SIZE", world))
    backend = "nccl" if on_gpus else "gloo"
    dist.init_process_group(backend)
    if on_gpus:
        torch.cuda.set_device(local)
    return Ranks(dist.get_rank(), world, backend, f"cuda:{local}" if on_gpus else "cpu", local)


def leave(ranks: Ranks) -> None:
    """Leave the process group ``join`` joined (every rank at once: nothing is in flight after ``measure``)."""
    if ranks.world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()


def wrap(model: Any, ranks: Ranks) -> Any:
    """``model`` in ``DistributedDataParallel`` when the job has several ranks; itself otherwise."""
    if ranks.world == 1:
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[int(ranks.device.split(":")[1])] if ":" in ranks.device
                                   else None)


def buckets(model: Any) -> int | None:
    """How many buckets DDP reduced in its last step (its own logging data); None outside DDP."""
    inner = getattr(model, "_orig_mod", model)
    data = getattr(inner, "_get_ddp_logging_data", None)
    return int(data().get("num_buckets_reduced", 0)) if data else None


def check_nodes(nnodes: int, node_rank: int, endpoint: str | None) -> None:
    """Refuse a node rank outside ``range(nnodes)``, several nodes without an endpoint, or an endpoint for one node."""
    validate.number("node_rank", node_rank, low=0, high=nnodes - 1, integer=True)
    if nnodes > 1 and not endpoint:
        raise ValueError(f"rdzv_endpoint: {nnodes} nodes meet at a rendezvous endpoint HOST:PORT that every node "
                         "reaches (node 0's address and a free port); give --rdzv-endpoint")
    if nnodes == 1 and endpoint:
        raise ValueError("rdzv_endpoint: one node runs on 127.0.0.1; the endpoint is for --nnodes 2 or more")


def command(worker: Path, args: Sequence[str], nproc: int, log_dir: Path, *, nnodes: int = 1, node_rank: int = 0,
            endpoint: str | None = None, run_id: str = "0") -> tuple[list[str], dict[str, str]]:
    """The torchrun command of one fresh process of ``nproc`` ranks and the environment it adds: on 127.0.0.1, or
    node ``node_rank`` of ``nnodes`` at ``endpoint`` (rendezvous ``run_id``: every node's job i meets job i)."""
    local = nnodes == 1 or endpoint.rsplit(":", 1)[0] in (launcher.LOOPBACK, "localhost")
    env = {**(launcher.loopback_env() if local else {}), **launcher.ranks_on_cpu(nproc, os.environ),
           "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // nproc))}
    if nnodes == 1:
        return launcher.torchrun_command(worker, nproc, list(args), launcher.free_port(), log_dir), env
    return [*launcher.torchrun_exe(), f"--nnodes={nnodes}", f"--node-rank={node_rank}", f"--nproc-per-node={nproc}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", f"--rdzv-id=assess-{run_id}", "--max-restarts=0",
            *[a for a in launcher.collecting(log_dir) if local or not a.startswith("--local-addr")], str(worker),
            *args], env


def summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What the report says of a DDP run (ranks, backend, buckets, graphs, the all-reduce's share); None: one rank."""
    job = results[0].get("ddp")
    if not job:
        return None
    variants = results[0]["variants"]
    median = [statistics.median(r["variants"][name]["round_step_s"]) for name in ("eager", NO_SYNC) for r in results]
    return {**job, "subgraphs": {name: v["subgraphs"] for name, v in variants.items() if not name.startswith("eager")},
            "comm_share": comm_share(median[:len(results)], median[len(results):]),
            "on_cpu": job["backend"] == "gloo"}


def comm_share(eager: Sequence[float], no_sync: Sequence[float]) -> dict[str, float]:
    """The all-reduce's share of the eager DDP step, ``1 - no_sync / eager``, its interval across fresh processes."""
    ratio = intervals.speedup(list(eager), list(no_sync))
    share = [1 - 1 / r if r > 0 else -math.inf for r in (ratio.ratio, ratio.low, ratio.high)]
    return {"share": share[0], "low": share[1], "high": share[2], "processes": ratio.n}


def paragraph(job: Mapping[str, Any] | None) -> list[str]:
    """The report's paragraph on the job's scale (``summary``'s dict): ranks, backend, buckets, graphs, all-reduce."""
    if job is None:
        return []
    share, graphs = job["comm_share"], ", ".join(f"{n} ({call})" for call, n in job["subgraphs"].items())
    stand_in = (" Gloo on the CPU stands in for NCCL on GPUs: its all-reduce is slower, so its share is larger than "
                "a GPU job's." if job["on_cpu"] else "")
    nodes = job.get("nodes", 1)
    where = f"of {job['ranks']} ranks on 127.0.0.1" if nodes == 1 else (
        f"over {nodes} nodes x {job['ranks'] // nodes} rank(s) (world size {job['ranks']}), meeting at "
        f"{job['endpoint']} (c10d rendezvous)")
    return [f"Each fresh process was one torchrun job {where}, DDP over "
            f"{job['backend']}: eager DDP against `torch.compile(DDP(model))`, so the gain is the job's, all-reduce "
            f"included.{stand_in} The all-reduce took {share['share']:.0%} of the eager DDP step (95% interval "
            f"{share['low']:.0%} to {share['high']:.0%} across {share['processes']} fresh processes; computed as 1 "
            f"minus the step under DDP's `no_sync()` over the eager step). DDP reduced {job['buckets']} bucket(s) "
            f"per step; compiled graphs after Dynamo's split at the buckets: {graphs}.", ""]
