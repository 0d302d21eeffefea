"""DDP training that checkpoints atomically and resumes under ``torchrun --max-restarts=1`` (``cu.beyond.elastic.run``):
rank ``--crash-rank`` raises once at ``--crash-at``; data indexed by step: a resumed run sees the same batches."""

import argparse
import os
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import psutil
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from course_utils import data, models
from course_utils.distributed import worker

CHECKPOINT = "checkpoint.pt"


def setup(attempt: int) -> torch.device:
    """Join this attempt's group (NCCL when every local rank has a GPU, else gloo) under a per-attempt key prefix:
    torchrun keeps one store for all attempts, and a crashed attempt's keys made a restarted gloo group hang."""
    gpus_enough = torch.cuda.device_count() >= int(os.environ.get("LOCAL_WORLD_SIZE", "1"))  # one GPU per rank
    device = torch.device("cuda", worker.local_rank()) if gpus_enough else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), worker.world_size(),
                          is_master=False, timeout=timedelta(seconds=60))  # the agent hosts it
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", store=dist.PrefixStore(
        f"attempt_{attempt}", store), rank=worker.rank(), world_size=worker.world_size())
    return device


def save_checkpoint(folder: Path, step: int, model, optimizer) -> None:
    """Rank 0 writes ``checkpoint.pt`` atomically: a temporary file first, then one rename."""
    if dist.get_rank() == 0:
        tmp = folder / f"{CHECKPOINT}.tmp"
        torch.save({"step": step, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, tmp)
        os.replace(tmp, folder / CHECKPOINT)
    dist.barrier()  # nobody runs ahead of a checkpoint that is not on disk yet


def load_checkpoint(folder: Path, model, optimizer) -> int:
    """The step to start from: 0 without a checkpoint, else the step saved (weights and momentum restored)."""
    path = folder / CHECKPOINT
    if not path.exists():
        return 0
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["step"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoint-dir", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--every", type=int, default=3, help="checkpoint every N steps")
    parser.add_argument("--crash-at", type=int, default=8, help="step at which a rank dies (0: never)")
    parser.add_argument("--crash-rank", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64, help="global batch (all ranks together)")
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    device = setup(attempt)
    joined = time.time()
    worker.emit(kind="startup", attempt=attempt, seconds=joined - psutil.Process().create_time())  # start -> group
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(models.torch_mlp().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    start = load_checkpoint(args.checkpoint_dir, model, optimizer)
    if rank == 0:
        print(f"attempt {attempt}: {world} ranks, starting at step {start}", flush=True)
    x_all, y_all = data.classification(args.steps * args.batch, seed=7)
    per = args.batch // world
    computed = []
    for s in range(start, args.steps):
        if attempt == 0 and rank == args.crash_rank and s == args.crash_at:
            worker.emit(kind="crash", attempt=attempt, step=s, computed=computed, seconds=time.time() - joined)
            raise RuntimeError(f"rank {rank}: simulated hardware failure at step {s} (attempt {attempt})")
        lo = s * args.batch + rank * per
        x, y = torch.from_numpy(x_all[lo:lo + per]).to(device), torch.from_numpy(y_all[lo:lo + per]).to(device)
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        computed.append(s)
        if (s + 1) % args.every == 0:
            save_checkpoint(args.checkpoint_dir, s + 1, model, optimizer)
            if rank == 0:
                print(f"attempt {attempt}: checkpoint at step {s + 1}", flush=True)
    weights = torch.cat([p.detach().flatten().cpu() for p in model.parameters()]).numpy()
    worker.emit(kind="finished", attempt=attempt, started_at=start, computed=computed, seconds=time.time() - joined)
    worker.save("elastic", weights=np.asarray(weights))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
