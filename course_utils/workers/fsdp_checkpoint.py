"""FSDP2 state saved with ``torch.distributed.checkpoint`` at one world size and loaded at another (06: 2, 1, 2 ranks;
every rank must see every file); rank 0 records the full state right after a load and right before a save."""

import argparse

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict

from course_utils import data
from course_utils.distributed import worker
from course_utils.workers.ddp_train import setup
from course_utils.workers.fsdp_train import build


def save(folder: str, model, optimizer) -> None:
    """Every rank writes its own shards of the weights and of the Adam state; DCP adds the metadata."""
    model_state, optim_state = get_state_dict(model, optimizer)  # DTensors: this rank's shards only
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=folder)


def load(folder: str, model, optimizer) -> None:
    """Fill this world size's shards from a checkpoint written at any world size."""
    model_state, optim_state = get_state_dict(model, optimizer)  # the shapes and shards to fill, here and now
    dcp.load({"model": model_state, "optim": optim_state}, checkpoint_id=folder)
    set_state_dict(model, optimizer, model_state_dict=model_state, optim_state_dict=optim_state)


def full_state(model, optimizer) -> dict[str, np.ndarray]:
    """The whole state gathered to rank 0 (empty on the other ranks): weights, Adam moments and step counts."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    model_state, optim_state = get_state_dict(model, optimizer, options=options)
    flat = {f"model/{k}": v for k, v in model_state.items()}
    for name, per in optim_state.get("state", {}).items():
        flat.update({f"optim/{name}/{k}": v for k, v in per.items()})
    return {k: np.asarray(torch.as_tensor(v).detach().cpu()) for k, v in flat.items()}


def train(model, optimizer, device, steps: int, batch: int, seed: int) -> None:
    """``steps`` Adam steps on this rank's rows of each global batch (the global batch is the same at any size)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    x_all, y_all = data.classification(steps * batch, seed=seed)
    per = batch // world
    for s in range(steps):
        lo = s * batch + rank * per
        x, y = torch.from_numpy(x_all[lo:lo + per]).to(device), torch.from_numpy(y_all[lo:lo + per]).to(device)
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--load", help="a DCP checkpoint folder to start from")
    parser.add_argument("--steps", type=int, default=0, help="Adam steps after loading (or from scratch)")
    parser.add_argument("--save", help="the folder to save the sharded state into")
    parser.add_argument("--batch", type=int, default=64, help="global batch (all ranks together)")
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()
    _, _, device = setup()
    model, optimizer = build("fsdp2", device, args.lr)
    if args.load:
        load(args.load, model, optimizer)
        loaded = full_state(model, optimizer)
        if dist.get_rank() == 0:
            worker.save("loaded", **loaded)
    if args.steps:
        train(model, optimizer, device, args.steps, args.batch, seed=11 + args.steps)
    if args.save:
        saved = full_state(model, optimizer)
        save(args.save, model, optimizer)
        if dist.get_rank() == 0:
            worker.save("saved", **saved)
    worker.emit(kind="checkpoint", world=dist.get_world_size(), loaded_from=args.load, saved_to=args.save,
                steps=args.steps)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
