"""Sharded data parallelism on 2+ ranks: DDP vs ZeRO-1 vs FSDP2, same model, same data, same Adam.

Launched from notebook 06 with ``cu.distributed.launch("fsdp_train.py", nprocs=2, args=[...])``. For each of
the three ways to train, every rank records (``cu.worker.emit``):

- the bytes it holds for parameters, gradients and optimizer state, counted from the real tensors
  (a sharded tensor counts only its local shard: ``DTensor.to_local()``);
- the collectives of one training step, counted by intercepting the c10d operators (``TorchDispatchMode``;
  DDP gets the default all-reduce as a Python communication hook, so that its all-reduce is seen too), and
  timed from a profiler trace of 3 steps: the backend's own events (``gloo:all_reduce``, ...); for FSDP2, from
  the same trace, the most layers whose full weights were held at once (FSDP2's own ``FSDP::`` labels);
- the step time (median of ``--repeats``); once per rank, the same model and Adam on the rank's batch with no
  process group involved (the compute alone); once, the collectives alone and a profiler trace of one
  reduce-scatter (which gloo operators run under it);

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
import re
import tempfile
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

from course_utils import data, models, profile
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


def comm_seconds(step, x, y, steps: int, layer_bytes: dict | None = None) -> dict:
    """Where a step's time goes in collectives, from a profiler trace of ``steps`` steps on every rank: the
    backend's own events (``gloo:all_reduce``, ``gloo:all_gather``, ...; NCCL kernels on GPUs) run on the
    backend's threads from the collective's start to its end: no barrier, no forced wait. Per step:
    "busy" (their union on the wall clock), "step" (the profiled step), "events" (count per event name);
    with ``layer_bytes`` (FSDP2), "gathered": the most layers held unsharded at once (``gathered_peak``)."""

    dist.barrier()
    with tempfile.TemporaryDirectory() as folder:
        trace = profile.capture("torch", step, x, y, steps=steps, name=f"step_rank{dist.get_rank()}", folder=folder)
    comm = sorted((e.start, e.end, e.name) for e in trace.events if e.name.startswith(("gloo:", "nccl")))
    busy, end = 0.0, float("-inf")
    for lo, hi, _ in comm:
        busy += max(0.0, hi - max(lo, end))
        end = max(end, hi)
    out = {"busy": busy / steps, "step": trace.span / steps,
           "events": {name: count / steps for name, count in Counter(n for *_, n in comm).items()}}
    if layer_bytes is not None:
        out["gathered"] = gathered_peak(trace.events, layer_bytes)
    return out


GATHER = re.compile(r"FSDP::all_gather \((.+)\)$")  # FSDP2's own profiler labels, one per layer (its name)
RESHARD = re.compile(r"FSDP::(?:post_forward|post_backward_reshard) \((.+)\)$")


def gathered_peak(events, layer_bytes: dict) -> dict | None:
    """The most layers whose full weights FSDP2 held at once, from its profiler labels: a layer counts from the
    start of its ``FSDP::all_gather`` to the end of the reshard that frees it (after forward, after backward).
    Returns {"layers", "bytes" (their full parameter bytes), "names"}; None when the trace has no such labels."""
    held, spans = {}, []
    for e in sorted(events, key=lambda e: e.start):
        if (m := GATHER.match(e.name)) and m.group(1) in layer_bytes:
            held.setdefault(m.group(1), e.start)
        elif (m := RESHARD.match(e.name)) and m.group(1) in held:
            spans.append((held.pop(m.group(1)), e.end, m.group(1)))
    if not spans:
        return None
    best = {"layers": 0, "bytes": 0, "names": []}
    for start, _, _ in spans:  # the number held is largest just after some gather starts
        names = sorted({n for lo, hi, n in spans if lo <= start < hi})
        size = sum(layer_bytes[n] for n in names)
        if (len(names), size) > (best["layers"], best["bytes"]):
            best = {"layers": len(names), "bytes": size, "names": names}
    return best


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

    def step(x, y, marks=None) -> None:
        opt.zero_grad(set_to_none=False)
        if marks is not None:  # when zero_grad ends
            marks.append(time.perf_counter())
        F.cross_entropy(model(x), y).backward()
        if marks is not None:  # when the optimizer step starts
            wait(device)
            marks.append(time.perf_counter())
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
    times, phases = [], {"zero_grad": [], "forward_backward": [], "optimizer_step": []}
    for _ in range(args.repeats):
        dist.barrier()
        marks = [time.perf_counter()]
        step(x, y, marks)
        wait(device)
        marks.append(time.perf_counter())
        times.append(marks[-1] - marks[0])
        for name, lo, hi in zip(phases, marks, marks[1:]):
            phases[name].append(hi - lo)
    layers = {name: 4 * sum(p.numel() for p in layer.parameters())  # full (unsharded) fp32 bytes per layer
              for name, layer in model.named_children() if isinstance(layer, torch.nn.Linear)}
    comm = comm_seconds(step, x, y, steps=3, layer_bytes=layers if kind == "fsdp2" else None)
    nparams = sum(p.numel() for p in models.torch_mlp(SIZES).parameters())
    worker.emit(kind=kind, world=world, params=nparams, held=held, calls=dict(seen.calls), comm_bytes=dict(seen.nbytes),
                step_times=times, phase_times=phases, comm_seconds=comm, layer_bytes=layers)
    weights = full_weights(model)
    worker.save(kind, weights=weights.numpy())


def wait(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(repeats, device, fn, *args) -> list[float]:
    """Seconds of each of ``repeats`` calls ``fn(*args)``, every rank starting each call together."""
    times = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        fn(*args)
        wait(device)
        times.append(time.perf_counter() - start)
    return times


def compute_alone(device, args) -> None:
    """The step without any communication: the same model and Adam on this rank's rows, no process group."""
    torch.manual_seed(0)
    model = models.torch_mlp(SIZES).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    x_all, y_all = data.classification(args.batch, seed=4)
    per = args.batch // dist.get_world_size()
    x = torch.from_numpy(x_all[:per]).to(device)
    y = torch.from_numpy(y_all[:per]).to(device)

    def step() -> None:
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    worker.emit(kind="compute", step_times=timed(args.repeats, device, step))


def time_collectives(device, args) -> None:
    """The collectives alone, on buffers the size of all parameters: all-reduce vs all-gather + reduce-scatter;
    then rank 0 profiles one reduce-scatter and records the c10d and gloo operators the trace shows."""
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
        result[name] = timed(4 * args.repeats, device, op)  # small and noisy: more repeats than a step
    names = []
    if dist.get_rank() == 0:

        with tempfile.TemporaryDirectory() as folder:
            trace = profile.capture("torch", ops["reducescatter"], steps=1, name="reduce_scatter", folder=folder)
        names = [e.name for e in sorted(trace.events, key=lambda e: e.start) if e.name.startswith(("c10d", "gloo"))]
    else:
        ops["reducescatter"]()  # the partner of rank 0's profiled call
    worker.emit(kind="collectives", nbytes=full.numel() * 4, times=result, reduce_scatter_trace=names)


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
    for i, kind in enumerate([*kinds, "compute", "collectives"]):
        if dist.get_rank() == 0:
            worker.progress(i, len(kinds) + 2)
            print(f"{kind} on {dist.get_world_size()} ranks ({dist.get_backend()}, {device})", flush=True)
        if kind == "collectives":
            time_collectives(device, args)
        elif kind == "compute":
            compute_alone(device, args)
        elif kind in ("ddp", "zero1", "fsdp2"):
            train(kind, device, args)
        else:
            raise ValueError(f"--kinds must name ddp, zero1, fsdp2; got {kind!r}")
    if dist.get_rank() == 0:
        worker.progress(len(kinds) + 2, len(kinds) + 2)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
