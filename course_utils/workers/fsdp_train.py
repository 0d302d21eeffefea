"""Sharded data parallelism on 2+ ranks: DDP vs ZeRO-1 vs FSDP2, same model, same data, same Adam.

Launched from notebook 06 with ``cu.distributed.launch("fsdp_train.py", nprocs=2, args=[...])``. For each of
the three ways to train, every rank records (``cu.worker.emit``):

- the bytes it holds for parameters, gradients and optimizer state, counted from the real tensors
  (a sharded tensor counts only its local shard: ``DTensor.to_local()``);
- the collectives of one training step, counted by intercepting the c10d operators (``TorchDispatchMode``;
  DDP gets the default all-reduce as a Python communication hook, so that its all-reduce is seen too);
- the step time (median of ``--repeats``) and, once, the time of the collectives alone;

and saves its full weights after ``--steps`` steps, so the notebook can check that all three agree.

- DDP: every rank holds everything; gradients are all-reduced.
- ZeRO-1 (``ZeroRedundancyOptimizer``): each rank keeps the Adam state of its share of the parameters only,
  updates that share, then broadcasts it.
- FSDP2 (``fully_shard``): parameters, gradients and Adam state are all sharded (ZeRO-3): each layer's weights
  are all-gathered just before use and freed after; gradients are reduce-scattered.
On GPUs the same script runs with NCCL (the device mesh and the process group follow the device type).
"""

import argparse
import os
import time
from collections import Counter

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils._python_dispatch import TorchDispatchMode

from course_utils import data, models
from course_utils.distributed import worker

SIZES = (32, 256, 256, 256, 10)


def setup() -> torch.device:
    """NCCL and this node's GPU ``LOCAL_RANK`` when every local rank has a GPU, else gloo on the CPU."""
    gpus_enough = torch.cuda.device_count() >= int(os.environ.get("LOCAL_WORLD_SIZE", "1"))  # one GPU per rank
    device = torch.device("cuda", worker.local_rank()) if gpus_enough else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)  # LOCAL_RANK: the GPU index on this machine (RANK counts all machines)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def local_bytes(tensors) -> int:
    """Bytes this rank really stores: a DTensor counts only its local shard."""
    total = 0
    for t in tensors:
        if t is None or not isinstance(t, torch.Tensor):
            continue
        t = t.to_local() if isinstance(t, DTensor) else t
        total += t.numel() * t.element_size()
    return total


class CountCollectives(TorchDispatchMode):
    """Count the c10d collectives a step issues, with the size of the full (unsharded) buffer of each."""

    def __init__(self):
        super().__init__()
        self.calls, self.nbytes = Counter(), Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if name.startswith("c10d."):
            op = name.split(".")[1].strip("_").replace("_base", "")
            tensors = [a for a in _flat(args) if isinstance(a, torch.Tensor)]
            self.calls[op] += 1
            self.nbytes[op] += max((t.numel() * t.element_size() for t in tensors), default=0)
        return func(*args, **(kwargs or {}))


def _flat(items):
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flat(item)
        else:
            yield item


def build(kind: str, device: torch.device, lr: float):
    """The same MLP and the same Adam, wrapped the ``kind`` way; returns (model, optimizer)."""
    model = models.torch_mlp(SIZES).to(device)
    if kind == "fsdp2":
        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh)  # one unit per layer: gathered just in time, freed after use
        fully_shard(model, mesh=mesh)
        return model, torch.optim.Adam(model.parameters(), lr=lr)
    model = DDP(model, gradient_as_bucket_view=True)  # gradients live in DDP's buckets: no second copy
    model.register_comm_hook(None, allreduce_hook)  # the same all-reduce, issued from Python so it is counted
    if kind == "zero1":
        return model, ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=lr)
    return model, torch.optim.Adam(model.parameters(), lr=lr)


def optimizer_tensors(opt):
    inner = opt.optim if isinstance(opt, ZeroRedundancyOptimizer) else opt
    return [v for state in inner.state.values() for v in state.values()]


def full_weights(model) -> torch.Tensor:
    """All parameters as one flat CPU tensor (FSDP2: gathered from the shards with ``full_tensor``)."""
    parts = [p.full_tensor() if isinstance(p, DTensor) else p for p in model.parameters()]
    return torch.cat([p.detach().flatten().cpu() for p in parts])


def train(kind, device, args) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    x_all, y_all = data.classification(args.steps * args.batch, seed=4)
    per = args.batch // world
    model, opt = build(kind, device, args.lr)

    def batch(s):
        lo = s * args.batch + rank * per
        return (torch.from_numpy(x_all[lo:lo + per]).to(device), torch.from_numpy(y_all[lo:lo + per]).to(device))

    def step(x, y) -> None:
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for s in range(args.steps):
        if s == args.steps - 1:  # count the collectives of the last step, and measure what is held after it
            with CountCollectives() as seen:
                step(*batch(s))
        else:
            step(*batch(s))
    held = {"params": local_bytes(model.parameters()), "grads": local_bytes(p.grad for p in model.parameters()),
            "optimizer": local_bytes(optimizer_tensors(opt))}
    x, y = batch(0)
    times = []
    for _ in range(args.repeats):
        dist.barrier()
        start = time.perf_counter()
        step(x, y)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    nparams = sum(p.numel() for p in models.torch_mlp(SIZES).parameters())
    worker.emit(kind=kind, world=world, params=nparams, held=held, calls=dict(seen.calls), comm_bytes=dict(seen.nbytes),
                     step_times=times)
    weights = full_weights(model)
    worker.save(kind, weights=weights.numpy())


def time_collectives(device, args) -> None:
    """The collectives alone, on buffers the size of all parameters: all-reduce vs all-gather + reduce-scatter."""
    world = dist.get_world_size()
    nparams = sum(p.numel() for p in models.torch_mlp(SIZES).parameters())
    full = torch.zeros(nparams - nparams % world + world, device=device)  # divisible by the world size
    shard = torch.zeros(full.numel() // world, device=device)
    ops = {"allreduce": lambda: dist.all_reduce(full),
           "allgather": lambda: dist.all_gather_single(full, shard),
           "reducescatter": lambda: dist.reduce_scatter_single(shard, full)}
    result = {}
    for name, op in ops.items():
        op()
        times = []
        for _ in range(args.repeats):
            dist.barrier()
            start = time.perf_counter()
            op()
            times.append(time.perf_counter() - start)
        result[name] = times
    worker.emit(kind="collectives", nbytes=full.numel() * 4, times=result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kinds", default="ddp,zero1,fsdp2")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64, help="global batch (all ranks together)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    device = setup()
    kinds = args.kinds.split(",")
    for i, kind in enumerate([*kinds, "collectives"]):
        if dist.get_rank() == 0:
            worker.progress(i, len(kinds) + 1)
            print(f"{kind} on {dist.get_world_size()} ranks ({dist.get_backend()}, {device})", flush=True)
        if kind == "collectives":
            time_collectives(device, args)
        elif kind in ("ddp", "zero1", "fsdp2"):
            train(kind, device, args)
        else:
            raise ValueError(f"--kinds must name ddp, zero1, fsdp2; got {kind!r}")
    if dist.get_rank() == 0:
        worker.progress(len(kinds) + 1, len(kinds) + 1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
