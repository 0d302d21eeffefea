"""DDP training, one process per rank under torchrun (``cu.distributed.launch``, or by hand with ``--out DIR``), in
``--phases`` (see ``PHASES``); every rank makes the same collective calls in every phase."""

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
from torch.nn.parallel import DistributedDataParallel

from course_utils import data, models
from course_utils.distributed import comms, worker

TINY, WIDE = (32, 64, 64, 10), (32, 1024, 1024, 10)
DEEP = (32, *[256] * 9, 10)  # many same-sized layers: bucket boundaries fall between them
LR = 0.1
PHASES = ("proof", "accum", "timing", "buckets", "batchnorm", "compiled", "allreduce")


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
    # MASTER_ADDR/PORT come from torchrun. timeout: how long a rank waits in a collective before it raises
    # (the launcher's choice; torch's default is 30 min for gloo, 10 for NCCL)
    dist.init_process_group(backend, timeout=worker.pg_timeout())
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
    model = DistributedDataParallel(models.torch_mlp().to(device))  # same initial weights on every rank
    step = models.torch_sgd_step(model, lr=LR)  # forward, backward (DDP all-reduces the gradients), update
    snapshots = {}
    for s in range(steps):
        x, y = x_all[s * batch:(s + 1) * batch], y_all[s * batch:(s + 1) * batch]
        step((shard(x, rank, world, device), shard(y, rank, world, device)))  # this rank's half of the batch
        if (s + 1) % every == 0:
            snapshots[f"step{s + 1}"] = torch.cat([p.detach().flatten() for p in model.parameters()]).cpu()
    worker.save("proof", **snapshots)


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


def batchnorm(rank, world, device, batch: int) -> None:
    """A BatchNorm layer's statistics on each rank's half of one batch: plain, then ``SyncBatchNorm``."""
    x_all, _ = data.classification(batch, seed=4)
    x = shard(x_all, rank, world, device)
    found = {}
    for name in ("plain", "sync"):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.BatchNorm1d(16, momentum=1.0))
        if name == "sync":  # every BatchNorm becomes a SyncBatchNorm: statistics over the global batch
            net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        try:
            model = DistributedDataParallel(net.to(device))
            model(x)  # train mode: normalise with the batch's statistics; momentum 1: running_mean = them
        except (ValueError, RuntimeError) as error:  # this torch runs SyncBatchNorm only on GPUs
            worker.emit(kind="batchnorm_refused", variant=name, device=device.type, error=str(error)[:300])
            continue
        found[name] = model.module[1].running_mean.detach().cpu()
    worker.save("batchnorm", **found)


# --- measurement plumbing below: timing loops and counters, not part of the lesson's listing ---------------


def counting_hook(counter: dict, bucket):
    """A DDP communication hook: all-reduce as usual, and count the calls (one per gradient bucket)."""
    counter["calls"] += 1
    return allreduce_hook(None, bucket)  # None: the default process group


def timing_hook(state: dict, bucket):
    """A DDP communication hook that all-reduces the bucket itself, blocking, and records how long this rank
    spent inside that call (waiting for its partner included); it returns the averaged bucket."""
    buffer = bucket.buffer()
    worker.sync_device(buffer.device)
    start = time.perf_counter()
    dist.all_reduce(buffer)
    worker.sync_device(buffer.device)
    state["inside"].append(time.perf_counter() - start)
    future = torch.futures.Future()
    future.set_result(buffer.div_(dist.get_world_size()))
    return future


def ddp_model(sizes, device, count: bool = False, **kwargs) -> tuple[DistributedDataParallel, dict]:
    """The course MLP in DDP; with ``count`` a Python hook counts all-reduce calls (used for counting, not timing)."""
    torch.manual_seed(0)
    model = DistributedDataParallel(models.torch_mlp(sizes).to(device), **kwargs)
    counter = {"calls": 0}
    if count:
        model.register_comm_hook(counter, counting_hook)
    return model, counter


def compute_only(model, step, batch) -> None:
    """The same step without communication: under ``no_sync`` DDP skips the all-reduce."""
    with model.no_sync():
        step(batch)


def all_no_sync(model, xs, ys) -> None:
    """K micro-batches, every one under ``no_sync``: DDP's bookkeeping and the compute, no communication."""
    model.zero_grad(set_to_none=True)
    with model.no_sync():
        for x, y in zip(xs, ys):
            (F.cross_entropy(model(x), y) / len(xs)).backward()


def repeated_allreduce(buffer: torch.Tensor, times: int) -> None:
    for _ in range(times):
        dist.all_reduce(buffer)


def flat_grad(model) -> np.ndarray:
    return torch.cat([p.grad.flatten() for p in model.parameters()]).cpu().numpy()


def accum(rank, world, device, k: int, micro: int, n_rounds: int, repeats: int) -> None:
    x_all, y_all = data.classification(k * world * micro, seed=1)
    xs = [shard(x_all[i * world * micro:(i + 1) * world * micro], rank, world, device) for i in range(k)]
    ys = [shard(y_all[i * world * micro:(i + 1) * world * micro], rank, world, device) for i in range(k)]
    counted, counter = ddp_model(models.DEFAULT_SIZES, device, count=True)
    grads = {}
    for name, use_no_sync in (("every_micro_batch", False), ("no_sync", True)):
        counter["calls"] = 0
        accumulate(counted, xs, ys, use_no_sync)
        grads[name] = flat_grad(counted)
        worker.emit(kind=f"accum_{name}", allreduce_calls=counter["calls"])
    worker.save("accum", **grads)
    plain, _ = ddp_model(models.DEFAULT_SIZES, device)  # timed without any Python hook
    nparams = sum(p.numel() for p in plain.parameters())
    variants = {"every": (accumulate, plain, xs, ys, False), "no_sync": (accumulate, plain, xs, ys, True),
                "local": (all_no_sync, plain, xs, ys),  # K micro-batches, no communication at all
                "allreduces": (repeated_allreduce, torch.zeros(nparams, device=device), k - 1)}  # what no_sync drops
    timed = worker.timed_rounds(device, variants, n_rounds, repeats)
    hooked, _ = ddp_model(models.DEFAULT_SIZES, device)
    state = {"inside": []}
    hooked.register_comm_hook(state, timing_hook)
    worker.timed_rounds(device, {"every": (accumulate, hooked, xs, ys, False)}, 1, repeats)
    worker.emit(kind="accum_timing", k=k, nbytes=4 * nparams, **timed, inside_allreduce=state["inside"][k:])


def timing(rank, world, device, workloads: dict, n_rounds: int, repeats: int) -> None:
    for name, (sizes, batch) in workloads.items():
        x_all, y_all = data.classification(batch, seed=2)
        x, y = shard(x_all, rank, world, device), shard(y_all, rank, world, device)
        model, _ = ddp_model(sizes, device)  # DDP's own C++ all-reduce, as in real training
        nparams = sum(p.numel() for p in model.parameters())
        step = models.torch_sgd_step(model, lr=LR)
        both = {"ddp": (step, (x, y)), "compute": (compute_only, model, step, (x, y)),
                "allreduce": (dist.all_reduce, torch.zeros(nparams, device=device))}
        group0 = dist.new_group([0])  # every rank creates it; only rank 0 is in it
        alone = {}  # rank 0 alone, while the other ranks wait
        if rank == 0:
            plain = models.torch_sgd_step(models.torch_mlp(sizes).to(device), lr=LR)
            solo, _ = ddp_model(sizes, device, process_group=group0)  # DDP's hooks, and no partner process
            solo_step = models.torch_sgd_step(solo, lr=LR)
            xb, yb = torch.from_numpy(x_all).to(device), torch.from_numpy(y_all).to(device)
            half = (xb[:len(xb) // 2], yb[:len(xb) // 2])
            alone = {"single": (plain, (xb, yb)), "single_half": (plain, half),
                     "solo_ddp": (compute_only, solo, solo_step, half)}
        found: dict = {"rounds": {}}
        for r in range(n_rounds):  # one round of the ranks together, then one of rank 0 alone: paired by round
            parts = [worker.timed_rounds(device, both, 1, -(-repeats // n_rounds), warmup=r == 0, offset=r)]
            if alone:
                parts.append(worker.timed_rounds(device, alone, 1, -(-repeats // n_rounds), together=False,
                                                 warmup=r == 0, offset=r))
            dist.barrier()
            for part in parts:
                part.pop("per_round")  # the rounds' own times: this record keeps their medians ("rounds")
                for key, value in part.pop("rounds").items():
                    found["rounds"].setdefault(key, []).extend(value)
                for key, value in part.items():
                    found.setdefault(key, []).extend(value)
        worker.emit(kind=f"timing_{name}", params=nparams, global_batch=batch, **found, threads=torch.get_num_threads())


def buckets(rank, world, device, caps: list[float], batch: int, n_rounds: int, repeats: int) -> None:
    x_all, y_all = data.classification(batch, seed=3)
    x, y = shard(x_all, rank, world, device), shard(y_all, rank, world, device)
    counts, steps = {}, {}
    for cap in caps:
        model, counter = ddp_model(DEEP, device, count=True, bucket_cap_mb=cap)
        step = models.torch_sgd_step(model, lr=LR)
        step((x, y))  # DDP rebuilds its buckets after the first iteration, in the order gradients arrive
        counter["calls"] = 0
        step((x, y))
        counts[cap] = counter["calls"]
        model, _ = ddp_model(DEEP, device, bucket_cap_mb=cap)  # timed without the Python hook
        steps[f"{cap:g}"] = (models.torch_sgd_step(model, lr=LR), (x, y))
    timed = worker.timed_rounds(device, steps, n_rounds, repeats)
    for cap in caps:
        worker.emit(kind="bucket", cap_mb=cap, buckets=counts[cap], times=timed[f"{cap:g}"],
                    rounds=timed["rounds"][f"{cap:g}"])


class DeepMLP(torch.nn.Module):
    """The deep MLP as a module class of its own: Dynamo starts compiling at a frame outside torch's own files."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = models.torch_mlp(DEEP)

    def forward(self, x):
        return self.layers(x)


def compiled_ddp(device, backend: str, cap: float):
    """DDP's step eager and compiled: ``torch.compile`` of the DDP-wrapped model (Dynamo's DDPOptimizer splits
    the graph at DDP's bucket boundaries, so each bucket's all-reduce can start while backward goes on)."""
    torch.manual_seed(0)
    ddp = DistributedDataParallel(DeepMLP().to(device), bucket_cap_mb=cap)
    compiled = torch.compile(ddp, backend=backend)
    return models.torch_sgd_step(ddp, lr=LR), models.torch_sgd_step(compiled, lr=LR)


def compiled(rank, world, device, batch: int, backend: str, n_rounds: int, repeats: int) -> None:
    from torch._dynamo.utils import counters

    x_all, y_all = data.classification(batch, seed=3)
    x, y = shard(x_all, rank, world, device), shard(y_all, rank, world, device)
    cap = 1.0  # DDPOptimizer needs the cap >= DDP's first bucket (1 MiB)
    model, counter = ddp_model(DEEP, device, count=True, bucket_cap_mb=cap)
    step = models.torch_sgd_step(model, lr=LR)
    step((x, y))
    counter["calls"] = 0
    step((x, y))
    sequential = torch.compile(DistributedDataParallel(models.torch_mlp(DEEP).to(device), bucket_cap_mb=cap),
                               backend=backend)  # nn.Sequential itself: a torch file, where Dynamo does not start
    before = counters["aot_autograd"]["total"]
    models.torch_sgd_step(sequential, lr=LR)((x, y))
    graphs_sequential = counters["aot_autograd"]["total"] - before
    eager_step, compiled_step = compiled_ddp(device, backend, cap)
    before, start = counters["aot_autograd"]["total"], time.perf_counter()
    compiled_step((x, y))  # the first call compiles
    first = time.perf_counter() - start
    graphs = counters["aot_autograd"]["total"] - before
    timed = worker.timed_rounds(device, {"eager": (eager_step, (x, y)), "compiled": (compiled_step, (x, y))},
                                n_rounds, repeats)
    worker.emit(kind="compiled", backend=backend, buckets=counter["calls"], graphs=graphs,
                graphs_sequential=graphs_sequential, first_call=first, **timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phases", default="proof,accum,timing,buckets,allreduce")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64, help="global batch (all ranks together)")
    parser.add_argument("--every", type=int, default=5, help="checkpoint every N steps")
    parser.add_argument("--accum", type=int, default=4, help="micro-batches per optimizer step")
    parser.add_argument("--wide-batch", type=int, default=512, help="global batch of the wide model")
    parser.add_argument("--rounds", type=int, default=4, help="rounds every timed comparison is spread over")
    parser.add_argument("--repeats", type=int, default=10, help="timed calls per variant in all (over the rounds)")
    parser.add_argument("--caps", default="0.1,0.3,1,25", help="bucket_cap_mb values")
    parser.add_argument("--backend", default="inductor", help="torch.compile backend of the compiled phase")
    parser.add_argument("--min-bytes", type=int, default=2**12)
    parser.add_argument("--max-bytes", type=int, default=2**24)
    parser.add_argument("--out", default="ddp_out", help="folder for records and arrays when run by hand "
                        "(cu.distributed.launch collects them itself)")
    args = parser.parse_args()
    phases = args.phases.split(",")
    unknown = [p for p in phases if p not in PHASES]
    if unknown:
        raise ValueError(f"--phases must name some of {', '.join(PHASES)}; got {unknown}")
    if worker.OUT_ENV not in os.environ:  # run by hand: write into a named folder, never the working directory
        os.environ[worker.OUT_ENV] = str(Path(args.out).resolve())
        Path(args.out).mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    rank, world, device = setup()
    joined = time.time()
    worker.emit(kind="startup", seconds=joined - psutil.Process().create_time())  # process start -> group joined
    runs = {"proof": lambda: proof(rank, world, device, args.steps, args.batch, args.every),
            "accum": lambda: accum(rank, world, device, args.accum, args.batch // world, args.rounds, args.repeats),
            "timing": lambda: timing(rank, world, device, {"tiny": (TINY, args.batch), "wide": (WIDE, args.wide_batch)},
                                     args.rounds, args.repeats),
            "buckets": lambda: buckets(rank, world, device, [float(c) for c in args.caps.split(",")], args.wide_batch,
                                       args.rounds, args.repeats),
            "batchnorm": lambda: batchnorm(rank, world, device, args.batch),
            "compiled": lambda: compiled(rank, world, device, args.wide_batch, args.backend, args.rounds, args.repeats),
            "allreduce": lambda: comms.sweep_in_rank(comms.sweep_sizes(args.min_bytes, args.max_bytes), args.rounds,
                                                     2 * args.repeats, device)}
    seconds = {}
    for i, phase in enumerate(phases):
        worker.progress(i, len(phases), f"phase {phase} on {world} ranks ({dist.get_backend()}, {device})")
        start = time.time()
        runs[phase]()
        gc.collect()  # free this phase's DDP objects (they hold reference cycles) while the group still exists
        seconds[phase] = time.time() - start
    worker.progress(len(phases), len(phases))
    dist.barrier()
    dist.destroy_process_group()
    worker.emit(kind="phases", seconds=seconds, end=time.time())


if __name__ == "__main__":
    main()
