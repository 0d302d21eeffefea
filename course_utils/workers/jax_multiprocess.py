"""Multi-process JAX: ``jax.distributed.initialize`` joins the processes, one global mesh spans all devices.

Launched from notebook 06 with ``cu.distributed.launch("jax_multiprocess.py", nprocs=2, args=["--port", ...])``:
torchrun only starts the processes and sets ``RANK``/``WORLD_SIZE``; JAX has its own coordinator, a
service that process 0 runs on 127.0.0.1:<port> (on a cluster: node 0's address). Every process then sees
every device of the job (``jax.devices()``) but can touch only its own (``jax.local_devices()``).

Each process gets ``--devices`` CPU devices (``jax_num_cpu_devices``), loads only ITS rows of every global
batch, and builds the global batch array from them (``make_array_from_process_local_data``). The training
step is the same ``jax.jit`` as on one device: XLA inserts the all-reduce of the gradients, across processes.
Every process saves its final parameters and records the all-reduces of the compiled program (its HLO), the
step time, and the compute alone: the same step on one of its devices over its own rows, no collective; then
the all-reduce alone, of one float, of the step's bytes as one array, and of the step's own operands.
"""

import argparse
import re
import time

import numpy as np

from course_utils import data, models
from course_utils.distributed import worker


def local_compute(train_step, local, params, x, y, repeats: int) -> list[float]:
    """Seconds per step of the same jitted step on this process's first device and rows: no collective at all."""
    import jax

    device = jax.local_devices()[0]
    tree = jax.tree.unflatten(jax.tree.structure(params), [jax.device_put(a, device) for a in local])
    xd, yd = jax.device_put(x, device), jax.device_put(y, device)
    jax.block_until_ready(train_step(tree, xd, yd))  # compile for one device
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(train_step(tree, xd, yd))
        times.append(time.perf_counter() - start)
    return times


def operand_sizes(lines: list[str]) -> list[int]:
    """Element counts of the operands of the step's all-reduce(s), read from their result shapes in the HLO
    (``(f32[64]{0}, f32[64,32]{1,0}, ...) all-reduce(...)``); a scalar counts 1."""
    sizes = []
    for line in lines:
        for dims in re.findall(r"\b[a-z]+\d*\[([\d,]*)\]", line.split(" all-reduce", 1)[0]):
            sizes.append(int(np.prod([int(d) for d in dims.split(",") if d])))
    return sizes or [1]


def allreduce_alone(mesh, by_rows, replicated, sizes: list[int], repeats: int) -> list[float]:
    """Seconds of one all-reduce over the global mesh, alone, of arrays of ``sizes`` floats: each device holds
    one row of a (devices, n) array per size, and summing the rows into replicated results is one all-reduce
    (of a tuple when there are several arrays, as in the training step)."""
    import jax
    import jax.numpy as jnp

    rows = [jax.make_array_from_callback((jax.device_count(), n), by_rows, lambda idx, n=n: np.ones((1, n), np.float32))
            for n in sizes]
    total = jax.jit(lambda *a: [jnp.sum(x, axis=0) for x in a], out_shardings=replicated)
    jax.block_until_ready(total(*rows))  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(total(*rows))
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="the JAX coordinator's port on 127.0.0.1")
    parser.add_argument("--devices", type=int, default=2, help="CPU devices per process")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64, help="global batch (all processes together)")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    import jax

    jax.config.update("jax_platforms", "cpu")  # on a GPU/TPU cluster: drop this line, the accelerators are used
    jax.config.update("jax_num_cpu_devices", args.devices)  # before the first JAX computation
    jax.distributed.initialize(f"127.0.0.1:{args.port}", num_processes=worker.world_size(),
                               process_id=worker.rank())
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P


    me, nproc = jax.process_index(), jax.process_count()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))  # ONE mesh over the devices of all processes
    if me == 0:
        worker.progress(0, args.steps)
        print(f"{nproc} processes, {jax.local_device_count()} local devices each, "
              f"{jax.device_count()} in the global mesh", flush=True)

    def loss_fn(params, x, y):
        logits = models.jax_mlp_apply(params, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - args.lr * g, params, grads), loss

    replicated, by_batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    params = jax.tree.map(lambda a: jax.make_array_from_callback(a.shape, replicated, lambda idx, a=a: a[idx]),
                          [{k: np.asarray(v) for k, v in layer.items()} for layer in models.jax_mlp_params()])
    x_all, y_all = data.classification(args.steps * args.batch, seed=6)
    per = args.batch // nproc

    def global_batch(s):
        """This process loads only its rows of global batch ``s``; JAX assembles the global array."""
        lo = s * args.batch + me * per
        return (jax.make_array_from_process_local_data(by_batch, x_all[lo:lo + per], (args.batch, x_all.shape[1])),
                jax.make_array_from_process_local_data(by_batch, y_all[lo:lo + per], (args.batch,)))

    for s in range(args.steps):
        params, loss = train_step(params, *global_batch(s))
        if me == 0:
            worker.progress(s + 1, args.steps)
    x, y = global_batch(0)
    hlo = train_step.lower(params, x, y).compile().as_text()
    reduces = [line.strip() for line in hlo.splitlines() if " all-reduce(" in line or " all-reduce-start(" in line]
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        jax.block_until_ready(train_step(params, x, y))
        times.append(time.perf_counter() - start)
    local = [np.asarray(leaf.addressable_data(0)) for leaf in jax.tree.leaves(params)]  # replicated: a full copy
    compute = local_compute(train_step, local, params, x_all[me * per:(me + 1) * per], y_all[me * per:(me + 1) * per],
                            args.repeats)
    operands = operand_sizes(reduces)  # the step's all-reduce: the gradients and the loss, as one tuple
    allreduce = {name: allreduce_alone(mesh, by_batch, replicated, sizes, args.repeats)
                 for name, sizes in (("one float", [1]), ("one array", [sum(operands)]), ("operands", operands))}
    worker.save("jax", **{f"p{i}": a for i, a in enumerate(local)})
    worker.emit(kind="jax", processes=nproc, local_devices=jax.local_device_count(), devices=jax.device_count(),
                device_ids=[d.id for d in jax.devices()], allreduces=reduces, step_times=times,
                batch_sharding=str(x.sharding.spec), local_batch_rows=per, compute_times=compute,
                param_bytes=int(sum(a.nbytes for a in local)), allreduce_alone=allreduce,
                allreduce_operands=operands)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
