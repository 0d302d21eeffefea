"""DDP vs ZeRO-1 vs FSDP2, same model, data and Adam (``cu.beyond.sharded.run``): per rank the bytes held, one step's
collectives (counted and profiled), the step in rounds beside the compute alone, the collectives alone, the weights."""

import argparse
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
from torch.utils._pytree import tree_leaves

from course_utils import data, models, profile
from course_utils.distributed import worker
from course_utils.workers.ddp_train import setup  # the group joined as 05's DDP worker joins it

SIZES = (32, 256, 256, 256, 10)


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
            tensors = [a for a in tree_leaves(args) if isinstance(a, torch.Tensor)]
            self.calls[op] += 1
            self.nbytes[op] += max((t.numel() * t.element_size() for t in tensors), default=0)
        return func(*args, **(kwargs or {}))


def comm_seconds(step, x, y, steps: int, layer_bytes: dict | None = None) -> dict:
    """Per step, from a profiler trace: "busy" (the wall-clock union of the backend's own collective events), "step",
    "events" (count per name) and, with ``layer_bytes`` (FSDP2), "gathered" (``gathered_peak``)."""
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
    """The most layers FSDP2 held whole at once, each from the start of its ``FSDP::all_gather`` to the end of the
    reshard that frees it: {"layers", "bytes", "names"}; None when the trace has no such labels."""
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


class Trained:
    """One way to train (``kind``) after ``--steps`` steps: what it holds, the collectives of its last step, and a
    ``step`` to time (with ``marks``: the times when zero_grad ends and when the optimizer step starts)."""

    def __init__(self, kind, device, args) -> None:
        rank, world = dist.get_rank(), dist.get_world_size()
        self.kind, self.device = kind, device
        x_all, y_all = data.classification(args.steps * args.batch, seed=4)
        per = args.batch // world
        self.model, self.opt = build(kind, device, args.lr)

        def batch(s):
            lo = s * args.batch + rank * per
            return (torch.from_numpy(x_all[lo:lo + per]).to(device),
                    torch.from_numpy(y_all[lo:lo + per]).to(device))

        for s in range(args.steps):
            if s == args.steps - 1:  # count the collectives of the last step, and measure what is held after it
                with CountCollectives() as self.seen:
                    self.step(*batch(s))
            else:
                self.step(*batch(s))
        self.held = {"params": local_bytes(self.model.parameters()),
                     "grads": local_bytes(p.grad for p in self.model.parameters()),
                     "optimizer": local_bytes(optimizer_tensors(self.opt))}
        self.x, self.y = batch(0)
        self.phases = {"zero_grad": [], "forward_backward": [], "optimizer_step": []}

    def step(self, x, y, marks=None) -> None:
        self.opt.zero_grad(set_to_none=False)
        if marks is not None:  # when zero_grad ends
            marks.append(time.perf_counter())
        F.cross_entropy(self.model(x), y).backward()
        if marks is not None:  # when the optimizer step starts
            worker.sync_device(self.device)
            marks.append(time.perf_counter())
        self.opt.step()

    def timed_step(self) -> None:
        """One step on batch 0, its parts recorded in ``phases``."""
        marks = [time.perf_counter()]
        self.step(self.x, self.y, marks)
        worker.sync_device(self.device)
        marks.append(time.perf_counter())
        for name, lo, hi in zip(self.phases, marks, marks[1:]):
            self.phases[name].append(hi - lo)

    def report(self, round_times, extra) -> None:
        """Emit what this kind held, sent and took; save its full weights."""
        layers = {name: 4 * sum(p.numel() for p in layer.parameters())  # full (unsharded) fp32 bytes per layer
                  for name, layer in self.model.named_children() if isinstance(layer, torch.nn.Linear)}
        comm = comm_seconds(self.step, self.x, self.y, steps=3, layer_bytes=layers if self.kind == "fsdp2" else None)
        nparams = sum(p.numel() for p in models.torch_mlp(SIZES).parameters())
        worker.emit(kind=self.kind, world=dist.get_world_size(), params=nparams, held=self.held,
                    calls=dict(self.seen.calls), comm_bytes=dict(self.seen.nbytes), round_times=round_times,
                    phase_times=self.phases, comm_seconds=comm, layer_bytes=layers, **extra)
        worker.save(self.kind, weights=full_weights(self.model).numpy())


def default_ddp_buckets(device) -> int:
    """Bytes of the buckets that DDP with its default ``gradient_as_bucket_view=False`` keeps BESIDE the
    gradients (they are copied into the buckets for the all-reduce), as DDP itself reports them after a backward."""
    model = DDP(models.torch_mlp(SIZES).to(device))
    x = torch.zeros(2, SIZES[0], device=device)
    F.cross_entropy(model(x), torch.zeros(2, dtype=torch.long, device=device)).backward()
    return sum(int(b) for b in model._get_ddp_logging_data()["bucket_sizes"].split(","))


def in_rounds(calls: dict, rounds: int, per_round: int, device) -> dict[str, list[list[float]]]:
    """Every call timed ``per_round`` times in each round, the order rotated each round, ranks aligned by a barrier
    (``worker.timed_rounds``): a machine that slows down for a while slows every call alike."""
    return worker.timed_rounds(device, {name: (fn,) for name, fn in calls.items()}, rounds, rounds * per_round,
                               warmup=False)["per_round"]


def compute_alone(device, args):
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
    return step


def time_collectives(device, args) -> None:
    """The collectives alone, on buffers the size of all parameters, in rounds: all-reduce vs all-gather vs
    reduce-scatter; then rank 0 profiles one reduce-scatter and records the c10d and gloo operators it shows."""
    world = dist.get_world_size()
    nparams = sum(p.numel() for p in models.torch_mlp(SIZES).parameters())
    full = torch.zeros(nparams - nparams % world + world, device=device)  # divisible by the world size
    shard = torch.zeros(full.numel() // world, device=device)
    ops = {"allreduce": lambda: dist.all_reduce(full),
           "allgather": lambda: dist.all_gather_single(full, shard),
           "reducescatter": lambda: dist.reduce_scatter_single(shard, full)}
    for op in ops.values():
        op()
    result = in_rounds(ops, args.rounds, 4 * args.per_round, device)  # small and noisy: more calls than a step
    names = []
    if dist.get_rank() == 0:
        with tempfile.TemporaryDirectory() as folder:
            trace = profile.capture("torch", ops["reducescatter"], steps=1, name="reduce_scatter", folder=folder)
        names = [e.name for e in sorted(trace.events, key=lambda e: e.start) if e.name.startswith(("c10d", "gloo"))]
    else:
        ops["reducescatter"]()  # the partner of rank 0's profiled call
    worker.emit(kind="collectives", nbytes=full.numel() * 4, round_times=result, reduce_scatter_trace=names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kinds", default="ddp,zero1,fsdp2")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64, help="global batch (all ranks together)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--rounds", type=int, default=6, help="timing rounds, the kinds in turns")
    parser.add_argument("--per-round", type=int, default=3, help="steps timed per kind and round")
    args = parser.parse_args()
    _, _, device = setup()
    kinds = args.kinds.split(",")
    unknown = [k for k in kinds if k not in ("ddp", "zero1", "fsdp2")]
    if unknown:
        raise ValueError(f"--kinds must name ddp, zero1, fsdp2; got {unknown}")
    total = len(kinds) + 2
    trained = {}
    for i, kind in enumerate(kinds):
        worker.progress(i, total, f"{kind} on {dist.get_world_size()} ranks ({dist.get_backend()}, {device})")
        trained[kind] = Trained(kind, device, args)
    worker.progress(len(kinds), total, f"timing {', '.join(kinds)} and the compute alone in {args.rounds} rounds")
    calls = {kind: t.timed_step for kind, t in trained.items()} | {"compute": compute_alone(device, args)}
    times = in_rounds(calls, args.rounds, args.per_round, device)
    for kind, t in trained.items():
        extra = {"default_bucket_bytes": default_ddp_buckets(device)} if kind == "ddp" else {}
        t.report(times[kind], extra)
    worker.emit(kind="compute", round_times=times["compute"])
    worker.progress(len(kinds) + 1, total, "the collectives alone")
    time_collectives(device, args)
    worker.progress(total, total)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
