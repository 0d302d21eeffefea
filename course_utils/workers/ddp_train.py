"""Data-parallel training with PyTorch DDP, one process per rank, started by torchrun.

Launched from the notebook with ``cu.distributed.launch("ddp_train.py", nprocs=2, args=[...])``, which collects
what the ranks record. Run by hand (``torchrun ... ddp_train.py --out DIR``) the ranks write their records
(``rankN.jsonl``) and arrays (``NAME.rankN.npz``) into DIR, ``./ddp_out`` by default. Each phase records its
numbers with ``worker.emit`` (JSON) or ``worker.save`` (arrays):

proof      20 SGD steps of the course MLP; every rank saves its weights at each checkpoint.
accum      gradient accumulation over K micro-batches, syncing every micro-batch vs ``no_sync()``:
           all-reduce calls counted with a DDP communication hook, times taken on a model without the hook.
timing     per-step time of a tiny and a wide model: DDP step, the same step without all-reduce
           (``no_sync``), the all-reduce alone, and rank 0 alone on the whole and on half the batch, plain and
           in a one-rank DDP (``no_sync``: DDP's hooks without a partner process).
buckets    DDP step time and bucket count of a deeper MLP for several ``bucket_cap_mb`` values.
allreduce  all-reduce time against message size (for the cost model).
Every rank runs the same number of steps in every phase: collective calls must match across ranks.
"""

import argparse
import gc
import os
import time
from pathlib import Path

import numpy as np
import psutil
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from course_utils import data, models
from course_utils.distributed import worker

TINY, WIDE = (32, 64, 64, 10), (32, 1024, 1024, 10)
DEEP = (32, *[256] * 9, 10)  # many same-sized layers: bucket boundaries fall between them
LR = 0.1


def setup() -> tuple[int, int, torch.device]:
    """Join the process group: NCCL on GPUs (one per local rank), gloo where a machine has no GPU at all; a
    machine with some GPUs but fewer than its local ranks stops with a clear error. Rank 0 says which, and why."""
    local_rank = worker.local_rank()  # torchrun sets LOCAL_RANK: the GPU index on this machine
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))  # ranks on this machine
    gpus = torch.cuda.device_count()
    if 0 < gpus < local_world:  # each node decides alone: a CPU fallback here would mix gloo and NCCL ranks
        raise RuntimeError(f"rank {worker.rank()}: this machine has {gpus} GPU(s) for {local_world} local ranks; "
                           "NCCL needs one GPU per rank, and falling back to gloo on this node alone would give a job "
                           "whose nodes pick different backends and hang. Start at most "
                           f"--nproc-per-node={gpus} here.")
    if gpus:  # NCCL needs a GPU of its own for every local rank
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        why = f"{gpus} GPU(s) for {local_world} local rank(s)"
    else:
        device = torch.device("cpu")
        why = "no GPU on this machine"
    backend = "nccl" if device.type == "cuda" else "gloo"
    if worker.rank() == 0:
        print(f"backend {backend} on {device.type}: {why}", flush=True)
    dist.init_process_group(backend)  # MASTER_ADDR/PORT from torchrun
    same_backend_everywhere(backend)  # a GPU node and a CPU-only node in one job would hang: stop instead
    return dist.get_rank(), dist.get_world_size(), device


def same_backend_everywhere(backend: str) -> None:
    """Every node picked its backend from its own GPUs; gather the choices over gloo (which runs on any machine)
    and raise on every rank if they differ, instead of hanging in the first NCCL/gloo collective."""
    group = dist.new_group(backend="gloo")
    chosen: list = [None] * dist.get_world_size()
    dist.all_gather_object(chosen, backend, group=group)
    dist.destroy_process_group(group)
    if len(set(chosen)) > 1:
        ranks = {b: [r for r, c in enumerate(chosen) if c == b] for b in sorted(set(chosen))}
        raise RuntimeError(f"the ranks chose different backends {ranks}: every node needs one GPU per local rank, "
                           "or no node may have a GPU")


def shard(x: np.ndarray, rank: int, world: int, device: torch.device) -> torch.Tensor:
    """This rank's contiguous slice of a global batch."""
    per = len(x) // world
    return torch.from_numpy(x[rank * per:(rank + 1) * per]).to(device)


def proof(rank, world, device, steps: int, batch: int, every: int) -> None:
    x_all, y_all = data.classification(steps * batch, seed=0)
    model = DDP(models.torch_mlp(models.DEFAULT_SIZES).to(device))  # same initial weights on every rank
    step = models.torch_sgd_step(model, lr=LR)  # forward, backward (DDP all-reduces the gradients), update
    snapshots = {}
    for s in range(steps):
        x, y = x_all[s * batch:(s + 1) * batch], y_all[s * batch:(s + 1) * batch]
        step((shard(x, rank, world, device), shard(y, rank, world, device)))  # this rank's half of the batch
        if (s + 1) % every == 0:
            snapshots[f"step{s + 1}"] = torch.cat([p.detach().flatten() for p in model.parameters()]).cpu()
    worker.save("proof", **snapshots)


# --- measurement plumbing below: timing loops and counters, not part of the lesson's listing ---------------


def wait(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def counting_hook(counter: dict, bucket):
    """A DDP communication hook: all-reduce as usual, and count the calls (one per gradient bucket)."""
    counter["calls"] += 1
    return allreduce_hook(None, bucket)  # None: the default process group


def ddp_model(sizes, device, count: bool = False, **kwargs) -> tuple[DDP, dict]:
    """The course MLP in DDP; with ``count`` a Python hook counts all-reduce calls (used for counting, not timing)."""
    torch.manual_seed(0)
    model = DDP(models.torch_mlp(sizes).to(device), **kwargs)
    counter = {"calls": 0}
    if count:
        model.register_comm_hook(counter, counting_hook)
    return model, counter


def timed(repeats: int, device: torch.device, fn, *args, together: bool = True) -> list[float]:
    """Seconds of each of ``repeats`` calls ``fn(*args)`` after one warm-up call (ranks start each together)."""
    fn(*args)
    times = []
    for _ in range(repeats):
        if together:
            dist.barrier()
        wait(device)
        start = time.perf_counter()
        fn(*args)
        wait(device)
        times.append(time.perf_counter() - start)
    return times


def interleaved(repeats: int, device: torch.device, calls: dict) -> dict[str, list[float]]:
    """Seconds of each call of ``calls`` (name -> (fn, *args)), taken in turns, so that a change in the
    machine's load during the measurement falls on all of them alike; one untimed warm-up call each."""
    times = {name: [] for name in calls}
    for fn, *args in calls.values():
        fn(*args)
    for _ in range(repeats):
        for name, (fn, *args) in calls.items():
            wait(device)
            start = time.perf_counter()
            fn(*args)
            wait(device)
            times[name].append(time.perf_counter() - start)
    return times


def compute_only(model, step, batch) -> None:
    """The same step without communication: under ``no_sync`` DDP skips the all-reduce."""
    with model.no_sync():
        step(batch)


def flat_grad(model) -> np.ndarray:
    return torch.cat([p.grad.flatten() for p in model.parameters()]).cpu().numpy()


def accumulate(model, xs, ys, use_no_sync: bool) -> None:
    """One optimizer step's gradient over K micro-batches: sync after each, or once with ``no_sync``."""
    k = len(xs)
    model.zero_grad(set_to_none=True)
    for i, (x, y) in enumerate(zip(xs, ys)):
        last = i == k - 1
        if use_no_sync and not last:
            with model.no_sync():  # gradients accumulate locally, no communication
                (F.cross_entropy(model(x), y) / k).backward()
        else:
            (F.cross_entropy(model(x), y) / k).backward()  # an all-reduce of the (accumulated) gradient


def accum(rank, world, device, k: int, micro: int, repeats: int) -> None:
    x_all, y_all = data.classification(k * world * micro, seed=1)
    xs = [shard(x_all[i * world * micro:(i + 1) * world * micro], rank, world, device) for i in range(k)]
    ys = [shard(y_all[i * world * micro:(i + 1) * world * micro], rank, world, device) for i in range(k)]
    counted, counter = ddp_model(models.DEFAULT_SIZES, device, count=True)
    plain, _ = ddp_model(models.DEFAULT_SIZES, device)  # timed without the Python hook
    result = {}
    for name, use_no_sync in (("every_micro_batch", False), ("no_sync", True)):
        counter["calls"] = 0
        accumulate(counted, xs, ys, use_no_sync)
        calls = counter["calls"]
        result[name] = flat_grad(counted)
        times = timed(repeats, device, accumulate, plain, xs, ys, use_no_sync)
        worker.emit(kind=f"accum_{name}", allreduce_calls=calls, times=times)
    worker.save("accum", **result)


def timing(rank, world, device, workloads: dict, repeats: int) -> None:
    for name, (sizes, batch) in workloads.items():
        x_all, y_all = data.classification(batch, seed=2)
        x, y = shard(x_all, rank, world, device), shard(y_all, rank, world, device)
        model, _ = ddp_model(sizes, device)  # DDP's own C++ all-reduce, as in real training
        nparams = sum(p.numel() for p in model.parameters())
        step = models.torch_sgd_step(model, lr=LR)
        ddp = timed(repeats, device, step, (x, y))
        compute = timed(repeats, device, compute_only, model, step, (x, y))
        comm = timed(repeats, device, dist.all_reduce, torch.zeros(nparams, device=device))
        group0 = dist.new_group([0])  # every rank creates it; only rank 0 is in it
        alone = {"single": [], "single_half": [], "solo_ddp": []}  # rank 0 alone; the other ranks wait
        if rank == 0:
            plain = models.torch_sgd_step(models.torch_mlp(sizes).to(device), lr=LR)
            solo, _ = ddp_model(sizes, device, process_group=group0)  # DDP's hooks, and no partner process
            solo_step = models.torch_sgd_step(solo, lr=LR)
            xb, yb = torch.from_numpy(x_all).to(device), torch.from_numpy(y_all).to(device)
            half = (xb[:len(xb) // 2], yb[:len(xb) // 2])
            alone = interleaved(repeats, device, {"single": (plain, (xb, yb)), "single_half": (plain, half),
                                                  "solo_ddp": (compute_only, solo, solo_step, half)})
        dist.barrier()
        worker.emit(kind=f"timing_{name}", params=nparams, global_batch=batch, ddp=ddp, compute=compute,
                    allreduce=comm, **alone, threads=torch.get_num_threads())


def buckets(rank, world, device, caps: list[float], batch: int, repeats: int) -> None:
    x_all, y_all = data.classification(batch, seed=3)
    x, y = shard(x_all, rank, world, device), shard(y_all, rank, world, device)
    for cap in caps:
        model, counter = ddp_model(DEEP, device, count=True, bucket_cap_mb=cap)
        step = models.torch_sgd_step(model, lr=LR)
        step((x, y))  # DDP rebuilds its buckets after the first iteration, in the order gradients arrive
        counter["calls"] = 0
        step((x, y))
        calls = counter["calls"]
        model, _ = ddp_model(DEEP, device, bucket_cap_mb=cap)  # timed without the Python hook
        step = models.torch_sgd_step(model, lr=LR)
        worker.emit(kind="bucket", cap_mb=cap, buckets=calls, times=timed(repeats, device, step, (x, y)))


def allreduce(rank, world, device, sizes_bytes: list[int], repeats: int) -> None:
    for nbytes in sizes_bytes:
        buffer = torch.zeros(nbytes // 4, device=device)
        worker.emit(kind="allreduce", nbytes=nbytes, times=timed(repeats, device, dist.all_reduce, buffer))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phases", default="proof,accum,timing,buckets,allreduce")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64, help="global batch (all ranks together)")
    parser.add_argument("--every", type=int, default=5, help="checkpoint every N steps")
    parser.add_argument("--accum", type=int, default=4, help="micro-batches per optimizer step")
    parser.add_argument("--wide-batch", type=int, default=512, help="global batch of the wide model")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--caps", default="0.1,0.3,1,25", help="bucket_cap_mb values")
    parser.add_argument("--min-bytes", type=int, default=2**10)
    parser.add_argument("--max-bytes", type=int, default=2**24)
    parser.add_argument("--out", default="ddp_out", help="folder for records and arrays when run by hand "
                        "(cu.distributed.launch collects them itself)")
    args = parser.parse_args()
    if worker.OUT_ENV not in os.environ:  # run by hand: write into a named folder, never the working directory
        os.environ[worker.OUT_ENV] = str(Path(args.out).resolve())
        Path(args.out).mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    rank, world, device = setup()
    joined = time.time()
    worker.emit(kind="startup", seconds=joined - psutil.Process().create_time())  # process start -> group joined
    phases = args.phases.split(",")
    seconds = {}
    for i, phase in enumerate(phases):
        if rank == 0:
            worker.progress(i, len(phases))
            print(f"phase {phase} on {world} ranks ({dist.get_backend()}, {device})")
        start = time.time()
        if phase == "proof":
            proof(rank, world, device, args.steps, args.batch, args.every)
        elif phase == "accum":
            accum(rank, world, device, args.accum, args.batch // world, args.repeats)
        elif phase == "timing":
            timing(rank, world, device, {"tiny": (TINY, args.batch), "wide": (WIDE, args.wide_batch)}, args.repeats)
        elif phase == "buckets":
            buckets(rank, world, device, [float(c) for c in args.caps.split(",")], args.wide_batch, args.repeats)
        elif phase == "allreduce":
            sizes = [2**p for p in range(args.min_bytes.bit_length() - 1, args.max_bytes.bit_length(), 2)]
            allreduce(rank, world, device, sizes, 2 * args.repeats)
        else:
            raise ValueError(f"--phases must name proof, accum, timing, buckets, allreduce; got {phase!r}")
        gc.collect()  # free this phase's DDP objects (they hold reference cycles) while the group still exists
        seconds[phase] = time.time() - start
    if rank == 0:
        worker.progress(len(phases), len(phases))
    dist.barrier()
    dist.destroy_process_group()
    worker.emit(kind="phases", seconds=seconds, end=time.time())


if __name__ == "__main__":
    main()
