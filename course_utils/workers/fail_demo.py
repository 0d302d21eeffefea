"""A job in which one rank fails: rank 1 raises, the other ranks would wait forever.

Run it with ``cu.distributed.launch("fail_demo.py", 2, timeout=60)`` to see what a clear launch error looks
like and that no process is left behind. It imports no framework, so it starts in about the time torchrun itself needs.
"""

import os
import time


def load_batch(rank: int) -> list[float]:
    if rank == 1:
        raise ValueError(f"rank {rank}: batch file shard-{rank}.npy is corrupt (a deliberate failure)")
    return [1.0, 2.0]


rank = int(os.environ["RANK"])
print(f"rank {rank} of {os.environ['WORLD_SIZE']} started (pid {os.getpid()})", flush=True)
batch = load_batch(rank)
time.sleep(60)  # rank 0 stands for a rank blocked in an all-reduce that will never complete
